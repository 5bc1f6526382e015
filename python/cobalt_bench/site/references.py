'''A site's references.yaml: the numbers every result is judged by, in ReFrame's external
reference format, validated entry by entry (a metric name can only be checked against a
result: cobalt_bench.judging makes a reference metric that the judged result lacks an error
the same way).

The lookup follows ReFrame 4.10 (reframe/core/pipeline.py, _ReferenceDict and
_resolve_reference) exactly, written out (importing ReFrame would cost every command a
quarter of a second; tests/python/site/test_references.py holds the lookup to ReFrame's
own ScopedDict):
  - without `$index`: the entry is a scoped dictionary; `system:partition`, then `system`,
    then `*` is searched for the metric (the first that has it wins);
  - with `$index: [$partition, <parameter>, ...]`: one level per index item; at each level
    an exact key wins, else the first key that matches as an anchored regular expression
    (`'local-slurm:.*'`); `$partition` is the partition's full name, `$system` the
    system's name, anything else a parameter of the check (`benchmark`);
  - a top-level key that is not a check's name is ignored by ReFrame: cobalt-bench allows
    that only for lowercase keys that hold YAML anchors (sjtu's `tolerances:`).
'''

import functools
import math
import os
import re
from dataclasses import dataclass, field

from .bounds import Bounds, threshold_problem
from .checks import known_checks
from .files import SiteError, entry_name, read_yaml

REFERENCES = 'references.yaml'


# ---- one reference -------------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    '''One reference: ReFrame's (value, lower, upper, unit) with where it was written.
    Its derived texts and bounds are worked out once (a sweep judges 100,000 metrics).'''
    value: float
    lower: object               # fraction (ReFrame's threshold) or None
    upper: object
    unit: object
    xfail: str = ''             # the reason of a ['$xfail', reason, [...]] entry
    file: str = ''
    check: str = ''
    key: tuple = ()             # the keys under the check: ('local:default',) or
    #                             ('local-slurm:.*', 'osu_latency')
    metric: str = ''

    @functools.cached_property
    def entry(self):
        '''Where it is written, as a person looks it up: "MemTest / 'local:default' /
        measured_speed".'''
        return ' / '.join([self.check, *(repr(k) for k in self.key), self.metric])

    @functools.cached_property
    def bounds(self):
        '''Its absolute bounds (site.bounds, ReFrame's rule).'''
        return Bounds.of(self.value, self.lower, self.upper)

    @functools.cached_property
    def label(self):
        return f'{os.path.basename(os.path.dirname(self.file))}/{REFERENCES}: {self.entry}'


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _parse_ref(raw, file, check, key, metric):
    where = entry_name(file, check, ' / '.join(map(str, key)), metric)
    xfail = ''
    if isinstance(raw, (list, tuple)) and raw and raw[0] == '$xfail':
        # ['$xfail', reason, [value, lower, upper, unit]] (ReFrame's external form)
        if len(raw) != 3 or not isinstance(raw[2], (list, tuple)):
            raise SiteError(f'{where}: an $xfail entry is [\'$xfail\', reason, '
                                 f'[value, lower, upper, unit]], not {raw!r}')
        xfail, raw = str(raw[1]), raw[2]
    if not isinstance(raw, (list, tuple)) or len(raw) not in (3, 4):
        raise SiteError(f'{where}: a reference is [value, lower, upper, unit], '
                             f'not {raw!r}')
    value, lower, upper = raw[:3]
    unit = raw[3] if len(raw) == 4 else None
    if not _number(value):
        raise SiteError(f'{where}: the reference value {value!r} is not a number')
    for name, thres in (('lower', lower), ('upper', upper)):
        if thres is not None and not _number(thres):
            raise SiteError(f'{where}: the {name} threshold {thres!r} is not a number '
                                 'or null')
    if unit is not None and not isinstance(unit, str):
        raise SiteError(f'{where}: the unit {unit!r} is not a string')
    if lower is None and upper is None:
        raise SiteError(f'{where}: both bounds are null: this reference judges nothing '
                             '(delete it to record the metric without judging it)')
    bad = threshold_problem(value, lower, upper)
    if bad:
        raise SiteError(f'{where}: {bad} (thresholds are fractions of the value, '
                             'ReFrame\'s rule)')
    return Ref(float(value), lower, upper, unit, xfail, file, check, tuple(key), metric)


# ---- the file -------------------------------------------------------------------------

@dataclass
class CheckRefs:
    check: str
    index: tuple = ()                   # () or ('$partition', 'benchmark', ...)
    data: dict = field(default_factory=dict)    # scope/index keys -> ... -> {metric: Ref}


def _match_key(level, wanted):
    '''ReFrame's _KeyMatchingDict lookup: the exact key, else the first key that matches as
    an anchored regular expression. (key, value) or None.'''
    if wanted in level:
        return wanted, level[wanted]
    for k, v in level.items():
        if isinstance(k, str) and isinstance(wanted, str):
            try:
                if re.match(f'^{k}$', wanted):
                    return k, v
            except re.error:
                continue
    return None


