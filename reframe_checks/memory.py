# ReFrame checks for the memory family: mem-test (the compliance document's memory test).
#
# The workload comes from the partition's extras['mem_test_opts'] (or -S kernel_opts=...),
# the numbers from the site's references.yaml (entry MemTest); see lib/cobalt_kernel.py.

import os
import sys

import reframe as rfm
from reframe.core.builtins import run_after

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))
from cobalt_kernel import KernelJsonTest  # noqa: E402


@rfm.simple_test
class MemTest(KernelJsonTest):
    '''mem-test: rate-paced memory pipeline stages per station, spread over NUMA domains.'''

    descr = 'mem-test: rate-paced memory pipeline (compliance memory test)'
    executable = 'mem-test'
    kernel = 'mem-test'
    opts_extra = 'mem_test_opts'
    json_file = 'mem-test.json'
    exclusive_access = True
    tags = {'memory', 'compliance'}
    metric_units = {
        'measured_speed': 'Gbit/s',
        'percent_of_desired': '%',
        'average_late': '%',
        'desired_speed': 'Gbit/s',
        'write_speed': 'Gbit/s',
        'read_speed': 'Gbit/s',
        'copy_speed': 'Gbit/s',
        'transpose_speed': 'Gbit/s',
        'verification_errors': 'errors',
    }

    @run_after('setup')
    def use_whole_node(self):
        # One task with every CPU of the node (the kernel places its own threads).
        num_cpus = self.current_partition.processor.num_cpus
        if num_cpus:
            self.num_cpus_per_task = num_cpus
