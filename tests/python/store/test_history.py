'''Node history (store.history, issue 28 item 4): results keyed by node across the runs of
a store built from the recorded real run (plugins.stores), --distribute's names stripped,
a node failing 2 of its last 5 runs flaky (also when a retry passed), one failing 1 of 5
not, and the store read a run at a time.'''

import sqlite3

import pytest

from cobalt_bench.store import history, history_index
from cobalt_bench.store.result import Result
from plugins.stores import counting_loads, reframe_run, stamp

OK, BAD = Result.PASS, Result.FAIL


@pytest.fixture
def five_runs(tmp_path):
    '''Five runs of n1, n2, n3: n1 fails in runs 2 and 4 (in run 4 only in a first try
    that a retry passed), n2 fails in run 3 only, n3 never.'''
    results = tmp_path / 'results'
    plan = {1: {}, 2: {'n1': BAD}, 3: {'n2': BAD}, 4: {}, 5: {}}
    for day, bad in plan.items():
        nodes = {n: (7.5 if bad.get(n) else 8.0, bad.get(n, OK)) for n in ('n1', 'n2', 'n3')}
        reframe_run(results, stamp(day), nodes, retried=('n1',) if day == 4 else ())
    return results


def test_a_node_failing_2_of_5_is_flaky_and_1_of_5_is_not(five_runs):
    h = history.node_history(five_runs)
    assert sorted(h.nodes) == ['n1', 'n2', 'n3'] and h.runs_read == 5
    n1, n2, n3 = (h.nodes[n] for n in ('n1', 'n2', 'n3'))
    assert (n1.failed_runs, n1.flaky) == (2, True)
    assert (n2.failed_runs, n2.flaky) == (1, False)
    assert (n3.failed_runs, n3.flaky) == (0, False)
    # Newest first; the check the same in every run; the retry's hidden failure counted.
    assert [r.label for r in n1.runs] == [f'local-slurm/{stamp(d)}' for d in (5, 4, 3, 2, 1)]
    assert {e.check for r in n1.runs for e in r.entries} == {'MemTest'}
    day4 = n1.runs[1]
    assert day4.entries[0].result is Result.PASS and day4.entries[0].failed_tries == 1
    assert day4.failed
    e = n2.runs[2].entries[0]
    assert (e.partition, e.result) == ('local-slurm:x86', Result.FAIL)
    assert ('measured_speed', 7.5, 'Gbit/s') in e.metrics
    assert n2.runs[2].date == '2026-11-03 00:00:00'


def test_the_window_is_the_last_n_runs(five_runs):
    h = history.node_history(five_runs, last=2)
    assert [len(n.runs) for n in h.sorted_nodes()] == [2, 2, 2]
    # n1's failures (runs 2 and 4): only run 4 is among its last 2.
    assert h.nodes['n1'].failed_runs == 1 and not h.nodes['n1'].flaky
    assert history.node_history(five_runs, last=5, fails=3).nodes['n1'].flaky is False


def test_the_store_is_read_one_run_at_a_time_and_stops_for_one_node(tmp_path, monkeypatch):
    results = tmp_path / 'results'
    for day in range(1, 21):
        reframe_run(results, stamp(day), {'n1': (8.0, OK), f'm{day}': (8.0, OK)})
    loads = counting_loads(monkeypatch)
    h = history.node_history(results, node='n1', last=5)
    assert len(loads) == 5 and list(h.nodes) == ['n1']
    assert loads[0].endswith(stamp(20)), 'newest first'
    loads.clear()
    h = history.node_history(results, last=3)
    # Every run read once (the 5 read before from the store's index); no node keeps more
    # than its last 3 runs.
    assert len(loads) == 15 and h.runs_read == 20
    assert max(len(n.runs) for n in h.nodes.values()) == 3
    assert len(h.nodes) == 21


# ---- the store's index (store.history_index, issue 39) ---------------------------------

def _as_text(h):
    return [(n.node, [(r.label, r.date, r.entries) for r in n.runs]) for n in h.sorted_nodes()]


def test_a_second_history_reads_the_index_and_is_the_same(five_runs, monkeypatch):
    loads = counting_loads(monkeypatch)
    first = history.node_history(five_runs)
    assert len(loads) == 5 and (five_runs / history_index.INDEX_FILE).is_file()
    loads.clear()
    second = history.node_history(five_runs)
    assert loads == [] and second.runs_read == 5
    assert _as_text(second) == _as_text(first)
    assert second.nodes['n1'].flaky and second.nodes['n1'].runs[1].entries[0].failed_tries == 1


