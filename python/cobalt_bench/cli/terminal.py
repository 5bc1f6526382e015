'''Text from the results on a terminal: the one rule of the commands that print what a
results store holds (`report`, `judge`, `runs`, and every error message).

A check name, fail reason, host, unit, path or run name may hold anything its writer
put there: an escape sequence that clears the screen, retitles the window or rewrites the
line before it; a carriage return that prints "passed" over "failed". Each line printed
is shown, never obeyed: every control character (C0 but the newline that ends it, DEL,
C1, and the invisible direction overrides) as its escape (`\\x1b`, `\\r`, `\\u202e`), and a
line cut at MAX_LINE characters (a 5 MB node name is named, not printed whole).'''

import sys

from ..report.format import CONTROL as _CONTROL     # one rule of what is shown

_NAMED = {'\r': '\\r', '\t': '\\t', '\n': '\\n'}

#: A line printed longer than this is cut, saying how much was left out.
MAX_LINE = 4000


def shown(text):
    '''`text` as one line for a terminal: control characters (newlines included) visible,
    cut at MAX_LINE characters.'''
    text = str(text)
    more = len(text) - MAX_LINE
    if more > 0:
        text = text[:MAX_LINE]
    text = _CONTROL.sub(lambda m: _NAMED.get(m.group()) or (
        f'\\x{ord(m.group()):02x}' if ord(m.group()) < 0x100 else f'\\u{ord(m.group()):04x}'),
        text)
    return text + (f'... ({more} more characters)' if more > 0 else '')


def say(text='', file=None):
    '''Print one line of text from the results (or made of it), shown (see shown()).'''
    print(shown(text), file=file or sys.stdout)


def say_lines(text, file=None):
    '''Print a text of several lines (ending in a newline or not), each line shown.'''
    lines = str(text).split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    for line in lines:
        say(line, file)
