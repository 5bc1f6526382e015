'''smp-mad-stress: InfiniBand SMP MAD load, MAD/s, latency, timeouts (src/smp-mad-stress).'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='smp-mad-stress', family='interconnect', check='SmpMadStress',
    binaries=('smp-mad-stress', 'smp-mad-stress-mpi'),
    declared=('mad_rate', 'latency_avg', 'latency_p99', 'mads_sent', 'mads_answered',
              'timeouts', 'retries', 'drops', 'status_errors', 'verification_errors'),
    options_setting='smp_mad_stress_opts',
    options_doc="smp-mad-stress options with the destinations and attribute, e.g. '-d 10 -L "
                "9,12,17 NodeInfo' (the job's environment variables expand); '': skipped, "
                "saying so (the destinations are the fabric's, no default fits)")