def test_a_run_whose_report_changed_is_read_again(five_runs, monkeypatch):
    history.node_history(five_runs)
    run = five_runs / 'local-slurm' / stamp(5)
    text = (run / 'report.json').read_text()
    (run / 'report.json').write_text(text.replace('"result": "pass"', '"result": "fail"'))
    loads = counting_loads(monkeypatch)
    h = history.node_history(five_runs)
    assert [p.rsplit('/', 1)[1] for p in loads] == [stamp(5)]
    assert h.nodes['n3'].runs[0].entries[0].result is Result.FAIL


def test_a_partial_run_is_never_indexed(five_runs, monkeypatch):
    run = five_runs / 'local-slurm' / stamp(5)
    (run / 'INCOMPLETE').write_text('interrupted: SIGTERM\n')
    history.node_history(five_runs)
    loads = counting_loads(monkeypatch)
    history.node_history(five_runs)
    assert [p.rsplit('/', 1)[1] for p in loads] == [stamp(5)]


@pytest.mark.parametrize('damage', ['garbage', 'another version', 'not writable'])
def test_a_damaged_or_unwritable_index_is_no_harm(five_runs, monkeypatch, damage):
    first = _as_text(history.node_history(five_runs))
    index = five_runs / history_index.INDEX_FILE
    if damage == 'garbage':
        index.write_bytes(b'not a database' * 100)
    elif damage == 'another version':
        with sqlite3.connect(index) as db:
            db.execute(f'PRAGMA user_version = {history_index.VERSION + 1}')
    else:                       # where it cannot be (root writes whatever a mode says)
        index.unlink()
        index.mkdir()
    loads = counting_loads(monkeypatch)
    assert _as_text(history.node_history(five_runs)) == first
    assert len(loads) == 5, 'read from the documents'
    loads.clear()
    assert _as_text(history.node_history(five_runs)) == first
    assert len(loads) == (5 if damage == 'not writable' else 0), 'rebuilt, where it can be'


def test_a_multi_node_case_belongs_to_no_node(tmp_path):
    results = tmp_path / 'results'
    run = reframe_run(results, stamp(1), {'n1': (8.0, OK)})
    text = (run / 'report.json').read_text().replace('"job_nodelist": ["n1"]',
                                                     '"job_nodelist": ["n1", "n2"]')
    (run / 'report.json').write_text(text)
    assert history.node_history(results).nodes == {}


def test_a_site_filter_and_a_running_run(tmp_path):
    results = tmp_path / 'results'
    reframe_run(results, stamp(1), {'n1': (8.0, OK)})
    reframe_run(results, stamp(2), {'x1': (8.0, OK)}, site='other')
    assert list(history.node_history(results, site='other').nodes) == ['x1']
    assert sorted(history.node_history(results).nodes) == ['n1', 'x1']


def test_metric_noise_counts_only_clean_entries(five_runs):
    # Every passing case measured 8.0, every failing one 7.5 (n1 in runs 2 and 4, the
    # latter in a try a retry hid; n2 in run 3): the clean values alone have no spread.
    noise = history.metric_noise(history.node_history(five_runs))
    assert noise[('local-slurm:x86', 'MemTest', 'measured_speed')] == 0.0
    # The last 2 runs: n1's run 4 is not clean, so n1 has one value, n2 and n3 two each:
    # 2 degrees of freedom, fewer than NOISE_MIN_DF (3): no noise measured.
    assert history.NOISE_MIN_DF == 3
    assert history.metric_noise(history.node_history(five_runs, last=2)) == {}
    # A run left out (the one being judged) is not counted.
    h = history.node_history(five_runs, last=3)
    assert history.metric_noise(h, exclude={f'local-slurm/{stamp(5)}'}) == {}


def test_an_index_another_command_is_writing_costs_at_most_its_wait(five_runs, monkeypatch):
    '''Two commands read one store at once: the one that finds the index being written
    reads the documents, writes nothing, and waits at most history_index.BUSY_S.'''
    first = _as_text(history.node_history(five_runs))
    (five_runs / history_index.INDEX_FILE).unlink()
    other = sqlite3.connect(five_runs / history_index.INDEX_FILE, isolation_level=None)
    other.execute('BEGIN EXCLUSIVE')          # another command, writing it now
    try:
        loads = counting_loads(monkeypatch)
        assert _as_text(history.node_history(five_runs)) == first
        assert len(loads) == 5
    finally:
        other.execute('ROLLBACK')
        other.close()
    loads.clear()
    history.node_history(five_runs)           # written now,
    assert len(loads) == 5
    loads.clear()
    history.node_history(five_runs)           # and read from
    assert loads == []
