# ReFrame checks for the compute family: cpu-test, each core's sustained FMA rate.
#
# The workload comes from the partition's extras['cobalt_bench']['cpu_test_opts'] (or
# 'cpu_test' by name, or -S kernel_opts=...), the numbers from the site's references.yaml
# (entry CpuTest). Run once per node (--distribute=all), each node is also held against
# its peers by the report (docs/fleet.md): a node whose cores are throttled, shared with a
# process that should not be there, or offline stands out.

import reframe as rfm

from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class CpuTest(KernelJsonTest):
    '''cpu-test: dependent-free FMA streams on every core the job got, one thread bound to
    each, their results verified; FLOP/s per core and per node, the slowest core against
    the median one, and the drop from the first interval to the sustained rate.'''

    descr = "cpu-test: each core's sustained FMA rate, and the node's"
    kernel = 'cpu-test'
    exclusive_access = True
    whole_node = True     # one task with every CPU: the kernel binds a thread to each
    tags = {'compute', 'capacity'}
