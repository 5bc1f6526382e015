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

Causes named, not tracebacks (run-suite marks the run INCOMPLETE with them): a site
configuration that cannot be loaded (a syntax error, any exception in config.py) is
ReFrame's "failed to load configuration: <cause>" and exit status CONFIG_ERROR; a log write
that fails on a full or read-only store (ENOSPC, EDQUOT, EROFS) is one line, not a
traceback per record (any other logging error is reported as logging does).
The cause goes into the run's INCOMPLETE marker ($COBALT_BENCH_MARKER, set by run-suite).
'''
import errno
import logging
import os
import sys

# The exit status of a run whose site configuration could not be loaded (EX_CONFIG).
CONFIG_ERROR = 78
# The marker line run-suite reads for each cause.
CONFIG_CAUSE = 'site configuration error: '
NO_SPACE_CAUSE = 'no space left on device'

# The file-system errors a log write meets on a full or read-only results store.
STORE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)

_handle_error = logging.Handler.handleError
_said = set()


def note_cause(line):
    '''Append `line` to the run's INCOMPLETE marker (run-suite's), once.'''
    marker = os.environ.get('COBALT_BENCH_MARKER')
    if not marker or line in _said:
        return
    _said.add(line)
    try:
        with open(marker, 'a') as fp:
            fp.write(line + '\n')
    except OSError:
        pass


def _say_os_error(err, what):
    '''One line for an OSError instead of a traceback; a full disk noted as the cause.'''
    if err.errno == errno.ENOSPC:
        note_cause(NO_SPACE_CAUSE)
    line = f'cobalt-bench: {what}: {err}'
    if line not in _said:
        _said.add(line)
        print(line, file=sys.stderr)


def _pass_force_exit(handler, record):
    from reframe.core.exceptions import ForceExitError
    err = sys.exc_info()[1]
    if isinstance(err, ForceExitError):
        raise  # handleError runs inside emit()'s except block: the exception goes on
    if isinstance(err, OSError) and err.errno in STORE_ERRNOS:
        _say_os_error(err, "cannot write ReFrame's log")
        return
    _handle_error(handler, record)


def _unraisable(unraisable, _hook=sys.unraisablehook):
    # ReFrame's atexit log shutdown closing a file on a full disk.
    err = unraisable.exc_value
    if isinstance(err, OSError) and err.errno in STORE_ERRNOS:
        _say_os_error(err, "cannot close ReFrame's log")
        return
    _hook(unraisable)


def repair_logging():
    logging.Handler.handleError = _pass_force_exit
    sys.unraisablehook = _unraisable


_config_failed = []


def repair_config_errors():
    '''Any exception while ReFrame loads a site configuration becomes a ConfigError (which
    ReFrame reports as one line) and is noted as the run's cause.'''
    from reframe.core import config
    from reframe.core.exceptions import ConfigError
    load = config.load_config

    def load_config(*files):
        try:
            return load(*files)
        except ConfigError as err:
            cause = str(err)
            exc = err
        except SyntaxError as err:
            cause = (f'{err.filename}: SyntaxError: {err.msg} (line {err.lineno})'
                     if err.filename else f'SyntaxError: {err}')
            exc = ConfigError(cause)
        except Exception as err:
            cause = f'{", ".join(files)}: {type(err).__name__}: {err}'
            exc = ConfigError(cause)
        _config_failed.append(cause)
        note_cause(CONFIG_CAUSE + ' '.join(cause.split()))
        raise exc from None

    config.load_config = load_config


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
    repair_config_errors()
    from reframe.frontend.cli import main as reframe_main
    sys.argv[:] = ['reframe', *reframe_args(sys.argv[1:])]
    try:
        status = reframe_main()
    except SystemExit as end:
        status = end.code
    if _config_failed:
        return CONFIG_ERROR
    return status


if __name__ == '__main__':
    sys.exit(main())
