'''The contract's exit statuses for the package's errors, for every command entry point.'''

import os
import sys

from ..errors import CannotRun, UsageError
from .terminal import say, shown


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
        say(f'{prog}: {err}', sys.stderr)
        return 3
    except KeyboardInterrupt:
        say(f'{prog}: interrupted', sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
