'''Peers and outliers (cobalt_bench.judging.fleet): one distribution per partition, check and
metric over the nodes of a run; median and MAD with a relative floor; the metric's bad
direction; the site's threshold from compliance.yaml; the bad nodes as a Slurm hostlist.'''

import random

import pytest

from cobalt_bench import site as site_mod
from cobalt_bench.judging import fleet as fl
from cobalt_bench.judging import sanity
from cobalt_bench.site.compliance import DEFAULT_OUTLIER_THRESHOLD, load_compliance
from cobalt_bench.store import model as rs
from cobalt_bench.store.result import Result, SettingStatus

CHECKS = {'MemTest', 'Preflight'}


def node_case(node, value, metric='measured_speed', unit='Gbit/s', check='MemTest',
              part='default', result=Result.PASS, distributed=True, **metric_kw):
    name = f'{check} %.part=local:{part} %.nid={node}' if distributed else check
    return rs.Case(check=name, system='local', partition=part, nodes=[node], result=result,
                   metrics=[rs.Metric(metric, value, unit, **metric_kw)])


def analyse(cases, **kw):
    return fl.analyse(cases, rs.KIND_REFRAME, checks=CHECKS, **kw)


def flagged(fleet):
    return sorted(v.node for d in fleet.distributions for v in d.outliers)


def test_three_nodes_one_bad():
    fleet = analyse([node_case('n1', 100.0), node_case('n2', 99.0), node_case('n3', 60.0)])
    [dist] = fleet.distributions
    assert (dist.partition, dist.check, dist.metric) == ('local:default', 'MemTest',
                                                         'measured_speed')
    assert dist.judged and dist.nodes == 3 and dist.median == 99.0
    assert dist.direction is fl.Direction.LOWER
    worst = dist.values[0]
    assert worst.node == 'n3' and worst.flagged and worst.percent == pytest.approx(-39.39, 0.01)
    assert worst.deviation < -fl.DEFAULT_OUTLIER_THRESHOLD
    assert [b.node for b in fleet.bad_nodes] == ['n3']
    assert fleet.hostlist == 'n3'
    cause = fleet.bad_nodes[0].causes[0]
    assert (cause.metric, cause.value, cause.unit, cause.median) == (
        'measured_speed', 60.0, 'Gbit/s', 99.0)
    assert 'peers\' median 99' in fleet.bad_nodes[0].why


def test_two_nodes_are_not_judged():
    fleet = analyse([node_case('n1', 100.0), node_case('n2', 10.0)])
    [dist] = fleet.distributions
    assert not dist.judged and 'no outlier judgement' in dist.note
    assert fleet.bad_nodes == []


def test_a_single_node_makes_no_distribution():
    assert analyse([node_case('n1', 100.0)]).distributions == []


def test_multi_node_cases_are_not_a_nodes():
    c = node_case('n1', 50.0)
    c.nodes = ['n1', 'n2']
    fleet = analyse([c, node_case('n3', 100.0), node_case('n4', 100.0),
                     node_case('n5', 100.0)])
    assert [d.nodes for d in fleet.distributions] == [3]


def test_three_thousand_nodes_with_noise_and_five_bad():
    rng = random.Random(28)
    bad = {f'nid{i:05d}' for i in (7, 512, 1500, 2222, 2999)}
    cases = []
    for i in range(3000):
        node = f'nid{i:05d}'
        value = rng.gauss(200.0, 1.0)       # 0.5 % noise
        if node in bad:
            value *= 0.85                   # 15 % slower
        cases.append(node_case(node, value))
    fleet = analyse(cases)
    assert flagged(fleet) == sorted(bad)
    assert [b.node for b in fleet.bad_nodes] == sorted(bad)
    assert fleet.hostlist == 'nid[00007,00512,01500,02222,02999]'
    [dist] = fleet.distributions
    assert {v.node for v in dist.values[:5]} == bad     # worst first


def test_identical_peers_a_real_drop_is_flagged_a_wobble_is_not():
    cases = [node_case(f'n{i}', 100.0) for i in range(1, 9)]
    cases += [node_case('n9', 90.0), node_case('n10', 99.9)]
    fleet = analyse(cases)
    [dist] = fleet.distributions
    assert dist.mad == 0 and dist.floored and dist.sigma == pytest.approx(1.0)
    assert flagged(fleet) == ['n9']


def test_a_faster_node_is_no_outlier_for_a_bandwidth():
    cases = [node_case(f'n{i}', 100.0) for i in range(1, 6)] + [node_case('n6', 150.0)]
    assert flagged(analyse(cases)) == []


def test_latency_higher_is_bad():
    # A check of no kernel of ours (an OSU check): every numeric metric is compared.
    latency = dict(metric='latency', unit='us', check='OsuLatency')
    cases = [node_case(f'n{i}', 2.0, **latency) for i in range(1, 6)]
    cases += [node_case('n6', 3.0, **latency), node_case('n7', 1.0, **latency)]
    fleet = analyse(cases)
    assert fleet.distributions[0].direction is fl.Direction.HIGHER
    assert flagged(fleet) == ['n6']


