'''What every cobalt-bench site configuration shares: where the cobalt-bench tree is,
where a run's results go, where the site's references are, and ReFrame's logging.

A site's config.py does:

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import cobalt_site
    SITE = cobalt_site.Site('<site>', __file__)

and uses SITE.name, SITE.root, SITE.prefix, SITE.general(), SITE.storage() and
SITE.logging().

Where things go (one directory per run, for the report tool):
  ${COBALT_BENCH_RESULTS:-<checkout>/results}/<site>/<run-id>/
      output/    test outputs (stdout, stderr, job script, the kernels' --json files)
      stage/     working directories (removed for tests that pass)
      perflogs/  ReFrame performance logs
      report.json, and ReFrame's log in output/
  <run-id> is $COBALT_BENCH_RUN_ID or the start time and ReFrame's pid
  (YYYYmmddTHHMMSS-PID).

References: `references.yaml` beside the site's config.py, in ReFrame's external reference
format (checks say `reference = {'$ref': 'references.yaml'}`), found through ReFrame's
reference prefix, which Site points at the site's directory. To judge a machine
differently, copy the site directory and edit the copy's references.yaml; never the checks.
'''

import os
import time


def _cobalt_root(site_dir):
    '''The cobalt-bench tree a site directory belongs to.

    A checkout: ROOT/site-configs/<site>/; a `make install` tree:
    ROOT/share/cobalt-bench/site-configs/<site>/. Either way ROOT holds bin/ and
    modulefiles/.'''
    candidates = [os.path.join(site_dir, '..', '..'),
                  os.path.join(site_dir, '..', '..', '..', '..'),
                  os.environ.get('COBALT_BENCH_ROOT')]
    for c in candidates:
        if c and os.path.isdir(os.path.join(c, 'modulefiles', 'cobalt-bench')):
            return os.path.realpath(c)

    return os.path.realpath(os.path.join(site_dir, '..', '..'))


class Site:
    def __init__(self, name, config_file):
        self.name = name
        self.dir = os.path.dirname(os.path.abspath(config_file))
        self.root = _cobalt_root(self.dir)
        self.prefix = self._run_prefix()
        # ReFrame's reference prefix (--reference-prefix, RFM_REFERENCE_PREFIX) is where
        # checks' external references are looked up. ReFrame 4.10.4 reads it as
        # `general/reference_prefix` but its configuration schema rejects that key in a
        # file, so point the environment variable at this site's directory instead.
        # ReFrame reads it after loading the config; an explicit --reference-prefix or
        # RFM_REFERENCE_PREFIX still wins.
        os.environ.setdefault('RFM_REFERENCE_PREFIX', self.dir)

    def _run_prefix(self):
        '''results/<site>/<run-id>: $COBALT_BENCH_RESULTS, else the tree's results/
        (a checkout), else ./results (an install tree is usually not writable).'''
        base = os.environ.get('COBALT_BENCH_RESULTS')
        if not base:
            base = os.path.join(self.root, 'results')
            if not os.access(base if os.path.isdir(base) else self.root, os.W_OK):
                base = os.path.join(os.getcwd(), 'results')

        run_id = (os.environ.get('COBALT_BENCH_RUN_ID') or
                  f'{time.strftime("%Y%m%dT%H%M%S")}-{os.getpid()}')
        return os.path.join(os.path.abspath(base), self.name, run_id)

    def storage(self):
        '''ReFrame's results database (for `reframe --performance-compare` and
        `--list-stored-sessions`): one SQLite file per site beside its runs,
        <results>/<site>/results.db; every run adds its session, none is overwritten.'''
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
                    'format': ('%(check_result)s|%(check_job_completion_time)s|'
                               '%(check_name)s|%(check_jobid)s|%(check_perfvalues)s'),
                    'format_perfvars': ('%(check_perf_value)s|%(check_perf_unit)s|'
                                        '%(check_perf_ref)s|%(check_perf_lower_thres)s|'
                                        '%(check_perf_upper_thres)s|'),
                    'append': True,
                },
            ],
        }]
