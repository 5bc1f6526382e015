'''The kernels under hostile input and signals (issue 14): a table of bad option values
that each must end in exit 2 with a message naming the option (never a run, a crash, a
hang or a value that wrapped around), and real signals sent to running kernels, which
must stop, print a results block marked "Interrupted", leave a valid JSON document with
"interrupted": true and exit 128 + the signal's number.

The table is built from each kernel's options by type: every integer option gets the
same wrap-around, sign, space and NaN cases; every real number the NaN and infinity
cases; every list the empty-item cases. The kernels parse every number with the one
strict parser of src/common (cb_parse_u64, cb_parse_i64, cb_parse_f64, cb_list_next).

$CB_FAULTS_BIN runs the suite against another build (default: the checkout's bin/).
gpu-copy's option errors need no GPU: they come before CUDA. Its signal case uses the
host-memory simulation (build/tests/gpu-copy-sim, or $GPU_COPY_SIM) where it is built.'''

import json
import os
import re
import select
import signal
import subprocess
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get('CB_FAULTS_BIN') or os.path.join(ROOT, 'bin')
GPU_SIM = os.environ.get('GPU_COPY_SIM') or os.path.join(ROOT, 'build', 'tests', 'gpu-copy-sim')
MPI_ENV = {'OMPI_ALLOW_RUN_AS_ROOT': '1', 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM': '1'}
# Open MPI's mpirun (4.1) answers SIGINT or SIGTERM by waiting odls_base_sigkill_timeout
# seconds (1 by default), sending SIGTERM to every rank, waiting as long again and sending
# SIGKILL; meanwhile it forwards no output. On a loaded machine the ranks may need more
# than a second to report, so the signal tests give them 10 (src/cb-linktest/README.md).
MPI_SIGNAL_ENV = dict(MPI_ENV, OMPI_MCA_odls_base_sigkill_timeout='10')


def tool(name):
    path = os.path.join(BIN, name)
    if not os.access(path, os.X_OK):
        pytest.skip(f'{path} is not built')
    return path


# ---- bad values by type ---------------------------------------------------------------
# Each list holds values that no option of that type may take.
BAD_INT = ['', 'x', '1.5', '+1', ' 1', '1 ', '0x10', '1e3', '1,2', 'nan', 'inf',
           '99999999999999999999', '-99999999999999999999', '18446744073709551616']
BAD_U64 = ['', 'x', '-1', '+1', ' 1', '1.0', '1e3', '0x', 'nan',
           '18446744073709551616', '0x10000000000000000']
BAD_REAL = ['', 'x', 'nan', 'NaN', '-nan', 'inf', '-inf', 'infinity', '1e999', '0x1p3', ' 1',
            '1 ', '1,5', '1..2']
BAD_SIZE = ['', 'x', '-1', '+1', ' 1', '1.5M', '1 K', '16E', 'nan', '0x10',
            '18446744073709551616', '17179869184T']
BAD_DURATION = ['', 'x', '-1', '+1', ' 1', 'nan', 'inf', '1e999', '5 m', '1w', '0x10']

MEM_TEST = {
    'stations': BAD_INT, 'reduction': BAD_INT, 'small-block': BAD_INT, 'large-block': BAD_INT,
    'threads-per-domain': BAD_INT, 'input-rate': BAD_REAL, 'desired-rate': BAD_REAL,
    'threshold': BAD_REAL, 'packet-size': BAD_SIZE, 'sample-bytes': BAD_SIZE,
    'duration': BAD_DURATION,
}
SMP = {
    'dest-depth': BAD_INT, 'local-depth': BAD_INT, 'workers': BAD_INT, 'retries': BAD_INT,
    'port': BAD_INT, 'max-drops': BAD_INT, 'mkey': BAD_U64, 'min-rate': BAD_REAL,
    'duration': BAD_DURATION, 'timeout': BAD_DURATION,
}
LINKTEST = {
    'num-warmup-messages': BAD_INT, 'num-messages': BAD_INT, 'num-slowest': BAD_INT,
    'min-iterations': BAD_INT, 'plan': BAD_INT, 'seed-randomize-steps': BAD_U64,
    'min-bandwidth': BAD_REAL, 'max-time': BAD_REAL, 'size-messages': BAD_SIZE,
    'min-runtime': BAD_DURATION,
}
GPU_COPY = {
    'streams': BAD_INT, 'iterations': BAD_U64, 'alone-iterations': BAD_U64,
    'device-fraction': BAD_REAL, 'threshold': BAD_REAL, 'threshold-per-gpu': BAD_REAL,
    'device-buffer': BAD_SIZE, 'host-buffer': BAD_SIZE, 'chunk': BAD_SIZE,
}

# What else a run needs besides the option under test (operands, required options).
SMP_OPERANDS = ['--simulate=rtt=50us', '-d', '0.1', '1', 'NodeInfo']
LT_REQUIRED = ['-w', '1', '-n', '1', '-s', '8']


def typed_cases():
    for kernel, table, tail in (('mem-test', MEM_TEST, ['-d', '0.1']),
                                ('smp-mad-stress', SMP, SMP_OPERANDS),
                                ('cb-linktest', LINKTEST, LT_REQUIRED),
                                ('gpu-copy', GPU_COPY, [])):
        for opt, values in table.items():
            for v in values:
                # the option last but for operands, so that it overrides a required one
                args = ([f'--{opt}={v}'] + tail if kernel != 'smp-mad-stress'
                        else [f'--{opt}={v}'] + SMP_OPERANDS)
                yield pytest.param(kernel, args, f'--{opt}', id=f'{kernel}--{opt}={v!r}')


# Lists, specs and the cases of the issue: (kernel, args, what the message must name).
SPECIAL = [
    # issue 14, item 6: empty list items are typos, not "all" or "skip"
    ('mem-test', ['--ops=copy,'], '--ops'),
    ('mem-test', ['--ops=,copy'], '--ops'),
    ('mem-test', ['--ops=copy,,read'], '--ops'),
    ('mem-test', ['--ops='], '--ops'),
    ('mem-test', ['--ops=copy,bogus'], '--ops'),
    ('mem-test', ['--numa-nodes', '0,,1'], '--numa-nodes'),
    ('mem-test', ['--numa-nodes', '0,'], '--numa-nodes'),
    ('mem-test', ['--numa-nodes', '-1'], '--numa-nodes'),
    ('mem-test', ['--numa-nodes', '1-0'], '--numa-nodes'),
    ('mem-test', ['--numa-nodes', '99999999999999999999'], '--numa-nodes'),
    ('mem-test', ['--numa-nodes', '0- 1'], '--numa-nodes'),
    ('smp-mad-stress', ['-L', '1,,2', 'NodeInfo'], '--lids'),
    ('smp-mad-stress', ['-L', '1,2,', 'NodeInfo'], '--lids'),
    ('smp-mad-stress', ['-L', ',1', 'NodeInfo'], '--lids'),
    ('smp-mad-stress', ['-L', '-1', 'NodeInfo'], 'invalid destination'),
    ('smp-mad-stress', ['-L', '65536', 'NodeInfo'], 'invalid destination'),
    ('smp-mad-stress', ['-L', '18446744073709551617', 'NodeInfo'], 'invalid destination'),
    ('smp-mad-stress', ['--paths', '0,1;;0,1,3', 'NodeInfo'], '--paths'),
    ('smp-mad-stress', ['--paths', '0,1;', 'NodeInfo'], '--paths'),
    ('smp-mad-stress', ['--paths', '0,1,,3', 'NodeInfo'], 'not a directed route'),
    ('smp-mad-stress', ['--mkey=-1', '1', 'NodeInfo'], '--mkey'),
    ('smp-mad-stress', ['--mkey=18446744073709551616', '1', 'NodeInfo'], '--mkey'),
    ('smp-mad-stress', ['-m', '-1', '1', 'NodeInfo'], 'method'),
    ('smp-mad-stress', ['--', '1', 'NodeInfo', '-1'], 'attribute modifier'),
    ('smp-mad-stress', ['1', 'NodeInfo', '4294967296'], 'attribute modifier'),
    ('smp-mad-stress', ['1', 'NodeInfo', '18446744073709551616'], 'attribute modifier'),
    ('smp-mad-stress', ['--', '1', '-1'], 'attribute'),
    ('smp-mad-stress', ['1', '65536'], 'attribute'),
] + [
    ('smp-mad-stress', [f'--simulate={spec}', '1', 'NodeInfo'], '--simulate')
    for spec in ('seed=18446744073709551616', 'seed=-1', 'seed=', 'seed=1e3', 'seed= 1',
                 'loss=nan', 'loss=inf', 'loss=-0.1', 'loss=1.1', 'error=nan', 'loss=0x1p-1',
                 'rtt=inf', 'rtt=nan', 'rtt=-1us', 'rtt=1e999s', 'rtt=0x10', 'service=nanus',
                 'jitter=1 us', 'queue=-1', 'queue=1.5', 'queue=99999999999999999999',
                 'dead=1::2', 'dead=1:', 'dead=:1', 'dead=-1', 'dead=0', 'rtt=50us,',
                 ',rtt=50us', 'rtt=50us,,loss=0', 'rtt', '=1', 'speed=1')
] + [
    # issue 14, item 6: --plan measures nothing, so a --json there would silently be ignored
    ('cb-linktest', ['--plan', '4', '--json', '/tmp/cb-faults-plan.json'], '--json'),
    ('cb-linktest', ['--plan', '4', '--json', '-'], '--json'),
    ('cb-linktest', ['--plan', '-2'], '--plan'),
    ('cb-linktest', ['--plan', '18446744073709551618'], '--plan'),
    ('cb-linktest', LT_REQUIRED + ['--max-time=0x10'], '--max-time'),
    ('cb-linktest', LT_REQUIRED + ['--max-time=nanus'], '--max-time'),
    ('cb-linktest', LT_REQUIRED + ['--max-time=-1us'], '--max-time'),
    ('cb-linktest', LT_REQUIRED + ['--seed-randomize-steps=9223372036854775809'],
     '--seed-randomize-steps'),
    ('gpu-copy', ['--gpus', '0,,1'], '--gpus'),
    ('gpu-copy', ['--gpus', '0,'], '--gpus'),
    ('gpu-copy', ['--gpus', '-1'], '--gpus'),
    ('gpu-copy', ['--phases', 'write,'], '--phases'),
    ('gpu-copy', ['--phases', ',read'], '--phases'),
    ('gpu-copy', ['--phases', 'write,,read'], '--phases'),
]
# every kernel: an empty --json (issue 14, item 6: it failed only after the whole run)
for _k, _tail in (('mem-test', ['-d', '0.1']), ('smp-mad-stress', SMP_OPERANDS),
                  ('cb-linktest', LT_REQUIRED), ('gpu-copy', [])):
    SPECIAL += [(_k, ['--json='] + _tail, '--json'), (_k, ['-j', ''] + _tail, '-j'),
                (_k, ['--json', '/nonexistent/dir/r.json'] + _tail, '--json')]

# ---- eth-test-send / eth-test-receive -----------------------------------------------------
# eth-test's option cases (owned by eth-test's maintainers): (kernel, args, what the message
# must name), e.g. ('eth-test-receive', ['--session=-1'], '--session'). They run through the
# same test below. (Kept empty here until they are added; tests/test_eth_faults.py may
# hold them instead.)
ETH_TEST_CASES = []


@pytest.mark.parametrize('kernel, args, names', list(typed_cases()) + [
    pytest.param(k, a, n, id=f'{k}-{" ".join(a)}') for k, a, n in SPECIAL + ETH_TEST_CASES])
def test_bad_value_exits_2_naming_it(kernel, args, names):
    r = subprocess.run([tool(kernel), *args], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, **MPI_ENV))
    assert r.returncode == 2, f'exit {r.returncode}\n{r.stdout}\n{r.stderr}'
    assert names in r.stderr, r.stderr
    assert f"Try '{kernel}" in r.stderr, r.stderr
    assert r.stdout == '', 'a usage error runs nothing and prints no result'