class References:
    '''A site's references.yaml, validated.'''

    def __init__(self, path, checks, systems=None, partitions=None):
        self.path = path
        self.checks = checks            # {check: CheckRefs}
        self.systems = systems or []
        self.partitions = partitions or []

    def has_check(self, check):
        return check in self.checks

    def lookup(self, check, partition, params=None):
        '''{metric: Ref} that ReFrame attaches to `check` on `partition` (full name,
        'system:partition'), with the check's parameters `params` for an indexed entry.
        {} when nothing applies (ReFrame then judges nothing).'''
        entry = self.checks.get(check)
        if entry is None:
            return {}
        if not entry.index:
            system = partition.split(':')[0]
            scopes = {}
            # ReFrame's ScopedDict: each metric is searched from the partition's scope up
            # to the global one.
            for scope in (partition, system, '*'):
                for m, ref in entry.data.get(scope, {}).items():
                    scopes.setdefault(m, ref)
            return scopes
        level = entry.data
        system = partition.split(':')[0]
        for item in entry.index:
            if item == '$partition':
                wanted = partition
            elif item == '$system':
                wanted = system
            else:
                wanted = (params or {}).get(item)
                if wanted is None:
                    return {}
            found = _match_key(level, wanted)
            if found is None or not isinstance(found[1], dict):
                return {}
            level = found[1]
        return dict(level)


def _partition_key_ok(key, systems, partitions, regex):
    if key == '*' or key in systems or key in partitions:
        return True
    if regex:
        try:
            return any(re.match(f'^{key}$', p) for p in partitions)
        except re.error:
            return False
    return False


def _looks_like_check(value):
    '''A mapping whose values are mappings of lists: a check entry, whatever its key.'''
    return isinstance(value, dict) and any(
        isinstance(v, dict) and any(isinstance(x, (list, dict)) for x in v.values())
        for v in value.values())


def load_references(path, systems=None, partitions=None, checks=None, shared=False):
    '''References of `path`, validated against the site's systems and partition full names
    (when given) and the suite's checks (known_checks()); SiteError naming the file
    and entry otherwise. `shared`: a file other suites keep their references in too
    (ReFrame's reference prefix): their checks' entries are theirs, left unread.'''
    raw = read_yaml(path, 'cannot read the references')
    if raw is None:
        raise SiteError(f'{path}: the references file is empty: it judges nothing '
                             '(it maps each check to its partitions and metrics)')
    if not isinstance(raw, dict):
        raise SiteError(f'{path}: the references file must map check names to '
                             f'their entries, not be a {type(raw).__name__}')
    checks = known_checks() if checks is None else checks
    parts = list(partitions or [])
    out = {}
    for check, entry in raw.items():
        if not isinstance(check, str):
            raise SiteError(f'{path}: top-level key {check!r} is not a check name')
        if check[:1].islower() and not _looks_like_check(entry):
            continue                    # YAML anchors' holder (sjtu's `tolerances:`)
        if shared and checks is not None and check not in checks:
            continue                    # another suite's check: its entry is not ours
        if checks is not None and check not in checks:
            raise SiteError(
                f'{entry_name(path, check)}: no check of the suite is named {check!r}, so this '
                'entry judges nothing (checks: ' + ', '.join(sorted(checks)) + ')')
        if not isinstance(entry, dict) or not entry:
            raise SiteError(f'{entry_name(path, check)}: expected a mapping of '
                                 f'partitions to metrics, not {entry!r}')
        index = entry.get('$index')
        if index is not None:
            if (not isinstance(index, list) or not index or
                    not all(isinstance(i, str) for i in index)):
                raise SiteError(f'{entry_name(path, check)}: $index must be a list of '
                                     f'names, not {index!r}')
            index = tuple(index)
        else:
            index = ()
        data = {}
        depth = len(index) or 1

        def walk(node, keys, level):
            if level == depth:
                if not isinstance(node, dict) or not node:
                    raise SiteError(
                        f'{entry_name(path, check, " / ".join(map(str, keys)))}: expected a '
                        f'mapping of metrics to [value, lower, upper, unit], not {node!r}')
                refs = {}
                for metric, r in node.items():
                    if not isinstance(metric, str):
                        raise SiteError(f'{entry_name(path, check, " / ".join(map(str, keys)))}'
                                             f': metric name {metric!r} is not a string')
                    refs[metric] = _parse_ref(r, path, check, keys, metric)
                return refs
            if not isinstance(node, dict) or not node:
                raise SiteError(
                    f'{entry_name(path, check, " / ".join(map(str, keys)))}: expected a mapping '
                    f'for the index level {index[level]!r}, not {node!r}')
            item = index[level] if index else '$partition'
            sub = {}
            for k, v in node.items():
                if level == 0 and k == '$index':
                    continue
                if item == '$partition' and systems and parts:
                    if not _partition_key_ok(str(k), systems, parts, regex=bool(index)):
                        raise SiteError(
                            f'{entry_name(path, check, k)}: {k!r} names no partition of the site '
                            f'(partitions: {", ".join(parts)}'
                            + (', or a regular expression matching one' if index else
                               f", a system ({', '.join(systems)}) or '*'")
                            + '), so this entry judges nothing')
                elif item == '$system' and systems and not any(
                        _match_key({k: 1}, s) for s in systems):
                    raise SiteError(f'{entry_name(path, check, k)}: {k!r} names no system '
                                         f'of the site ({", ".join(systems)})')
                sub[k] = walk(v, keys + [k], level + 1)
            if not sub:
                raise SiteError(f'{entry_name(path, check)}: no partition entries: this '
                                     'check judges nothing')
            return sub

        data = walk({k: v for k, v in entry.items() if k != '$index'}, [], 0)
        out[check] = CheckRefs(check, index, data)
    return References(path, out, systems, parts)


