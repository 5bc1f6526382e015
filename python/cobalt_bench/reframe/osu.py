'''The base of the OSU micro-benchmarks checks (reframe_checks/osu.py): one OSU MPI
benchmark, the subclass's `benchmark` parameter, found, run and judged by size.

Where OSU comes from: the partition's environment (its modules, as on the SJTU clusters:
`module load osu-micro-benchmarks/...` puts the binaries on PATH), or, in an environment
without modules, a build found on the machine ReFrame runs on: under $COBALT_OSU_PATH or
the site setting `osu_path` (an install prefix or build tree, OSU 5.x or 7.x layout), or on
PATH (cobalt_bench.tools.osu_install). Found nowhere: the check is skipped, saying so.

Site settings: mpi_launcher_options, osu_opts, osu_sizes, osu_path, osu_env_vars (see
cobalt_bench.reframe.settings); -S osu_opts='...' and -S sizes=1,8,1024 override the first
two on the command line.

Performance variables: <metric>_<size> for each reported size, metric one of latency (us;
the average where OSU prints Avg/Min/Max), min_latency and max_latency (with -f),
bandwidth (MB/s, 10^6 B/s as OSU counts) and message_rate (messages/s, osu_mbw_mr).
'''

import os

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from ..store.exit_status import ExitStatus
from ..tools import osu, osu_install
from .settings import SiteSettings, shell_args

__all__ = ['OsuBenchmark']


@sn.deferrable
def _table_value(table_fn, metric, size):
    return table_fn().column(metric)[size]


class OsuBenchmark(rfm.RunOnlyRegressionTest, SiteSettings):
    '''One OSU MPI benchmark (the `benchmark` parameter of the subclasses).'''

    placement = 'mpi'
    valid_prog_environs = ['*']
    exclusive_access = True
    maintainers = ['cobalt-bench']
    tags = {'osu', 'mpi', 'network'}

    #: OSU options; None: the site setting osu_opts (none: OSU's defaults).
    osu_opts = variable(str, type(None), value=None)

    #: Sizes to report; None: the site setting osu_sizes, else osu.DEFAULT_SIZES.
    sizes = variable(typ.List[int], type(None), value=None)

    #: The OSU version that ran (from its output), for the report.
    osu_version = variable(str, value='')

    @run_after('setup')
    def find_benchmark(self):
        if self.current_environ.modules:
            # The environment's modules provide OSU (checked in the job, where they
            # are loaded).
            self.executable = self.benchmark
            self.prerun_cmds = [
                f'command -v {self.benchmark} >/dev/null || {{ echo "{self.benchmark} not '
                f'found on PATH after loading modules {" ".join(self.current_environ.modules)}"'
                f' >&2; exit 3; }}'
            ]
        else:
            osu_path = self.site_setting('osu_path')
            roots = [osu_path] if osu_path else []
            path = osu_install.find(self.benchmark, roots)
            self.skip_if(path is None, osu_install.not_found_reason(self.benchmark, roots))
            self.executable = path

        opts = self.osu_opts
        if opts is None:
            opts = self.site_setting('osu_opts')

        self.executable_opts = shell_args(opts)    # arguments, never shell
        self.job.launcher.options = self.site_setting('mpi_launcher_options')
        self.env_vars.update(self.site_setting('osu_env_vars'))

    def declared_sizes(self):
        default = osu.DEFAULT_SIZES[self.benchmark]
        sizes = self.sizes
        if sizes is None:
            sizes = self.site_setting('osu_sizes')
        if sizes is None:
            return default

        return [s for s in sizes if default[0] <= s <= default[-1]]

    def table(self):
        '''The parsed OSU table (parsed once).'''
        if getattr(self, '_table', None) is None:
            try:
                with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
                    self._table = osu.parse(fp.read())
            except (OSError, osu.OsuParseError) as err:
                raise SanityError(f'{self.benchmark}: no OSU result: {err}')

        return self._table

    def _stderr_tail(self):
        try:
            with open(os.path.join(self.stagedir, str(self.stderr))) as fp:
                lines = [line.strip() for line in fp if line.strip()]
        except OSError:
            return ''

        return '; '.join(lines[-3:])

    @sanity_function
    def validate(self):
        signal = getattr(self.job, 'signal', None)
        if self.job.exitcode not in (0, None) or signal:
            # OSU's own statuses are 0 or not: any other is a failure, a signal named.
            ended = ExitStatus.of(self.job.exitcode, signal)
            why = (ended.reason(self.benchmark) if ended.signal else
                   f'{self.benchmark} failed: {ended.text()}')
            raise SanityError(f'{why} ({self._stderr_tail() or "no stderr"})')

        table = self.table()
        self.osu_version = table.version
        expected = osu.TITLES[self.benchmark]
        if table.title != expected:
            raise SanityError(f'{self.benchmark}: output is {table.title!r}, '
                              f'expected {expected!r}')

        missing_metrics = [m for m in osu.REQUIRED_METRICS[self.benchmark]
                           if m not in table.metrics()]
        if missing_metrics:
            raise SanityError(f'{self.benchmark}: no {missing_metrics} column in the output')

        # OSU 7.x never measures size 0.
        missing = [s for s in self.declared_sizes() if s not in table.rows and
                   not (s == 0 and (table.major_version or 0) >= 7)]
        if missing:
            raise SanityError(f'{self.benchmark}: sizes {missing} missing from the output '
                              f'(measured: {table.sizes[0]}..{table.sizes[-1]}); '
                              'make extras osu_sizes (or -S sizes) match the OSU options')

        failed = [s for s, row in table.rows.items() if 'Fail' in row]
        if failed:
            raise SanityError(f'{self.benchmark}: OSU validation failed for sizes {failed}')

        bad = [(s, c.name) for s, row in table.rows.items()
               for c, v in zip(table.columns, row)
               if c.metric not in osu.NOT_PERFORMANCE and not v > 0]
        if bad:
            raise SanityError(f'{self.benchmark}: values that are not positive: {bad}')

        self.check_layout(table)
        return True

    def check_layout(self, table):
        '''Subclasses: what the table must say about the run's layout.'''

    @run_before('performance')
    def set_perf_variables(self):
        # A dry run (--dry-run) has no output: it declares what a run would report, with
        # the references that would judge it (ReFrame puts both in its report).
        if self.is_dry_run():
            units = {m: osu.METRIC_UNITS[m] for m in osu.REQUIRED_METRICS[self.benchmark]}
            sizes = self.declared_sizes()
        else:
            table = self.table()
            units = {m: table.unit(m) for m in table.metrics()
                     if m not in osu.NOT_PERFORMANCE}
            sizes = [s for s in self.declared_sizes() if s in table.rows]

        self.perf_variables = {
            f'{metric}_{size}': sn.make_performance_function(
                _table_value(self.table, metric, size), unit)
            for metric, unit in units.items() for size in sizes
        }