def test_the_table_is_large():
    '''The issue asks for a few hundred cases: a shrinking table is a lost check.'''
    assert len(list(typed_cases())) + len(SPECIAL) >= 300


# ---- --json -: the document alone on stdout -----------------------------------------------
def test_json_to_stdout_is_the_document_alone():
    '''Issue 14, item 6: with --json - stdout held the human output and the document mixed.'''
    runs = [[tool('mem-test'), '-s', '1', '-r', '4', '-d', '0.2', '-q', '--json', '-'],
            [tool('smp-mad-stress'), '--simulate=rtt=50us', '-d', '0.2', '-q', '--json', '-',
             '1', 'NodeInfo']]
    for cmd in runs:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert r.returncode in (0, 1), r.stderr
        doc = json.loads(r.stdout)  # nothing but the document
        assert doc['test'] == os.path.basename(cmd[0]) and doc['interrupted'] is False
        # the human output is all there, on stderr, results block last
        assert '----- Test results -----' in r.stderr
        assert r.stderr.rstrip('\n').split('\n')[-1].split(':')[0] in (
            'Average late', 'Errors')


def test_linktest_json_to_stdout_under_mpirun():
    lt = tool('cb-linktest')
    r = subprocess.run(['mpirun', '--oversubscribe', '-n', '2', lt, *LT_REQUIRED, '--no-output',
                        '-q', '--json', '-'], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **MPI_ENV))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc['test'] == 'cb-linktest' and doc['interrupted'] is False
    assert 'Verdict:' in r.stderr


