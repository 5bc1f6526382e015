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


def main():
    repair_logging()
    from reframe.frontend.cli import main as reframe_main
    sys.argv[0] = 'reframe'
    return reframe_main()


if __name__ == '__main__':
    sys.exit(main())
