# ReFrame checks for the link-test family: cb-linktest, the all-pairs MPI link test (every
# pair of tasks tested, the slowest retested alone; see `cb-linktest --help`).
#
# Runs on partitions with the feature 'mpi' (as the OSU checks do). Site settings, in the
# partition's `extras['cobalt_bench']` (the check never names a site):
#   linktest_opts            cb-linktest options (default '-w 2 -n 4 -s 16777216': JSC
#                            LinkTest's example, 16 MiB messages); -S kernel_opts=... overrides
#   linktest_tasks           tasks in all (default 2; an even number)
#   linktest_tasks_per_node  (default 1: one task per node, so every pair is a node pair)
#   mpi_launcher_options     launcher options, e.g. ['--mpi=pmix'] for srun with Open MPI,
#                            ['--mpi=pmi2'] with MPICH (docs/mpi.md)
# Judged by the site's references.yaml, entry CbLinkTest: for example min_bandwidth (the
# slowest pair after its serial retest, Gbit/s), max_time (that pair's time per message,
# us) and avg_bandwidth. The matrix file (cb-linktest.npz) is kept with the outputs, for
# cb-linktest-report.

import reframe as rfm
from reframe.core.builtins import run_after

from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class CbLinkTest(KernelJsonTest):
    '''cb-linktest: every pair of tasks (nodes) tested, the slowest retested alone.'''

    descr = 'cb-linktest: all-pairs MPI link test'
    placement = 'mpi'
    kernel = 'cb-linktest'
    matrix_file = 'cb-linktest.npz'
    exclusive_access = True
    tags = {'network', 'mpi', 'linktest'}

    @run_after('setup')
    def set_tasks_and_matrix(self):
        self.num_tasks = self.site_setting('linktest_tasks')
        self.num_tasks_per_node = self.site_setting('linktest_tasks_per_node')
        self.job.launcher.options = self.site_setting('mpi_launcher_options')
        self.executable_opts += ['--output', self.matrix_file]
        self.keep_files = [self.json_file, self.matrix_file]
        # The PDF report beside the matrix (cb-linktest-report.pdf), where the compliance
        # report links it; the job's exit code stays cb-linktest's.
        self.postrun_cmds = [
            'rc=$?',
            f'if [ -s {self.matrix_file} ] && command -v cb-linktest-report >/dev/null; then '
            f'cb-linktest-report {self.matrix_file} > cb-linktest-report.txt 2>&1; fi',
            'exit $rc']
        self.keep_files += ['cb-linktest-report.pdf', 'cb-linktest-report.txt']
