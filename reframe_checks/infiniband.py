# ReFrame checks for the InfiniBand family: perftest's ib_write_bw, as the COBALT2
# compliance document runs it ("ib-bw"): RDMA writes from one InfiniBand device to another
# in the same machine, the sender with --report_gbits, repeated for sending from each
# port; "for each device, the BW average must be >= 50.00 Gb/sec".
#
# Which ports: the partition extras' `ib_ports` (['mlx4_0:1', 'mlx4_1:1'], a site that
# knows its nodes), else every port in /sys/class/infiniband of the machine ReFrame runs on
# (the machine under test, for the cobalt2 site). Fewer than two devices: skipped, saying so.
# Each port sends once, to a port of another device (on another PCI card where sysfs
# tells), see lib/ib_ports.py; lib/ib-write-bw-ports runs the pairs one after the other.
#
# Site settings (extras): ib_ports; ib_write_bw_opts (more ib_write_bw options for both
# sides, e.g. '-F' or '-D 10'). Judged by: site-configs/<site>/references.yaml, entry
# IbWriteBw: bw_average is the lowest BW average of all sending ports, so
# `bw_average: [50.0, 0, null, 'Gb/s']` is the compliance rule for every port;
# bw_average_<device>_<port> and bw_peak_<device>_<port> are recorded per port.

import os
import shlex
import sys

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))
import ib_ports  # noqa: E402
import perftest_parse  # noqa: E402

_PORT_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'lib',
                            'ib-write-bw-ports')


@sn.deferrable
def _port_value(runs_fn, sender, metric):
    return next(r for r in runs_fn() if r.sender == sender).report.last(metric)


@sn.deferrable
def _lowest(runs_fn, metric):
    return min(r.report.last(metric) for r in runs_fn())


@rfm.simple_test
class IbWriteBw(rfm.RunOnlyRegressionTest):
    '''ib_write_bw from every InfiniBand port to another device, Gb/s.'''

    descr = 'perftest ib_write_bw from each InfiniBand port (compliance ib-bw)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    executable = _PORT_RUNNER
    maintainers = ['cobalt-bench']
    tags = {'infiniband', 'network', 'compliance'}
    reference = {'$ref': 'references.yaml'}

    #: Ports to send from ('device:port'); None: extras['ib_ports'], else sysfs.
    ports = variable(typ.List[str], type(None), value=None)

    #: More ib_write_bw options; None: extras['ib_write_bw_opts'].
    ib_write_bw_opts = variable(str, type(None), value=None)

    @run_after('setup')
    def plan_runs(self):
        extras = self.current_partition.extras
        ports = self.ports if self.ports is not None else extras.get('ib_ports')
        if ports is None:
            ports = ib_ports.ports()
            self.skip_if(not ports, f'no InfiniBand devices in {ib_ports.SYSFS}')

        found = ib_ports.devices(ports)
        self.skip_if(len(found) < 2, 'ib_write_bw needs two InfiniBand devices, found '
                     f'{len(found)}: {", ".join(found)}')

        opts = self.ib_write_bw_opts
        if opts is None:
            opts = extras.get('ib_write_bw_opts', '')

        self.pairs = ib_ports.pairs(ports)
        self.executable_opts = (['--opts', shlex.quote(opts)] if opts else []) + [
            f'{s}={r}' for s, r in self.pairs]
        # Both ends run on the node the job runs on: no MPI launcher.
        self.job.launcher = getlauncher('local')()

    def runs(self):
        if getattr(self, '_runs', None) is None:
            with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
                self._runs = perftest_parse.parse_port_runs(fp.read())

        return self._runs

    @sanity_function
    def validate(self):
        runs = {r.sender: r for r in self.runs()}
        problems = []
        for sender, receiver in self.pairs:
            run = runs.get(sender)
            if run is None:
                problems.append(f'{sender}->{receiver}: did not run')
            elif run.exit_code != 0:
                problems.append(f'{sender}->{receiver}: ib_write_bw exit code '
                                f'{run.exit_code}')
            elif run.report is None:
                problems.append(f'{sender}->{receiver}: {run.error}')
            elif run.report.units.get('bw_average') != 'Gb/sec':
                problems.append(f'{sender}->{receiver}: bandwidth in '
                                f'{run.report.units.get("bw_average")!r}, not Gb/sec')

        if problems:
            raise SanityError('ib_write_bw: ' + '; '.join(problems))

        return True

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            'bw_average': sn.make_performance_function(_lowest(self.runs, 'bw_average'),
                                                       'Gb/s'),
            'bw_peak': sn.make_performance_function(_lowest(self.runs, 'bw_peak'), 'Gb/s'),
        }
        for sender, _ in self.pairs:
            name = sender.replace(':', '_')
            for metric in ('bw_average', 'bw_peak'):
                self.perf_variables[f'{metric}_{name}'] = sn.make_performance_function(
                    _port_value(self.runs, sender, metric), 'Gb/s')
