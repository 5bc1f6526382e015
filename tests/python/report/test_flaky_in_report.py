'''Flaky nodes in the report (issue 28, item 4): a run read from a results store has its
nodes' history read (store.history, as of that run); a node that failed in 2 of its last 5
runs, one failure hidden by a retry, is marked flaky in report.md, report.html and
verdict.json; one that failed in 1 of 5 is not; a run in no store has no flaky mark, and a
history that cannot be read never stops the report.'''

import copy
import json
import shutil

import pytest

from cobalt_bench.report import fleet as rp_fleet
from cobalt_bench.report.model import build
from cobalt_bench.report.write import write_report
from cobalt_bench.store import history as hist
from cobalt_bench.store.reader import load_run
from cobalt_bench.store.result import Result
from plugins.checkout import cobalt_cli as cobalt
from plugins.stores import DOC, counting_loads, reframe_run, stamp

OK, BAD = Result.PASS, Result.FAIL
NODES = ('n1', 'n2', 'n3', 'n4')
MARK = 'n3 flaky (2 of 5 runs)'


pytestmark = pytest.mark.usefixtures('no_store_settings')


@pytest.fixture
def store(tmp_path):
    '''Five runs of four nodes: n3 fails on day 2, and on day 4 in a first try that a
    retry passed; n2 fails on day 3; every node passes on day 5.'''
    results = tmp_path / 'results'
    for day in range(1, 6):
        bad = {2: {'n3'}, 3: {'n2'}}.get(day, set())
        reframe_run(results, stamp(day), {n: (7.0, BAD) if n in bad else (8.0, OK)
                                          for n in NODES},
                    retried=('n3',) if day == 4 else ())
    return results


def _report(run_dir, out):
    run = load_run(str(run_dir))
    model = build(run, with_plots=False)
    write_report(model, str(out), ('md', 'html'))
    return (model, (out / 'report.md').read_text(), (out / 'report.html').read_text(),
            json.loads((out / 'verdict.json').read_text()))


def test_a_node_failing_2_of_its_last_5_runs_is_marked_flaky(store, tmp_path):
    run = load_run(str(store / 'local-slurm' / stamp(4)))
    assert [c.failed_tries for c in run.cases if c.nodes == ['n3']] == [1], 'a hidden failure'
    model, md, page, verdict = _report(store / 'local-slurm' / stamp(5), tmp_path / 'out')
    assert [f.to_json() for f in model.flaky] == [{'node': 'n3', 'failed': 2, 'of': 5}]
    assert verdict['flaky_nodes'] == [{'node': 'n3', 'failed': 2, 'of': 5}]
    # Not a bad node of this run: every node passed it.
    assert verdict['bad_nodes'] == [] and not verdict['bad_nodes_hostlist']
    # The first screen's bad-nodes line, and the mark next to the node in its table.
    first = next(line for line in md.splitlines() if line.startswith('- **Bad nodes:**'))
    assert 'flaky: n3 (failed 2 of its last 5 runs)' in first
    assert f'| {MARK} | MemTest |' in md
    assert 'flaky: n3 (failed 2 of its last 5 runs)' in page
    assert f'<td>{MARK}</td>' in page
    # n2 failed in 1 of its last 5 runs: not flaky; n1 and n4 never failed.
    for other in ('n1', 'n2', 'n4'):
        assert f'{other} flaky' not in md + page and f'{other} (failed' not in md + page
    assert (tmp_path / 'out' / 'bad-nodes.txt').read_text().count('n3') == 0


def test_the_history_is_the_one_the_run_had(store, tmp_path):
    '''Reported again, day 3's run counts no later run: n3 failed in 1 of its 3 runs.'''
    model, md, _, verdict = _report(store / 'local-slurm' / stamp(3), tmp_path / 'out')
    assert model.flaky == [] and verdict['flaky_nodes'] == [] and 'flaky' not in md
    # Its own failure counts: n2 failed in it; with a rule of 1 of 3 it is flaky.
    flaky, note = rp_fleet.flaky_nodes(load_run(str(store / 'local-slurm' / stamp(3))),
                                       fails=1)
    assert [f.node for f in flaky] == ['n2', 'n3'] and note == ''


