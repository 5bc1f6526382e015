# ReFrame checks for the InfiniBand family: perftest's ib_write_bw, as the COBALT2
# compliance document runs it ("ib-bw"): RDMA writes from one InfiniBand device to another
# in the same machine, the sender with --report_gbits, repeated for sending from each
# port; "for each device, the BW average must be >= 50.00 Gb/sec".
#
# Which ports: the partition extras' `ib_ports` (['mlx4_0:1', 'mlx4_1:1'], a site that
# knows its nodes), else every port in /sys/class/infiniband of the machine ReFrame runs on
# (the machine under test, for the cobalt2 site). Fewer than two devices: skipped, saying so.
# Each port sends once, to a port of another device (on another PCI card where sysfs
# tells), see cobalt_bench.tools.ib_ports; the script ib-write-bw-ports
# (cobalt_bench/reframe/scripts/) runs the pairs one after the other.
#
# Site settings (extras): ib_ports; ib_write_bw_opts (more ib_write_bw options for both
# sides, e.g. '-F' or '-D 10'). Judged by: site-configs/<site>/references.yaml, entry
# IbWriteBw: bw_average is the lowest BW average of all sending ports, so
# `bw_average: [50.0, 0, null, 'Gb/s']` is the compliance rule for every port;
# bw_average_<device>_<port> and bw_peak_<device>_<port> are recorded per port.

import reframe as rfm

from cobalt_bench.reframe import IbWriteBwTest


@rfm.simple_test
class IbWriteBw(IbWriteBwTest):
    '''ib_write_bw from every InfiniBand port to another device, Gb/s.'''

    descr = 'perftest ib_write_bw from each InfiniBand port (compliance ib-bw)'
    exclusive_access = True
    tags = {'infiniband', 'network', 'compliance'}
