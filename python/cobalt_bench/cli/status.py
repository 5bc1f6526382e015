'''The contract's exit statuses for the package's errors, for every command entry point.'''

import os
import signal
import sys

from ..errors import CannotRun, UsageError
from .terminal import say, shown


_interrupts = []     # the Ctrl-Cs (SIGINT) this command received


def _on_sigint(signum, frame):
    _interrupts.append(signum)
    raise KeyboardInterrupt


def _on_unraisable(prog, unraisable):
    if _interrupts and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _interrupted(prog)
    sys.__unraisablehook__(unraisable)


def catch_interrupts(prog):
    '''Ctrl-C raises KeyboardInterrupt, as Python's own handler does, and is remembered: an
    import it broke (a C extension's initialisation turns it into an ImportError, as numpy's
    did under matplotlib) then ends the command as interrupted, not as an error of its own.
    One raised where Python cannot raise (a finaliser, logging's hook after a fork) would be
    printed as a traceback and lost, the command going on: it ends `prog` as interrupted.'''
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
        sys.unraisablehook = lambda unraisable: _on_unraisable(prog, unraisable)


def _interrupted(prog):
    say(f'{prog}: interrupted', sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # Not through the interpreter's shutdown: a module whose initialisation Ctrl-C cut
    # short can crash it (SIGABRT).
    os._exit(130)


def exit_status(prog, call, usage_error=None):
    '''call()'s exit status, with the package's errors as the contract's exit codes:
    UsageError 2 (through usage_error(message) when given: argparse's error, which prints
    the usage line), CannotRun 3, each said on stderr after `prog: `, shown as terminal
    text (cli.terminal: a message may quote a file's name or content); Ctrl-C 130; a
    closed output pipe 0 (`... | head` is not an error of ours).'''
    try:
        return call()
    except UsageError as err:
        if usage_error:
            usage_error(shown(err))
        say(f'{prog}: {err}', sys.stderr)
        return 2
    except CannotRun as err:
        if _interrupts:
            _interrupted(prog)
        say(f'{prog}: {err}', sys.stderr)
        return 3
    except KeyboardInterrupt:
        say(f'{prog}: interrupted', sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception:
        if _interrupts:
            _interrupted(prog)
        raise
