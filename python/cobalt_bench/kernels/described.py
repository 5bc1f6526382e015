'''What the C kernels say of themselves: every kernel's `--describe` (its options and its
document's metrics, each with its unit), as `make` writes it from the kernels' own tables
into described.json beside this module (src/describe/). A metric's unit is written once,
in its kernel's C table; the descriptors take it from here.
'''

import difflib
import functools
import json
import os

from ..errors import CannotRun

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'described.json')


@functools.cache
def descriptions():
    '''{program: its description}, read once; CannotRun where `make` has not written it.'''
    try:
        with open(PATH, encoding='utf-8') as fp:
            described = json.load(fp)
    except FileNotFoundError:
        raise CannotRun(f'{PATH} is missing: the kernels are described at build time; run '
                        'make in the cobalt-bench tree (or make install)') from None
    except (OSError, ValueError) as err:
        raise CannotRun(f'{PATH}: cannot read the kernels\' descriptions: {err}; run make '
                        'again') from None
    if not isinstance(described, dict):
        raise CannotRun(f'{PATH}: not the kernels\' descriptions; run make again')
    return described


def _description(program):
    '''`program`'s description; CannotRun where there is none.'''
    entry = descriptions().get(program)
    if entry is None:
        raise CannotRun(f'{PATH} does not describe {program}: run make again')
    return entry


@functools.cache
def metric_units(program):
    '''{metric: unit} of every metric `program`'s document may carry.'''
    return {m['name']: m['unit'] for m in _description(program)['metrics']}


@functools.cache
def units_of(program, names):
    '''{metric: unit} of the metrics `names` (a tuple) of `program`, each as its kernel
    describes it; read once (a sweep asks for every document). Not to be changed.'''
    units = metric_units(program)
    missing = [n for n in names if n not in units]
    if missing:
        raise CannotRun(f'{PATH}: {program} describes no metric {", ".join(missing)}, which '
                        'its descriptor (cobalt_bench.kernels) declares: run make again')
    return {n: units[n] for n in names}


# ---- typed options: a site's {option: value} as the kernel's command line ----------------

class OptionError(ValueError):
    '''A known option whose value its kernel cannot take: `key` as the options gave it,
    `problem` why (the message: [key]: problem).'''

    def __init__(self, key, problem):
        super().__init__(f'[{key!r}]: {problem}')
        self.key, self.problem = key, problem


_TYPES = {
    'flag': (bool,), 'int': (int,), 'long': (int,), 'u64': (int,), 'double': (int, float),
    'size': (int, str), 'duration': (int, float, str), 'string': (str,), 'custom': (str,),
    'choice': (str,), 'intlist': (list, str),
}


def _option_problem(program, opt, value):
    '''Why `value` cannot be `program`'s option `opt` (its description), or ''.'''
    name, kind = opt['name'], opt['type']
    types = _TYPES.get(kind, (str,))
    if isinstance(value, bool) != (bool in types) or not isinstance(value, types):
        return (f'{program} --{name} takes {kind} ({" or ".join(t.__name__ for t in types)}), '
                f'not {type(value).__name__} {value!r}')
    if kind == 'intlist' and isinstance(value, list) and not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return f'{program} --{name} takes a list of non-negative integers, not {value!r}'
    if kind == 'choice' and value not in opt['choices']:
        return f'{program} --{name} takes one of {", ".join(opt["choices"])}, not {value!r}'
    low, high = opt['min'], opt['max']
    if low is not None and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and not low <= value <= high:
        unit = f' {opt["unit"]}' if opt['unit'] else ''
        return f'{value!r} is out of range: {program} --{name} takes {low:g} to {high:g}{unit}'
    return ''


def option_args(program, options):
    '''The command-line words of a site's typed options of `program` ({'stations': 1,
    'desired_rate': 8}: `--stations 1 --desired-rate 8`; a flag True: `--max`, False:
    nothing). ValueError naming the option and what it takes where one is unknown (with
    the closest name), of the wrong type or out of its range.'''
    if not isinstance(options, dict):
        raise ValueError(f'must be a dict of {program} options by name, not '
                         f'{type(options).__name__} {options!r}')
    entry = _description(program)
    # --json is the check's own: it names the document it reads.
    known = {o['name'].replace('-', '_'): o for o in entry['options'] if o['name'] != 'json'}
    words = []
    for key, value in options.items():
        opt = known.get(key) if isinstance(key, str) else None
        if opt is None:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            raise ValueError(f'{key!r} is no option of {program}{hint}; its options: '
                             f'{", ".join(sorted(known))}')
        problem = _option_problem(program, opt, value)
        if problem:
            raise OptionError(key, problem)
        if opt['type'] == 'flag':
            words += [f'--{opt["name"]}'] if value else []
        elif isinstance(value, list):
            words += [f'--{opt["name"]}', ','.join(str(v) for v in value)]
        else:
            words += [f'--{opt["name"]}', str(value)]
    return words


# ---- typed options as text: a job script's NAME=VALUE words or CB_OPT_* variables --------

_TRUE, _FALSE = ('1', 'true', 'yes', 'on'), ('0', 'false', 'no', 'off', '')


def _number(text, kind):
    '''`text` as a number of `kind` (an integer; a double or duration may have a
    fraction), or None.'''
    for read in (int, lambda t: int(t, 0), float):
        try:
            value = read(text)
        except ValueError:
            continue
        return value if kind in ('double', 'duration') or isinstance(value, int) else None
    return None


def _typed(program, opt, text):
    '''`text` as `opt`'s type: a flag from true/false (yes/no, on/off, 1/0), a number
    from its digits; a size or duration with a unit ("64M", "500ms") stays text for the
    kernel to read; the rest is text. ValueError naming the option where it is none.'''
    kind = opt['type']
    if kind == 'flag':
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f'{program} --{opt["name"]} is a flag: true or false, not {text!r}')
    if kind in ('int', 'long', 'u64', 'double', 'size', 'duration'):
        value = _number(text.strip(), kind)
        if value is None and kind in ('size', 'duration') and text.strip():
            return text.strip()
        if value is None:
            raise ValueError(f'{program} --{opt["name"]} takes {kind}, not {text!r}')
        return value
    return text


def env_prefix(program):
    '''The prefix of `program`'s typed options in a job's environment:
    CB_OPT_MEM_TEST_ (CB_OPT_MEM_TEST_STATIONS=1 is --stations 1).'''
    return 'CB_OPT_' + program.upper().replace('-', '_') + '_'


def options_from_env(program, environ):
    '''{option: text} of `program`'s CB_OPT_<PROGRAM>_<OPTION> variables in `environ`
    (the option by its key: CB_OPT_MEM_TEST_DESIRED_RATE is desired_rate), by name.'''
    prefix = env_prefix(program)
    return {k[len(prefix):].lower(): v for k, v in sorted(environ.items())
            if k.startswith(prefix)}


def text_option_args(program, texts):
    '''option_args() of options given as text ({'stations': '1'}): each read as its
    option's type first, so that a wrong type or a value out of range is named as for a
    site's typed options. ValueError as option_args'.'''
    known = {o['name'].replace('-', '_'): o for o in _description(program)['options']}
    typed = {}
    for key, text in texts.items():
        if '\n' in text or '\0' in text:
            raise OptionError(key, f'a value of {program} takes one line, not {text!r}')
        opt = known.get(key)
        try:
            typed[key] = _typed(program, opt, text) if opt else text
        except ValueError as err:
            raise OptionError(key, str(err)) from None
    return option_args(program, typed)
