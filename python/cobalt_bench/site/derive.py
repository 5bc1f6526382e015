'''References derived from data (issue 28, item 5): from known-good runs, one
references.yaml entry per check, partition and metric, with its provenance.

What is derived, per check (ReFrame's class name; a job document's is the check that runs
its kernel), site partition and metric:
  - the reference value: the median of every value of the metric across the runs and
    nodes, rounded to 6 significant digits;
  - the tolerance on each side the entry judges: the given percentage (--tolerance), or
    else the widest of: 3 x 1.4826 x MAD (the median absolute deviation, scaled to a
    normal distribution's standard deviation), the farthest value observed on that side,
    and 1% of the value (MIN_FRACTION); rounded up to 4 significant digits, so that
    every value it was derived from meets it. A value of 0 gets absolute bounds
    (ReFrame's rule for a reference of 0).
The sides judged are the site's current entry's (a lower bound only for a rate, an upper
one only for a time); without one, those ReFrame recorded in the run; else both.
The metrics derived are those the site's current references judge for that check and
partition, those ReFrame judged in the runs, and the ones asked for by name.

Known-good only: a run with a failed case (a reference not met, a sanity failure, an
unexpected pass, an abort, a damaged or erroneous result, a try hidden by a retry), a
partial ReFrame run, or a case on a node flagged by the fleet analysis is refused, unless
allowed: then the runs are used and those cases' values are left out (named).

The new file is the current one with the derived partition entries put in place of the
old ones (each metric preceded by a comment with its provenance); what is not derived is
kept as written. It is read back with the site's own loader before anyone writes it.
'''

import datetime
import math
import os
import re
import statistics
import tempfile
import textwrap
from dataclasses import dataclass, field

from .. import kernels
from ..store.history import run_date
from ..store.identity import CheckName
from ..store.model import KIND_REFRAME
from ..store.result import Result, RunState
from .bounds import meets
from .checks import check_of_kernel, known_checks
from .files import SiteError
from .references import load_references

#: The spread in robust standard deviations (1.4826 x MAD) a derived tolerance covers.
MAD_K, MAD_SCALE = 3.0, 1.4826
#: The narrowest tolerance derived, as a fraction of the value: nodes that agree within
#: one run differ more from run to run (CI: a paced 1 Gbit/s mem-test, every node at 1.0
#: in the clean sweep, gave 0.9988 on a clean node in the next; a 0.1% floor failed it).
MIN_FRACTION = 0.01
#: At most this many runs are named in a provenance comment.
RUNS_NAMED = 6
#: Fewer nodes than this (per check, partition and metric) derive no reference.
MIN_NODES = 3
#: A tolerance derived from the spread this wide (a fraction of the value) or wider is
#: refused: half of a node's capacity gone would still pass it.
WIDEST = 0.5
_BAD = (Result.ABORT, Result.DAMAGED, Result.ERROR)


@dataclass
class Sample:
    value: float
    node: str
    run: str                    # site/run-id
    date: str


@dataclass
class Derived:
    check: str
    partition: str
    metric: str
    unit: object
    value: float
    lower: object               # fraction (ReFrame's threshold), or None: open
    upper: object
    samples: list = field(default_factory=list)     # [Sample]
    how: str = ''               # how the tolerance was chosen

    @property
    def values(self):
        return [s.value for s in self.samples]

    def comment(self, indent='    '):
        '''Its provenance, as YAML comment lines: "# derived ..." and "#   ..." lines.'''
        xs = self.values
        med = statistics.median(xs)
        mad = statistics.median(abs(x - med) for x in xs)
        runs = list(dict.fromkeys(s.run for s in self.samples))
        dates = sorted(s.date for s in self.samples if s.date)
        named = ', '.join(runs[:RUNS_NAMED]) + (
            f' and {len(runs) - RUNS_NAMED} more' if len(runs) > RUNS_NAMED else '')
        when = (f' ({dates[0]}' + (f' .. {dates[-1]}' if dates[-1] != dates[0] else '')
                + ')') if dates else ''
        text = (f'derived {datetime.date.today()} from {len(runs)} run(s){when}: {named}; '
                f'{len({s.node for s in self.samples})} node(s), {len(xs)} value(s): '
                f'median {med:.6g}, MAD {mad:.3g}, min {min(xs):.6g}, max {max(xs):.6g}; '
                f'tolerance: {self.how}')
        lines = textwrap.wrap(text, 94 - len(indent), break_on_hyphens=False,
                              break_long_words=False)
        return [f'{indent}# {lines[0]}'] + [f'{indent}#   {line}' for line in lines[1:]]

    def line(self, indent='    '):
        return (f'{indent}{self.metric}: [{_num(self.value)}, {_num(self.lower)}, '
                f'{_num(self.upper)}, {_unit(self.unit)}]')


