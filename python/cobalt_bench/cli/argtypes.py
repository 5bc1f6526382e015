'''argparse types shared by every command: a bad value is a usage error (exit 2) said by
argparse, never a silently wrong default.'''

import argparse
import math


def nonempty_path(text):
    '''A path that is not empty (an empty one would silently mean "here").'''
    if not text.strip():
        raise argparse.ArgumentTypeError('empty path')
    return text


def finite(text):
    '''A finite number: float() takes 'nan' and 'inf', and a threshold no value can cross
    (or every value does) would flag nothing.'''
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}')
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'not a finite number: {text!r}')
    return value


def positive(text):
    '''A whole number of at least 1 (a count of runs, of failures).'''
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a whole number: {text!r}')
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be at least 1: {text!r}')
    return value


def percent(text):
    try:
        value = float(text.rstrip('%'))
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a percentage: {text!r}')
    if not 0 <= value < 1000:
        raise argparse.ArgumentTypeError(f'tolerance out of range (0-1000%): {text!r}')
    return value


def formats(text):
    items = [f.strip() for f in text.split(',')]
    if '' in items or any(f not in ('md', 'html') for f in items):
        raise argparse.ArgumentTypeError(f'expected md, html or md,html, not {text!r}')
    return list(dict.fromkeys(items))


def run_spec(text):
    if not text.strip():
        raise argparse.ArgumentTypeError('empty name')
    return text


def add_results_option(parser, **kw):
    '''The --results DIR option of a command that reads or writes the results store.'''
    parser.add_argument('--results', metavar='DIR', type=nonempty_path, **kw,
                        help='the results store (default: $COBALT_BENCH_RESULTS, else the '
                             'checkout\'s results/, else ./results)')
