'''What every cobalt-bench site configuration shares: where the cobalt-bench tree is,
where a run's results go, where the site's references are, and ReFrame's logging.

A site's config.py does:

    from cobalt_bench.reframe.site import Site
    SITE = Site('<site>', __file__)

and uses SITE.name, SITE.root (the cobalt-bench tree, from cobalt_bench.paths),
SITE.prefix, SITE.general(), SITE.storage() and SITE.logging(). ReFrame must run with a
Python that imports cobalt_bench: the checkout's .venv (bootstrap.sh installs the package
there), or any ReFrame with the cobalt-bench module loaded (it sets PYTHONPATH).

Where things go (one directory per run, for the report tool):
  ${COBALT_BENCH_RESULTS:-<tree>/results}/<site>/<run-id>/
      output/    test outputs (stdout, stderr, job script, the kernels' --json files)
      stage/     working directories (removed for tests that pass)
      perflogs/  ReFrame performance logs
      report.json, and ReFrame's log in output/
  <run-id> is $COBALT_BENCH_RUN_ID or the start time and ReFrame's pid
  (YYYYmmddTHHMMSS-PID).

References: `references.yaml` beside the site's config.py, in ReFrame's external reference
format, which cobalt-bench's checks read themselves (cobalt_bench.reframe.references):
SITE.checked() names the site's directory in every partition's
extras['cobalt_bench']['site']; nothing of ReFrame's (its reference prefix, its modules) is
set or changed. To judge a machine differently, copy the site directory and edit the copy's
references.yaml; never the checks.

A site config ends with `site_configuration = SITE.checked({...})`: the site's
references.yaml and compliance.yaml are validated by cobalt-bench's one loader
(cobalt_bench.site) when ReFrame loads the configuration, so that a reference that
would judge nothing (a check or partition key misspelt, a bound ReFrame would reject, an
empty file, a required check without reference) stops the run before it starts, with the
file, check, partition and metric named, instead of passing with nothing judged.
'''

import os
import sys
import time

from .. import paths
from ..store import perflog


def _reframe_loads_it():
    '''Whether ReFrame is what loads the configuration (it has imported itself). cobalt-bench's
    own commands read a site's configuration only for its systems and partitions, as
    written, without importing ReFrame (a quarter of a second a command): there is no
    ReFrame to adapt it to.'''
    return 'reframe' in sys.modules


def _config_error(text):
    '''The error a configuration stops with: ReFrame's ConfigError, which ReFrame reports as
    "failed to load configuration: <text>", or cobalt-bench's SiteError.'''
    if _reframe_loads_it():
        from reframe.core.exceptions import ConfigError
        return ConfigError(text)
    from ..site import SiteError
    return SiteError(text)


class Site:
    def __init__(self, name, config_file):
        self.name = name
        self.dir = os.path.dirname(os.path.abspath(config_file))
        # The tree this site directory belongs to (a site copied out of any tree: the
        # module's $COBALT_BENCH_ROOT, or the package's tree): its bin/ and results/.
        self.root = paths.root(inside=self.dir)
        if self.root is None:
            raise RuntimeError(
                f'site {name!r}: neither {self.dir} nor the cobalt_bench package '
                f'({paths.PACKAGE_DIR}) is in a cobalt-bench tree (checkout or `make install` '
                'prefix); set COBALT_BENCH_ROOT to one')
        self.prefix = self._run_prefix()

    def checked(self, configuration):
        '''The site configuration, once this site's references and compliance definition
        are valid for its system and partitions (cobalt_bench.site.SiteError
        otherwise, which ReFrame reports as a configuration error).'''
        from .. import site
        from ..errors import CannotRun
        if _reframe_loads_it():
            from . import compat
            if compat.too_old():
                raise _config_error(compat.too_old())
            # What this ReFrame's schema lacks (results database, processor platform) out.
            configuration = compat.adapt_configuration(configuration)
        # The site's references named in its own partitions' settings.
        configuration = self._with_site_references(configuration)
        try:
            systems, partitions = site.systems_of(configuration, self.dir)
            site.validate(self.dir, systems, partitions)
        except CannotRun as err:
            raise _config_error(str(err)) from None
        return configuration

    def _with_site_references(self, configuration):
        '''A copy of `configuration` whose partitions name this site's directory in
        extras['cobalt_bench']['site'] (where a partition names none itself): the checks
        find the site's references there, with no process-wide setting.'''
        def name_the_site(system, part):
            extras = dict(part.get('extras') or {})
            own = extras.get('cobalt_bench')
            if own is None or isinstance(own, dict):
                extras['cobalt_bench'] = {'site': self.dir, **(own or {})}
            part['extras'] = extras

        from ..site.loader import each_partition
        return each_partition(configuration, name_the_site)

    def _run_prefix(self):
        '''results/<site>/<run-id> in the results store (paths.results_dir: the same rule
        that `cobalt-bench report` and `runs` read by).'''
        run_id = (os.environ.get('COBALT_BENCH_RUN_ID') or
                  f'{time.strftime("%Y%m%dT%H%M%S")}-{os.getpid()}')
        prefix = os.path.join(paths.results_dir(), self.name, run_id)
        odd = paths.unquoted_character(prefix)
        if odd:
            raise _config_error(f"the results path '{prefix}' holds {odd}, which ReFrame does "
                              'not quote in its job scripts and commands; use a results path '
                              'of letters, digits and . _ / + , : @ % = - only '
                              '(COBALT_BENCH_RESULTS, COBALT_BENCH_RUN_ID)')
        return prefix

    def storage(self):
        '''ReFrame's results database (for `reframe --performance-compare` and
        `--list-stored-sessions`): one SQLite file per site beside its runs,
        <results>/<site>/results.db; every run adds its session, none is overwritten.
        ReFrame before 4.7 has none: [] (and checked() leaves the section out).'''
        if _reframe_loads_it():
            from .compat import has_results_storage
            if not has_results_storage():
                return []
        return [{'enable': True,
                 'sqlite_db_file': os.path.join(os.path.dirname(self.prefix), 'results.db')}]

    def general(self, **settings):
        return [{'report_file': os.path.join(self.prefix, 'report.json'),
                 'save_log_files': True, **settings}]

    def logging(self):
        return [{
            'handlers$': [
                {'type': 'stream', 'name': 'stdout', 'level': 'info',
                 'format': '%(message)s'},
            ],
            'handlers': [
                {'type': 'file', 'level': 'debug2', 'append': False,
                 'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s'},
            ],
            'handlers_perflog': [
                {
                    'type': 'filelog',
                    'basedir': os.path.join(self.prefix, 'perflogs'),
                    'prefix': '%(check_system)s/%(check_partition)s',
                    'level': 'info',
                    'format': perflog.FORMAT,
                    'format_perfvars': perflog.FORMAT_PERFVARS,
                    'append': True,
                },
            ],
        }]
