# ReFrame checks for the OSU micro-benchmarks family: point to point (osu_latency, osu_bw,
# osu_bibw, osu_mbw_mr; 2 tasks, 1 per node) and collectives (osu_bcast, osu_allreduce,
# osu_alltoall; 4 tasks by default, as the SJTU document runs broadcast).
#
# Where OSU comes from: the partition's environment (its modules, as on the SJTU
# clusters: `module load osu-micro-benchmarks/...` puts the binaries on PATH), or, in an
# environment without modules, a build found on the machine ReFrame runs on: under
# $COBALT_OSU_PATH or the partition extras' `osu_path` (an install prefix or build tree,
# OSU 5.x or 7.x layout), or on PATH. Found nowhere: the check is skipped, saying so.
#
# Site settings (the partition's `extras`; the checks never name a site):
#   mpi_launcher_options  launcher options, e.g. ['--mpi=pmix'] or ['--mpi=pmi2'] for srun
#   osu_opts              options for every OSU benchmark, e.g. '-i 1000 -x 100'
#                         (default none: OSU's own, as the document runs them)
#   osu_sizes             message sizes to report (default: every size OSU measures by
#                         default; see DEFAULT_SIZES)
#   osu_collective_tasks, osu_collective_tasks_per_node   (default 4 and 1)
#   osu_path              where an OSU build is, if not on PATH
#   osu_env_vars          environment variables for the OSU runs, e.g. MPI tuning
# -S osu_opts='...' and -S sizes=1,8,1024 override them on the command line.
#
# Judged by: site-configs/<site>/references.yaml, entries OsuPt2Pt and OsuCollective,
# indexed by partition and benchmark:
#   OsuPt2Pt:
#     $index: [$partition, benchmark]
#     'sjtu-siyuan:64c512g':
#       osu_latency:
#         latency_8: [0.78, null, 0.25, 'us']
# Performance variables: <metric>_<size> for each reported size, metric one of latency
# (us; the average where OSU prints Avg/Min/Max), min_latency and max_latency (with -f),
# bandwidth (MB/s, 10^6 B/s as OSU counts) and message_rate (messages/s, osu_mbw_mr).

import os
import shlex
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (parameter, run_after, run_before, sanity_function,
                                   variable)
from reframe.core.exceptions import SanityError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))
import osu_install  # noqa: E402
import osu_parse  # noqa: E402


def _powers_of_two(first, last):
    return [1 << i for i in range(first, last + 1)]


# What each benchmark measures when run without options (OSU 5.x; 7.x has no size 0, and
# its allreduce starts at 1 where 5.x, counting floats, starts at 4). A site narrows
# this with extras['osu_sizes'] (a size a benchmark does not measure is not declared
# for it).
DEFAULT_SIZES = {
    'osu_latency': [0] + _powers_of_two(0, 22),
    'osu_bw': _powers_of_two(0, 22),
    'osu_bibw': _powers_of_two(0, 22),
    'osu_mbw_mr': _powers_of_two(0, 22),
    'osu_bcast': _powers_of_two(0, 20),
    'osu_allreduce': _powers_of_two(2, 20),
    'osu_alltoall': _powers_of_two(0, 20),
}

# The title each benchmark prints (5.x and 7.x alike).
TITLES = {
    'osu_latency': 'OSU MPI Latency Test',
    'osu_bw': 'OSU MPI Bandwidth Test',
    'osu_bibw': 'OSU MPI Bi-Directional Bandwidth Test',
    'osu_mbw_mr': 'OSU MPI Multiple Bandwidth / Message Rate Test',
    'osu_bcast': 'OSU MPI Broadcast Latency Test',
    'osu_allreduce': 'OSU MPI Allreduce Latency Test',
    'osu_alltoall': 'OSU MPI All-to-All Personalized Exchange Latency Test',
}

# The metrics each benchmark must report.
REQUIRED_METRICS = {
    'osu_latency': ['latency'],
    'osu_bw': ['bandwidth'],
    'osu_bibw': ['bandwidth'],
    'osu_mbw_mr': ['bandwidth', 'message_rate'],
    'osu_bcast': ['latency'],
    'osu_allreduce': ['latency'],
    'osu_alltoall': ['latency'],
}

# The units of the metrics (osu_parse names them from OSU's column headers).
METRIC_UNITS = {'latency': 'us', 'min_latency': 'us', 'max_latency': 'us',
                'bandwidth': 'MB/s', 'message_rate': 'messages/s'}

# Columns that are not measurements.
_NOT_PERFORMANCE = {'iterations', 'validation'}


@sn.deferrable
def _table_value(table_fn, metric, size):
    return table_fn().column(metric)[size]