@dataclass
class Derivation:
    entries: list = field(default_factory=list)     # [Derived]
    refused: list = field(default_factory=list)     # [(run label, why)]
    left_out: list = field(default_factory=list)    # [str] cases whose values were not used
    notes: list = field(default_factory=list)       # [str] what was not derived, and why


def _num(x):
    '''A number as YAML 1.1 (PyYAML) reads it back as one: '1e-05' is a string there.'''
    if x is None:
        return 'null'
    s = repr(float(x))
    mantissa, _, exp = s.partition('e')
    if exp and '.' not in mantissa:
        s = f'{mantissa}.0e{exp}'
    return s


def _unit(unit):
    return 'null' if unit is None else "'" + str(unit).replace("'", "''") + "'"


def _sig(x, digits):
    return float(f'{x:.{digits}g}') if x else 0.0


def _round_up(x, digits=4):
    '''x rounded away from zero to `digits` significant digits.'''
    if not x:
        return 0.0
    scale = 10 ** (digits - 1 - math.floor(math.log10(abs(x))))
    return math.copysign(math.ceil(abs(x) * scale - 1e-9) / scale, x)


def bad_case(case):
    '''Why a case is not known-good, or '' (a skipped one is neither good nor bad).'''
    if case.result.failed or case.result in _BAD:
        return f'{case.result}' + (f': {case.fail_reason}' if case.fail_reason else '')
    if case.failed_tries:
        return f'failed {case.failed_tries} tr(ies) before a retry passed'
    if case.exit_status is not None and not case.exit_status.ran:
        return case.exit_status.reason(case.kernel or case.check)
    return ''


def refusal(run):
    '''Why a run is not known-good as a whole, or ''.'''
    if run.kind == KIND_REFRAME and run.state is not RunState.COMPLETE:
        return f'the run is {run.state}: {run.state_why}'
    if not run.cases:
        return 'no case in it'
    return ''


def _check_of(case, checks):
    name = CheckName.of(case.check).check
    if checks is None or name in checks:
        return name
    variant = re.fullmatch(r'(\w+)_\d+', name)     # a perflog's unique name, MemTest_3
    if variant and variant.group(1) in checks:
        return variant.group(1)
    for doc in case.docs:
        found = check_of_kernel(doc.get('test', ''), checks)
        if found:
            return found
    return name


def _partition_of(case, run, site):
    if run.kind == KIND_REFRAME:
        return case.where
    if case.judged_partition:
        return case.judged_partition
    return site.partitions[0] if len(site.partitions) == 1 else ''


def _sides(current, recorded):
    '''(judge lower, judge upper): the current Ref's sides, else those ReFrame recorded
    for the metric (a store.model.Metric), else both.'''
    if current is not None:
        return current.lower is not None, current.upper is not None
    if recorded is not None and recorded.judged and (
            recorded.lower_thres is not None or recorded.upper_thres is not None):
        return recorded.lower_thres is not None, recorded.upper_thres is not None
    return True, True


def _tolerance(xs, value, lower, upper, pct):
    '''(lower, upper, how): ReFrame's fractional thresholds for `value`.'''
    if pct is not None:
        t = pct / 100.0
        how = f'{pct:g}% as given'
        spread_lo = spread_hi = t * abs(value) if value else t
    else:
        med = statistics.median(xs)
        robust = MAD_K * MAD_SCALE * statistics.median(abs(x - med) for x in xs)
        floor = MIN_FRACTION * abs(value)
        spread_lo = max(robust, value - min(xs), floor)
        spread_hi = max(robust, max(xs) - value, floor)
        how = (f'the spread (widest of {MAD_K:g} x {MAD_SCALE} x MAD, the farthest value, '
               f'{MIN_FRACTION * 100:g}%)')
    scale = abs(value) if value else 1.0
    lo = -min(_round_up(spread_lo / scale), 1.0) if lower else None
    hi = _round_up(spread_hi / scale) if upper else None
    if hi is not None and value < 0:
        hi = min(hi, 1.0)
    return lo, hi, how


