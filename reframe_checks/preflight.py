# ReFrame check for the preflight family: the system settings the compliance document
# requires and recommends (`cobalt-bench preflight`: CPU governor, turbo, jumbo frames,
# network buffers, NUMA layout, GPU/NIC PCIe links, real-time priority), on the node(s) of
# every partition, so that a run's report can put them next to the failures they explain.
#
# Judged by the site, not by the check: sanity only asks that preflight ran (exit 0 or 1)
# and wrote its document; the counts of failed and unknown settings are performance
# variables (`required_failed`, `required_unknown`, `settings_failed`, ...), and a site
# that insists on the settings says so in its references.yaml (entry Preflight), e.g.
#     required_failed: [0, null, 0, 'settings']      # none may fail
# A site without such an entry records the findings without failing the run (a VM has no
# cpufreq, and a developer's machine no jumbo frames). Options (e.g. the interfaces under
# test, `--interface ens1f0 --interface ens1f1`) come from the partition's
# extras['cobalt_bench']['preflight_opts'].

import reframe as rfm

from reframe.core.builtins import run_after

from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class Preflight(KernelJsonTest):
    '''cobalt-bench preflight: compliance-relevant system settings of the node.'''

    descr = 'preflight: system settings the compliance document requires and recommends'
    kernel = 'preflight'
    executable = 'cobalt-bench preflight'
    python_command = True
    placement = 'any'     # light, and a login node's settings matter too
    tags = {'preflight', 'compliance'}

    @run_after('setup')
    def record_inventory(self):
        # What the node is (`cobalt-bench inventory`: CPUs usable, memory, kernel, firmware),
        # beside its settings: the fleet view groups the nodes of a partition by it and names
        # where one differs from its peers. Before preflight, so that preflight's exit status
        # stays the job's; a node where it cannot run records none (the report says so).
        self.prerun_cmds += ['cobalt-bench inventory --quiet --json inventory.json']
        self.keep_files += ['inventory.json']