@pytest.mark.parametrize('metric,unit,kw,direction', [
    ('measured_speed', 'Gbit/s', {}, fl.Direction.LOWER),
    ('bandwidth', 'MB/s', {}, fl.Direction.LOWER),
    ('average_late', '%', {}, fl.Direction.HIGHER),
    ('elapsed', 's', {}, fl.Direction.HIGHER),
    ('latency_8', 'us', {}, fl.Direction.HIGHER),
    ('percent_of_desired', '%', {}, fl.Direction.EITHER),
    ('percent_of_desired', '%', {'lower': 95.0}, fl.Direction.LOWER),
    ('odd', 'Gbit/s', {'upper': 5.0}, fl.Direction.HIGHER),
])
def test_direction_of(metric, unit, kw, direction):
    assert fl.direction_of(rs.Metric(metric, 1.0, unit, **kw)) is direction


def test_failed_case_is_a_bad_node_whatever_its_peers():
    cases = [node_case(f'n{i}', 100.0) for i in range(1, 5)]
    cases.append(node_case('n5', 100.0, result=Result.FAIL, verdict=Result.FAIL))
    fleet = analyse(cases)
    assert flagged(fleet) == []
    assert [b.node for b in fleet.bad_nodes] == ['n5']
    assert 'failed its references' in fleet.bad_nodes[0].why
    assert fleet.distributions[0].values[0].failed


def test_a_case_not_run_is_not_the_nodes_fault():
    c = node_case('n2', 1.0, result=Result.FAIL)
    c.metrics = []
    c.fail_phase = 'sanity'
    c.fail_reason = sanity.exit_reason('gpu-copy', sanity.exit_status(3))
    assert analyse([node_case('n1', 1.0), c]).bad_nodes == []


def test_preflight_findings_are_the_likely_why():
    doc = {'test': 'preflight', 'host': 'n3', 'findings': [
        {'setting': 'cpu.governor', 'status': 'fail', 'value': 'powersave',
         'expected': 'performance', 'fix': 'cpupower', 'level': 'required'},
        {'setting': 'cpu.turbo', 'status': 'pass', 'value': '1', 'expected': '1',
         'fix': '', 'level': 'required'}]}
    fleet = analyse([node_case('n1', 100.0), node_case('n2', 100.0), node_case('n3', 50.0)],
                    preflight_docs=[('local:default n3', doc)])
    [bad] = fleet.bad_nodes
    assert [f.setting for f in bad.findings] == ['cpu.governor']
    assert bad.findings[0].status is SettingStatus.FAIL
    assert 'cpu.governor' in bad.why and 'powersave' in bad.why
    assert fleet.distributions[0].values[0].findings == bad.findings


def test_check_names_without_the_node():
    assert fl.check_name(node_case('n1', 1.0), CHECKS) == 'MemTest'
    assert fl.check_name(rs.Case(check='MemTest_12'), CHECKS) == 'MemTest'
    assert fl.check_name(rs.Case(check='Other_12'), CHECKS) == 'Other_12'
    assert fl.check_name(rs.Case(check='EthTest %interface=lo %.nid=n4'),
                         CHECKS) == 'EthTest %interface=lo'


def test_partitions_are_apart():
    cases = [node_case(f'n{i}', 100.0) for i in range(1, 4)]
    cases += [node_case(f'g{i}', 50.0, part='gpu') for i in range(1, 4)]
    fleet = analyse(cases)
    assert [d.partition for d in fleet.distributions] == ['local:default', 'local:gpu']
    assert flagged(fleet) == []


def test_job_documents_one_host_each():
    cases = []
    for i, v in enumerate([100.0, 100.5, 99.5, 70.0], 1):
        c = node_case(f'n{i}', v, check='mem-test', distributed=False)
        c.partition, c.judged_partition = f'job {i}', 'local:default'
        cases.append(c)
    fleet = fl.analyse(cases, rs.KIND_JOBS, checks=CHECKS)
    [dist] = fleet.distributions
    assert dist.partition == 'local:default' and flagged(fleet) == ['n4']


def test_threshold_changes_the_judgement():
    cases = [node_case(f'n{i}', 100.0) for i in range(1, 6)] + [node_case('n6', 95.0)]
    assert flagged(analyse(cases, threshold=4.0)) == ['n6']
    assert flagged(analyse(cases, threshold=6.0)) == []


# ---- the site's threshold ---------------------------------------------------------------

def _compliance(tmp_path, text):
    path = tmp_path / 'compliance.yaml'
    path.write_text('demonstration: a test\n' + text)
    return load_compliance(str(path), references=None, checks=set())


def test_threshold_from_compliance_yaml(tmp_path):
    assert _compliance(tmp_path, '').outlier_threshold == DEFAULT_OUTLIER_THRESHOLD == 4.0
    assert _compliance(tmp_path, 'fleet: {outlier_threshold: 6.5}\n').outlier_threshold == 6.5
    assert _compliance(tmp_path, 'fleet:\n  outlier_threshold: 3\n').outlier_threshold == 3.0


