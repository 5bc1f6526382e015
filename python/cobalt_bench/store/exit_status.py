'''What a kernel's exit status says of its run: the one reading of it, for ReFrame's checks
(the job's exit code and signal), the job scripts (`cobalt-bench judge --exit-status`, the
shell's `$?`) and the report (the status a judgement recorded).

The kernel contract (docs/kernel-contract.md) gives four statuses: 0 and 1 are runs to
judge (the kernel's own verdict by its built-in threshold is not the site's), 2 a usage
error and 3 "cannot run here" (absent hardware): only those two mean "not run". Anything
else is a failure of the node the kernel ran on, never an excuse: a signal (the shell's
128 + N, Python's -N, ReFrame's job signal) or a status the contract does not define (a
crash, an abort in a library, a launcher that failed).
'''

import signal as signal_mod
from dataclasses import dataclass

from ..errors import UsageError
from .result import Word


class Ending(Word):
    '''How a kernel's run ended, as its exit status says.'''
    RAN = 'ran'                 # 0 or 1: a run to judge by the site's references
    USAGE = 'usage error'       # 2: not run
    CANNOT_RUN = 'cannot run'   # 3: not run (absent hardware, a missing library)
    INTERRUPTED = 'interrupted'  # SIGTERM, SIGINT, SIGHUP: stopped by someone, never a pass
    SIGNAL = 'killed'           # ended by another signal: a failure of its node
    CRASH = 'crashed'           # another status: a failure of its node


#: The kernel contract's statuses.
RAN_CODES = (0, 1)
USAGE_CODE = 2
CANNOT_RUN_CODE = 3

#: The signals the kernel contract treats as an interruption (the kernel stops, writes its
#: document marked "interrupted" and exits 128 + N): someone stopped the run (scancel, a
#: time limit, Ctrl-C, a lost session); the run is incomplete, not the node's failure.
INTERRUPTING = ('SIGTERM', 'SIGINT', 'SIGHUP')

#: Why a signal usually reaches a kernel, for the reader of a failure.
_USUAL_CAUSE = {
    'SIGKILL': 'the OOM killer, scancel --signal=KILL or a time limit past its grace period '
               'are the usual causes',
    'SIGSEGV': 'a crash: invalid memory access (faulty memory shows so too)',
    'SIGBUS': 'a crash: a bus error (faulty memory or a removed file)',
    'SIGILL': 'a crash: an instruction this CPU lacks (a build for another CPU)',
    'SIGFPE': 'a crash: an arithmetic fault',
    'SIGABRT': 'the kernel or a library aborted (an assertion, a corrupted heap)',
    'SIGTERM': 'terminated: scancel, a time limit or a shutdown',
    'SIGINT': 'interrupted (Ctrl-C)',
    'SIGHUP': 'its terminal or session went away',
}


def signal_name(number):
    try:
        return signal_mod.Signals(number).name
    except ValueError:
        return f'signal {number}'


@dataclass(frozen=True)
class ExitStatus:
    '''A kernel's exit status: `code` as the shell gives it (0..255; 128 + N for a signal),
    or `signal` where the runner reports the signal itself.'''
    code: object = None         # int, or None where only a signal is known
    signal: object = None       # int, or None

    @classmethod
    def of(cls, code=None, signal=None):
        '''An ExitStatus of a runner's figures: the shell's status (an int or its text,
        128 + N for a signal; Python's -N), and a signal number where it reports one
        (ReFrame's local scheduler). UsageError for text that is no status.'''
        if isinstance(code, str):
            text = code.strip()
            if not text.lstrip('-').isdigit():
                raise UsageError(f'exit status {code!r}: not a number')
            code = int(text)
        if isinstance(code, bool) or (code is not None and not isinstance(code, int)):
            raise UsageError(f'exit status {code!r}: not a number')
        if signal is not None and not (isinstance(signal, int) and signal > 0):
            signal = None
        if code is not None and code < 0:           # Python's subprocess: -N
            code, signal = None, -code
        elif code is not None and 128 < code < 128 + 65 and signal is None:
            signal = code - 128                     # the shell's 128 + N
        if code is None and signal is None:
            raise UsageError('no exit status')
        if code is not None and code > 255:
            raise UsageError(f'exit status {code}: beyond 255')
        return cls(code, signal)

    @property
    def ending(self):
        if self.signal is not None:
            return (Ending.INTERRUPTED if signal_name(self.signal) in INTERRUPTING
                    else Ending.SIGNAL)
        if self.code in RAN_CODES:
            return Ending.RAN
        if self.code == USAGE_CODE:
            return Ending.USAGE
        if self.code == CANNOT_RUN_CODE:
            return Ending.CANNOT_RUN
        return Ending.CRASH

    @property
    def ran(self):
        '''A run to judge: 0 or 1.'''
        return self.ending is Ending.RAN

    @property
    def not_run(self):
        '''Not run (2: usage, 3: cannot run here): nothing was measured, nothing failed.'''
        return self.ending in (Ending.USAGE, Ending.CANNOT_RUN)

    @property
    def interrupted(self):
        '''Stopped by someone (SIGTERM, SIGINT, SIGHUP): incomplete, never a pass.'''
        return self.ending is Ending.INTERRUPTED

    @property
    def failed(self):
        '''Killed or crashed: a failure of the node it ran on.'''
        return self.ending in (Ending.SIGNAL, Ending.CRASH)

    def text(self):
        '''"exit status 137" or "signal 9" as the runner gave it.'''
        return f'exit status {self.code}' if self.code is not None else f'signal {self.signal}'

    def reason(self, kernel):
        '''What a reader is told of this ending ('' for a run to judge).'''
        ending = self.ending
        if ending is Ending.RAN:
            return ''
        if ending is Ending.USAGE:
            return f'{kernel} not run: usage error ({self.text()}): its options are wrong'
        if ending is Ending.CANNOT_RUN:
            return (f'{kernel} not run: it cannot run here ({self.text()}: absent hardware '
                    'or a missing library, named in its output)')
        if ending is Ending.INTERRUPTED:
            name = signal_name(self.signal)
            return (f'{kernel} was interrupted by {name} ({self.text()}): '
                    + _USUAL_CAUSE.get(name, 'stopped before its planned end'))
        if ending is Ending.SIGNAL:
            name = signal_name(self.signal)
            cause = _USUAL_CAUSE.get(name)
            return (f'{kernel} was killed by {name} ({self.text()})'
                    + (f': {cause}' if cause else ''))
        return (f'{kernel} crashed: {self.text()} is no status of the kernel contract '
                '(0, 1, 2, 3): an abort, a crash or a launcher that failed')

    def to_json(self):
        return {'code': self.code, 'signal': self.signal,
                'signal_name': signal_name(self.signal) if self.signal else None,
                'ending': self.ending.value}


def not_run_text(reason):
    '''Whether a recorded failure reason is ExitStatus.reason's "not run" (2 or 3).'''
    return ' not run: usage error (' in (reason or '') or \
        ' not run: it cannot run here (' in (reason or '')


__all__ = ['CANNOT_RUN_CODE', 'Ending', 'ExitStatus', 'RAN_CODES', 'USAGE_CODE', 'not_run_text',
           'signal_name']