# ---- signals ------------------------------------------------------------------------------
def results_block(text):
    lines = text.rstrip('\n').split('\n')
    i = max(k for k, line in enumerate(lines) if line == '----- Test results -----')
    return dict(re.match(r'([^:]+):\s+(.*)', line).groups() for line in lines[i + 1:])


def interrupt(cmd, sig, ready, human='stdout', after=0.5, env=None, timeout=30, ranks=None):
    '''Starts cmd, waits until its human output shows `ready`, lets it measure `after`
    seconds, sends sig (to the processes running `ranks` when given: the MPI ranks, as
    scancel and srun deliver it; else to cmd itself), and returns (exit code, stdout,
    stderr, seconds to stop).'''
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, **(env or {})))
    stream = p.stdout if human == 'stdout' else p.stderr
    seen = b''
    deadline = time.monotonic() + timeout
    # the kernels flush their plan before measuring; select, so that a kernel that never
    # says it is ready fails the test instead of hanging it
    while ready.encode() not in seen and time.monotonic() < deadline and p.poll() is None:
        if select.select([stream], [], [], 0.2)[0]:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
    assert ready.encode() in seen, f'{cmd[0]} never printed {ready!r}: {seen.decode()}'
    time.sleep(after)
    if ranks:
        subprocess.run(['pkill', f'-{int(sig)}', '-f', '^' + re.escape(ranks)], check=True)
    else:
        p.send_signal(sig)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    took = time.monotonic() - t0
    if human == 'stdout':
        out = seen + out
    else:
        err = seen + err
    return p.returncode, out.decode(), err.decode(), took