@pytest.mark.parametrize('text', ['fleet: {outlier_threshold: four}\n',
                                  'fleet: {outlier_threshold: -1}\n',
                                  'fleet: {outlier_threshold: true}\n',
                                  'fleet: {outlier_threshold: .nan}\n',
                                  'fleet: {outlier: 4}\n',
                                  'fleet: 4\n'])
def test_bad_threshold_is_an_error_naming_file_and_key(tmp_path, text):
    with pytest.raises(site_mod.SiteError) as err:
        _compliance(tmp_path, text)
    assert str(tmp_path / 'compliance.yaml') in str(err.value)
    assert 'fleet' in str(err.value)


def test_the_verdict_names_the_bad_nodes(tmp_path):
    from cobalt_bench.judging import verdict as vd
    v = vd.Verdict(vd.INCOMPLETE)
    v.fleet = analyse([node_case('n1', 100.0), node_case('n2', 100.0),
                       node_case('n3', 50.0)])
    assert any(r.startswith('BAD NODES (1): n3') for r in v.reasons)
    doc = v.to_json()
    assert doc['bad_nodes_hostlist'] == 'n3'
    assert [b['node'] for b in doc['bad_nodes']] == ['n3']
    assert 'measured_speed' in doc['bad_nodes'][0]['why']


# ---- Slurm hostlists --------------------------------------------------------------------

@pytest.mark.parametrize('names,expected', [
    (['n1', 'n2', 'n3', 'n7'], 'n[1-3,7]'),
    (['n7', 'n3', 'n1', 'n2', 'n3'], 'n[1-3,7]'),
    (['node001', 'node002', 'node003'], 'node[001-003]'),
    (['node001', 'node003', 'node010'], 'node[001,003,010]'),
    (['node099', 'node100'], 'node[099-100]'),
    (['n9', 'n10', 'n11'], 'n[9-11]'),
    (['x5'], 'x5'),
    (['login', 'n1', 'n2'], 'n[1-2],login'),
    (['a1-ib', 'a2-ib', 'b1'], 'a[1-2]-ib,b1'),
    (['gpu1', 'cpu1', 'cpu2'], 'cpu[1-2],gpu1'),
    ([], ''),
])
def test_hostlist(names, expected):
    assert fl.hostlist(names) == expected


def test_names_slurm_cannot_read_stay_out_of_the_hostlist():
    fleet = fl.Fleet(bad_nodes=[fl.BadNode('n1'), fl.BadNode('n2;reboot'), fl.BadNode('n2')])
    assert fleet.hostlist == 'n[1-2]' and fleet.unlisted == ['n2;reboot']


def test_only_judged_metrics_are_compared_where_the_site_judges_some():
    # measured_speed judged by a reference; average_late recorded only: n1's late share
    # stands out (a busy node's few tenths of a percent) but is no judgement of the site's.
    cases = []
    for node, late in (('n1', 0.48), ('n2', 0.08), ('n3', 0.07), ('n4', 0.09)):
        c = node_case(node, 8.0, ref=8.0, lower_thres=-0.0025, verdict=Result.PASS)
        c.metrics.append(rs.Metric('average_late', late, '%'))
        cases.append(c)
    fleet = analyse(cases)
    assert [d.metric for d in fleet.distributions] == ['measured_speed']
    assert fleet.bad_nodes == []
    # Without any reference the kernel's declared metrics are compared (average_late is
    # one: a share in %, whose sigma is at least one percentage point): 0.48 % against
    # 0.08 % is noise, 37 % a slow node; a diagnostic it does not declare is not compared.
    for c in cases:
        c.metrics = [rs.Metric(m.name, m.value, m.unit) for m in c.metrics]
        c.metrics.append(rs.Metric('read_busy_speed', 53.0 if c.nodes == ['n3'] else 175.0,
                                   'Gbit/s'))
    assert flagged(analyse(cases)) == []
    cases[0].metrics[1] = rs.Metric('average_late', 37.0, '%')
    fleet = analyse(cases)
    assert flagged(fleet) == ['n1']
    assert 'read_busy_speed' not in {d.metric for d in fleet.distributions}


@pytest.mark.parametrize('result', [Result.ABORT, Result.DAMAGED])
def test_a_node_whose_case_did_not_finish_is_bad(result):
    cases = [node_case(n, 8.0) for n in ('n1', 'n2', 'n3')]
    cases.append(rs.Case(check='MemTest %.part=local:default %.nid=n4', system='local',
                         partition='default', nodes=['n4'], result=result,
                         fail_reason='the job did not finish: Slurm job state NODE_FAIL'))
    fleet = analyse(cases)
    assert [b.node for b in fleet.bad_nodes] == ['n4']
    assert 'did not finish' in fleet.bad_nodes[0].why
