"""A kernel's JSON document holds its options in `config` as it did before the option table
wrote them (cbj_config_options): for fixed command lines, every option the kernel's
description gives a document key has the value recorded from the binaries that echoed
each option by hand, and the config has the same keys
(tests/data/kernels/document-configs.json). Keys a run measures or this machine decides
(threads, iterations, the CPU's kernels, a session id) are compared by name only."""

import json
import os
import subprocess

import pytest

from plugins.checkout import MPI_ENV, ROOT

RECORD = os.path.join(ROOT, 'tests', 'data', 'kernels', 'document-configs.json')
RUNS = {
    'mem-test': ['--duration', '1', '--stations', '1', '--desired-rate', '1', '-q'],
    'cb-linktest': ['-w', '2', '-n', '4', '-s', '1024', '--seed-randomize-steps', '7',
                    '--min-runtime', '0.1', '-q'],
    # to the loopback, no receiver needed: UDP is sent all the same
    'eth-test-send': ['-H', '127.0.0.1', '-d', '0.5', '-r', '0.1', '-n', '2', '-q'],
    # written from its table from the start: the record is its first run's
    'cpu-test': ['--duration', '0.3', '--interval', '0.1', '--threads', '1', '--isa', 'scalar',
                 '--desired-gflops', '0.001', '-q'],
}
LAUNCH = {'cb-linktest': ['mpirun', '-n', '2', '--oversubscribe']}


def config_of(binary, tmp_path):
    path = tmp_path / f'{binary}.json'
    proc = subprocess.run([*LAUNCH.get(binary, []), os.path.join(ROOT, 'bin', binary),
                           *RUNS[binary], '--json', str(path)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env={**os.environ, **MPI_ENV})
    assert proc.returncode == 0, proc.stderr
    return json.loads(path.read_text())['config']


@pytest.mark.parametrize('binary', sorted(RUNS))
def test_the_options_in_the_document_are_as_recorded(binary, tmp_path):
    if not os.access(os.path.join(ROOT, 'bin', binary), os.X_OK):
        pytest.skip(f'bin/{binary} is not built here (make says what it lacks)')
    described = json.loads(subprocess.run([os.path.join(ROOT, 'bin', binary), '--describe'],
                                          capture_output=True, text=True).stdout)
    keys = [o['document_key'] for o in described['options'] if o['document_key']]
    assert keys, f'{binary} writes no option from its table'
    recorded = json.load(open(RECORD))[binary]
    config = config_of(binary, tmp_path)
    assert set(config) == set(recorded)
    assert {k: config[k] for k in keys} == {k: recorded[k] for k in keys}
