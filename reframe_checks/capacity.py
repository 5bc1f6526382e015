# ReFrame checks for the capacity family: what a node can do, judged against its peers of
# the run (docs/fleet.md, "Capacity beside compliance"), not against a site's reference.
# Run once per node: reframe ... -n MemCapacity --distribute=all -r; then cobalt-bench report.
#
# The workload comes from the partition's extras['cobalt_bench']['mem_capacity_opts'] (or
# -S kernel_opts=...), always after --max.

import reframe as rfm

from cobalt_bench import kernels
from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class MemCapacity(KernelJsonTest):
    '''mem-test unpaced (--max): the node's sustained memory speed with every CPU its job
    got. No reference judges it (a site may give one): each node is compared with its
    peers, so that a node that has lost CPUs or memory channels stands out.'''

    descr = "mem-test --max: the node's memory capacity, against its peers"
    kernel = 'mem-test'
    opts_extra = 'mem_capacity_opts'
    metric_units = kernels.document_units('MemCapacity')     # no average_late unpaced
    exclusive_access = True
    whole_node = True     # one task with every CPU: the kernel places its own threads
    tags = {'memory', 'capacity'}

    @run_after('setup')
    def unpaced(self):
        # After KernelJsonTest.set_options: --max first, the site's options after it.
        self.executable_opts = ['--max'] + self.executable_opts
