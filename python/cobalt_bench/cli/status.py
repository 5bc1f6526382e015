'''The contract's exit statuses for the package's errors, for every command entry point.'''

import os
import sys

from ..errors import CannotRun, UsageError


def exit_status(prog, call, usage_error=None):
    '''call()'s exit status, with the package's errors as the contract's exit codes:
    UsageError 2 (through usage_error(message) when given: argparse's error, which prints
    the usage line), CannotRun 3, each said on stderr after `prog: `; Ctrl-C 130; a closed
    output pipe 0 (`... | head` is not an error of ours).'''
    try:
        return call()
    except UsageError as err:
        if usage_error:
            usage_error(str(err))
        print(f'{prog}: {err}', file=sys.stderr)
        return 2
    except CannotRun as err:
        print(f'{prog}: {err}', file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
