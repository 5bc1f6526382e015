'''cobalt-bench's Python side: the `cobalt-bench` command (report, preflight, runs,
linktest-report), the results store, the report and its plots, the parsers of
third-party benchmark output (cobalt_bench.parsers) and the ReFrame base classes and site
helpers (cobalt_bench.reframe).

Where the tree is (checkout or install, bin/, results/, VERSION): cobalt_bench.paths, the
one place that knows.
'''

import os
import sys

from . import paths

__version__ = paths.version()


class UsageError(Exception):
    '''Bad command-line input: exit status 2.'''


class CannotRun(Exception):
    '''The command cannot do its work (missing run, unreadable file): exit status 3.'''


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
