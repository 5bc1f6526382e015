"""A kernel's JSON document holds its options in `config` as it did before the option table
wrote them (cbj_config_options): for fixed command lines, every option the kernel's
description gives a document key has the value, and the JSON type, recorded from the
binaries that echoed each option by hand, and the config has the same keys
(tests/data/kernels/document-configs.json). Keys a run measures or this machine decides
(threads, iterations, the CPU's kernels, a session id) are compared by name only; the
values a kernel derives from its command line alone (a case's SAME) by value and type.

A case is a command line of a kernel, named by its kernel and what sets it apart. Where
a kernel cannot run here it runs on a stand-in: gpu-copy on its host-memory simulation
(build/tests/gpu-copy-sim), smp-mad-stress on its simulated fabric (--simulate), and
eth-test-receive with an eth-test-send to it on the loopback. A case the record lacks
is recorded with

    COBALT_WRITE_DOCUMENT_CONFIGS=1 .venv/bin/python -m pytest tests/kernels/test_document_config.py

from the binaries as they are (before a change that moves an option to the table); a case
already recorded is never written again."""

import json
import os
import subprocess
import time

import pytest

from plugins.checkout import DATA, MPI_ENV, ROOT
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

RECORD = os.path.join(ROOT, 'tests', 'data', 'kernels', 'document-configs.json')
WRITE = os.environ.get('COBALT_WRITE_DOCUMENT_CONFIGS') == '1'

# A receiver's session and first port, which its sender is told: datagrams of another
# test's sender on the loopback are rejected, not counted.
SESSION, PORT = '0x5eed0040', '47640'
SENDER = ['-H', '127.0.0.1', '-p', PORT, '-n', '2', '-r', '0.1', '-d', '0.3',
          '--session', SESSION, '-q']
RECEIVER = ['-p', PORT, '-n', '2', '--session', SESSION, '--threshold', '0',
            '--max-loss', '100', '--timeout', '30', '-q']
# gpu-copy's sysfs tree, linked into the run's directory: the document names it as given
SYSFS = 'sysfs'
GPU_COPY = ['--sysfs-root', SYSFS, '-q']
GPU_COPY_ENV = {'GPU_COPY_FAKE_GPUS': '0000:3b:00.0=64M@12,0000:86:00.0=64M@6'}

# {case: (kernel, command line)}
CASES = {
    'mem-test': ('mem-test', ['--duration', '1', '--stations', '1', '--desired-rate', '1',
                              '-q']),
    'cb-linktest': ('cb-linktest', ['-w', '2', '-n', '4', '-s', '1024',
                                    '--seed-randomize-steps', '7', '--min-runtime', '0.1',
                                    '-q']),
    # to the loopback, no receiver needed: UDP is sent all the same
    'eth-test-send': ('eth-test-send', ['-H', '127.0.0.1', '-d', '0.5', '-r', '0.1', '-n', '2',
                                        '-q']),
    'eth-test-receive': ('eth-test-receive', ['-H', '127.0.0.1', *RECEIVER]),
    # by interface; threads cut to one a socket; GRO off; a set receive buffer
    'eth-test-receive -I lo --gro off': (
        'eth-test-receive', ['-I', 'lo', '-T', '8', '--reuseport', '2', '--gro', 'off',
                             '--batch', '16', '--rcvbuf', '1M', '--busy-poll=20',
                             '--idle-timeout', '1', *RECEIVER]),
    'gpu-copy': ('gpu-copy', [*GPU_COPY, '--device-buffer', '16M', '--chunk', '1M',
                              '--iterations', '3', '--alone-iterations', '2',
                              '--threshold', '0']),
    'gpu-copy --gpus 1 --device-fraction': (
        'gpu-copy', [*GPU_COPY, '--gpus', '1', '--phases', 'write,read', '-s', '3',
                     '--threshold-per-gpu', '0.25', '-f', '0.5', '-i', '2']),
    'gpu-copy --explain-links': ('gpu-copy', [*GPU_COPY, '--explain-links']),
    'smp-mad-stress': ('smp-mad-stress', ['--simulate=rtt=200us', '-d', '0.2', '-q', '5',
                                          'NodeInfo']),
    'smp-mad-stress -L set': (
        'smp-mad-stress', ['--simulate=rtt=100us,seed=3', '-L', '1,2,3', '-m', 'set', '-n', '4',
                           '-N', '16', '-p', '2', '--timeout', '50ms', '-r', '1', '-d', '0.2',
                           '-q', 'PortInfo', '1']),
    'smp-mad-stress --paths': ('smp-mad-stress', ['--simulate=rtt=300us', '--paths', '0,1;0,1,3',
                                                  '-d', '0.2', '-q', 'SwitchInfo']),
    'smp-mad-stress-mpi': ('smp-mad-stress-mpi', ['--simulate=rtt=200us', '-d', '0.2', '-q',
                                                  '7', 'NodeInfo']),
    # written from its table from the start: the record is its first run's
    'cpu-test': ('cpu-test', ['--duration', '0.3', '--interval', '0.1', '--threads', '1',
                              '--isa', 'scalar', '--desired-gflops', '0.001', '-q']),
}
LAUNCH = {'cb-linktest': ['mpirun', '-n', '2', '--oversubscribe'],
          'smp-mad-stress-mpi': ['mpirun', '-n', '2', '--oversubscribe']}
