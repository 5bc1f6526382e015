'''Numbers and bounds as the report shows them (Markdown, HTML and compare alike).'''

import math
import re

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


# Control characters (C0, DEL, C1) and the invisible direction overrides: shown, in the
# Markdown and the HTML report alike, as the terminal output shows them.
CONTROL = re.compile('[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]')
_CONTROL_BUT_LINES = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e'
                                '\u2066-\u2069]')


def visible(text, keep_lines=False):
    '''Control characters as their escapes (`\\x1b`, `\\u202e`): seen, not obeyed;
    with keep_lines, tabs and line breaks stay what they are (HTML's text).'''
    rule = _CONTROL_BUT_LINES if keep_lines else CONTROL
    return rule.sub(lambda m: (f'\\x{ord(m.group()):02x}' if ord(m.group()) < 0x100
                               else f'\\u{ord(m.group()):04x}'), text)
