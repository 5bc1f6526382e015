'''cb-linktest under hostile input and signals (issue 14): every bad option value must end
in exit 2 with a message naming the option; `--json -` under mpirun gives the document
alone on stdout; a signal to the ranks (as scancel and srun deliver it) stops the run with
a results block marked "Interrupted" and a JSON document that says so. The bad values by
type and the signal driver are shared by every kernel (tests/plugins/kernels.py).'''

import json
import os
import signal
import subprocess

from plugins.checkout import MPI_ENV, results_block
from plugins.kernels import (BAD_DURATION, BAD_INT, BAD_REAL, BAD_SIZE, BAD_U64,
                             MPI_SIGNAL_ENV, bad_value_test, empty_json_cases, interrupt,
                             kernel)

OPTIONS = {
    'num-warmup-messages': BAD_INT, 'num-messages': BAD_INT, 'num-slowest': BAD_INT,
    'min-iterations': BAD_INT, 'plan': BAD_INT, 'seed-randomize-steps': BAD_U64,
    'min-bandwidth': BAD_REAL, 'max-time': BAD_REAL, 'size-messages': BAD_SIZE,
    'min-runtime': BAD_DURATION,
}
REQUIRED = ['-w', '1', '-n', '1', '-s', '8']   # what else a run needs (required options)

SPECIAL = [
    # issue 14, item 6: --plan measures nothing, so a --json there would silently be ignored
    (['--plan', '4', '--json', '/tmp/cb-faults-plan.json'], '--json'),
    (['--plan', '4', '--json', '-'], '--json'),
    (['--plan', '-2'], '--plan'),
    (['--plan', '18446744073709551618'], '--plan'),
    (REQUIRED + ['--max-time=0x10'], '--max-time'),
    (REQUIRED + ['--max-time=nanus'], '--max-time'),
    (REQUIRED + ['--max-time=-1us'], '--max-time'),
    (REQUIRED + ['--seed-randomize-steps=9223372036854775809'], '--seed-randomize-steps'),
] + empty_json_cases(REQUIRED)


test_bad_value_exits_2_naming_it = bad_value_test('cb-linktest', OPTIONS, REQUIRED, SPECIAL)


def test_linktest_json_to_stdout_under_mpirun():
    lt = kernel('cb-linktest')
    r = subprocess.run(['mpirun', '--oversubscribe', '-n', '2', lt, *REQUIRED, '--no-output',
                        '-q', '--json', '-'], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **MPI_ENV))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc['test'] == 'cb-linktest' and doc['interrupted'] is False
    assert 'Own verdict:' in r.stderr


def test_cb_linktest_interrupted_through_mpirun(tmp_path):
    out, npz = tmp_path / 'r.json', tmp_path / 'm.npz'
    # messages large enough that the iteration lines do not fill the output pipe while
    # mpirun is not reading it
    cmd = ['mpirun', '--oversubscribe', '-n', '2', kernel('cb-linktest'), '-w', '1', '-n', '10',
           '-s', '1M', '--min-runtime', '60', '-q', '-o', str(npz), '--json', str(out)]
    # Open MPI 4.1's mpirun, asked to stop, kills its ranks without passing the signal on
    # (measured: SIGINT or SIGTERM to mpirun, no rank saw it); a batch system's scancel or
    # srun signals every task, which is what the ranks must handle
    rc, stdout, stderr, took = interrupt(cmd, signal.SIGINT, 'Results file:', after=1.5,
                                         env=MPI_SIGNAL_ENV, timeout=60,
                                         ranks=kernel('cb-linktest'))
    assert rc != 0
    assert 'Interrupted' in results_block(stdout), stdout
    doc = json.loads(out.read_text())
    assert doc['interrupted'] is True and doc['compliance']['passed'] is False
    assert 0 < doc['duration_s'] < 30
    assert npz.exists()
