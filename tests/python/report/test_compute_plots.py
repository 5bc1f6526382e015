'''The report's cpu-test plots (report/compute_plots.py) and cpu-test's nodes against
their peers, from a recorded cpu-test document (tests/data/store/cpu-test.json, a real run
of this VM) copied to several nodes, one of them changed the way a fault changes it.'''

import copy
import json
import os

from plugins.checkout import ROOT

from cobalt_bench.kernels import KERNELS
from cobalt_bench.report import compute_plots
from cobalt_bench.report import model as cb_report
from cobalt_bench.report import plots as cb_plots
from cobalt_bench.store import reader as cb_reader

RECORDED = os.path.join(ROOT, 'tests', 'data', 'store', 'cpu-test.json')


def recorded():
    with open(RECORDED) as fp:
        return json.load(fp)


def sweep(tmp_path, docs):
    '''A node sweep's documents, DIR/<node>/cpu-test-<job>.json, read as the report reads.'''
    for node, doc in docs.items():
        (tmp_path / node).mkdir()
        doc = dict(doc, host=node)
        (tmp_path / node / 'cpu-test-7.json').write_text(json.dumps(doc))
    return cb_reader.load_run(str(tmp_path))


def with_a_slow_core(doc, share):
    '''The document of a node with one core at `share` of its slowest core's rate.'''
    doc = copy.deepcopy(doc)
    core = doc['cores'][1]
    core['gflops'] = share * min(c['gflops'] for c in doc['cores'])
    gflops = sorted(c['gflops'] for c in doc['cores'])
    doc['metrics']['core_gflops_min']['value'] = gflops[0]
    doc['metrics']['slowest_core_ratio']['value'] = 100 * gflops[0] / gflops[-1]
    doc['metrics']['node_gflops']['value'] = sum(gflops)
    return doc


def test_the_cores_plot_draws_every_core_the_slowest_node_first(tmp_path):
    doc = recorded()
    run = sweep(tmp_path, {'n1': doc, 'n2': with_a_slow_core(doc, 0.3)})
    first, second = compute_plots.cpu_test_cores(run)
    assert first.png[:4] == b'\x89PNG' and second.png[:4] == b'\x89PNG'
    assert 'n2' in first.title and 'n1' in second.title
    assert '% of the median' in first.caption and 'GFLOP/s' in first.caption


def test_the_burn_curve_has_one_line_per_run_and_starts_at_zero(tmp_path):
    run = sweep(tmp_path, {'n1': recorded()})
    (plot,) = compute_plots.cpu_test_burn(run)
    assert plot.png[:4] == b'\x89PNG' and 'throttles' in plot.caption
    assert len(recorded()['intervals']) >= 2


def test_the_plots_are_named_by_the_descriptor_and_drawn_in_the_report(tmp_path):
    assert {'cpu_test_cores', 'cpu_test_burn'} <= set(cb_plots.plot_names())
    run = sweep(tmp_path, {'n1': recorded()})
    names = {p.name for p in cb_report.build(run).plots}
    assert 'cpu-test-burn' in names, names
    assert any(n.startswith('cpu-test-cores-') and n.endswith('-n1') for n in names), names


def test_a_node_with_half_the_rate_of_its_peers_is_named_by_them(tmp_path):
    # No reference of the site judges cpu-test: its peers do (kernels.BY_PEERS).
    doc = recorded()
    nodes = {f'n{i}': doc for i in range(1, 8)}
    half = copy.deepcopy(doc)
    for core in half['cores']:
        core['gflops'] /= 2
    for name in ('node_gflops', 'core_gflops_median', 'core_gflops_min', 'core_gflops_max'):
        half['metrics'][name]['value'] /= 2
    nodes['n8'] = half
    model = cb_report.build(sweep(tmp_path, nodes), site='local')
    bad = {v.node for d in model.judgement.fleet.distributions for v in d.values if v.flagged}
    assert bad == {'n8'}, bad
    # by the metrics the descriptor names for its peers, not every metric it declares
    compared = {d.metric for d in model.judgement.fleet.distributions}
    assert 'node_gflops' in compared and compared <= set(KERNELS['cpu-test'].peers), compared
