'''The runs of the results store as `cobalt-bench runs` lists them: each run's state, its
cases counted by result, and what of it could not be read.'''

import os
from dataclasses import dataclass

from ..errors import CannotRun
from .documents import relpath
from .reader import load_run
from .result import RunState
from .runs import REPORT, list_runs, results_base, run_state


@dataclass
class Listed:
    site: str
    run_id: str
    state: RunState
    checks: str                 # '2 pass, 1 fail', 'none', or '-' (no report.json)
    why: str = ''               # what the state or the damage is about
    damaged: bool = False       # a file of the run could not be read


def store_to_list(explicit):
    '''The results store to list: one that was named (--results, $COBALT_BENCH_RESULTS)
    must exist; the default one may not yet (no run made).'''
    base = results_base(explicit)
    named = ('--results', explicit) if explicit else (
        ('COBALT_BENCH_RESULTS', os.environ['COBALT_BENCH_RESULTS'])
        if os.environ.get('COBALT_BENCH_RESULTS') else None)
    if named and not os.path.isdir(base):
        what = 'not a directory' if os.path.exists(base) else 'no such directory'
        raise CannotRun(f'{named[0]} {named[1]}: {what} (the results store is a directory '
                        'of <site>/<run-id>/ run directories)')
    return base


def _read(path):
    '''(state or None, checks, why) of a run with a report.json, read by load_run.'''
    try:
        run = load_run(path)
    except CannotRun as err:
        return RunState.DAMAGED, '-', str(err)
    counts = {}
    for c in run.cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    checks = ', '.join(f'{v} {k}' for k, v in sorted(counts.items())) or 'none'
    if run.report_damage:
        d = run.report_damage
        return RunState.DAMAGED, checks, f'{relpath(d.path, path)}: {d.problem}'
    if run.damaged:
        d = run.damaged[0]
        more = f' (and {len(run.damaged) - 1} more)' if len(run.damaged) > 1 else ''
        return None, checks, f'damaged: {relpath(d.path, path)}: {d.problem}{more}'
    return None, checks, ''


def listing(base, site=None):
    '''[Listed] of every run of the store `base` (of `site` only, when given).'''
    refused = []
    try:
        runs = list_runs(base, site, refused)
    except OSError as err:
        raise CannotRun(f'cannot read the results store {base}: {err.strerror or err}')
    # A link leading out of the store: named, never read (store.confine).
    out = [Listed(s, r or '-', RunState.DAMAGED, '-', why, damaged=True)
           for s, r, _, why in refused]
    for s, r, path in runs:
        state, why = run_state(path)
        item = Listed(s, r, state, '-', why)
        if os.path.lexists(os.path.join(path, REPORT)):
            bad_state, item.checks, bad_why = _read(path)
            if bad_why:
                item.damaged = True
                item.state = bad_state or state
                item.why = f'{why}; {bad_why}' if why else bad_why
        out.append(item)
    return out
