'''cobalt_bench.reframe.launch: ReFrame's stop signal must not be lost inside a log call.

The real ReFrame signal handler (reframe.frontend.executors._force_exit) and Python's real
logging: a StreamHandler whose flush() sends SIGTERM to its own process makes the signal
land inside emit(), where a CI run once caught it.'''
import subprocess
import sys

import pytest

PROGRAM = r'''
import logging, os, signal, sys
from reframe.core.exceptions import ForceExitError
from reframe.frontend.executors import _force_exit
from cobalt_bench.reframe import launch

if sys.argv[1] == 'repaired':
    launch.repair_logging()
signal.signal(signal.SIGTERM, _force_exit)


class SignalInsideEmit(logging.StreamHandler):
    def flush(self):
        os.kill(os.getpid(), signal.SIGTERM)  # handled at once, inside emit()'s try
        super().flush()


log = logging.getLogger('stage')
log.addHandler(SignalInsideEmit(sys.stdout))
try:
    log.warning('Entering stage: run')
    print('ran on')
except ForceExitError as e:
    print('stopped:', e)
'''


def run(mode):
    return subprocess.run([sys.executable, '-c', PROGRAM, mode], capture_output=True, text=True,
                          timeout=60)


def test_plain_logging_swallows_reframes_stop():
    '''The fault as it is: without the repair ReFrame's exception is lost.'''
    r = run('plain')
    assert 'ran on' in r.stdout and 'stopped' not in r.stdout, r.stdout + r.stderr
    assert 'Logging error' in r.stderr and 'ForceExitError' in r.stderr, r.stderr


def test_repaired_logging_passes_reframes_stop_on():
    r = run('repaired')
    assert 'stopped: received signal 15' in r.stdout and 'ran on' not in r.stdout, \
        r.stdout + r.stderr
    assert 'Logging error' not in r.stderr, r.stderr


@pytest.mark.parametrize('error', ['ValueError', 'OSError'])
def test_other_logging_errors_are_still_only_reported(error):
    '''Any other exception in a handler is printed and swallowed, as logging does.'''
    program = f'''
import logging, sys
from cobalt_bench.reframe import launch
launch.repair_logging()
class Failing(logging.StreamHandler):
    def flush(self):
        raise {error}('handler broke')
logging.getLogger('x').addHandler(Failing(sys.stdout))
logging.getLogger('x').warning('message')
print('ran on')
'''
    r = subprocess.run([sys.executable, '-c', program], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and 'ran on' in r.stdout, r.stdout + r.stderr
    assert 'Logging error' in r.stderr and 'handler broke' in r.stderr, r.stderr


def test_launch_runs_reframes_command_line():
    r = subprocess.run([sys.executable, '-m', 'cobalt_bench.reframe.launch', '--version'],
                       capture_output=True, text=True, timeout=120)
    version = subprocess.run([sys.executable, '-c', 'import reframe; print(reframe.VERSION)'],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    assert r.returncode == 0 and version and version in r.stdout, r.stdout + r.stderr
