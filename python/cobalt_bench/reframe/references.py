'''The site's references, attached to every cobalt-bench check by cobalt-bench itself.

A site's numbers are its choice, never a condition for running: a check runs wherever it
fits (placement.py) and records its figures; where the site has references for the
partition, ReFrame judges them (each check's `reference`, in ReFrame's own form, filled
here); where it has none, the check says it is unjudged, and the verdict never counts it
as compliant. Loading references.yaml here instead of ReFrame's external references
(`'$ref'`, which came with ReFrame 4.10) gives every ReFrame release cobalt-bench supports
the same lookup (cobalt_bench.site.references: ReFrame 4.10's rule) and the same file.

Where references.yaml is looked for, per partition, first found wins
(docs/running-at-a-site.md); nothing here sets anything of ReFrame's or another suite's:
  1. the partition's own site: extras['cobalt_bench']['site'] (a cobalt-bench Site sets
     it to its own directory);
  2. the site the environment names: COBALT_BENCH_SITE, a directory or a site of
     $COBALT_BENCH_SITE_CONFIGS (the tree's site-configs/), as a site's module sets it;
  3. ReFrame's reference prefix (RFM_REFERENCE_PREFIX; ReFrame >= 4.10's configuration
     `general/reference_prefix`), which other suites may share: their checks' entries are
     theirs, never read and never an error here;
  4. none: every check runs unjudged.
'''

import os

import reframe.core.runtime as rt
from reframe.core.builtins import run_after
from reframe.core.exceptions import ConfigError, PerformanceError

from .. import kernels
from .. import site as site_mod
from ..errors import CannotRun
from ..site.bounds import meets
from ..site.references import REFERENCES, load_references
from ..store.identity import CheckName
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


def where_looked(site_dir=''):
    '''[(what, directory, shared)] in the order references are looked for.'''
    return [("the partition's extras['cobalt_bench']['site']", site_dir, False),
            ('COBALT_BENCH_SITE', _named_site(), False),
            ('reference prefix', _prefix(), True)]


def references_file(site_dir=''):
    '''(path, shared) of the references.yaml that judges a partition whose own site is
    `site_dir` ('' : none), or (None, False).'''
    for _, directory, shared in where_looked(site_dir):
        if directory and os.path.isfile(os.path.join(directory, REFERENCES)):
            return os.path.join(directory, REFERENCES), shared
    return None, False


def _load(path, shared):
    mtime = os.stat(path).st_mtime_ns
    cached = _LOADED.get((path, shared))
    if cached is None or cached[0] != mtime:
        try:
            # Not checked against this system's partitions: a site's file written for its
            # own systems simply judges nothing on another one.
            cached = _LOADED[path, shared] = (mtime, load_references(path, shared=shared))
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
    SiteSettings: every check has it), and what ReFrame's own performance stage does not do
    in every release, done here, in the check's own hooks (never by changing ReFrame): a
    reference of 0 judged with absolute bounds before ReFrame 4.8, and a reference in
    another unit than its metric's an error naming both (ReFrame only warns).'''

    @run_after('init')
    def attach_site_references(self):
        name = CheckName.of(self.display_name)
        check, params = name.check, name.param_dict
        self._cb_references = {}
        self._cb_site_refs = {}
        for part in rt.runtime().system.partitions:
            path, shared = references_file(self.site_dir_of(part))
            self._cb_references[part.fullname] = path
            entry = _load(path, shared).lookup(check, part.fullname, params) if path else {}
            if entry:
                self._cb_site_refs[part.fullname] = entry
        self.reference = {part: {m: _reframe_ref(r) for m, r in entry.items()}
                          for part, entry in self._cb_site_refs.items()}

    def site_dir_of(self, part):
        '''The site directory a partition's own settings name ('' : none); SiteSettings
        reads it from the partition's extras.'''
        return ''

    def site_references(self):
        '''{metric: site.Ref} of the site for the partition this check runs on.'''
        return getattr(self, '_cb_site_refs', {}).get(self.current_partition.fullname, {})

    def site_has_references(self):
        return bool(self.site_references())

    @run_after('performance')
    def judge_what_reframe_does_not(self):
        refs = self.site_references()
        problems = []
        for key, entry in self.perfvalues.items():
            metric = key.rsplit(':', 1)[-1]
            ref = refs.get(metric)
            if ref is None or not entry:
                continue
            value, unit = entry[0], entry[4] if len(entry) > 4 else None
            if ref.unit and unit and ref.unit != unit:
                problems.append(f'{metric}: the site\'s reference ({ref.entry}, '
                                f'{ref.file}) is in {ref.unit!r}, the check gives {unit!r}: '
                                'not comparable')
            elif not compat.judges_zero_references() and ref.value == 0 and \
                    isinstance(value, (int, float)) and not meets(value, ref.value,
                                                                  ref.lower, ref.upper):
                problems.append(f'{metric}={value:g} {unit or ""}, expected 0 '
                                f'(bounds {ref.bounds.text()})')
        if problems:
            raise PerformanceError('failed to meet the site\'s reference(s): '
                                   + '; '.join(problems))

    @run_after('performance')
    def say_when_unjudged(self):
        if self.site_has_references() or not self.perfvalues:
            return
        part = self.current_partition.fullname
        path = self._cb_references.get(part)
        where = (f'{path} has no entry for it' if path else
                 'no references.yaml found: ' + '; '.join(
                     f'{what} {d or "unset"}' for what, d, _ in where_looked(
                         self.site_dir_of(self.current_partition))))
        if any(c.__name__ in kernels.BY_PEERS for c in type(self).__mro__):
            # judging.judge.by_peers: the report compares it with the other nodes.
            self.logger.info(f'{self.display_name} on {part}: no reference ({where}): '
                             'recorded, judged against its peers by cobalt-bench report')
            return
        self.logger.warning(f'{self.display_name} on {part}: unjudged: no reference for '
                            f'{part} ({where}); its figures are recorded')