def check_interrupted(rc, human, doc_text, sig, name):
    assert rc == 128 + sig, f'exit {rc}\n{human}'
    block = results_block(human)
    assert block['Interrupted'].startswith(name), block
    doc = json.loads(doc_text)
    assert doc['interrupted'] is True
    assert doc['compliance']['passed'] is False  # a run cut short is not judged compliant
    return block, doc


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM'),
                                       (signal.SIGHUP, 'SIGHUP')])
def test_mem_test_interrupted(tmp_path, sig, name):
    '''Issue 14, item 1: mem-test died at once, with no message and no result.'''
    out = tmp_path / 'r.json'
    out.write_text('{"an": "older result"}\n')
    rc, stdout, stderr, took = interrupt(
        [tool('mem-test'), '-s', '1', '-r', '4', '-d', '60', '-q', '--json', str(out)],
        sig, 'Running paced')
    assert took < 5, 'the workers must see the signal and stop promptly'
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 0 < doc['duration_s'] < 30  # the time measured, not the 60 s planned
    assert doc['metrics']['verification_errors']['value'] == 0
    # what was measured is reported, in the same figures as a whole run
    assert block['Measured speed'].split()[0] == f"{doc['metrics']['measured_speed']['value']:.2f}"
    assert not [f for f in os.listdir(tmp_path) if f != 'r.json'], 'no temporary file left'


def test_mem_test_interrupted_json_to_stdout():
    rc, stdout, stderr, took = interrupt(
        [tool('mem-test'), '-s', '1', '-r', '4', '-d', '60', '-q', '--json', '-'],
        signal.SIGINT, 'Running paced', human='stderr')
    check_interrupted(rc, stderr, stdout, signal.SIGINT, 'SIGINT')


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM'),
                                       (signal.SIGHUP, 'SIGHUP')])
