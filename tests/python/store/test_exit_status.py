'''The one reading of a kernel's exit status (store.exit_status): 0 and 1 are runs to
judge, 2 and 3 "not run", a signal or any other status a failure of the node, named.'''

import signal
import subprocess
import sys

import pytest

from cobalt_bench.errors import UsageError
from cobalt_bench.store.exit_status import Ending, ExitStatus


def status_of_a_real_death(sig):
    '''The status the shell gives a process ended by `sig` (a real process, a real signal).'''
    # (its default action restored first where it can be: a caller started under nohup
    # ignores SIGHUP)
    default = (f'signal.signal({int(sig)}, signal.SIG_DFL); ' if sig in (
        signal.SIGHUP, signal.SIGINT, signal.SIGTERM) else '')
    proc = subprocess.run(['bash', '-c', f'{sys.executable} -c "import os, signal; '
                           f'{default}os.kill(os.getpid(), {int(sig)})"; echo $?'],
                          text=True, capture_output=True, timeout=30)
    return proc.stdout.strip()


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGSEGV, signal.SIGBUS,
                                 signal.SIGABRT])
def test_a_signal_is_a_named_failure(sig):
    shell = status_of_a_real_death(sig)
    assert shell == str(128 + sig)
    status = ExitStatus.of(shell)
    assert status.ending is Ending.SIGNAL and status.failed and not status.ran
    assert not status.not_run
    assert f'killed by {sig.name}' in status.reason('mem-test')
    # Python's returncode for the same death, and a runner that reports the signal itself
    # (ReFrame's local scheduler): the same reading.
    proc = subprocess.run([sys.executable, '-c', f'import os; os.kill(os.getpid(), {int(sig)})'],
                          timeout=30)
    assert ExitStatus.of(proc.returncode).reason('x') == ExitStatus.of(None, int(sig)).reason('x')


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_the_contracts_interrupting_signals_are_no_failure_of_the_node(sig):
    status = ExitStatus.of(status_of_a_real_death(sig))
    assert status.ending is Ending.INTERRUPTED and status.interrupted
    assert not status.failed and not status.ran and not status.not_run
    assert f'interrupted by {sig.name}' in status.reason('mem-test')


def test_oom_killer_is_named_as_the_usual_cause_of_sigkill():
    assert 'OOM killer' in ExitStatus.of(137).reason('mem-test')


@pytest.mark.parametrize('code, ending', [(0, Ending.RAN), (1, Ending.RAN),
                                          (2, Ending.USAGE), (3, Ending.CANNOT_RUN),
                                          (4, Ending.CRASH), (9, Ending.CRASH),
                                          (127, Ending.CRASH), (255, Ending.CRASH)])
def test_only_two_and_three_are_not_run(code, ending):
    status = ExitStatus.of(str(code))
    assert status.ending is ending
    assert status.not_run == (code in (2, 3))
    assert status.failed == (code not in (0, 1, 2, 3))
    assert bool(status.reason('k')) == (code not in (0, 1))


@pytest.mark.parametrize('text', ['', 'abc', '1.5', '256', 'true'])
def test_no_status_is_a_usage_error(text):
    with pytest.raises(UsageError):
        ExitStatus.of(text)