def derive(runs, site, tolerance=None, allow_bad=False, flagged=(), metrics=()):
    '''The Derivation of the store.model.Run list `runs` for the site.SiteDef `site`.
    `flagged`: {(run label, node)} or {node} the fleet analysis flagged; `metrics`: names
    to derive besides the judged ones.'''
    out = Derivation()
    checks = known_checks()
    flagged = set(flagged)
    # A run named twice counts once (its values would weigh double).
    runs = list({os.path.realpath(r.path): r for r in runs}.values())
    for run in runs:
        why = refusal(run)
        bad = [(c, bad_case(c)) for c in run.cases if bad_case(c)]
        bad += [(c, 'its node is flagged by the fleet analysis') for c in run.cases
                if not bad_case(c) and any(n in flagged or (run.label, n) in flagged
                                           for n in c.nodes)]
        if why or (bad and not allow_bad):
            out.refused.append((run.label, why or '; '.join(
                f'{c.check} on {c.where} ({",".join(c.nodes)}): {w}' for c, w in bad[:5])
                + (f' (and {len(bad) - 5} more)' if len(bad) > 5 else '')))
        for c, w in bad:
            out.left_out.append(f'{run.label}: {c.check} on {c.where} '
                                f'({",".join(c.nodes)}): {w}')
    if out.refused:
        return out
    groups, notes = {}, set()
    left = set(out.left_out)
    for run in runs:
        date = run_date(run)
        for case in run.cases:
            if case.result is Result.SKIP or not case.metrics or any(
                    f'{run.label}: {case.check} on {case.where} ' in x for x in left):
                continue
            check = _check_of(case, checks)
            if check in kernels.BY_PEERS and not site.references.has_check(check):
                notes.add(f'{check}: judged against its peers in each run (docs/fleet.md): '
                          'no reference derived')
                continue
            part = _partition_of(case, run, site)
            if part not in site.partitions:
                notes.add(f'{check} on {part or case.where}: not a partition of site '
                          f'{site.name} (the site\'s only one is not known for job documents '
                          'without a judged partition)' if not part else
                          f'{check} on {part}: not a partition of site {site.name}')
                continue
            entry = site.references.checks.get(check)
            if entry is not None and entry.index:
                notes.add(f'{check}: an indexed entry ($index {list(entry.index)}): not '
                          'derived, kept as written')
                continue
            current = site.references.lookup(check, part)
            wanted = set(current) | {m.name for m in case.metrics if m.judged} | set(metrics)
            for m in case.metrics:
                if m.name not in wanted or not isinstance(m.value, (int, float)) or \
                        isinstance(m.value, bool) or not math.isfinite(m.value):
                    continue
                g = groups.setdefault((check, part, m.name), {'unit': m.unit, 'samples': [],
                                                              'current': current.get(m.name),
                                                              'metric': m})
                g['samples'].append(Sample(float(m.value), case.nodes[0] if case.nodes
                                           else '', run.label, date))
    for (check, part, name), g in sorted(groups.items()):
        where = f'{check} on {part}, {name}'
        nodes = {s.node for s in g['samples']}
        if len(nodes) < MIN_NODES:
            out.notes.append(f'{where}: not derived: {len(nodes)} node(s); a reference needs '
                             f'{MIN_NODES} or more (two values say nothing of which is off)')
            continue
        current = g['current']
        failing = [s for s in g['samples'] if current is not None and not current.xfail and
                   not meets(s.value, current.value, current.lower, current.upper)]
        if failing:
            # A run that passed the laxer references of its day is no good run today.
            out.notes.append(f'{where}: not derived: {len(failing)} value(s) fail the '
                             f'current reference ({current.value:g}): '
                             + ', '.join(f'{s.value:g} on {s.node} ({s.run})'
                                         for s in failing[:3]))
            continue
        xs = [s.value for s in g['samples']]
        value = _sig(statistics.median(xs), 6)
        lower, upper = _sides(g['current'], g['metric'])
        lo, hi, how = _tolerance(xs, value, lower, upper, tolerance)
        if tolerance is None:
            for _ in range(20):     # rounding may leave a value just outside: widen
                if all(meets(x, value, lo, hi) for x in xs):
                    break
                lo = lo if lo is None else max(lo * 1.001, -1.0)
                hi = hi if hi is None else hi * 1.001
        widest = max((abs(t) for t in (lo, hi) if t is not None), default=0.0)
        if tolerance is None and widest >= WIDEST:
            out.notes.append(f'{where}: not derived: the values spread {widest:.0%} of the '
                             f'value (min {min(xs):g}, median {value:g}, max {max(xs):g}): '
                             'a tolerance that wide judges nothing (at -100 % a reference '
                             'passes any value); a node of these is off, or the metric is '
                             'noise')
            continue
        unit = g['current'].unit if g['current'] is not None else g['unit'] or None
        d = Derived(check, part, name, unit, value, lo, hi, g['samples'], how)
        outside = sum(not meets(x, value, lo, hi) for x in xs)
        if outside:
            out.notes.append(f'{check} on {part}, {name}: {outside} of {len(xs)} values it '
                             f'was derived from fall outside the tolerance given')
        out.entries.append(d)
    out.notes = sorted(notes) + out.notes
    return out


