'''A site's compliance.yaml: what compliance requires (the checks, their workload, the
preflight settings), or that the site is a demonstration. A missing file makes the site a
demonstration. `fleet: {outlier_threshold: T, resume_after: K}`: how many robust sigmas a
node may lie from its peers' median before it is flagged (judging.fleet, docs/fleet.md;
default DEFAULT_OUTLIER_THRESHOLD), and how many clean re-tests a node cobalt-bench drained
needs before it is resumed (judging.drain; default DEFAULT_RESUME_AFTER).'''

import math
import os
from dataclasses import dataclass, field

from .checks import known_checks
from .files import SiteError, entry_name, read_yaml

COMPLIANCE = 'compliance.yaml'
#: A node further than this many robust sigmas from its peers' median, in the metric's bad
#: direction, is an outlier (judging.fleet); a site sets its own in compliance.yaml.
DEFAULT_OUTLIER_THRESHOLD = 4.0
#: Clean re-tests (`cobalt-bench health` records) a node cobalt-bench drained needs since
#: its drain before `cobalt-bench nodes resume` resumes it (judging.drain).
DEFAULT_RESUME_AFTER = 2
KEYS = ('title', 'demonstration', 'required', 'preflight', 'fleet')


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
    outlier_threshold: float = DEFAULT_OUTLIER_THRESHOLD   # fleet: robust sigmas
    resume_after: int = DEFAULT_RESUME_AFTER                # fleet: clean re-tests

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
    raw = read_yaml(path, 'cannot read')
    if not isinstance(raw, dict):
        what = 'an empty file' if raw is None else f'a {type(raw).__name__}'
        raise SiteError(f'{path}: expected a mapping (title, demonstration, required, '
                             f'preflight), not {what}')
    unknown = set(raw) - set(KEYS)
    if unknown:
        raise SiteError(f'{path}: unknown keys {sorted(unknown)} ({", ".join(KEYS)})')
    for key in ('title', 'demonstration'):
        if raw.get(key) is not None and not isinstance(raw.get(key), str):
            raise SiteError(f'{path}: {key}: a line of text, not a '
                            f'{type(raw[key]).__name__}')
    comp = Compliance(path=path, title=raw.get('title') or '',
                      demonstration=(raw.get('demonstration') or '').strip())
    required = raw.get('required') or {}
    if not isinstance(required, dict):
        raise SiteError(f'{path}: required: a mapping of check names, not {required!r}')
    checks = known_checks() if checks is None else checks
    for name, spec in required.items():
        spec = spec or {}
        if not isinstance(spec, dict):
            raise SiteError(f'{path}: required {name}: a mapping (what, workload), '
                                 f'not {spec!r}')
        if checks is not None and name not in checks:
            raise SiteError(f'{path}: required {name}: no check of the suite is named so')
        if not references.has_check(name):
            raise SiteError(
                f'{entry_name(path, name)}: a required check with no reference in '
                f'{references.path}: nothing would judge it')
        workload = spec.get('workload') or []
        if isinstance(workload, str):
            workload = [workload]
        entry = references.checks[name]
        named = {m for refs in _leaves(entry.data, len(entry.index) or 1) for m in refs}
        for m in workload:
            if m not in named:
                raise SiteError(
                    f'{entry_name(path, name, metric=m)}: a workload metric with no reference '
                    f'in {references.path}: the workload could not be checked')
        comp.required.append(Required(name, str(spec.get('what') or ''), tuple(workload)))
    pre = raw.get('preflight') or []
    if not isinstance(pre, list) or not all(isinstance(p, str) for p in pre):
        raise SiteError(f'{path}: preflight: a list of setting names (patterns such as '
                             f'net.*.mtu), not {pre!r}')
    comp.preflight = pre
    comp.outlier_threshold, comp.resume_after = _fleet(path, raw.get('fleet'))
    if comp.is_definition and not comp.required and not comp.preflight:
        raise SiteError(f'{path}: a compliance definition that requires nothing '
                             '(list the required checks, or say `demonstration: why`)')
    return comp


def _fleet(path, fleet):
    '''(outlier_threshold, resume_after) of compliance.yaml's `fleet: {outlier_threshold:
    T, resume_after: K}` (T a positive number of robust sigmas, K a whole number of clean
    re-tests, at least 1); the defaults for what it does not say.'''
    if fleet is None:
        return DEFAULT_OUTLIER_THRESHOLD, DEFAULT_RESUME_AFTER
    if not isinstance(fleet, dict):
        raise SiteError(f'{path}: fleet: a mapping (outlier_threshold: a number of robust '
                        f'sigmas, resume_after: a number of re-tests), not {fleet!r}')
    unknown = set(fleet) - {'outlier_threshold', 'resume_after'}
    if unknown:
        raise SiteError(f'{path}: fleet: unknown keys {sorted(map(str, unknown))} '
                        '(outlier_threshold, resume_after)')
    value = fleet.get('outlier_threshold', DEFAULT_OUTLIER_THRESHOLD)
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise SiteError(f'{path}: fleet: outlier_threshold: a positive number of robust '
                        f'sigmas (default {DEFAULT_OUTLIER_THRESHOLD:g}), not {value!r}')
    resume = fleet.get('resume_after', DEFAULT_RESUME_AFTER)
    if isinstance(resume, bool) or not isinstance(resume, int) or resume < 1:
        raise SiteError(f'{path}: fleet: resume_after: a whole number of clean re-tests, 1 '
                        f'or more (default {DEFAULT_RESUME_AFTER}), not {resume!r}')
    return float(value), resume


def _leaves(data, depth):
    if depth == 1:
        return list(data.values())
    out = []
    for v in data.values():
        out += _leaves(v, depth - 1)
    return out
