'''A site's compliance.yaml: what compliance requires (the checks, their workload, the
preflight settings), or that the site is a demonstration. A missing file makes the site a
demonstration.'''

import os
from dataclasses import dataclass, field

from .checks import known_checks
from .files import SiteError, entry_name, read_yaml

COMPLIANCE = 'compliance.yaml'


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
    raw = read_yaml(path, 'cannot read')
    if not isinstance(raw, dict):
        what = 'an empty file' if raw is None else f'a {type(raw).__name__}'
        raise SiteError(f'{path}: expected a mapping (title, demonstration, required, '
                             f'preflight), not {what}')
    unknown = set(raw) - {'title', 'demonstration', 'required', 'preflight'}
    if unknown:
        raise SiteError(f'{path}: unknown keys {sorted(unknown)} (title, demonstration, '
                             'required, preflight)')
    comp = Compliance(path=path, title=str(raw.get('title') or ''),
                      demonstration=str(raw.get('demonstration') or '').strip())
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
    if comp.is_definition and not comp.required and not comp.preflight:
        raise SiteError(f'{path}: a compliance definition that requires nothing '
                             '(list the required checks, or say `demonstration: why`)')
    return comp


def _leaves(data, depth):
    if depth == 1:
        return list(data.values())
    out = []
    for v in data.values():
        out += _leaves(v, depth - 1)
    return out
