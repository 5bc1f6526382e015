'''ReFrame's command line, as scripts/run-suite starts it
(`python -m cobalt_bench.reframe.launch ARGS` = `reframe ARGS`), with one repair: a stop
signal is not lost inside a log call.

ReFrame stops a run on SIGTERM or SIGHUP by raising ForceExitError from its signal handler,
which first sets SIGTERM, SIGHUP and SIGINT to be ignored. When the signal lands while the
main thread is inside a logging call, Python's logging catches that exception in the
handler's emit(), prints "--- Logging error ---" and returns, and ReFrame runs on, deaf to
every later signal (seen in CI: a SIGTERM to run-suite during "Entering stage: run" left
the run going for more than 60 s). Here a handler's handleError passes ForceExitError on,
as the exception would have passed from anywhere else.

Before ReFrame 4.6, a run (-r) also gets --save-log-files: ReFrame 4.5's command-line
default overrides the configuration's general/save_log_files, which every cobalt-bench
site sets (ReFrame's log belongs in the run's output/, where the report reads the skip
reasons; compat).
'''
import logging
import sys

_handle_error = logging.Handler.handleError


def _pass_force_exit(handler, record):
    from reframe.core.exceptions import ForceExitError
    if isinstance(sys.exc_info()[1], ForceExitError):
        raise  # handleError runs inside emit()'s except block: the exception goes on
    _handle_error(handler, record)


def repair_logging():
    logging.Handler.handleError = _pass_force_exit


def reframe_args(args):
    '''ReFrame's command line for the running ReFrame (compat: --save-log-files for a run
    before 4.6).'''
    from . import compat
    if (not compat.at_least(4, 6) and ('-r' in args or '--run' in args) and
            '--save-log-files' not in args):
        return [*args, '--save-log-files']
    return list(args)


def main():
    repair_logging()
    from reframe.frontend.cli import main as reframe_main
    sys.argv[:] = ['reframe', *reframe_args(sys.argv[1:])]
    return reframe_main()


if __name__ == '__main__':
    sys.exit(main())
