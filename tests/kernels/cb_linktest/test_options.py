'''cb-linktest speaks JSC LinkTest: every option of LinkTest's usage document
(../shared/spec/linktest-usage.txt), run under mpirun with 4 ranks, with a check of what it
does (the matrix, the timings, the memory, the payloads), not only that it parses.

The slow links come from the kernel's fault-injection hook CB_LINKTEST_DELAY (the lower rank
of a pair sleeps before each message it sends to the other), the corrupted transfers from
CB_LINKTEST_CORRUPT=R[:K] (one byte of timed message K that rank R sends first); both are
documented in cb-linktest --help.'''

import json
import os
import re
import subprocess
import zlib

import numpy as np
import pytest

from plugins.checkout import MPI_ENV, ROOT, results_block
from plugins.kernels import load_npz

LINKTEST = os.path.join(ROOT, 'bin', 'cb-linktest')
SMALL = ['-w', '2', '-n', '10', '-s', '65536']
USAGE = os.path.join(os.path.dirname(ROOT), 'shared', 'spec', 'linktest-usage.txt')
# the options of the usage document's option list
DOC_OPTIONS = ['--help', '--version', '--mode', '--num-warmup-messages', '--num-messages',
               '--size-messages', '--output', '--no-sion-file', '--parallel-sion-file',
               '--num-slowest', '--min-iterations', '--min-runtime', '--memory-buffer-allocator',
               '--all-to-all', '--unidirectional', '--bidirectional', '--bisection', '--serial-tests',
               '--randomize-steps', '--seed-randomize-steps', '--use-gpu-memory', '--multi-buffer',
               '--num-multi-buffer', '--randomize-buffers', '--seed-randomize-buffers',
               '--check-buffers', '--num-randomize-tasks', '--seed-randomize-tasks',
               '--group-processes-by-hostname']


def built():
    if not os.access(LINKTEST, os.X_OK):
        pytest.skip('bin/cb-linktest is not built (mpicc missing, or run make)')


def mpirun(*args, env=None, timeout=180, exe=None, n=4):
    built()
    e = dict(os.environ, **MPI_ENV)
    for k in list(e):
        if k.startswith('CB_LINKTEST_') or k == 'LINKTEST_VCLUSTER_IMPL':
            del e[k]
    e.update(env or {})
    return subprocess.run(['mpirun', '--oversubscribe', '-n', str(n), exe or LINKTEST, *args],
                          capture_output=True, text=True, timeout=timeout, env=e)


def ok(r):
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def settings(stdout):
    '''The settings block: "Name: value" lines between the two rules.'''
    block = re.search(r'^-+ cb-linktest settings -+\n(.*?)^-+$', stdout, re.M | re.S).group(1)
    return dict(re.findall(r'^([A-Z][\w ()]+?):\s+(.*)$', block, re.M))


def timings(stderr):
    '''LinkTest's monitoring lines: timings[000] [phase] t= X unit -> seconds.'''
    scale = {'us': 1e-6, 'ms': 1e-3, 's': 1.0}
    return {name: float(v) * scale[u]
            for name, v, u in re.findall(r'^timings\[000\] \[([^\]]+)\] t= ([0-9.]+) (us|ms|s)$', stderr, re.M)}


def task_memory(stderr):
    '''task[NNNNNN] on HOST (H) mem= ... -> {rank: (rss, peak, locked, thp) KiB}.'''
    rows = re.findall(r'^task\[(\d{6})\] on \S+ \(\s*\d+\) mem= ([0-9.]+) kiB peak= ([0-9.]+) kiB '
                      r'locked= ([0-9.]+) kiB thp= ([0-9.]+) kiB$', stderr, re.M)
    return {int(r): tuple(map(float, v)) for r, *v in rows}


def pairs_of(t):
    n = t.shape[0]
    return {(a, b) for a in range(n) for b in range(a + 1, n) if np.isfinite(t[a, b])}


ALL4 = {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}
HALVES4 = {(0, 2), (0, 3), (1, 2), (1, 3)}


# ---- -h, -v, -m ---------------------------------------------------------------------------