# ---- the file ------------------------------------------------------------------------

_CHECK_LINE = re.compile(r'^([A-Za-z_]\w*):\s*(?:#.*)?$')
_PART_LINE = re.compile(r'''^  (['"]?)([^'"#]+?)\1:\s*(&\S+)?\s*(\*\S+)?\s*(?:#.*)?$''')


def _indent(line):
    return len(line) - len(line.lstrip(' '))


def _block_end(lines, start, deeper):
    '''The end (exclusive) of the block opened at `start`: the lines indented more than
    `deeper`, less the comments and blank lines that end it (the next block's).'''
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > deeper):
        end += 1
    while end > start + 1 and (not lines[end - 1].strip() or
                               lines[end - 1].lstrip().startswith('#')):
        end -= 1
    return end


_METRIC_LINE = re.compile(r'^    ([A-Za-z_][\w.-]*):')


def _new_partition(part, entries):
    return [f"  '{part}':"] + [x for d in entries for x in d.comment() + [d.line()]]


def _splice(block, entries):
    '''The lines of a partition entry (`block`: its key line and body) with each derived
    metric's line (and its earlier provenance comment) replaced by the derived one and the
    metrics it lacked added at its end; every other line is kept as written. An entry
    that is an alias (`key: *anchor`) becomes a mapping of the derived metrics only.'''
    head = _PART_LINE.match(block[0])
    if head.group(4):           # an alias: its other metrics stay where the anchor is
        return _new_partition(head.group(2), entries)
    derived = {d.metric: d for d in entries}
    out, done = [], set()
    for line in block:
        m = _METRIC_LINE.match(line)
        if m and m.group(1) in derived:
            while out and re.match(r'^    # (derived \d|  )', out[-1]):
                out.pop()       # the provenance of an earlier derivation
            d = derived[m.group(1)]
            out += d.comment() + [d.line()]
            done.add(d.metric)
        else:
            out.append(line)
    for d in entries:
        if d.metric not in done:
            out += d.comment() + [d.line()]
    return out


def merged_text(current_text, derivation):
    '''The current references.yaml text (None: no file) with the derived entries in
    place (_splice); a check or partition it lacks is added at the end of the file or of
    the check's entry.'''
    lines = (current_text or '').split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    # A site with no reference yet says so with an empty mapping (`{}`): entries replace it.
    lines = [line for line in lines if line.strip() != '{}']
    if current_text is None:
        lines = ['# References derived by `cobalt-bench references derive` (ReFrame\'s '
                 'external reference format:', '# <check>: {<system:partition>: {<metric>: '
                 '[value, lower, upper, unit]}}).']
    by_check = {}
    for d in derivation.entries:
        by_check.setdefault(d.check, {}).setdefault(d.partition, []).append(d)
    for check, parts in by_check.items():
        start = next((i for i, line in enumerate(lines)
                      if (_CHECK_LINE.match(line) or [None, None])[1] == check), None)
        if start is None:
            lines += ['', f'{check}:']
            for part, entries in parts.items():
                lines += _new_partition(part, entries)
            continue
        for part, entries in parts.items():
            end = _block_end(lines, start, 0)
            at = next((i for i in range(start + 1, end) if _PART_LINE.match(lines[i]) and
                       _PART_LINE.match(lines[i]).group(2) == part), None)
            if at is None:
                lines[end:end] = _new_partition(part, entries)
                continue
            stop = _block_end(lines, at, 2)
            lines[at:stop] = _splice(lines[at:stop], entries)
    return '\n'.join(lines) + '\n'


def read_back(text, site, derivation):
    '''Load `text` with the site's own loader (site.references) and check that each
    derived entry reads back as derived; SiteError otherwise. The References.'''
    directory = os.path.dirname(site.references_path) or '.'
    fd, tmp = tempfile.mkstemp(dir=directory if os.access(directory, os.W_OK) else None,
                               prefix='.derived-', suffix='.yaml')
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as fp:
            fp.write(text)
        refs = load_references(tmp, site.systems, site.partitions)
    finally:
        os.unlink(tmp)
    for d in derivation.entries:
        ref = refs.lookup(d.check, d.partition).get(d.metric)
        if ref is None or (ref.value, ref.lower, ref.upper) != (d.value, d.lower, d.upper):
            raise SiteError(f'{site.references_path}: the derived entry {d.check} / '
                            f'{d.partition} / {d.metric} does not read back as derived '
                            f'(read: {ref}); the file was not changed')
    return refs
