'''`cobalt-bench nodes`: each node's last runs, the flaky ones marked, on a store built from
the recorded real run (plugins.stores); exit statuses 0, 1 (a flaky node), 2, 3; what the
store says shown, never obeyed.'''

import pytest

from cobalt_bench.store.result import Result
from plugins.checkout import cobalt_cli as cobalt
from plugins.stores import reframe_run, stamp

OK, BAD = Result.PASS, Result.FAIL


pytestmark = pytest.mark.usefixtures('no_store_settings')


@pytest.fixture
def store(tmp_path):
    '''Three runs: n1 fails in two of them, n2 in one, n3 in none.'''
    results = tmp_path / 'results'
    for day, bad in ((1, {'n1', 'n2'}), (2, set()), (3, {'n1'})):
        reframe_run(results, stamp(day), {n: (7.0 if n in bad else 8.0, BAD if n in bad
                                              else OK) for n in ('n1', 'n2', 'n3')})
    return results


def test_nodes_lists_history_across_runs_and_marks_the_flaky_node(store):
    rc, out, err = cobalt('nodes', '--results', store)
    assert rc == 1, out + err
    lines = out.splitlines()
    assert lines[0].startswith(f'results store: {store} (3 run(s) read)')
    n1 = lines.index('n1  FLAKY: failed in 2 of its last 3 runs')
    n2 = lines.index('n2  failed in 1 of its last 3 runs')
    n3 = lines.index('n3  failed in 0 of its last 3 runs')
    assert n1 < n2 < n3
    # Newest run first, each with its date, check, partition, result and key metrics.
    block = lines[n1 + 1:n2]
    assert block[0] == f'  2026-11-03 00:00:00  local-slurm/{stamp(3)}  (failed)'
    assert block[1].split()[:3] == ['MemTest', 'local-slurm:x86', 'fail']
    assert 'measured_speed=7 Gbit/s' in block[1]
    assert [b.split()[2] for b in block if b.startswith('  20')] == [
        f'local-slurm/{stamp(d)}' for d in (3, 2, 1)]
    assert 'flaky node(s): n1' in err


def test_flaky_only_node_and_window(store):
    rc, out, _ = cobalt('nodes', '--results', store, '--flaky')
    assert rc == 1 and 'n1  FLAKY' in out and 'n2' not in out and 'n3' not in out
    rc, out, _ = cobalt('nodes', '--results', store, '--node', 'n3')
    assert rc == 0 and 'n3  failed in 0 of its last 3 runs' in out and 'n1' not in out
    # Within its last 2 runs n1 failed once: not flaky.
    rc, out, _ = cobalt('nodes', '--results', store, '--last', '2')
    assert rc == 0 and 'n1  failed in 1 of its last 2 runs' in out and 'FLAKY' not in out
    rc, out, _ = cobalt('nodes', '--results', store, '--fails', '1', '--last', '2')
    assert rc == 1 and 'n1  FLAKY' in out
    rc, out, _ = cobalt('nodes', '--results', store, '--site', 'elsewhere')
    assert rc == 0 and out.startswith('no node of site elsewhere')


@pytest.mark.parametrize('args', [('--last', '0'), ('--last', 'x'), ('--fails', '-1'),
                                  ('--fails', '6', '--last', '5'), ('--node',),
                                  ('--results', ''), ('extra',)])
def test_bad_arguments_exit_2(store, args):
    rc, out, err = cobalt('nodes', '--results', store, *args)
    assert rc == 2 and 'Traceback' not in err, err


def test_no_store_exits_3(tmp_path):
    rc, _, err = cobalt('nodes', '--results', tmp_path / 'none')
    assert rc == 3 and 'no such directory' in err


def test_names_from_the_store_are_shown_not_obeyed(tmp_path):
    results = tmp_path / 'results'
    reframe_run(results, stamp(1), {'n1\x1b[2J\rok': (8.0, OK)})
    rc, out, _ = cobalt('nodes', '--results', results)
    assert rc == 0 and '\x1b' not in out and '\r' not in out
    assert 'n1\\x1b[2J\\rok  failed in 0 of its last 1 runs' in out


def test_help_names_the_exit_statuses():
    rc, out, _ = cobalt('nodes', '--help')
    assert rc == 0 and 'exit status: 0 listed, no node listed is flaky; 1 a node' in out
    assert '%.nid=NODE' in out
