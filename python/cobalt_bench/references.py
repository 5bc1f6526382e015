'''The one loader of a site's definition: site-configs/<site>/references.yaml (the numbers
every result is judged by, ReFrame's external reference format) and
site-configs/<site>/compliance.yaml (what compliance requires: the checks, their workload,
the preflight settings; or that the site is a demonstration).

Used by everything that judges: ReFrame (the site configs call Site.checked(), which calls
this loader when ReFrame loads the configuration), `cobalt-bench judge` and the report.
A reference that would judge nothing is an error here, not a silent pass: a check that is
not in reframe_checks/, a partition key that names no partition of the site
('site:defualt'), a value that is not [value, lower, upper, unit] or a bound that ReFrame
would reject, an empty file or one that is not a mapping. A metric name can only be
checked against a result (the metrics of a kernel document are the kernel's business):
judge.py makes a reference metric that the judged result lacks an error the same way.
Every error names the file, the check, the partition key and the metric.

The lookup follows ReFrame 4.10 (reframe/core/pipeline.py, _ReferenceDict and
_resolve_reference) exactly, using ReFrame's own ScopedDict where ReFrame is installed:
  - without `$index`: the entry is a scoped dictionary; `system:partition`, then `system`,
    then `*` is searched for the metric (the first that has it wins);
  - with `$index: [$partition, <parameter>, ...]`: one level per index item; at each level
    an exact key wins, else the first key that matches as an anchored regular expression
    (`'local-slurm:.*'`); `$partition` is the partition's full name, `$system` the
    system's name, anything else a parameter of the check (`benchmark`);
  - a top-level key that is not a check's name is ignored by ReFrame: cobalt-bench allows
    that only for lowercase keys that hold YAML anchors (sjtu's `tolerances:`).
'''

import ast
import math
import os
import re
import runpy
from dataclasses import dataclass, field

from . import CannotRun, paths

try:                                    # ReFrame's own scoped lookup where it is installed
    from reframe.utility import ScopedDict as _ScopedDict
except ImportError:                     # pragma: no cover - the checkout's .venv has it
    _ScopedDict = None

REFERENCES = 'references.yaml'
COMPLIANCE = 'compliance.yaml'


class ReferenceError(CannotRun):
    '''A site definition that cannot judge what it claims to: exit status 3, the file and
    the entry named.'''


def _where(path, check=None, partition=None, metric=None):
    parts = [path]
    if check is not None:
        parts.append(f'check {check}')
    if partition is not None:
        parts.append(f'partition {partition!r}')
    if metric is not None:
        parts.append(f'metric {metric!r}')
    return ', '.join(parts)


# ---- the checks of the suite ------------------------------------------------------------

@dataclass(frozen=True)
class CheckInfo:
    name: str                   # the check's class name (ReFrame's test name)
    kernel: str = ''            # its `kernel = '...'` (KernelJsonTest), if it names one
    file: str = ''


def checks_dir():
    data = paths.data_dir()
    path = os.path.join(data, 'reframe_checks') if data else None
    return path if path and os.path.isdir(path) else None


_CHECKS_CACHE = {}


def known_checks(directory=None):
    '''{class name: CheckInfo} of every @rfm.simple_test class in reframe_checks/, read
    with `ast` (no check is imported, nothing of ReFrame runs). None: no reframe_checks/.'''
    directory = directory or checks_dir()
    if directory is None:
        return None
    if directory in _CHECKS_CACHE:
        return _CHECKS_CACHE[directory]
    found = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith('.py'):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding='utf-8') as fp:
                tree = ast.parse(fp.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            if not any('simple_test' in ast.unparse(d) for d in node.decorator_list):
                continue
            kernel = ''
            for stmt in node.body:
                if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and
                        isinstance(stmt.targets[0], ast.Name) and
                        stmt.targets[0].id == 'kernel' and
                        isinstance(stmt.value, ast.Constant)):
                    kernel = str(stmt.value.value)
            found[node.name] = CheckInfo(node.name, kernel, path)
    _CHECKS_CACHE[directory] = found
    return found