def test_smp_mad_stress_interrupted(tmp_path, sig, name):
    '''Issue 14, item 1: smp-mad-stress died at once, with no message and no result.'''
    out = tmp_path / 'r.json'
    rc, stdout, stderr, took = interrupt(
        [tool('smp-mad-stress'), '--simulate=rtt=200us', '-L', '1,2', '-d', '60', '-q',
         '--json', str(out), 'NodeInfo'], sig, 'Window:')
    assert took < 5
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 0 < doc['duration_s'] < 30
    m = doc['metrics']
    assert m['mads_answered']['value'] > 0 and m['drops']['value'] == 0
    # MAD/s over the time up to the signal, as the table says
    assert float(block['MAD rate'].split()[0]) == pytest.approx(m['mad_rate']['value'], abs=0.1)
    assert 'Not compliant: interrupted by ' + name in stdout


def test_smp_mad_stress_mpi_interrupted_through_mpirun(tmp_path):
    '''mpirun passes SIGINT on to every rank as SIGTERM: the ranks stop after the same
    round and rank 0 still reports. (mpirun itself then exits 1, Open MPI's choice.)'''
    out = tmp_path / 'r.json'
    cmd = ['mpirun', '--oversubscribe', '-n', '2', tool('smp-mad-stress-mpi'),
           '--simulate=rtt=200us', '-d', '60', '-q', '--json', str(out), '1', 'NodeInfo']
    rc, stdout, stderr, took = interrupt(cmd, signal.SIGINT, 'MPI:', after=1.5,
                                         env=MPI_SIGNAL_ENV, timeout=60)
    assert rc != 0
    block = results_block(stdout)
    assert 'Interrupted' in block, stdout
    doc = json.loads(out.read_text())
    assert doc['interrupted'] is True and doc['compliance']['passed'] is False
    assert len(doc['ranks']) == 2


def test_cb_linktest_interrupted_through_mpirun(tmp_path):
    out, npz = tmp_path / 'r.json', tmp_path / 'm.npz'
    # messages large enough that the iteration lines do not fill the output pipe while
    # mpirun is not reading it
    cmd = ['mpirun', '--oversubscribe', '-n', '2', tool('cb-linktest'), '-w', '1', '-n', '10',
           '-s', '1M', '--min-runtime', '60', '-q', '-o', str(npz), '--json', str(out)]
    # Open MPI 4.1's mpirun, asked to stop, kills its ranks without passing the signal on
    # (measured: SIGINT or SIGTERM to mpirun, no rank saw it); a batch system's scancel or
    # srun signals every task, which is what the ranks must handle
    rc, stdout, stderr, took = interrupt(cmd, signal.SIGINT, 'Results file:', after=1.5,
                                         env=MPI_SIGNAL_ENV, timeout=60,
                                         ranks=tool('cb-linktest'))
    assert rc != 0
    assert 'Interrupted' in results_block(stdout), stdout
    doc = json.loads(out.read_text())
    assert doc['interrupted'] is True and doc['compliance']['passed'] is False
    assert 0 < doc['duration_s'] < 30
    assert npz.exists()


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM')])
def test_gpu_copy_interrupted_on_simulated_gpus(tmp_path, sig, name):
    if not os.access(GPU_SIM, os.X_OK):
        pytest.skip(f'{GPU_SIM} is not built (make build/tests/gpu-copy-sim)')
    out = tmp_path / 'r.json'
    bus = '0000:3b:00.0', '0000:86:00.0'
    env = {'GPU_COPY_FAKE_GPUS': f'{bus[0]}=64M@0.5,{bus[1]}=64M@0.5'}
    cmd = [GPU_SIM, '--sysfs-root', os.path.join(ROOT, 'tests', 'data', 'gpu-copy', 'gen3-x8-riser'),
           '--device-buffer', '16M', '--chunk', '1M', '--iterations', '3', '--alone-iterations',
           '2', '-q', '--json', str(out)]
    rc, stdout, stderr, took = interrupt(cmd, sig, 'Copies:', after=0.3, env=env)
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 'of 7 phases run' in block['Interrupted']
