'''Ctrl-C at any moment of a command is one line and the contract's 130, never a Python
traceback (issue 37: one in the first tenth of a second of `report`, while its modules
load, printed one). The real console script, interrupted after each delay.'''
import os
import signal
import subprocess
import sys
import time

import pytest

from plugins.checkout import DATA, ROOT, clean_env

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


@pytest.mark.parametrize('delay', [0.05, 0.1, 0.15, 0.25, 0.4])
def test_ctrl_c_is_one_line_at_any_moment(delay, tmp_path):
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'mem-test-7.json').write_bytes((DATA / 'store' / 'mem-test.json').read_bytes())
    proc = subprocess.Popen([COBALT_BENCH, 'report', str(run), '--site', 'local'],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert 'Traceback' not in err, err
    # interrupted (one line saying so), or it had finished by then
    if proc.returncode == 130:
        assert err.strip().splitlines()[-1] == 'cobalt-bench: interrupted' or \
            err.strip().endswith('report: interrupted'), err
    else:
        assert proc.returncode in (0, 1), (proc.returncode, err)


def test_ctrl_c_that_an_import_turned_into_an_error_is_still_an_interruption():
    # numpy's C initialisation, cut by Ctrl-C, raised ImportError ("initialization
    # failed"): the command then said matplotlib was missing and crashed at exit (SIGABRT).
    code = '''
import os, signal, sys
from cobalt_bench.cli.status import catch_interrupts, exit_status
from cobalt_bench.errors import CannotRun
catch_interrupts()
def call():
    try:
        os.kill(os.getpid(), signal.SIGINT)
    except KeyboardInterrupt:
        raise CannotRun('matplotlib is not importable (initialization failed)')
sys.exit(exit_status('cobalt-bench report', call))
'''
    proc = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 130, proc
    assert proc.stderr.strip() == 'cobalt-bench report: interrupted', proc.stderr
