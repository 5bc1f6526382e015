'''The site's references, attached to every cobalt-bench check by cobalt-bench itself.

A site's numbers are its choice, never a condition for running: a check runs wherever it
fits (placement.py) and records its figures; where the site has references for the
partition, ReFrame judges them (each check's `reference`, in ReFrame's own form, filled
here); where it has none, the check says it is unjudged, and the verdict never counts it
as compliant. Loading references.yaml here instead of ReFrame's external references
(`'$ref'`, which came with ReFrame 4.10) gives every ReFrame release cobalt-bench supports
the same lookup (cobalt_bench.site.references: ReFrame 4.10's rule) and the same file.

Where references.yaml is looked for, first found wins (docs/running-at-a-site.md):
  1. ReFrame's reference prefix: --reference-prefix (ReFrame >= 4.10) or
     RFM_REFERENCE_PREFIX; every site configuration of cobalt-bench (Site) points it at
     its own directory;
  2. the site the environment names: COBALT_BENCH_SITE, a directory or a site of
     $COBALT_BENCH_SITE_CONFIGS (the tree's site-configs/), as a site's module sets it;
  3. none: every check runs unjudged.
'''

import os

import reframe.core.runtime as rt
from reframe.core.builtins import run_after, run_before
from reframe.core.exceptions import ConfigError

from .. import site as site_mod
from ..errors import CannotRun
from ..judging.judge import check_and_params
from ..site.references import REFERENCES, load_references
from . import compat

try:    # expected failures in references came with ReFrame 4.8
    from reframe.core.builtins import xfail as _xfail
except ImportError:
    _xfail = None

__all__ = ['SiteReferences', 'references_file', 'where_looked']

_LOADED = {}    # path -> (mtime, References): each file read once per run


def _prefix():
    try:    # ReFrame >= 4.10: --reference-prefix, or its environment variable
        prefix = rt.runtime().get_option('general/0/reference_prefix')
    except Exception:
        prefix = None
    return prefix or os.environ.get('RFM_REFERENCE_PREFIX') or ''


def _named_site():
    spec = os.environ.get('COBALT_BENCH_SITE', '')
    if not spec or os.path.isdir(spec):
        return spec
    base = site_mod.sites_dir()
    return os.path.join(base, spec) if base else ''


def where_looked():
    '''[(what, directory)] in the order references are looked for.'''
    return [('reference prefix', _prefix()), ('COBALT_BENCH_SITE', _named_site())]


def references_file():
    '''The references.yaml that judges this run, or None.'''
    for _, directory in where_looked():
        if directory and os.path.isfile(os.path.join(directory, REFERENCES)):
            return os.path.join(directory, REFERENCES)
    return None


def _load(path):
    mtime = os.stat(path).st_mtime_ns
    cached = _LOADED.get(path)
    if cached is None or cached[0] != mtime:
        try:
            # Not checked against this system's partitions: a site's file written for its
            # own systems simply judges nothing on another one.
            cached = _LOADED[path] = (mtime, load_references(path))
        except CannotRun as err:
            raise ConfigError(str(err)) from None
    return cached[1]


def _reframe_ref(ref):
    '''ReFrame's form of a site.Ref: (value, lower, upper, unit), an expected failure where
    the site says so and the ReFrame has them (>= 4.8: builtins.xfail).'''
    entry = (ref.value, ref.lower, ref.upper, ref.unit)
    return _xfail(ref.xfail, entry) if ref.xfail and _xfail else entry


class SiteReferences(compat.PLUGIN_BASE):
    '''The `reference` of a cobalt-bench check, from the site's references.yaml (a base of
    SiteSettings: every check has it).'''

    @run_after('init')
    def attach_site_references(self):
        path = references_file()
        self._cb_references = path
        if path is None:
            self.reference = {}
            return
        refs = _load(path)
        # Judged as ReFrame 4.8 judges (a reference of 0), whatever configuration loaded
        # the check (a site's own has no cobalt-bench Site to do it).
        compat.repair_zero_references()
        check, params = check_and_params(self.display_name)
        found = {}
        for part in rt.runtime().system.partitions:
            entry = refs.lookup(check, part.fullname, params)
            if entry:
                found[part.fullname] = {m: _reframe_ref(r) for m, r in entry.items()}
        self.reference = found

    def site_has_references(self):
        return bool(self.reference.get(self.current_partition.fullname))

    @run_before('performance')
    def say_when_unjudged(self):
        if self.site_has_references():
            return
        part = self.current_partition.fullname
        path = self._cb_references
        where = (f'{path} has no entry for it' if path else
                 'no references.yaml found: ' + '; '.join(
                     f'{what} {d or "unset"}' for what, d in where_looked()))
        self.logger.warning(f'{self.display_name} on {part}: unjudged: no reference for '
                            f'{part} ({where}); its figures are recorded')