def check_of_kernel(kernel, checks=None):
    '''The check class that runs `kernel` ('mem-test' -> 'MemTest'); eth-test's documents
    come from eth-test-receive. None when no check runs it.'''
    checks = known_checks() if checks is None else checks
    for info in (checks or {}).values():
        if info.kernel and (info.kernel == kernel or info.kernel == f'{kernel}-receive'):
            return info.name
    return None


# ---- one reference -------------------------------------------------------------------

@dataclass(frozen=True)
class Ref:
    '''One reference: ReFrame's (value, lower, upper, unit) with where it was written.'''
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

    @property
    def entry(self):
        '''Where it is written, as a person looks it up: "MemTest / 'local:default' /
        measured_speed".'''
        return ' / '.join([self.check, *(repr(k) for k in self.key), self.metric])

    @property
    def label(self):
        return f'{os.path.basename(os.path.dirname(self.file))}/{REFERENCES}: {self.entry}'


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _bounds_ok(value, lower, upper):
    '''The checks ReFrame's reference_bounds() makes (reframe.utility.sanity): a lower
    threshold in [-1, 0] (ref > 0), <= 0 (ref 0), any <= 0 (ref < 0); an upper one >= 0
    (ref >= 0), in [0, 1] (ref < 0). Returns what is wrong, or ''.'''
    try:
        from reframe.utility.sanity import reference_bounds
    except ImportError:                 # pragma: no cover
        reference_bounds = None
    if reference_bounds is not None:
        try:
            reference_bounds(value, lower, upper)
        except ValueError as err:
            return str(err)
        return ''
    if lower is not None and not ((value > 0 and -1 <= lower <= 0) or
                                  (value == 0 and lower <= 0) or (value < 0 and lower <= 0)):
        return f'invalid low threshold value: {lower}'
    if upper is not None and not ((value >= 0 and upper >= 0) or
                                  (value < 0 and 0 <= upper <= 1)):
        return f'invalid high threshold value: {upper}'
    return ''


