'''cb-linktest's account of its main test (issue 29): the JSON document's main_test object
(the wall time, its floor = the slowest pair's messaging per step summed over the steps, and
rank 0's overheads) and the "Main test:" line. No speed goals here: those are
bench/cb-linktest's sweep.'''

import json
import os
import re
import subprocess

import pytest

from plugins.checkout import MPI_ENV, ROOT

LINKTEST = os.path.join(ROOT, 'bin', 'cb-linktest')
KEYS = {'wall_s', 'floor_s', 'timed_floor_s', 'sync_s', 'sync_start_s', 'sync_wait_s',
        'buffer_check_s', 'steps'}


def main_test(tmp_path, n, *args, env=None):
    if not os.access(LINKTEST, os.X_OK):
        pytest.skip('bin/cb-linktest is not built (mpicc missing, or run make)')
    js = tmp_path / 'm.json'
    r = subprocess.run(['mpirun', '--oversubscribe', '-n', str(n), LINKTEST, *args, '--no-output',
                        '-q', '--num-slowest', '1', '--json', str(js)], capture_output=True,
                       text=True, timeout=180, env=dict(os.environ, **MPI_ENV, **(env or {})))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(js.read_text())
    return doc, r.stdout


def check_consistent(m, steps):
    assert set(m) == KEYS
    assert m['steps'] == steps
    assert 0 < m['timed_floor_s'] <= m['floor_s'] <= m['wall_s']
    assert 0 <= m['sync_start_s'] <= m['sync_s'] < m['wall_s']
    # rank 0's wait for the step's slowest pair is part of its time in the collectives
    assert 0 <= m['sync_wait_s'] <= m['sync_s'] - m['sync_start_s'] + 1e-9
    assert m['buffer_check_s'] >= 0


@pytest.mark.parametrize('n, extra, steps', [
    (4, [], 3),
    (6, ['--min-iterations', '2'], 10),
    (4, ['--check-buffers', '--unidirectional'], 3),
    (4, ['--serial-tests'], 3),
])
def test_main_test_in_the_document(tmp_path, n, extra, steps):
    doc, out = main_test(tmp_path, n, '-w', '2', '-n', '10', '-s', '64K', *extra)
    m = doc['main_test']
    check_consistent(m, steps)
    if '--check-buffers' not in extra:
        assert m['buffer_check_s'] == 0
    # a figure of the run, not a metric (the metrics are declared on the Python side)
    assert not any(k.startswith(('wall', 'floor', 'sync')) for k in doc['metrics'])
    # the human line comes after the summary and says the same
    assert out.index('Summary:') < out.index('Main test:')
    line = re.search(r'^Main test: .* wall, floor .* \(slowest pair per step, warm-up included\), '
                     r'overhead (-?[0-9.]+) %: sync .* before the messages, .* after them .*'
                     r'buffer checks .*, rest .*$', out, re.M)
    assert line, out
    assert float(line.group(1)) == pytest.approx(100 * (m['wall_s'] / m['floor_s'] - 1), abs=0.06)


def test_slow_link_raises_the_floor(tmp_path):
    # CB_LINKTEST_DELAY: the lower rank of pair 1 <-> 2 sleeps at least DELAY before each
    # message it sends, warm-up included (ping-pong: it sends every warm-up and timed
    # message of the pair). The step in which they meet lasts at least that long, so the
    # floor holds all of it and the timed floor the timed messages' part. 20 ms: beside
    # other work on 2 CPUs, 4 oversubscribed ranks' fast pair takes several ms per message
    # too (a scheduler slice each), which rank 0 then does not spend waiting.
    delay_us, warmup, timed = 20000, 3, 10
    doc, _ = main_test(tmp_path, 4, '-w', str(warmup), '-n', str(timed), '-s', '8',
                       env={'CB_LINKTEST_DELAY': f'1-2:{delay_us}'})
    m = doc['main_test']
    check_consistent(m, 3)
    assert m['floor_s'] >= (warmup + timed) * delay_us * 1e-6
    assert m['timed_floor_s'] >= timed * delay_us * 1e-6
    assert m['wall_s'] >= m['floor_s']
    # rank 0 (whose pair is fast) waited for the slow pair: that wait is no overhead
    assert m['sync_wait_s'] >= 0.5 * timed * delay_us * 1e-6
