# ReFrame checks for the OSU micro-benchmarks family: point to point (osu_latency, osu_bw,
# osu_bibw, osu_mbw_mr; 2 tasks, 1 per node) and collectives (osu_bcast, osu_allreduce,
# osu_alltoall; 4 tasks by default, as the SJTU document runs broadcast).
#
# Where OSU comes from, and how its output is read: cobalt_bench.reframe.osu (the base
# class, OsuBenchmark) and cobalt_bench.tools.osu. Found nowhere: skipped, saying so.
#
# Site settings (the partition's `extras['cobalt_bench']`, cobalt_bench.reframe.settings;
# the checks never name a site):
#   mpi_launcher_options  launcher options, e.g. ['--mpi=pmix'] or ['--mpi=pmi2'] for srun
#   osu_opts              options for every OSU benchmark, e.g. '-i 1000 -x 100'
#                         (default none: OSU's own, as the document runs them)
#   osu_sizes             message sizes to report (default: every size OSU measures by
#                         default; see cobalt_bench.tools.osu.DEFAULT_SIZES)
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

import reframe as rfm
from reframe.core.builtins import parameter, run_after
from reframe.core.exceptions import SanityError

from cobalt_bench.reframe import OsuBenchmark


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
        self.num_tasks = self.site_setting('osu_collective_tasks')
        self.num_tasks_per_node = self.site_setting('osu_collective_tasks_per_node')
