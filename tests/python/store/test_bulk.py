'''Reading a large run's files in worker processes (store.bulk): the same results in the
same order as one process reading them, from real worker processes; a worker killed is
not a lost file; Ctrl-C is the command's alone; and a run read either way is the same.'''

import gc
import json
import os
import signal

import pytest

from cobalt_bench.store import bulk, job_record, reader
from plugins.checkout import DATA

MANY = 64           # items, with MIN_PARALLEL lowered below it: workers are used


def _use_workers(monkeypatch):
    '''Workers for any number of items, a few per task, two of them even on one CPU.'''
    monkeypatch.setattr(bulk, 'MIN_PARALLEL', 2)
    monkeypatch.setattr(bulk, 'CHUNK', 5)
    monkeypatch.setattr(bulk, 'usable_cpus', lambda: 2)


@pytest.fixture
def parallel(monkeypatch):
    _use_workers(monkeypatch)


def _pid_and_square(n):
    return os.getpid(), n * n


def test_results_come_in_order_from_worker_processes(parallel):
    out = list(bulk.map_items(_pid_and_square, range(MANY)))
    assert [sq for _, sq in out] == [n * n for n in range(MANY)]
    pids = {pid for pid, _ in out}
    assert os.getpid() not in pids and pids, pids


def test_few_items_are_read_here(monkeypatch):
    monkeypatch.setattr(bulk, 'usable_cpus', lambda: 2)
    out = list(bulk.map_items(_pid_and_square, range(bulk.MIN_PARALLEL - 1)))
    assert {pid for pid, _ in out} == {os.getpid()}


_PARENT = os.getpid()


def _die_in_a_worker(n):
    # Item 7, in a worker: killed as the OOM killer would. Read here: a square.
    if n == 7 and os.getpid() != _PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return os.getpid(), n * n


def test_a_worker_killed_loses_no_item(parallel):
    out = list(bulk.map_items(_die_in_a_worker, range(MANY)))
    assert [sq for _, sq in out] == [n * n for n in range(MANY)]
    assert out[7][0] == os.getpid()     # the killed worker's item, read here


def _sigint_handler(_):
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_workers_leave_ctrl_c_to_the_command(parallel):
    assert all(bulk.map_items(_sigint_handler, range(MANY)))
    assert signal.getsignal(signal.SIGINT) != signal.SIG_IGN


def _fails_at_9(n):
    if n == 9:
        raise ValueError('item 9')
    return n


def test_a_bug_in_a_worker_is_raised_not_hidden(parallel):
    with pytest.raises(ValueError, match='item 9'):
        list(bulk.map_items(_fails_at_9, range(MANY)))


def test_the_gc_is_paused_in_the_block_and_what_it_made_is_frozen_after():
    assert gc.isenabled()
    try:
        with bulk.paused_gc():
            assert not gc.isenabled()
            made = [[] for _ in range(1000)]
        assert gc.isenabled() and gc.get_freeze_count() >= len(made)
        with pytest.raises(KeyError):
            with bulk.paused_gc():
                raise KeyError
        assert gc.isenabled()
    finally:
        gc.unfreeze()       # the rest of the tests collect as before


def _job_dir(where, n):
    '''n mem-test job documents with their judgement records, one of them damaged, one
    somebody else's JSON.'''
    doc = json.loads((DATA / 'store' / 'mem-test.json').read_text())
    where.mkdir()
    for i in range(n):
        doc['host'] = f'n{i:03d}'
        doc['metrics']['measured_speed']['value'] = 7.9 + i / 1000
        (where / f'mem-test-{100 + i}.json').write_text(json.dumps(doc))
        (where / f'mem-test-{100 + i}.judged.json').write_text(json.dumps(
            {'partition': f'local:p{i % 3}', 'command': f'mem-test --run {i}',
             'exit_status': {'code': i % 2, 'signal': None}}))
    (where / 'mem-test-100.json').write_text('{"test": "mem-test", "metrics": {')
    (where / 'notes.json').write_text('{"somebody": "else"}')
    return where


def _seen(run):
    return [(c.check, c.jobid, c.nodes, c.result, [(m.name, m.value) for m in c.metrics],
             c.judged_partition, c.command, c.exit_status, [str(d) for d in c.damaged])
            for c in run.cases]


def test_a_run_read_by_workers_is_the_run_read_here(tmp_path, monkeypatch):
    path = str(_job_dir(tmp_path / 'jobs', MANY))
    here = job_record.with_job_judgements(reader.load_run(path))[0]
    _use_workers(monkeypatch)
    workers = job_record.with_job_judgements(reader.load_run(path))[0]
    assert _seen(workers) == _seen(here)
    assert len(here.cases) == MANY and len(here.damaged) == 1
    assert {c.judged_partition for c in here.cases if c.docs} == \
        {'local:p0', 'local:p1', 'local:p2'}
