'''`cobalt-bench report --compare RUN_A RUN_B`: what changed beyond a tolerance, as
regressions and improvements where the direction of "better" is known (from the reference
thresholds, else the metric's name and unit).'''

import re
from dataclasses import dataclass

from ..errors import CannotRun, UsageError
from ..store import reader, runs
from ..store.result import Result
from .format import fmt
from .markdown import md_table, md_text


LOWER_IS_BETTER = re.compile(r'late|loss|lost|latency|error|missed|drop|time|duration|'
                             r'_us$|_ms$|failed|unknown')
HIGHER_IS_BETTER = re.compile(r'speed|bandwidth|_bw|bw_|rate|throughput|percent_of|gbit|'
                              r'flops|msg|passed')
LOWER_UNITS = {'us', 'ms', 'ns', 's', 'usec', 'errors'}
HIGHER_UNITS = re.compile(r'(bit|B|byte|msg|pkt|pps|op)s?/s$|^Mpps$|^GT/s$', re.I)


def better_direction(name, unit, metrics):
    '''+1 higher is better, -1 lower is better, 0 unknown: from the reference thresholds
    (a lower one only: higher is better), else the name, else the unit.'''
    for m in metrics:
        if m is not None and m.judged:
            lo = m.lower_thres is not None
            hi = m.upper_thres is not None
            if lo and not hi:
                return 1
            if hi and not lo:
                return -1
    if LOWER_IS_BETTER.search(name):
        return -1
    if HIGHER_IS_BETTER.search(name):
        return 1
    if unit in LOWER_UNITS:
        return -1
    if HIGHER_UNITS.search(unit or ''):
        return 1
    return 0


@dataclass
class Change:
    check: str
    where: str
    metric: str
    a: object
    b: object
    unit: str
    change: object          # relative change (fraction), None if not defined
    kind: str               # regression, improvement, changed, only in A, only in B


def case_key(case):
    # Job documents have no partition: the same kernel on the same node compares.
    if not case.system and case.partition.startswith('job'):
        return (case.check, ','.join(case.nodes), '')
    return (case.check, case.where, case.environ)


def compare(run_a, run_b, tolerance):
    '''Changes of run_b against run_a beyond `tolerance` percent (and every change of a
    case's result).'''
    tol = tolerance / 100.0
    cases_a = {case_key(c): c for c in run_a.cases}
    cases_b = {case_key(c): c for c in run_b.cases}
    changes = []
    for key in sorted(set(cases_a) | set(cases_b)):
        ca, cb = cases_a.get(key), cases_b.get(key)
        check, where = key[0], key[1]
        if ca is None or cb is None:
            changes.append(Change(check, where, '(check)', ca and ca.result,
                                  cb and cb.result, '', None,
                                  'only in B' if ca is None else 'only in A'))
            continue
        if ca.result != cb.result:
            kind = ('regression' if ca.result is Result.PASS else
                    'improvement' if cb.result is Result.PASS else 'changed')
            changes.append(Change(check, where, '(result)', ca.result, cb.result, '', None,
                                  kind))
        ma = {m.name: m for m in ca.metrics}
        mb = {m.name: m for m in cb.metrics}
        for name in sorted(set(ma) | set(mb)):
            a, b = ma.get(name), mb.get(name)
            if a is None or b is None:
                changes.append(Change(check, where, name, a and a.value, b and b.value,
                                      (a or b).unit, None,
                                      'only in B' if a is None else 'only in A'))
                continue
            if not all(isinstance(x, (int, float)) for x in (a.value, b.value)):
                continue
            if a.value == b.value:
                continue
            rel = (b.value - a.value) / abs(a.value) if a.value else None
            if rel is not None and abs(rel) <= tol:
                continue
            d = better_direction(name, b.unit or a.unit, (a, b))
            if d == 0:
                kind = 'changed'
            else:
                kind = 'improvement' if (b.value - a.value) * d > 0 else 'regression'
            changes.append(Change(check, where, name, a.value, b.value, b.unit or a.unit,
                                  rel, kind))
    return changes


def render_compare(run_a, run_b, changes, tolerance):
    order = {'regression': 0, 'improvement': 1, 'changed': 2, 'only in A': 3,
             'only in B': 4}
    changes = sorted(changes, key=lambda c: (order[c.kind], c.check, c.where, c.metric))
    n_reg = sum(c.kind == 'regression' for c in changes)
    n_imp = sum(c.kind == 'improvement' for c in changes)
    lines = [f'# cobalt-bench compare: {md_text(run_a.label)} (A) -> '
             f'{md_text(run_b.label)} (B)', '',
             f'Tolerance {fmt(tolerance)}%: {n_reg} regression(s), {n_imp} improvement(s), '
             f'{len(changes) - n_reg - n_imp} other change(s).', '']
    if changes:
        rows = [[c.kind.upper() if c.kind in ('regression', 'improvement') else c.kind,
                 c.check, c.where, c.metric, fmt(c.a), fmt(c.b),
                 f'{c.change * 100:+.1f}%' if c.change is not None else '', c.unit]
                for c in changes]
        lines.append(md_table(['kind', 'check', 'partition', 'metric', 'A', 'B', 'change',
                                'unit'], rows))
    else:
        lines.append('No change beyond the tolerance.')
    return '\n'.join(lines) + '\n'


def comparable(name, run):
    '''A run whose run report is damaged has other cases (from its perflogs) than it
    had: compared, it would match none of the other run's checks and read as "no
    regression".'''
    if run.report_damage:
        raise CannotRun(f'{name} {run.label}: cannot compare: {run.report_damage}')
    return run


def runs_to_compare(spec_a, spec_b, base):
    '''(run A, run B) as a user named them; UsageError for the same run twice, CannotRun
    for a run that cannot be compared or two runs that share no check.'''
    run_a = comparable('RUN_A', reader.load_run(runs.resolve_run(spec_a, base)))
    run_b = comparable('RUN_B', reader.load_run(runs.resolve_run(spec_b, base)))
    if run_a.path == run_b.path:
        raise UsageError(f'RUN_A and RUN_B are the same run ({run_a.path})')
    common = {case_key(c) for c in run_a.cases} & {case_key(c) for c in run_b.cases}
    if not common:
        def names(run):
            return ', '.join(sorted({f'{c.check} on {c.where}' for c in run.cases})) or 'none'
        raise CannotRun(f'{run_a.label} and {run_b.label} share no check: nothing to '
                        f'compare (RUN_A has {names(run_a)}; RUN_B has {names(run_b)})')
    return run_a, run_b
