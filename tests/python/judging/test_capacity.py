'''Capacity beside compliance (issue 36): mem-test --max is its own check, MemCapacity,
that no reference judges and each node's peers do (judging.judge.by_peers,
judging.verdict._by_peers). The documents are real ones of bin/mem-test --max, one per
node, with a planted speed where a node is to be slow.'''

import os

import pytest

from cobalt_bench import kernels
from cobalt_bench import site as site_mod
from cobalt_bench.judging import judge as jd
from cobalt_bench.judging import verdict as vd
from cobalt_bench.store import model as rs
from cobalt_bench.store import reader
from cobalt_bench.store.result import Result
from plugins.checkout import ROOT
from plugins.kernels import kernel
from plugins.stores import capacity_sweep, node_doc, unpaced_mem_test_doc

PARTITION = 'local-slurm:x86'


@pytest.fixture(scope='module')
def max_doc(tmp_path_factory):
    '''A real document of an unpaced mem-test run.'''
    return unpaced_mem_test_doc(tmp_path_factory.mktemp('mem-test'), kernel('mem-test'))


def sweep(tmp_path, doc, factors, **kw):
    return capacity_sweep(tmp_path, doc, factors, **kw)


def decide(root):
    site = site_mod.load_site(os.path.join(ROOT, 'site-configs', 'local-slurm'))
    return vd.decide(reader.load_run(str(root)), site, partition=PARTITION)


def items(v, check='MemCapacity'):
    return {i.what.rsplit('(', 1)[-1].rstrip(')'): i for i in v.items if i.what.startswith(check)}


def test_an_unpaced_document_is_a_capacity_check_not_mem_test_at_another_workload(max_doc):
    paced = dict(max_doc, config=dict(max_doc['config'], max=False))
    assert kernels.check_of_document(max_doc) == 'MemCapacity'
    assert kernels.check_of_document(paced) == 'MemTest'
    assert kernels.capacity_of_test('mem-capacity').check == 'MemCapacity'
    assert kernels.check_of_document({'test': 'another-program'}) is None


def test_the_slow_node_of_a_sweep_stands_out_and_its_peers_pass_by_comparison(tmp_path,
                                                                              max_doc):
    factors = {f'n{i}': 1.0 + 0.01 * (i % 3) for i in range(1, 9)}
    factors['n5'] = 0.5             # half of what its peers do
    v = decide(sweep(tmp_path, max_doc, factors))
    by_node = items(v)
    assert sorted(by_node) == sorted(factors)
    assert by_node['n5'].status is vd.FAILED and not by_node['n5'].required
    assert 'MemCapacity measured_speed' in by_node['n5'].why
    assert 'peers\' median' in by_node['n5'].why
    for node in set(factors) - {'n5'}:
        assert by_node[node].status is vd.PASSED, by_node[node]
        assert 'within its peers' in by_node[node].why
    assert [b.node for b in v.fleet.bad_nodes] == ['n5']
    # Judged by its peers, not a reference: the slow node's case fails in phase 'peers'.
    cases = {c.nodes[0]: c for c in v.cases if c.check == 'MemCapacity'}
    assert cases['n5'].result is Result.FAIL and cases['n5'].fail_phase == 'peers'
    assert {cases[n].result for n in set(factors) - {'n5'}} == {Result.PASS}
    assert not v.any_unjudged
    assert v.state is vd.DEMONSTRATION       # an outlier alone does not change the state


def test_with_fewer_than_three_nodes_nothing_is_compared_and_nothing_passes(tmp_path,
                                                                              max_doc):
    v = decide(sweep(tmp_path, max_doc, {'n1': 1.0, 'n2': 0.5}))
    by_node = items(v)
    assert {i.status for i in by_node.values()} == {vd.NOTE}
    assert all('not compared' in i.why and 'needs 3' in i.why for i in by_node.values())
    assert not v.fleet.bad_nodes
    assert {c.result for c in v.cases} == {Result.RECORDED}    # measured, never a pass


def test_a_capacity_run_the_node_lost_is_a_failure_of_that_node(tmp_path, max_doc):
    factors = {'n1': 1.0, 'n2': 1.0, 'n3': 1.0}
    v = decide(sweep(tmp_path, max_doc, factors, lose=('n2',)))
    lost = [c for c in v.cases if c.nodes == ['n2']]
    assert [(c.check, c.result) for c in lost] == [('MemCapacity', Result.FAIL)]
    assert 'mem-capacity left no result' in lost[0].fail_reason
    assert [b.node for b in v.fleet.bad_nodes] == ['n2']


def test_a_site_that_gives_capacity_references_judges_by_them(tmp_path, max_doc):
    '''The peers judge only what no reference does: a reference of the site's wins.'''
    site = site_mod.load_site(os.path.join(ROOT, 'site-configs', 'local-slurm'))
    case = reader._case_from_doc(node_doc(max_doc, 'n1'), str(tmp_path / 'mem-capacity-7.json'))
    judged, j = jd.judge_doc_case(case, site, PARTITION)
    assert judged.result is Result.RECORDED and judged.fail_reason == jd.PEERS_JUDGE
    speed = max_doc['metrics']['measured_speed']['value']
    refs = tmp_path / 'references.yaml'
    refs.write_text(f"MemCapacity:\n  '{PARTITION}':\n"
                    f"    measured_speed: [{speed * 2}, -0.1, null, 'Gbit/s']\n")
    site.references = site_mod.load_references(str(refs))
    judged, j = jd.judge_doc_case(case, site, PARTITION)
    assert judged.result is Result.FAIL, judged


def test_a_reframe_capacity_case_that_reframe_passed_unjudged_is_recorded_not_passed():
    case = rs.Case(check='MemCapacity %.part=local-slurm:x86 %.nid=n1', system='local-slurm',
                   partition='x86', nodes=['n1'], result=Result.PASS,
                   metrics=[rs.Metric('measured_speed', 40.0, 'Gbit/s')])
    assert jd.recorded_case(case).result is Result.RECORDED
    plain = rs.Case(check='MemTest', result=Result.PASS,
                    metrics=[rs.Metric('measured_speed', 40.0, 'Gbit/s')])
    assert jd.recorded_case(plain).result is Result.UNJUDGED


def test_a_sweep_asks_the_sites_references_once_not_once_per_node(tmp_path, max_doc,
                                                                  monkeypatch):
    # judging.judge.Memo: a 10,000-node sweep asked the same lookup 10,000 times
    site = site_mod.load_site(os.path.join(ROOT, 'site-configs', 'local-slurm'))
    asked = []
    lookup = site.references.lookup
    monkeypatch.setattr(site.references, 'lookup',
                        lambda *args: asked.append(args) or lookup(*args))
    factors = {f'n{i}': 1.0 + 0.01 * (i % 3) for i in range(1, 9)}
    v = vd.decide(reader.load_run(str(sweep(tmp_path, max_doc, factors))), site,
                  partition=PARTITION)
    assert len(v.cases) == 8
    assert asked == [('MemCapacity', PARTITION, None)]
