'''What a check, a metric or a preflight setting came to: the one place that spells these
words. Everything else names them through these enums; a file's text (ReFrame's
report.json, a perflog, a preflight document) becomes one here, through Result.of and
SettingStatus.of, or is damaged.

Both are str enums: a member compares equal to its word and is written as it (JSON, text).
'''

import enum


class Word(str, enum.Enum):
    '''A word of a closed vocabulary: equal to its word, written as it.'''

    def __str__(self):
        return self.value

    def __format__(self, spec):
        return format(self.value, spec)

    @classmethod
    def of(cls, text, default=None):
        '''The member spelled `text`; `default` (or ValueError) for any other text.'''
        try:
            return cls(text)
        except ValueError:
            if default is not None:
                return default
            raise


class Result(Word):
    '''The result of a check on a partition (ReFrame's words first), or of one metric.'''
    PASS = 'pass'           # met every reference
    FAIL = 'fail'           # a reference not met, a sanity failure
    XFAIL = 'xfail'         # failed a reference marked as expected to fail ($xfail)
    XPASS = 'xpass'         # met a reference marked as expected to fail: a failure too
    SKIP = 'skip'           # not run on that partition (ReFrame's skip_if and friends)
    ABORT = 'abort'         # ReFrame stopped it (Ctrl-C, --exit-on-first-failure)
    ERROR = 'error'         # references that judge nothing (a metric the result lacks)
    DAMAGED = 'damaged'     # its result files could not be read: never a pass
    UNJUDGED = 'unjudged'   # measured, but nothing of the site's judges it
    UNKNOWN = 'unknown'     # no result recorded (a run cut short, an unreadable entry)
    RECORDED = 'recorded'   # a metric without a reference: recorded, not judged

    # The sets below are module constants: a member's class attribute (Result.PASS) is
    # looked up through the enum machinery, and a sweep asks these of millions of metrics.
    @property
    def passed(self):
        '''Counts as a pass: met its references (an expected failure included).'''
        return self in _PASSED

    @property
    def failed(self):
        '''Ran and failed a reference or a sanity rule (an unexpected pass included).'''
        return self in _FAILED

    @property
    def judged(self):
        '''The outcome of a judgement by references (a metric's or a case's).'''
        return self in _JUDGED


_PASSED = (Result.PASS, Result.XFAIL)
_FAILED = (Result.FAIL, Result.XPASS)
_JUDGED = _PASSED + _FAILED


class SettingStatus(Word):
    '''What `cobalt-bench preflight` found for one system setting.'''
    PASS = 'pass'
    FAIL = 'fail'
    WARN = 'warn'           # works, but not as the document recommends
    UNKNOWN = 'unknown'     # could not be determined (no such file): never a pass
    SKIP = 'skip'           # does not apply here (no GPU, no such interface)


class RunState(Word):
    '''The state of a run directory in the store.'''
    COMPLETE = 'complete'   # ReFrame finished and wrote report.json
    PARTIAL = 'partial'     # interrupted, or report.json missing or damaged
    RUNNING = 'running'     # its run-suite is still alive
    DAMAGED = 'damaged'     # (`cobalt-bench runs`) its report.json cannot be read at all
