'''Numbers and bounds as the report shows them (Markdown, HTML and compare alike).'''

import math

from ..site.bounds import Bounds


def fmt(value):
    '''A number as people read it: 4 significant digits, no exponent for usual sizes.'''
    if value is None:
        return ''
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    mag = abs(value)
    if mag >= 1e6 or mag < 1e-3:
        return f'{value:.4g}'
    return f'{value:.4g}' if mag < 1000 else f'{value:.1f}'


def fmt_bounds(m):
    '''A judged metric's bounds (site.bounds' one rule), '' for a recorded one.'''
    return Bounds(m.lower, m.upper).text(fmt) if m.judged else ''