def test_only_the_runs_nodes_and_their_last_runs_are_read(store, monkeypatch):
    reframe_run(store, stamp(6), {'x1': (8.0, OK)}, site='other')
    for day in (7, 8):
        reframe_run(store, stamp(day), {'n1': (8.0, OK)})
    loads = counting_loads(monkeypatch)
    run = load_run(str(store / 'local-slurm' / stamp(5)))
    flaky, _ = rp_fleet.flaky_nodes(run)
    assert [f.node for f in flaky] == ['n3']
    # As of day 5, of its site: days 7, 8 (newer) and the other site are not read, nor the
    # reported run itself again.
    assert sorted(p.rsplit('/', 1)[1] for p in loads) == [stamp(d) for d in (1, 2, 3, 4)]


def test_a_run_in_no_store_has_no_flaky_mark(store, tmp_path):
    lone = tmp_path / 'lone' / 'run'
    shutil.copytree(store / 'local-slurm' / stamp(5), lone)
    model, md, page, verdict = _report(lone, tmp_path / 'out')
    assert model.flaky == [] and model.flaky_note == ''
    assert verdict['flaky_nodes'] == [] and 'flaky' not in md and 'flaky' not in page
    # A run not read from a directory at all: no store.
    run = load_run(str(store / 'local-slurm' / stamp(5)))
    run.path = ''
    assert hist.store_of(run) is None and rp_fleet.flaky_nodes(run) == ([], '')


def test_a_history_that_cannot_be_read_leaves_the_report_whole(store, tmp_path,
                                                               monkeypatch):
    def broken(*args, **kwargs):
        raise OSError(5, 'Input/output error')
    monkeypatch.setattr(hist, 'node_history', broken)
    model, md, _, verdict = _report(store / 'local-slurm' / stamp(5), tmp_path / 'out')
    assert model.flaky == [] and verdict['flaky_nodes'] == []
    assert 'node history not read: OSError' in model.flaky_note
    assert 'n3 flaky' not in md and verdict['state']


def test_job_documents_under_the_stores_slurm_directory(store):
    '''Job documents under STORE/slurm/: the store is STORE (every site's runs).'''
    sweep = store / 'slurm' / 'node-sweep-7'
    sweep.mkdir(parents=True)
    for i, node in enumerate(NODES):
        doc = copy.deepcopy(DOC)
        doc['host'] = node
        (sweep / f'mem-test-{70 + i}.json').write_text(json.dumps(doc))
    run = load_run(str(sweep))
    assert hist.store_of(run) == (str(store), None)
    flaky, note = rp_fleet.flaky_nodes(run)
    assert [f.to_json() for f in flaky] == [{'node': 'n3', 'failed': 2, 'of': 5}], note
    loose = load_run(str(sweep / 'mem-test-70.json'))
    assert hist.store_of(loose) == (str(store), None)


def test_the_report_command_names_the_flaky_node(store, tmp_path):
    rc, out, err = cobalt('report', store / 'local-slurm' / stamp(5), '-o', tmp_path / 'o')
    assert ('flaky node(s), by the store\'s node history: n3 (failed 2 of its last 5 runs)'
            in out), out + err


def test_the_report_command_gives_each_bad_node_its_drain_command_on_a_line(store, tmp_path):
    rc, out, err = cobalt('report', store / 'local-slurm' / stamp(2), '-o', tmp_path / 'o')
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith('  bad node n3: '))
    assert lines[at + 1].startswith('    scontrol update NodeName=n3 State=DRAIN'), out


def test_the_peer_rule_takes_its_noise_from_the_stores_clean_history(tmp_path):
    '''Ten clean runs of four nodes whose MemTest speeds wobble by about 2 %: the report of
    an eleventh judges its distribution with the noise of those ten (store.history
    .metric_noise), not the rule's default.'''
    results = tmp_path / 'results'
    wobble = (8.0, 8.16, 7.84, 8.08, 7.92)
    for day in range(1, 12):
        reframe_run(results, stamp(day), {n: (wobble[(day + i) % 5], OK)
                                          for i, n in enumerate(NODES)})
    model = build(load_run(str(results / 'local-slurm' / stamp(11))), with_plots=False)
    (dist,) = [d for d in model.judgement.fleet.distributions
               if d.metric == 'measured_speed']
    assert dist.noise_from == 'history', dist
    assert dist.noise == pytest.approx(0.0145, abs=0.004)
    # a run in no store: the rule's default
    alone = tmp_path / 'alone'
    shutil.copytree(results / 'local-slurm' / stamp(11), alone)
    model = build(load_run(str(alone)), with_plots=False)
    assert {d.noise_from for d in model.judgement.fleet.distributions} <= {'default',
                                                                             'repeats'}