def test_help_lists_every_option_of_the_usage_document_once():
    r = ok(mpirun('-h'))
    assert r.stdout.count('Usage:') == 1  # rank 0 only, as LinkTest needs no parallel start
    for opt in DOC_OPTIONS:
        assert opt in r.stdout, opt
    if os.path.exists(USAGE):  # the document's list itself, where the checkout has it
        doc = open(USAGE).read()
        listed = set(re.findall(r'^(?:-\w/)?(--[a-z-]+)', doc.split('Possible options')[1]
                                .split('* This build')[0], re.M))
        assert listed == set(DOC_OPTIONS)


def test_version_once():
    r = ok(mpirun('-v'))
    assert r.stdout.count('cb-linktest (cobalt-bench)') == 1
    r = ok(mpirun('--version'))
    assert r.stdout.count('cb-linktest (cobalt-bench)') == 1


def test_mode(tmp_path):
    r = ok(mpirun(*SMALL, '--no-output', '-m', 'mpi'))
    assert settings(r.stdout)['Transport layer'].startswith('mpi (from --mode')
    r = ok(mpirun(*SMALL, '--no-output', '--mode', 'mpi', env={'LINKTEST_VCLUSTER_IMPL': 'tcp'}))
    assert settings(r.stdout)['Transport layer'].startswith('mpi (from --mode')  # --mode wins
    r = ok(mpirun(*SMALL, '--no-output', env={'LINKTEST_VCLUSTER_IMPL': 'mpi'}))
    assert settings(r.stdout)['Transport layer'].startswith('mpi (from LINKTEST_VCLUSTER_IMPL')
    for args, env, where in ((['-m', 'tcp'], {}, '--mode'),
                             (['--mode', 'ucp'], {}, '--mode'),
                             ([], {'LINKTEST_VCLUSTER_IMPL': 'ibverbs'}, 'LINKTEST_VCLUSTER_IMPL')):
        r = mpirun(*SMALL, '--no-output', *args, env=env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert 'this build supports [mpi]' in r.stderr and where in r.stderr
        assert r.stderr.count('this build supports') == 1
    # LinkTest's linktest.LAYER executables
    exe = tmp_path / 'cb-linktest.tcp'
    exe.symlink_to(LINKTEST)
    r = mpirun(*SMALL, '--no-output', exe=str(exe))
    assert r.returncode == 2 and "'tcp' (the executable's name)" in r.stderr
    exe = tmp_path / 'cb-linktest.mpi'
    exe.symlink_to(LINKTEST)
    r = ok(mpirun(*SMALL, '--no-output', exe=str(exe)))
    assert "from the executable's name" in settings(r.stdout)['Transport layer']


# ---- -w, -n, -s ---------------------------------------------------------------------------

def main_test_and_pair_time(tmp_path, w, n, delay_us):
    '''Pair 0-1 made slow (delay_us before every message rank 0 sends it): the main test's
    duration and the pair's time per message.'''
    out = tmp_path / f'w{w}n{n}.npz'
    r = ok(mpirun('-w', str(w), '-n', str(n), '-s', '1024', '--num-slowest', '0', '-o', str(out),
                  env={'CB_LINKTEST_DELAY': f'0-1:{delay_us}'}))
    return timings(r.stderr)['main test'], load_npz(out)['time'][0, 1]


@pytest.mark.measures
def test_warmup_messages_run_but_are_not_timed(tmp_path):
    d = 50e-3
    t0, pair0 = main_test_and_pair_time(tmp_path, 0, 4, int(d * 1e6))
    t10, pair10 = main_test_and_pair_time(tmp_path, 10, 4, int(d * 1e6))
    assert t10 - t0 > 0.7 * 10 * d  # ten more slow messages were sent ...
    for t in (pair0, pair10):  # ... and the time per message stays that of the timed ones
        assert d / 2 <= t < 0.75 * d  # ping-pong: one delay per round trip of two messages


@pytest.mark.measures
def test_num_messages_are_timed(tmp_path):
    d = 50e-3
    t4, pair4 = main_test_and_pair_time(tmp_path, 1, 4, int(d * 1e6))
    t12, pair12 = main_test_and_pair_time(tmp_path, 1, 12, int(d * 1e6))
    assert t12 - t4 > 0.7 * 8 * d
    assert d / 2 <= pair4 < 0.75 * d and d / 2 <= pair12 < 0.75 * d


def test_size_messages(tmp_path):
    mem = {}
    for size in ('1024', '32M'):
        out = tmp_path / f's{size}.npz'
        r = ok(mpirun('-w', '1', '-n', '3', '--size-messages', size, '-o', str(out)))
        mem[size] = task_memory(r.stderr)
        data = load_npz(out)
        nbytes = 1024 if size == '1024' else 32 << 20
        assert data['meta']['options']['size_messages'] == nbytes
        assert settings(r.stdout)['Message size'] == f'{nbytes} B'
    # every task holds a send and a receive buffer of the size, touched
    for rank in range(4):
        assert mem['32M'][rank][0] - mem['1024'][rank][0] > 2 * 32 * 1024 * 0.95


# ---- output: -o, --no-sion-file, --parallel-sion-file -------------------------------------

def test_output_and_default_name(tmp_path):
    built()
    r = subprocess.run(['mpirun', '--oversubscribe', '-n', '4', LINKTEST, *SMALL], cwd=tmp_path,
                       capture_output=True, text=True, timeout=180, env=dict(os.environ, **MPI_ENV))
    ok(r)
    assert sorted(os.listdir(tmp_path)) == ['cb-linktest.npz']
    assert pairs_of(load_npz(tmp_path / 'cb-linktest.npz')['time']) == ALL4
    out = tmp_path / 'sub.npz'
    ok(mpirun(*SMALL, '--output', str(out)))
    ok(mpirun(*SMALL, '-o', str(tmp_path / 'short.npz')))
    assert pairs_of(load_npz(out)['time']) == ALL4 and (tmp_path / 'short.npz').exists()


def test_no_sion_file_writes_no_results_file(tmp_path):
    built()
    r = subprocess.run(['mpirun', '--oversubscribe', '-n', '4', LINKTEST, *SMALL, '--no-sion-file'],
                       cwd=tmp_path, capture_output=True, text=True, timeout=180,
                       env=dict(os.environ, **MPI_ENV))
    ok(r)
    assert os.listdir(tmp_path) == []
    assert settings(r.stdout)['Results file'].startswith('none (--no-sion-file: LinkTest')
    assert 'write results' not in timings(r.stderr)


def test_parallel_sion_file_is_mapped(tmp_path):
    out = tmp_path / 'p.npz'
    r = ok(mpirun(*SMALL, '--parallel-sion-file', '-o', str(out)))
    assert '--parallel-sion-file: no parallel writer' in settings(r.stdout)['Results file']
    data = load_npz(out)
    assert data['meta']['options']['parallel_sion_file'] is True
    assert pairs_of(data['time']) == ALL4


# ---- retest, repetition ------------------------------------------------------------------

@pytest.mark.measures
def test_num_slowest(tmp_path):
    for k in (0, 2, 6):
        out = tmp_path / f'k{k}.npz'
        r = ok(mpirun(*SMALL, '--num-slowest', str(k), '-o', str(out),
                      env={'CB_LINKTEST_DELAY': '1-2:50000'}))  # >> CI's 3 ms noise
        data = load_npz(out)
        assert len(data['slowest_pairs']) == k
        assert len(re.findall(r'^ +\d+: \d+ <-> \d+ ', r.stdout, re.M)) == k
        if k:
            assert tuple(data['slowest_pairs'][0]) == (1, 2)  # the slow link first


def test_min_iterations(tmp_path):
    out = tmp_path / 'i.npz'
    r = ok(mpirun(*SMALL, '--min-iterations', '3', '-o', str(out)))
    assert len(re.findall(r'^Iteration \d+: ', r.stdout, re.M)) == 3
    assert len(re.findall(r'^Step +\d+/3:', r.stdout, re.M)) == 9
    assert load_npz(out)['meta']['iterations'] == 3


@pytest.mark.measures
def test_min_runtime(tmp_path):
    out = tmp_path / 'rt.npz'
    r = ok(mpirun(*SMALL, '--min-runtime', '1.5', '-o', str(out),
                  env={'CB_LINKTEST_DELAY': '0-1:20000'}))  # an iteration takes >= 0.2 s
    meta = load_npz(out)['meta']
    assert meta['duration_s'] >= 1.5
    assert meta['iterations'] >= 2
    assert len(re.findall(r'^Iteration \d+: ', r.stdout, re.M)) == meta['iterations']


# ---- buffers -----------------------------------------------------------------------------

def thp_mode():
    try:
        return re.search(r'\[(\w+)\]', open('/sys/kernel/mm/transparent_hugepage/enabled').read()).group(1)
    except OSError:
        return 'never'


@pytest.mark.parametrize('name, info', [
    ('DEFAULT', 'DEFAULT (posix_memalign'),
    ('aligned-memory_allocator', 'aligned-memory_allocator (aligned_alloc'),
    ('aligned', 'aligned-memory_allocator (aligned_alloc'),
    ('pinned-memory-map_allocator', 'pinned-memory-map_allocator (mmap'),
    ('POSIX_aligned-memory_allocator', 'POSIX_aligned-memory_allocator (posix_memalign, 4 KiB'),
    ('posix-aligned', 'POSIX_aligned-memory_allocator (posix_memalign, 4 KiB'),
    ('huge-pages', 'huge-pages (posix_memalign, 2 MiB aligned'),
])
def test_memory_buffer_allocator(name, info, tmp_path):
    size = 4 << 20
    r = ok(mpirun('-w', '1', '-n', '3', '-s', str(size), '--no-output', '--memory-buffer-allocator', name))
    assert f'info: Using {info}' in r.stderr
    assert settings(r.stdout)['Buffers'].startswith(info)
    mem = task_memory(r.stderr)
    assert len(mem) == 4
    two_buffers_kib = 2 * size / 1024
    for rss, peak, locked, thp in mem.values():
        if name.startswith('pinned'):
            if 'locked in memory by mlock' in r.stderr:
                assert locked >= two_buffers_kib
            else:
                assert 'mlock refused' in r.stderr
        else:
            assert locked < two_buffers_kib
        if thp_mode() == 'madvise':  # huge pages only where asked for
            if name in ('DEFAULT', 'huge-pages'):
                assert thp >= two_buffers_kib
            else:
                assert thp < two_buffers_kib


def test_huge_pages_for_small_messages_too():
    if thp_mode() != 'madvise':
        pytest.skip('transparent huge pages are not in madvise mode here')
    kib = {}
    for name in ('DEFAULT', 'huge-pages'):
        r = ok(mpirun(*SMALL, '--no-output', '--memory-buffer-allocator', name))
        kib[name] = [m[3] for m in task_memory(r.stderr).values()]
    assert all(t >= 2 * 2048 for t in kib['huge-pages'])  # each buffer on a 2 MiB page
    assert all(t < 2048 for t in kib['DEFAULT'])  # 64 KiB buffers: 4 KiB pages


def test_memory_buffer_allocator_bad_input():
    for args, msg in ((['--memory-buffer-allocator', 'tcmalloc'], "invalid value 'tcmalloc'"),
                      (['--memory-buffer-allocator', 'aligned', '--use-gpu-memory'], 'for host memory'),
                      (['--memory-buffer-allocator', 'huge-pages', '--no-huge-pages'], 'exclude each other')):
        r = mpirun(*SMALL, '--no-output', *args)
        assert r.returncode == 2 and msg in r.stderr, r.stderr
    # the document's spelling with underscores
    r = ok(mpirun(*SMALL, '--no-output', '--memory_buffer_allocator', 'aligned'))
    assert 'info: Using aligned-memory_allocator' in r.stderr


def test_multi_buffer(tmp_path):
    size = 4 << 20
    base = ['-w', '1', '-n', '8', '-s', str(size), '--no-output']
    one = task_memory(ok(mpirun(*base)).stderr)
    r = ok(mpirun(*base, '--multi-buffer', '--num-multi-buffer', '6'))
    assert 'info: Using DEFAULT' in r.stderr and '6 send + 6 receive buffers' in r.stderr
    assert settings(r.stdout)['Multiple buffers'].startswith('6 send and 6 receive buffers')
    six = task_memory(r.stderr)
    for rank in range(4):  # five more of each, touched
        assert six[rank][0] - one[rank][0] >= 0.95 * 2 * 5 * size / 1024
    # --multi-buffer alone: one buffer per message (the larger of -n and -w)
    r = ok(mpirun(*base, '--multi-buffer'))
    assert '8 send + 8 receive buffers' in r.stderr
    # --num-multi-buffer alone implies --multi-buffer (LinkTest's spelling too)
    r = ok(mpirun(*base, '--num_multi_buf', '3'))
    assert '3 send + 3 receive buffers' in r.stderr
    for k in ('1', '9'):
        r = mpirun(*base, '--num-multi-buffer', k)
        assert r.returncode == 2 and 'must be between 2 and 8' in r.stderr


def splitmix_bytes(seed, nbytes):
    '''The bytes cb-linktest writes from a seed (src/cb-linktest/exchange.c lt_fill_payload:
    word i = mix64(seed + i), mix64 = SplitMix64's finalizer, src/common/cb_hash.h).'''
    def mix64(x):
        with np.errstate(over='ignore'):
            x = x + np.uint64(0x9e3779b97f4a7c15)
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
            return x ^ (x >> np.uint64(31))
    s = mix64(np.uint64(seed))
    with np.errstate(over='ignore'):
        words = mix64(s + np.arange(nbytes // 8, dtype=np.uint64))
    return words.astype('<u8').tobytes()


def buffer_crc(stderr):
    return int(re.search(r"CRC-32 of rank 0's send buffer 0: 0x([0-9a-f]{8})", stderr).group(1), 16)


def test_randomize_buffers(tmp_path):
    r = ok(mpirun(*SMALL, '--no-output'))
    assert 'buffer contents: zeros' in r.stderr
    assert buffer_crc(r.stderr) == zlib.crc32(bytes(65536))
    crcs = {}
    for seed in ('1234567890', '42'):
        args = ['--seed-randomize-buffers', seed] if seed != '1234567890' else []  # the default
        r = ok(mpirun(*SMALL, '--no-output', '--randomize-buffers', *args))
        assert settings(r.stdout)['Buffer contents'].startswith('pseudo-random')
        crcs[seed] = buffer_crc(r.stderr)
        # rank 0's send buffer holds the bytes of the seed's generator
        assert crcs[seed] == zlib.crc32(splitmix_bytes(int(seed), 65536))
    assert crcs['42'] != crcs['1234567890']


# ---- --check-buffers ---------------------------------------------------------------------

@pytest.mark.parametrize('extra, corrupt, caught', [
    ([], '3:1', True),                 # the first timed message
    ([], '3:5', True),                 # one in the middle
    ([], '3:10', True),                # the last
    ([], '3', True),                   # default: the last
    (['--multi-buffer', '--num-multi-buffer', '3'], '3:4', True),   # in the second batch
    (['--multi-buffer', '--num-multi-buffer', '3'], '3:10', True),  # the last batch of one
    (['--bidirectional'], '2:6', True),
    (['--unidirectional'], '0:2', True),
    (['--unidirectional'], '3:2', False),  # rank 3 only receives in --unidirectional
])
def test_check_buffers_catches_any_timed_message(extra, corrupt, caught, tmp_path):
    js = tmp_path / 'c.json'
    r = mpirun(*SMALL, *extra, '--check-buffers', '--no-output', '--json', str(js),
               env={'CB_LINKTEST_CORRUPT': corrupt})
    doc = json.loads(js.read_text())
    m = doc['metrics']
    if not caught:
        assert r.returncode == 0, r.stdout + r.stderr
        assert m['verification_errors']['value'] == 0
        return
    assert r.returncode == 1, r.stdout + r.stderr
    k = int(corrupt.split(':')[1]) if ':' in corrupt else 10
    assert re.search(rf'BUFFER CHECK FAILED in step \d+: pair \d+ <-> \d+ received 1 wrong bytes '
                     rf'\(first in timed message {k}\)', r.stdout), r.stdout
    assert m['verification_errors']['value'] == 1 and m['wrong_bytes']['value'] == 1
    assert results_block(r.stdout)['Own verdict'].startswith('FAILED')


def test_check_buffers_clean_run_and_settings(tmp_path):
    js = tmp_path / 'c.json'
    r = ok(mpirun(*SMALL, '--check-buffers', '--no-output', '--json', str(js)))
    assert json.loads(js.read_text())['metrics']['verification_errors']['value'] == 0
    assert settings(r.stdout)['Check buffers'].startswith('every timed message')
    r = ok(mpirun(*SMALL, '--no-output', env={'CB_LINKTEST_CORRUPT': '3:1'}))  # not checked: not seen
    assert results_block(r.stdout)['Buffer errors'] == 'not checked (--check-buffers)'
    r = mpirun(*SMALL, '--no-output', '--check-buffers', env={'CB_LINKTEST_CORRUPT': '3:11'})
    assert r.returncode == 2 and 'CB_LINKTEST_CORRUPT' in r.stderr


# ---- --all-to-all ------------------------------------------------------------------------

def test_all_to_all(tmp_path):
    out, js = tmp_path / 'a.npz', tmp_path / 'a.json'
    r = ok(mpirun(*SMALL, '--all-to-all', '-o', str(out), '--json', str(js)))
    lines = re.findall(r'^All-to-all (before|after) the test: MPI_Alltoall of 65536 B per pair, 10 timed: '
                       r'avg .* slowest rank (\d) ([0-9.]+) (us|ms) per call', r.stdout, re.M)
    assert [w for w, *_ in lines] == ['before', 'after']
    t = timings(r.stderr)
    assert {'all-to-all before', 'all-to-all after', 'main test'} <= set(t)
    a2a = load_npz(out)['alltoall_time']
    assert a2a.shape == (2, 4) and np.all(a2a > 0)
    m = json.loads(js.read_text())['metrics']
    for k in (0, 1):
        assert m[('alltoall_before_time', 'alltoall_after_time')[k]]['value'] == pytest.approx(a2a[k].max() * 1e6)
        # each call sends 3 x 64 KiB per rank; the phase ran 2 + 10 of them
        bw = m[('alltoall_before_bandwidth', 'alltoall_after_bandwidth')[k]]['value']
        assert bw == pytest.approx(3 * 65536 * 8 / a2a[k].max() / 1e9)
        assert t[('all-to-all before', 'all-to-all after')[k]] >= 10 * a2a[k].min()
    # without it: none of that
    r = ok(mpirun(*SMALL, '-o', str(out)))
    assert 'All-to-all before' not in r.stdout and 'alltoall_time' not in load_npz(out)


# ---- patterns ----------------------------------------------------------------------------

@pytest.mark.parametrize('flag, lo, hi', [
    ([], 0.5, 0.75),                   # ping-pong: one delay per two messages
    (['--unidirectional'], 1.0, 1.5),  # one delay per message, one way
    (['--bidirectional'], 1.0, 1.5),   # one delay per exchange of a message each way
])
@pytest.mark.measures
def test_pattern_time_per_message(flag, lo, hi, tmp_path):
    d = 40e-3
    out = tmp_path / 'p.npz'
    r = ok(mpirun('-w', '1', '-n', '5', '-s', '1024', *flag, '--num-slowest', '0', '-o', str(out),
                  env={'CB_LINKTEST_DELAY': f'0-1:{int(d * 1e6)}'}))
    t = load_npz(out)['time'][0, 1]
    assert lo * d <= t < hi * d, t
    name = flag[0][2:] if flag else 'semidirectional'
    assert settings(r.stdout)['Communication pattern'].startswith(name)


def test_bidirectional_both_send_unidirectional_one(tmp_path):
    # rank 3 is the higher rank of its first pair: it sends in --bidirectional ...
    r = mpirun(*SMALL, '--bidirectional', '--check-buffers', '--no-output', env={'CB_LINKTEST_CORRUPT': '3:2'})
    assert r.returncode == 1 and 'BUFFER CHECK FAILED' in r.stdout
    # ... and only receives in --unidirectional
    r = ok(mpirun(*SMALL, '--unidirectional', '--check-buffers', '--no-output', env={'CB_LINKTEST_CORRUPT': '3:2'}))
    # LinkTest's example spelling --bidir (an unambiguous prefix)
    r = ok(mpirun(*SMALL, '--bidir', '--no-output'))
    assert settings(r.stdout)['Communication pattern'].startswith('bidirectional')
    r = mpirun(*SMALL, '--bidirectional', '--unidirectional', '--no-output')
    assert r.returncode == 2


def test_bisection(tmp_path):
    out = tmp_path / 'b.npz'
    for spelling in ('--bisection', '--bisect'):  # the document's example spells it --bisect
        r = ok(mpirun(*SMALL, spelling, '-o', str(out)))
        assert pairs_of(load_npz(out)['time']) == HALVES4
        assert len(re.findall(r'^Step +\d+/2:', r.stdout, re.M)) == 2


@pytest.mark.measures
def test_serial_tests_run_the_pairs_of_a_step_one_after_another(tmp_path):
    # 0-1 and 2-3 meet in the same step, both slow: in parallel the step takes one pair's
    # time, serially the sum
    d = 40e-3
    env = {'CB_LINKTEST_DELAY': f'0-1:{int(d * 1e6)},2-3:{int(d * 1e6)}'}
    args = ['-w', '0', '-n', '10', '-s', '1024', '--num-slowest', '0', '--no-output']
    par = timings(ok(mpirun(*args, env=env)).stderr)['main test']
    r = ok(mpirun(*args, '--serial-tests', env=env))
    ser = timings(r.stderr)['main test']
    assert par >= 10 * d and ser >= 2 * 10 * d
    assert ser - par > 0.6 * 10 * d
    assert 'one at a time (--serial-tests)' in settings(r.stdout)['Steps']


def step_of_slow_pair(stdout):
    '''The step (1-based, in execution order) whose slowest pair is 0<->1.'''
    steps = re.findall(r'^Step +(\d+)/\d+: .* max .*?, (\d+)<->(\d+)\)', stdout, re.M)
    return [int(k) for k, a, b in steps if (a, b) == ('0', '1')]


def plan_step_of_pair(seed):
    r = subprocess.run([LINKTEST, '--plan', '4', '--plan-print', '--randomize-steps', '--seed-randomize-steps',
                        str(seed)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    return [int(k) for k, pairs in re.findall(r'^step (\d+): (.*)$', r.stdout, re.M) if '0-1' in pairs.split()]


@pytest.mark.measures
def test_randomize_steps_follows_the_seed(tmp_path):
    built()
    env = {'CB_LINKTEST_DELAY': '0-1:50000'}  # >> the 3 ms a pair took in a busy CI
    r = ok(mpirun(*SMALL, '--no-output', env=env))
    assert step_of_slow_pair(r.stdout) == [3]  # in rank order 0-1 meet in the last step
    # seeds that move 0-1 elsewhere, found by the plan (no MPI); the run follows it
    seeds = [s for s in range(1, 40) if plan_step_of_pair(s) != [3]][:2]
    assert seeds
    for seed in seeds:
        r = ok(mpirun(*SMALL, '--no-output', '--randomize-steps', '--seed-randomize-steps', str(seed), env=env))
        assert step_of_slow_pair(r.stdout) == plan_step_of_pair(seed)
        assert 'randomized order' in settings(r.stdout)['Steps']
    # --randomize, the document's prose spelling
    r = ok(mpirun(*SMALL, '--no-output', '--randomize', '--seed-randomize-steps', str(seeds[0]), env=env))
    assert step_of_slow_pair(r.stdout) == plan_step_of_pair(seeds[0])


# ---- task IDs ------------------------------------------------------------------------------

def orders_from_stderr(stderr):
    return [list(map(int, ids.split())) for ids in re.findall(r'^info: task order \d+: rank -> ID: (.*)$',
                                                              stderr, re.M)]


def test_num_randomize_tasks(tmp_path):
    out = tmp_path / 't.npz'
    r = ok(mpirun(*SMALL, '--num-randomize-tasks', '3', '-o', str(out)))
    assert len(re.findall(r'^Task order \d of 4', r.stdout, re.M)) == 4
    assert len(re.findall(r'^Step +\d+/3:', r.stdout, re.M)) == 12  # four orders of three steps
    orders = orders_from_stderr(r.stderr)
    data = load_npz(out)
    assert data['task_order'].tolist() == orders and len(orders) == 3
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    assert any(o != [0, 1, 2, 3] for o in orders)
    # the same seed, the same orders; another seed, others
    again = orders_from_stderr(ok(mpirun(*SMALL, '--num-randomize-tasks', '3', '--no-output')).stderr)
    other = orders_from_stderr(ok(mpirun(*SMALL, '--num-randomize-tasks', '3', '--seed-randomize-tasks', '7',
                                         '--no-output')).stderr)
    assert again == orders and other != orders
    assert 'Mixing task order' in settings(r.stdout) and 'seed 29309775' in settings(r.stdout)['Mixing task order']


def test_num_randomize_tasks_with_bisection_tests_each_orders_halves(tmp_path):
    out = tmp_path / 'tb.npz'
    for seed in range(1, 30):
        r = ok(mpirun(*SMALL, '--bisection', '--num-randomize-tasks', '2', '--seed-randomize-tasks', str(seed),
                      '-o', str(out)))
        data = load_npz(out)
        want = set(HALVES4)
        for ids in data['task_order']:  # the ranks whose IDs fall in different halves
            want |= {(a, b) for a in range(4) for b in range(a + 1, 4) if (ids[a] < 2) != (ids[b] < 2)}
        assert pairs_of(data['time']) == want
        assert results_block(r.stdout)['Pairs tested'] == f'{len(want)} of {len(want)}'
        if want != HALVES4:
            break
    else:
        pytest.fail('no seed mixed the halves')


def test_group_processes_by_hostname(tmp_path):
    # two "hosts" on this machine: the host name comes from SLURMD_NODENAME where set
    built()
    out = tmp_path / 'g.npz'
    cmd = ['mpirun', '--oversubscribe']
    for host in ('hostA', 'hostB'):
        cmd += ['-n', '2', '-x', f'SLURMD_NODENAME={host}', LINKTEST, *SMALL, '-o', str(out),
                '--group-processes-by-hostname', ':']
    r = subprocess.run(cmd[:-1], capture_output=True, text=True, timeout=180, env=dict(os.environ, **MPI_ENV))
    ok(r)
    data = load_npz(out)
    assert list(data['hosts']) == ['hostA', 'hostA', 'hostB', 'hostB']
    assert pairs_of(data['time']) == HALVES4  # only pairs on different hosts
    assert ', on different hosts only' in settings(r.stdout)['Pairs']
    hosts = re.findall(r'^task\[\d{6}\] on (\S+) ', r.stderr, re.M)
    assert hosts == ['hostA', 'hostA', 'hostB', 'hostB']
    r = mpirun(*SMALL, '--no-output', '--group-processes-by-hostname')  # one host: nothing to test
    assert r.returncode == 2 and 'all 4 ranks are on one host' in r.stderr


# ---- GPU ------------------------------------------------------------------------------------

def gpu_visible():
    return subprocess.run(['sh', '-c', 'nvidia-smi -L'], capture_output=True).returncode == 0


@pytest.mark.parametrize('args', [['--use-gpu-memory'], ['--use-gpus'],
                                  ['--memory-buffer-allocator', 'CUDA_memory_allocator']])
def test_use_gpu_memory_without_a_gpu_exits_3(args, tmp_path):
    if gpu_visible():
        pytest.skip('a GPU is visible here')
    out = tmp_path / 'g.npz'
    r = mpirun(*SMALL, *args, '-o', str(out))
    assert r.returncode == 3, r.stdout + r.stderr
    assert re.search(r'--use-gpu-memory: rank 0 on \S+: (no GPU visible|no GPU support)', r.stderr), r.stderr
    assert r.stderr.count('--use-gpu-memory: rank') == 1
    assert not out.exists() and 'settings' not in r.stdout


# ---- monitoring on stderr -----------------------------------------------------------------

def test_monitoring_on_stderr(tmp_path):
    r = ok(mpirun(*SMALL, '-o', str(tmp_path / 'm.npz')))
    t = timings(r.stderr)
    for phase in ('setup', 'buffers', 'main test', 'search slow', 'test slow', 'write results', 'all'):
        assert phase in t, phase
    assert t['all'] >= t['main test'] + t['test slow']
    mem = task_memory(r.stderr)
    assert sorted(mem) == [0, 1, 2, 3]
    assert all(rss > 2 * 64 and peak >= rss for rss, peak, *_ in mem.values())
    data = load_npz(tmp_path / 'm.npz')
    assert data['task_memory_kib'].shape == (4, 4)
    assert data['task_memory_kib'][:, 0].tolist() == [mem[k][0] for k in range(4)]
    # stdout keeps the results: no monitoring lines there
    assert 'timings[' not in r.stdout and 'task[' not in r.stdout