# The exit status of a case that is not 0: the riser's link is degraded.
EXIT = {'gpu-copy --explain-links': 1}
# Values a kernel derives from the command line alone, compared as the options are.
SAME = {
    'eth-test-receive': ('address', 'interface', 'gro', 'busy_poll_us', 'session',
                         'sender_streams'),
    'gpu-copy': ('mode', 'gpus', 'alone_iterations', 'phases', 'device_fraction', 'chunk_bytes',
                 'threshold_per_gpu_gbits'),
    'smp-mad-stress': ('transport', 'test_fabric', 'method', 'attribute', 'attribute_name',
                       'modifier', 'routing', 'destinations', 'timeout_ms', 'mpi_ranks'),
}
SAME['smp-mad-stress-mpi'] = SAME['smp-mad-stress']


def program(kernel, request):
    """The kernel's program here: bin/KERNEL, gpu-copy's simulation for gpu-copy."""
    if kernel == 'gpu-copy':
        return request.getfixturevalue('gpu_copy_sim')
    path = os.path.join(ROOT, 'bin', kernel)
    if not os.access(path, os.X_OK):
        pytest.skip(f'bin/{kernel} is not built here (make says what it lacks)')
    return path


def run_receiver(prog, args, tmp_path, env):
    """eth-test-receive, and once it listens an eth-test-send to it on the loopback."""
    ready = tmp_path / 'ready'
    rx = subprocess.Popen([prog, *args, '--ready-file', str(ready)], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (ready.exists() and ready.read_text().strip()):
            assert rx.poll() is None and time.monotonic() < deadline, 'the receiver did not start'
            time.sleep(0.05)
        tx = subprocess.run([os.path.join(ROOT, 'bin', 'eth-test-send'), *SENDER],
                            capture_output=True, text=True, timeout=60, env=env)
        assert tx.returncode == 0, tx.stderr
        _, err = rx.communicate(timeout=60)
        return rx.returncode, err
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()


def config_of(case, prog, tmp_path):
    kernel, args = CASES[case]
    path = tmp_path / f'{kernel}.json'
    args = [*args, '--json', str(path)]
    env = {**os.environ, **MPI_ENV, **(GPU_COPY_ENV if kernel == 'gpu-copy' else {})}
    if kernel == 'gpu-copy':
        os.symlink(os.path.join(DATA, 'gpu-copy', 'gen3-x8-riser'), tmp_path / SYSFS)
    if kernel == 'eth-test-receive':
        status, err = run_receiver(prog, args, tmp_path, env)
    else:
        proc = subprocess.run([*LAUNCH.get(kernel, []), prog, *args], capture_output=True,
                              text=True, timeout=300, cwd=tmp_path, env=env)
        status, err = proc.returncode, proc.stderr
    assert status == EXIT.get(case, 0), err
    return json.loads(path.read_text())['config']


def typed(config, keys):
    """{key: (its JSON type, its value)}: 1 and 1.0, or 1 and true, are not the same."""
    return {k: (type(config[k]).__name__, config[k]) for k in keys}


@pytest.mark.parametrize('case', sorted(CASES))
def test_the_options_in_the_document_are_as_recorded(case, tmp_path, request):
    kernel = CASES[case][0]
    prog = program(kernel, request)
    record = json.load(open(RECORD))
    if WRITE:
        if case not in record:
            record[case] = config_of(case, prog, tmp_path)
            with open(RECORD, 'w') as f:
                json.dump(record, f, indent=1, sort_keys=True)
                f.write('\n')
        return
    described = json.loads(subprocess.run([prog, '--describe'], capture_output=True,
                                          text=True).stdout)
    keys = [o['document_key'] for o in described['options'] if o['document_key']]
    assert keys, f'{kernel} writes no option from its table'
    recorded = record[case]
    config = config_of(case, prog, tmp_path)
    assert set(config) == set(recorded)
    # a mode may write fewer (gpu-copy --explain-links: only --sysfs-root applies); the
    # keys' set is held above
    keys = [k for k in (*keys, *SAME.get(kernel, ())) if k in recorded]
    assert typed(config, keys) == typed(recorded, keys)