class OsuBenchmark(rfm.RunOnlyRegressionTest):
    '''One OSU MPI benchmark (the `benchmark` parameter of the subclasses).'''

    valid_systems = ['+mpi']
    valid_prog_environs = ['*']
    exclusive_access = True
    maintainers = ['cobalt-bench']
    tags = {'osu', 'mpi', 'network'}

    #: Per-site references: <reference_prefix>/references.yaml, entry <check class>,
    #: indexed by partition and benchmark.
    reference = {'$ref': 'references.yaml'}

    #: OSU options; None: the partition's extras['osu_opts'] (none: OSU's defaults).
    osu_opts = variable(str, type(None), value=None)

    #: Sizes to report; None: extras['osu_sizes'], else DEFAULT_SIZES.
    sizes = variable(typ.List[int], type(None), value=None)

    #: The OSU version that ran (from its output), for the report.
    osu_version = variable(str, value='')

    @run_after('setup')
    def find_benchmark(self):
        extras = self.current_partition.extras
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
            roots = [extras['osu_path']] if extras.get('osu_path') else []
            path = osu_install.find(self.benchmark, roots)
            self.skip_if(path is None, osu_install.not_found_reason(self.benchmark, roots))
            self.executable = path

        opts = self.osu_opts
        if opts is None:
            opts = extras.get('osu_opts', '')

        self.executable_opts = shlex.split(opts)
        self.job.launcher.options = list(extras.get('mpi_launcher_options', []))
        self.env_vars.update(extras.get('osu_env_vars', {}))

    def declared_sizes(self):
        default = DEFAULT_SIZES[self.benchmark]
        sizes = self.sizes
        if sizes is None:
            sizes = self.current_partition.extras.get('osu_sizes')
        if sizes is None:
            return default

        return [s for s in sizes if default[0] <= s <= default[-1]]

    def table(self):
        '''The parsed OSU table (parsed once).'''
        if getattr(self, '_table', None) is None:
            try:
                with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
                    self._table = osu_parse.parse(fp.read())
            except (OSError, osu_parse.OsuParseError) as err:
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
        if self.job.exitcode != 0:
            raise SanityError(f'{self.benchmark} did not run: exit code {self.job.exitcode}'
                              f' ({self._stderr_tail() or "no stderr"})')

        table = self.table()
        self.osu_version = table.version
        expected = TITLES[self.benchmark]
        if table.title != expected:
            raise SanityError(f'{self.benchmark}: output is {table.title!r}, '
                              f'expected {expected!r}')

        missing_metrics = [m for m in REQUIRED_METRICS[self.benchmark]
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
               if c.metric not in _NOT_PERFORMANCE and not v > 0]
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
            units = {m: METRIC_UNITS[m] for m in REQUIRED_METRICS[self.benchmark]}
            sizes = self.declared_sizes()
        else:
            table = self.table()
            units = {m: table.unit(m) for m in table.metrics() if m not in _NOT_PERFORMANCE}
            sizes = [s for s in self.declared_sizes() if s in table.rows]

        self.perf_variables = {
            f'{metric}_{size}': sn.make_performance_function(
                _table_value(self.table, metric, size), unit)
            for metric, unit in units.items() for size in sizes
        }


@rfm.simple_test
class OsuPt2Pt(OsuBenchmark):
    '''OSU point to point: two MPI processes on two nodes.'''

    descr = 'OSU MPI point to point benchmark, 2 nodes x 1 task'
    benchmark = parameter(['osu_latency', 'osu_bw', 'osu_bibw', 'osu_mbw_mr'])
    num_tasks = 2
    num_tasks_per_node = 1

    def check_layout(self, table):
        pairs = table.params.get('pairs')
        if pairs is not None and int(pairs) != self.num_tasks // 2:
            raise SanityError(f'{self.benchmark}: {pairs} pairs, expected '
                              f'{self.num_tasks // 2}')


@rfm.simple_test
class OsuCollective(OsuBenchmark):
    '''OSU collectives: latency of a collective over osu_collective_tasks processes.'''

    descr = 'OSU MPI collective latency benchmark'
    benchmark = parameter(['osu_bcast', 'osu_allreduce', 'osu_alltoall'])

    @run_after('setup')
    def set_tasks(self):
        # The broadcast latency grows with the number of processes: the site fixes it,
        # so that runs compare (the SJTU document: 4 tasks, 1 per node).
        extras = self.current_partition.extras
        self.num_tasks = int(extras.get('osu_collective_tasks', 4))
        self.num_tasks_per_node = int(extras.get('osu_collective_tasks_per_node', 1))