def _parse_ref(raw, file, check, key, metric):
    where = _where(file, check, ' / '.join(map(str, key)), metric)
    xfail = ''
    if isinstance(raw, (list, tuple)) and raw and raw[0] == '$xfail':
        # ['$xfail', reason, [value, lower, upper, unit]] (ReFrame's external form)
        if len(raw) != 3 or not isinstance(raw[2], (list, tuple)):
            raise ReferenceError(f'{where}: an $xfail entry is [\'$xfail\', reason, '
                                 f'[value, lower, upper, unit]], not {raw!r}')
        xfail, raw = str(raw[1]), raw[2]
    if not isinstance(raw, (list, tuple)) or len(raw) not in (3, 4):
        raise ReferenceError(f'{where}: a reference is [value, lower, upper, unit], '
                             f'not {raw!r}')
    value, lower, upper = raw[:3]
    unit = raw[3] if len(raw) == 4 else None
    if not _number(value):
        raise ReferenceError(f'{where}: the reference value {value!r} is not a number')
    for name, thres in (('lower', lower), ('upper', upper)):
        if thres is not None and not _number(thres):
            raise ReferenceError(f'{where}: the {name} threshold {thres!r} is not a number '
                                 'or null')
    if unit is not None and not isinstance(unit, str):
        raise ReferenceError(f'{where}: the unit {unit!r} is not a string')
    if lower is None and upper is None:
        raise ReferenceError(f'{where}: both bounds are null: this reference judges nothing '
                             '(delete it to record the metric without judging it)')
    bad = _bounds_ok(value, lower, upper)
    if bad:
        raise ReferenceError(f'{where}: {bad} (thresholds are fractions of the value, '
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
            if _ScopedDict is not None:
                # ReFrame's ScopedDict: the metric is searched from the partition's scope
                # up to the global one, metric by metric.
                sd = _ScopedDict({k: v for k, v in entry.data.items()})
                names = {m for v in entry.data.values() for m in v}
                for m in names:
                    try:
                        scopes[m] = sd[f'{partition}:{m}']
                    except KeyError:
                        pass
                return scopes
            for scope in (partition, system, '*'):          # pragma: no cover
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


def _read_yaml(path, cannot_read):
    '''The YAML document of a site file (None when empty); ReferenceError naming the file
    when it cannot be read (`cannot_read`: how the message says so) or is not YAML.'''
    try:
        import yaml
    except ImportError:                 # pragma: no cover
        raise CannotRun(f'PyYAML is needed to read {os.path.basename(path)} (pip install PyYAML)')
    try:
        with open(path, encoding='utf-8') as fp:
            return yaml.safe_load(fp)
    except OSError as err:
        raise ReferenceError(f'{path}: {cannot_read}: {err.strerror}')
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise ReferenceError(f'{path}: not valid YAML: {str(err).splitlines()[0]}')


def load_references(path, systems=None, partitions=None, checks=None):
    '''References of `path`, validated against the site's systems and partition full names
    (when given) and the suite's checks (known_checks()); ReferenceError naming the file
    and entry otherwise.'''
    raw = _read_yaml(path, 'cannot read the references')
    if raw is None:
        raise ReferenceError(f'{path}: the references file is empty: it judges nothing '
                             '(it maps each check to its partitions and metrics)')
    if not isinstance(raw, dict):
        raise ReferenceError(f'{path}: the references file must map check names to '
                             f'their entries, not be a {type(raw).__name__}')
    checks = known_checks() if checks is None else checks
    parts = list(partitions or [])
    out = {}
    for check, entry in raw.items():
        if not isinstance(check, str):
            raise ReferenceError(f'{path}: top-level key {check!r} is not a check name')
        if check[:1].islower() and not _looks_like_check(entry):
            continue                    # YAML anchors' holder (sjtu's `tolerances:`)
        if checks is not None and check not in checks:
            raise ReferenceError(
                f'{_where(path, check)}: no check of the suite is named {check!r}, so this '
                'entry judges nothing (checks: ' + ', '.join(sorted(checks)) + ')')
        if not isinstance(entry, dict) or not entry:
            raise ReferenceError(f'{_where(path, check)}: expected a mapping of '
                                 f'partitions to metrics, not {entry!r}')
        index = entry.get('$index')
        if index is not None:
            if (not isinstance(index, list) or not index or
                    not all(isinstance(i, str) for i in index)):
                raise ReferenceError(f'{_where(path, check)}: $index must be a list of '
                                     f'names, not {index!r}')
            index = tuple(index)
        else:
            index = ()
        data = {}
        depth = len(index) or 1

        def walk(node, keys, level):
            if level == depth:
                if not isinstance(node, dict) or not node:
                    raise ReferenceError(
                        f'{_where(path, check, " / ".join(map(str, keys)))}: expected a '
                        f'mapping of metrics to [value, lower, upper, unit], not {node!r}')
                refs = {}
                for metric, r in node.items():
                    if not isinstance(metric, str):
                        raise ReferenceError(f'{_where(path, check, " / ".join(map(str, keys)))}'
                                             f': metric name {metric!r} is not a string')
                    refs[metric] = _parse_ref(r, path, check, keys, metric)
                return refs
            if not isinstance(node, dict) or not node:
                raise ReferenceError(
                    f'{_where(path, check, " / ".join(map(str, keys)))}: expected a mapping '
                    f'for the index level {index[level]!r}, not {node!r}')
            item = index[level] if index else '$partition'
            sub = {}
            for k, v in node.items():
                if level == 0 and k == '$index':
                    continue
                if item == '$partition' and systems and parts:
                    if not _partition_key_ok(str(k), systems, parts, regex=bool(index)):
                        raise ReferenceError(
                            f'{_where(path, check, k)}: {k!r} names no partition of the site '
                            f'(partitions: {", ".join(parts)}'
                            + (', or a regular expression matching one' if index else
                               f", a system ({', '.join(systems)}) or '*'")
                            + '), so this entry judges nothing')
                elif item == '$system' and systems and not any(
                        _match_key({k: 1}, s) for s in systems):
                    raise ReferenceError(f'{_where(path, check, k)}: {k!r} names no system '
                                         f'of the site ({", ".join(systems)})')
                sub[k] = walk(v, keys + [k], level + 1)
            if not sub:
                raise ReferenceError(f'{_where(path, check)}: no partition entries: this '
                                     'check judges nothing')
            return sub

        data = walk({k: v for k, v in entry.items() if k != '$index'}, [], 0)
        out[check] = CheckRefs(check, index, data)
    return References(path, out, systems, parts)


# ---- compliance.yaml --------------------------------------------------------------------

@dataclass
class Required:
    check: str
    what: str = ''
    workload: tuple = ()        # metrics whose references fix the workload


@dataclass
class Compliance:
    path: str = ''
    title: str = ''
    demonstration: str = ''     # why this site is a demonstration ('' : a compliance
    #                             definition)
    required: list = field(default_factory=list)        # [Required]
    preflight: list = field(default_factory=list)       # setting patterns ('net.*.mtu')

    @property
    def is_definition(self):
        return not self.demonstration


def load_compliance(path, references, checks=None):
    '''compliance.yaml of a site; a missing file makes the site a demonstration. Errors
    name the file and entry; a required check that the references do not judge is one.'''
    if not os.path.exists(path):
        return Compliance(path='', demonstration=(
            f'the site has no {COMPLIANCE}: its references are not a compliance '
            'definition'))
    raw = _read_yaml(path, 'cannot read')
    if not isinstance(raw, dict):
        what = 'an empty file' if raw is None else f'a {type(raw).__name__}'
        raise ReferenceError(f'{path}: expected a mapping (title, demonstration, required, '
                             f'preflight), not {what}')
    unknown = set(raw) - {'title', 'demonstration', 'required', 'preflight'}
    if unknown:
        raise ReferenceError(f'{path}: unknown keys {sorted(unknown)} (title, demonstration, '
                             'required, preflight)')
    comp = Compliance(path=path, title=str(raw.get('title') or ''),
                      demonstration=str(raw.get('demonstration') or '').strip())
    required = raw.get('required') or {}
    if not isinstance(required, dict):
        raise ReferenceError(f'{path}: required: a mapping of check names, not {required!r}')
    checks = known_checks() if checks is None else checks
    for name, spec in required.items():
        spec = spec or {}
        if not isinstance(spec, dict):
            raise ReferenceError(f'{path}: required {name}: a mapping (what, workload), '
                                 f'not {spec!r}')
        if checks is not None and name not in checks:
            raise ReferenceError(f'{path}: required {name}: no check of the suite is named so')
        if not references.has_check(name):
            raise ReferenceError(
                f'{_where(path, name)}: a required check with no reference in '
                f'{references.path}: nothing would judge it')
        workload = spec.get('workload') or []
        if isinstance(workload, str):
            workload = [workload]
        entry = references.checks[name]
        named = {m for refs in _leaves(entry.data, len(entry.index) or 1) for m in refs}
        for m in workload:
            if m not in named:
                raise ReferenceError(
                    f'{_where(path, name, metric=m)}: a workload metric with no reference '
                    f'in {references.path}: the workload could not be checked')
        comp.required.append(Required(name, str(spec.get('what') or ''), tuple(workload)))
    pre = raw.get('preflight') or []
    if not isinstance(pre, list) or not all(isinstance(p, str) for p in pre):
        raise ReferenceError(f'{path}: preflight: a list of setting names (patterns such as '
                             f'net.*.mtu), not {pre!r}')
    comp.preflight = pre
    if comp.is_definition and not comp.required and not comp.preflight:
        raise ReferenceError(f'{path}: a compliance definition that requires nothing '
                             '(list the required checks, or say `demonstration: why`)')
    return comp


def _leaves(data, depth):
    if depth == 1:
        return list(data.values())
    out = []
    for v in data.values():
        out += _leaves(v, depth - 1)
    return out


# ---- a site ----------------------------------------------------------------------------

@dataclass
class SiteDef:
    name: str
    dir: str
    systems: list
    partitions: list            # full names, 'system:partition'
    references: References
    compliance: Compliance

    @property
    def references_path(self):
        return self.references.path


def sites_dir():
    data = paths.data_dir()
    return os.path.join(data, 'site-configs') if data else None


def site_dir(spec):
    '''A site's directory from its name (site-configs/<name> of this tree) or a path.'''
    if not spec:
        raise CannotRun('no site named')
    if os.sep in spec or os.path.isdir(spec) and os.path.isfile(
            os.path.join(spec, 'config.py')):
        path = os.path.abspath(spec)
        if os.path.isfile(path) and os.path.basename(path) == 'config.py':
            path = os.path.dirname(path)
    else:
        base = sites_dir()
        path = os.path.join(base, spec) if base else spec
    if not os.path.isfile(os.path.join(path, 'config.py')):
        known = sorted(d for d in os.listdir(sites_dir() or '.')
                       if os.path.isfile(os.path.join(sites_dir() or '.', d, 'config.py'))
                       ) if sites_dir() and os.path.isdir(sites_dir()) else []
        raise CannotRun(f'no site {spec!r}: {path}/config.py does not exist'
                        + (f' (sites: {", ".join(known)})' if known else ''))
    return path


def site_systems(config_path):
    '''(site name or None, systems, partition full names) of a site's ReFrame
    configuration, read by running it as ReFrame does (the environment is restored
    afterwards).'''
    saved = dict(os.environ)
    try:
        ns = runpy.run_path(config_path, run_name='cobalt_bench_site_config')
    except ReferenceError:
        raise
    except Exception as err:            # a site config is Python: anything can go wrong
        if type(err).__name__ == 'ConfigError':
            # Its SITE.checked() said what is wrong, and where (references.yaml, ...).
            raise ReferenceError(str(err)) from None
        raise CannotRun(f'{config_path}: cannot load the site configuration: '
                        f'{type(err).__name__}: {err}')
    finally:
        os.environ.clear()
        os.environ.update(saved)
    conf = ns.get('site_configuration')
    systems, partitions = systems_of(conf, config_path)
    site = ns.get('SITE')
    name = getattr(site, 'name', None)
    return (name if isinstance(name, str) else None), systems, partitions


def systems_of(conf, where):
    '''(system names, partition full names) of a ReFrame site configuration (a site may
    declare several systems: sjtu).'''
    try:
        systems = [s['name'] for s in conf['systems']]
        partitions = [f'{s["name"]}:{p["name"]}' for s in conf['systems']
                      for p in s.get('partitions', [])]
    except (TypeError, KeyError, IndexError):
        raise CannotRun(f'{where}: no site_configuration with systems and partitions')
    if not systems:
        raise CannotRun(f'{where}: site_configuration declares no system')
    return systems, partitions


def validate(site_directory, systems, partitions):
    '''References and compliance definition of a site directory, validated.'''
    refs = load_references(os.path.join(site_directory, REFERENCES), systems, partitions)
    comp = load_compliance(os.path.join(site_directory, COMPLIANCE), refs)
    return refs, comp


def load_site(spec):
    '''The SiteDef of a site name or directory.'''
    directory = site_dir(spec)
    name, systems, partitions = site_systems(os.path.join(directory, 'config.py'))
    refs, comp = validate(directory, systems, partitions)
    return SiteDef(name or os.path.basename(directory), directory, systems, partitions,
                   refs, comp)
