'''cb-linktest as a user runs it: real MPI runs with 2, 4 and 6 ranks on this machine
(mpirun), the matrix file, payload verification, a slow link found, the schedule plan at
scale, and bad input. (Its runs on the local Slurm cluster's two nodes:
tests/integration/slurm/; its ReFrame check: tests/integration/reframe/; the report:
tests/python/linktest/.)'''

import json
import os
import re
import subprocess
import time
import zipfile

import numpy as np
import pytest

from plugins.checkout import MPI_ENV, ROOT, repo_version, results_block
from plugins.kernels import check_matrix, expected_pairs, load_npz

LINKTEST = os.path.join(ROOT, 'bin', 'cb-linktest')
REPORT = os.path.join(ROOT, 'bin', 'cb-linktest-report')
C_TEST = os.path.join(ROOT, 'build', 'tests', 'test_linktest')
# More ranks than cores need --oversubscribe (this machine has 2); root may run Open
# MPI's mpirun only when it says so (MPI_ENV).
SMALL = ['-w', '2', '-n', '10', '-s', '65536']


def built():
    if not os.access(LINKTEST, os.X_OK):
        pytest.skip('bin/cb-linktest is not built (mpicc missing, or run make)')


def run(*args, env=None, timeout=120):
    built()
    e = dict(os.environ, **MPI_ENV)
    e.update(env or {})
    return subprocess.run([LINKTEST, *args], capture_output=True, text=True, timeout=timeout,
                          env=e)


def mpirun(n, *args, env=None, timeout=180, prefix=()):
    built()
    e = dict(os.environ, **MPI_ENV)
    e.update(env or {})
    return subprocess.run(['mpirun', '--oversubscribe', '-n', str(n), *prefix, LINKTEST, *args],
                          capture_output=True, text=True, timeout=timeout, env=e)


# ---- help, version, bad input (exit 2) ----------------------------------------------------

def test_help_and_version():
    r = run('--help')
    assert r.returncode == 0
    for word in ('--num-warmup-messages', '--num-messages', '--size-messages', '--bisection',
                 '--bidirectional', '--unidirectional', '--num-slowest', '--check-buffers',
                 '--group-processes-by-hostname', '--randomize-steps', '--plan', 'Exit status',
                 'CB_LINKTEST_DELAY', '.npz'):
        assert word in r.stdout, word
    r = run('--version')
    version = repo_version()
    assert r.returncode == 0 and r.stdout.startswith(f'cb-linktest (cobalt-bench) {version}')


