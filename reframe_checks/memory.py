# ReFrame checks for the memory family: mem-test (the compliance document's memory test).
#
# The workload comes from the partition's extras['cobalt_bench']['mem_test_opts'] (or -S
# kernel_opts=...), the numbers from the site's references.yaml (entry MemTest); see
# cobalt_bench.reframe.KernelJsonTest.

import reframe as rfm

from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class MemTest(KernelJsonTest):
    '''mem-test: rate-paced memory pipeline stages per station, spread over NUMA domains.'''

    descr = 'mem-test: rate-paced memory pipeline (compliance memory test)'
    kernel = 'mem-test'
    exclusive_access = True
    whole_node = True     # one task with every CPU: the kernel places its own threads
    tags = {'memory', 'compliance'}

