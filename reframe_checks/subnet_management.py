# ReFrame checks for the InfiniBand subnet-management family: smp-mad-stress (subnet
# management packets, GET or SET, from the local port to the fabric's switches and HCAs;
# src/smp-mad-stress/README.md).
#
# Runs where there is something to send SMPs to: an InfiniBand port in /sys/class/infiniband
# of the machine ReFrame runs on (as IbWriteBw looks for them), or a simulated fabric in the
# partition's environment (LD_PRELOAD naming libumad2sim.so: the local-ib site, whose config
# takes the environment of `site-configs/local-ib/fabric start`). Without either, and on a
# partition that gives no workload, the check is skipped, saying what is missing.
#
# The workload (destinations, attribute, window) comes from the partition's
# extras['cobalt_bench']['smp_mad_stress_opts'] (or -S kernel_opts=...): the destinations
# are the fabric's, so there is no default; `$VARIABLES` of the job's environment expand
# (the local-ib site uses $COBALT_IB_LIDS), nothing else of the shell does. The numbers
# come from the site's references.yaml, entry SmpMadStress (mad_rate, drops, ...);
# verification errors must be 0 (sanity). See cobalt_bench.reframe.KernelJsonTest.

import reframe as rfm
from reframe.core.builtins import run_after

from cobalt_bench.tools import ib_ports
from cobalt_bench.reframe import KernelJsonTest

#: The preload that makes libibumad talk to ibsim (Debian: ibsim-utils).
SIMULATOR = 'libumad2sim'


@rfm.simple_test
class SmpMadStress(KernelJsonTest):
    '''smp-mad-stress: SMP MADs with a window on the wire, MAD/s, latency, drops.'''

    descr = 'smp-mad-stress: subnet management MAD load on InfiniBand switches and HCAs'
    kernel = 'smp-mad-stress'
    placement = 'infiniband'
    exclusive_access = True
    tags = {'infiniband', 'subnet-management'}

    @run_after('setup')
    def fabric_and_workload(self):
        part = self.current_partition
        preload = part.local_env.env_vars.get('LD_PRELOAD', '')
        if SIMULATOR not in preload:
            self.skip_if(not ib_ports.ports(),
                         f'no InfiniBand port in {ib_ports.SYSFS} and no simulated fabric in '
                         f"partition {part.fullname}'s environment (LD_PRELOAD with "
                         f'{SIMULATOR}.so: the local-ib site, once '
                         'site-configs/local-ib/fabric start has brought it up)')

        opts = self.kernel_opts
        if opts is None:
            opts = self.site_setting(self.opts_extra)
        self.skip_if(not opts.strip(),
                     f'no smp-mad-stress workload (destinations and attribute) for partition '
                     f"{part.fullname}: its extras['cobalt_bench']['{self.opts_extra}'] "
                     '(or -S kernel_opts) is empty')
