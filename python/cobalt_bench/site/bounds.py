'''ReFrame's reference bounds, the one rule for everything that judges: a reference
(value, lower, upper) with lower and upper as fractions of the value, as ReFrame applies
them (reframe.utility.sanity.reference_bounds and assert_reference): the references'
validation (site.references), the judges (cobalt_bench.judging) and the report's bounds.

The rule is ReFrame 4.9's, written out here rather than imported: importing ReFrame
costs a command a quarter of a second (the whole of `export prometheus` of 1,000 nodes
is meant to take under 1 s), and before 4.8 ReFrame's own rule gave a reference of 0 no
bounds at all. tests/python/reframe/test_compat.py holds it to the pinned ReFrame's
sn.assert_reference, case by case (docs/reframe.md).
'''

import functools
import math
from dataclasses import dataclass


def threshold_problem(value, lower, upper):
    '''What ReFrame's reference_bounds() rejects in thresholds (a lower one in [-1, 0] for
    a positive reference, <= 0 for 0 or a negative one; an upper one >= 0 for a reference
    >= 0, in [0, 1] for a negative one), or ''.'''
    if lower is not None and not ((value > 0 and -1 <= lower <= 0) or
                                  (value == 0 and lower <= 0) or (value < 0 and lower <= 0)):
        return f'invalid low threshold value: {lower}'
    if upper is not None and not ((value >= 0 and upper >= 0) or
                                  (value < 0 and 0 <= upper <= 1)):
        return f'invalid high threshold value: {upper}'
    return ''


def _finite_or_none(x):
    return None if x is None or (isinstance(x, float) and math.isinf(x)) else x


@dataclass(frozen=True)
class Bounds:
    '''Absolute bounds of a reference; None: that side is open.'''
    lower: object = None
    upper: object = None

    @classmethod
    def of(cls, value, lower, upper):
        '''The bounds of reference `value` with fractional thresholds `lower`, `upper`:
        value * (1 + threshold), the sign turned for a negative value; for a value of 0
        the thresholds are absolute.'''
        def bound(thres):
            if thres is None or value is None:
                return None
            if value == 0:
                return thres
            return value * (1 - thres if value < 0 else 1 + thres)
        return cls(_finite_or_none(bound(lower)), _finite_or_none(bound(upper)))

    def contains(self, value):
        '''Whether a measured value meets them (a value that is no number never does).'''
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return (self.lower is None or value >= self.lower) and \
            (self.upper is None or value <= self.upper)

    def text(self, number=lambda v: f'{v:g}'):
        '''As people read them: "lo .. hi", ">= lo", "<= hi", or "any"; `number` formats
        each bound.'''
        if self.lower is not None and self.upper is not None:
            return f'{number(self.lower)} .. {number(self.upper)}'
        if self.lower is not None:
            return f'>= {number(self.lower)}'
        if self.upper is not None:
            return f'<= {number(self.upper)}'
        return 'any'


@functools.lru_cache(maxsize=4096)
def _bounds_of(ref_value, lower, upper):
    # Once per reference: a sweep judges each reference on every node.
    return Bounds.of(ref_value, lower, upper)


def meets(value, ref_value, lower, upper):
    '''Whether `value` meets the reference: ReFrame's sn.assert_reference, which is
    sn.assert_bounded (lower <= value <= upper, an open side infinite) over
    sn.reference_bounds, whose rule Bounds.of writes out; compared here, since
    evaluating ReFrame's deferred expressions per value cost 20 % of judging a sweep.
    A value that is no number, or not a number (NaN), never meets it.'''
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
        return False
    try:
        bounds = _bounds_of(ref_value, lower, upper)
    except TypeError:                   # unhashable: a reference the validation refused
        bounds = Bounds.of(ref_value, lower, upper)
    return within(value, bounds)


def within(value, bounds):
    '''meets() for a reference whose Bounds.of are already worked out (a site.Ref's
    `bounds`): a sweep judges each reference on every node.'''
    return value == value and bounds.contains(value)    # NaN never meets