@pytest.mark.parametrize('args, message', [
    (['-n', '1', '-s', '8'], '--num-warmup-messages (-w) is required'),
    (['-w', '1', '-s', '8'], '--num-messages (-n) is required'),
    (['-w', '1', '-n', '1'], '--size-messages (-s) is required'),
    (['-w', '1', '-n', '1', '-s', '0'], "invalid value '0' for --size-messages"),
    (['-w', '1', '-n', '1', '-s', '-8'], "invalid value '-8' for --size-messages"),
    # sizes take binary units (16M, 16MB = 16 MiB) but no fractions
    (['-w', '1', '-n', '1', '-s', '1.5M'], 'expected a size in bytes'),
    (['-w', '1', '-n', '1', '-s', '4294967296'], 'must be between 1 and 2147483647'),
    (['-w', '1', '-n', '0', '-s', '8'], "invalid value '0' for --num-messages"),
    (['-w', '1', '-n', '1', '-s', '8', '--unidirectional', '--bidirectional'], 'exclude each other'),
    (['-w', '1', '-n', '1', '-s', '8', '--mode', 'tcp'], 'this build supports [mpi]'),
    (['-w', '1', '-n', '1', '-s', '8', '-o', '/nonexistent/x.npz'], 'cannot write --output'),
    (['--plan', '7'], 'must be even'),
    (['--plan', '1000', '--plan-print'], 'up to 256 ranks'),
    (['--plan', '8', '--plan-hosts', '2'], '--group-processes-by-hostname'),
    (['-w', '1', '-n', '1', '-s', '8', '--frobnicate'], "unknown option '--frobnicate'"),
])
def test_bad_input_exits_2(args, message):
    r = run(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr


def test_odd_rank_count_exits_2(tmp_path):
    for n in (1, 3):
        r = mpirun(n, *SMALL, '-o', str(tmp_path / 'x.npz'))
        assert r.returncode == 2, r.stdout + r.stderr
        assert f'needs an even number of ranks, got {n}' in r.stderr
        assert r.stderr.count('needs an even number') == 1  # rank 0 only
    assert not os.listdir(tmp_path)


def test_usage_error_under_mpirun_printed_once():
    r = mpirun(4, '-w', '1', '-n', '1')
    assert r.returncode == 2
    assert r.stderr.count('--size-messages (-s) is required') == 1


# ---- the plan: schedule without MPI -------------------------------------------------------

def plan(*args, timeout=60):
    r = run('--plan', *args, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    fields = dict(re.findall(r'^([A-Z][\w ]+?):\s+(.*)$', r.stdout, re.M))
    return r, fields


def test_plan_print_is_a_valid_schedule():
    # Checked here independently of the C checker: parse the listed pairs.
    for n, bisection in ((6, False), (10, False), (8, True), (12, True)):
        r, f = plan(str(n), '--plan-print', *(['--bisection'] if bisection else []))
        steps = re.findall(r'^step (\d+): (.*)$', r.stdout, re.M)
        assert len(steps) == (n // 2 if bisection else n - 1)
        seen = []
        for _, pairs in steps:
            step_pairs = [tuple(map(int, p.split('-'))) for p in pairs.split()]
            ranks = [r for p in step_pairs for r in p]
            assert len(ranks) == len(set(ranks)) == n  # every rank once per step
            seen += step_pairs
        assert len(seen) == len(set(seen))
        assert set(seen) == expected_pairs(n, bisection)
        assert f['Coverage'] == 'OK'


def test_plan_grouped_by_host():
    r, f = plan('12', '--group-by-hostname', '--plan-hosts', '3', '--plan-print')
    seen = [tuple(map(int, p.split('-'))) for line in re.findall(r'^step \d+: (.*)$', r.stdout, re.M)
            for p in line.split()]
    hosts = [r * 3 // 12 for r in range(12)]
    assert sorted(seen) == sorted(expected_pairs(12, hosts=hosts))
    assert f['Coverage'] == 'OK'


@pytest.mark.parametrize('n', ['1000', '4096'])
def test_plan_exhaustive(n):
    for extra in ([], ['--bisection'], ['--randomize-steps']):
        r, f = plan(n, *extra)
        assert f['Coverage'] == 'OK'
        assert f['Check'].startswith('exhaustive')
        steps = int(n) // 2 if extra == ['--bisection'] else int(n) - 1
        assert f['Steps'].split()[0] == str(steps)


def test_plan_100000_in_seconds():
    for extra in ([], ['--bisection']):
        t0 = time.monotonic()
        r, f = plan('100000', *extra)
        assert time.monotonic() - t0 < 10
        assert f['Coverage'] == 'OK'
        assert f['Check'].startswith('sampled')
        assert f['Steps'].split()[0] == ('50000' if extra else '99999')
        assert f['Pairs to test'] == ('2500000000' if extra else '4999950000')


# ---- real MPI runs on this machine ------------------------------------------------------------

@pytest.mark.parametrize('n, extra', [
    (2, []),
    (4, []),
    (6, []),
    (2, ['--unidirectional']),
    (4, ['--bisection', '--bidirectional']),
    (6, ['--serial-tests', '--randomize-steps', '--seed', '7']),
])
def test_mpirun_all_pairs(n, extra, tmp_path):
    out, js = tmp_path / 'm.npz', tmp_path / 'm.json'
    r = mpirun(n, *SMALL, *extra, '-o', str(out), '--json', str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    bisection = '--bisection' in extra
    pairs = expected_pairs(n, bisection)
    data = check_matrix(out, n, pairs)
    steps = n // 2 if bisection else n - 1
    # one progress line per step, with an estimate of the time left
    progress = re.findall(r'^Step +(\d+)/(\d+): .* ETA [0-9.]+ s$', r.stdout, re.M)
    assert [int(s) for s, _ in progress] == list(range(1, steps + 1))
    assert all(int(total) == steps for _, total in progress)
    # the results block ends the output; its figures agree with the JSON document
    block = results_block(r.stdout)
    assert block['Pairs tested'] == f'{len(pairs)} of {len(pairs)}'
    assert block['Own verdict'] == "PASSED (its own threshold, not the site's)"
    doc = json.loads(js.read_text())
    assert doc['test'] == 'cb-linktest' and doc['compliance']['passed'] is True
    m = doc['metrics']
    assert m['pairs_tested']['value'] == len(pairs) == m['pairs_expected']['value']
    assert m['min_bandwidth']['unit'] == 'Gbit/s' and m['max_time']['unit'] == 'us'
    assert abs(float(block['Measured speed'].split()[0]) - m['min_bandwidth']['value']) < 0.006
    assert m['min_bandwidth_bytes']['value'] == pytest.approx(m['min_bandwidth']['value'] * 1e9 / 8)
    # the parallel figures are the matrix's
    t = data['time'][np.isfinite(data['time'])]
    assert m['parallel_max_time']['value'] == pytest.approx(t.max() * 1e6)
    assert m['min_time']['value'] == pytest.approx(t.min() * 1e6)
    assert m['avg_bandwidth']['value'] == pytest.approx(np.mean(65536 * 8 / t / 1e9) , rel=1e-9)
    # min bandwidth and max time describe the same (slowest) pair
    assert m['min_bandwidth']['value'] == pytest.approx(65536 * 8 / m['max_time']['value'] / 1e3)
    # retested: the slowest pairs, slowest first, with their first time from the matrix
    retested = data['slowest_pairs']
    assert len(retested) == min(10, len(pairs))
    first = data['slowest_time']
    assert list(first) == sorted(first, reverse=True)
    for (a, b), t_first in zip(retested, first):
        assert data['time'][a, b] == t_first
    assert np.all(data['retest_time'] > 0)
    meta = data['meta']
    assert meta['options']['size_messages'] == 65536 and meta['ranks'] == n
    assert meta['options']['pattern'] == ('bidirectional' if '--bidirectional' in extra else
                                          'unidirectional' if '--unidirectional' in extra else
                                          'semidirectional')
    # written atomically: nothing else left in the directory
    assert sorted(os.listdir(tmp_path)) == ['m.json', 'm.npz']


def test_issue_example_16mib(tmp_path):
    # The issue's example: 4 ranks, 3 warm-up and 25 timed messages of 16 MiB, then the
    # bisection + bidirectional variant, and the report's PNG.
    for extra in ([], ['--bisection', '--bidirectional']):
        out = tmp_path / 'big.npz'
        r = mpirun(4, '--num-warmup-messages', '3', '--num-messages', '25',
                   '--size-messages', '16777216', '-o', str(out), *extra, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert 'Summary:' in r.stdout and 'Serial retest' in r.stdout
        check_matrix(out, 4, expected_pairs(4, bool(extra)))
    rep = subprocess.run([REPORT, str(out), '--factor', '0'], capture_output=True, text=True,
                         timeout=120)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    png = tmp_path / 'big-heatmap.png'
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_check_buffers_catches_corruption(tmp_path):
    out, js = tmp_path / 'c.npz', tmp_path / 'c.json'
    r = mpirun(4, *SMALL, '--check-buffers', '-o', str(out), '--json', str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(js.read_text())['metrics']['verification_errors']['value'] == 0
    # One byte of rank 3's first payload flipped before it is sent: a corrupted transfer.
    r = mpirun(4, *SMALL, '--check-buffers', '-o', str(out), '--json', str(js),
               env={'CB_LINKTEST_CORRUPT': '3'})
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'BUFFER CHECK FAILED' in r.stdout
    doc = json.loads(js.read_text())
    assert doc['metrics']['verification_errors']['value'] == 1
    assert doc['metrics']['wrong_bytes']['value'] == 1
    assert doc['compliance']['passed'] is False
    errors = load_npz(out)['error_pairs']
    assert errors.shape == (1, 2) and 3 in errors[0]
    assert results_block(r.stdout)['Own verdict'].startswith('FAILED (its own')
    # the report says so, and fails
    rep = subprocess.run([REPORT, str(out), '--no-png'], capture_output=True, text=True, timeout=120)
    assert rep.returncode == 1 and 'PAYLOAD ERRORS' in rep.stdout


@pytest.mark.measures
def test_slow_link_is_found_and_retested(tmp_path):
    # Pair 1 <-> 2 made slow (50 ms on every message rank 1 sends it): the slowest pair in
    # the parallel test, still slow when retested alone, and flagged by the report (at least
    # 10 x the median even when a loaded machine makes every other pair wait for a time slice:
    # in CI, four ranks on two busy CPUs, a 5 ms delay, 2.5 ms a message one way, was only
    # 2 x the median).
    out, js = tmp_path / 'slow.npz', tmp_path / 'slow.json'
    r = mpirun(4, *SMALL, '--num-slowest', '2', '-o', str(out), '--json', str(js),
               env={'CB_LINKTEST_DELAY': '1-2:50000'})
    assert r.returncode == 0, r.stdout + r.stderr
    data = load_npz(out)
    assert tuple(data['slowest_pairs'][0]) == (1, 2)
    assert data['retest_time'][0] > 0.5e-3  # >= 1 ms per message, alone too
    assert re.search(r'slowest pair after the retest: 1 <-> 2, .*retested alone', r.stdout)
    doc = json.loads(js.read_text())
    assert doc['slowest_pairs'][0]['a'] == 1 and doc['slowest_pairs'][0]['b'] == 2
    # judged: the slow link (>= 1 ms per 64 KiB message: <= 0.53 Gbit/s) misses 1 Gbit/s,
    # and the run says so (exit 1)
    r2 = mpirun(4, *SMALL, '--no-output', '--min-bandwidth', '1',
                env={'CB_LINKTEST_DELAY': '1-2:50000'})
    assert r2.returncode == 1, r2.stdout + r2.stderr
    block = results_block(r2.stdout)
    assert block['Desired speed'] == '1.00 Gbit/s (every pair)'
    assert float(block['Measured speed'].split()[0]) < 0.53 and block['Own verdict'].startswith('FAILED')

    rep = subprocess.run([REPORT, str(out), '--prefix', str(tmp_path / 'rep')],
                         capture_output=True, text=True, timeout=120)
    assert rep.returncode == 1, rep.stdout + rep.stderr
    flagged = re.findall(r'^\s+(\d+) <-> (\d+) .*, ([0-9.]+) x median', rep.stdout.split('Flagged links')[1],
                         re.M)
    # slowest first: the slow link, far beyond the median (others may be flagged on a busy
    # machine, but not as far)
    assert flagged[0][:2] == ('1', '2') and float(flagged[0][2]) >= 10
    for name in ('rep-heatmap.png', 'rep-histogram.png'):
        assert (tmp_path / name).read_bytes()[:4] == b'\x89PNG'
    # --min-bandwidth below every link: nothing flagged
    rep = subprocess.run([REPORT, str(out), '--no-png', '--factor', '0', '--min-bandwidth', '1e-6'],
                         capture_output=True, text=True, timeout=120)
    assert rep.returncode == 0, rep.stdout


@pytest.mark.measures
def test_min_iterations_keeps_the_slowest(tmp_path):
    out = tmp_path / 'it.npz'
    r = mpirun(2, *SMALL, '--min-iterations', '3', '-o', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(re.findall(r'^Iteration \d+: ', r.stdout, re.M)) == 3
    assert load_npz(out)['meta']['iterations'] == 3


def test_npz_written_by_the_c_writer(tmp_path):
    # The C unit test writes sample files (one with ZIP64 records); NumPy and zipfile read them.
    if not os.access(C_TEST, os.X_OK):
        pytest.skip('build/tests/test_linktest not built (make ctest)')
    r = subprocess.run([C_TEST, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ('sample.npz', 'sample64.npz'):
        path = tmp_path / name
        with zipfile.ZipFile(path) as zf:
            assert zf.testzip() is None  # every CRC right
            assert sorted(zf.namelist()) == ['empty.npy', 'hosts.npy', 'meta.npy', 'pairs.npy',
                                             'time.npy']
        with np.load(path, allow_pickle=False) as z:
            t = z['time']
            assert t.shape == (3, 3) and np.all(np.isnan(np.diag(t)))
            assert t[0, 1] == 12 and t[2, 1] == 32
            assert list(z['hosts']) == ['node-a', 'n\u00e9', 'c']
            assert z['pairs'].tolist() == [[0, 1], [1, 2]]
            assert z['empty'].shape == (0, 2)
            assert json.loads(str(z['meta'].item())) == {'format': 'test'}
    assert not (tmp_path / 'broken.npz').exists()
