'''The base of the InfiniBand check (reframe_checks/infiniband.py): perftest's
ib_write_bw from each InfiniBand port to a port of another device of the same machine, one
sending port after the other, run by the script scripts/ib-write-bw-ports (shipped with
this package).

Which ports: the check's `ports` (-S ports=...), else the site setting `ib_ports`
(['mlx4_0:1', 'mlx4_1:1'], a site that knows its nodes), else every port in
/sys/class/infiniband of the machine ReFrame runs on; fewer than two devices: skipped,
saying so. Each port sends once, to a port of another device (on another PCI card where
sysfs tells): cobalt_bench.tools.ib_ports. More ib_write_bw options: the site setting
`ib_write_bw_opts` (-S ib_write_bw_opts=...).

Performance variables (Gb/s): bw_average and bw_peak, the lowest of all sending ports, and
bw_average_<device>_<port>, bw_peak_<device>_<port> per sending port.
'''

import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from ..tools import ib_ports, perftest
from .settings import SiteSettings

__all__ = ['PORT_RUNNER', 'IbWriteBwTest']

#: The script that runs ib_write_bw once per sending port (package data).
PORT_RUNNER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'scripts',
                           'ib-write-bw-ports')


@sn.deferrable
def _port_value(runs_fn, sender, metric):
    return next(r for r in runs_fn() if r.sender == sender).report.last(metric)


@sn.deferrable
def _lowest(runs_fn, metric):
    return min(r.report.last(metric) for r in runs_fn())


class IbWriteBwTest(rfm.RunOnlyRegressionTest, SiteSettings):
    '''ib_write_bw from every InfiniBand port to another device, Gb/s.'''

    valid_prog_environs = ['*']
    num_tasks = 1
    num_tasks_per_node = 1
    # An install that lost the script's mode bits still runs it.
    executable = PORT_RUNNER if os.access(PORT_RUNNER, os.X_OK) else f'bash {PORT_RUNNER}'
    maintainers = ['cobalt-bench']
    placement = 'infiniband'

    #: Ports to send from ('device:port'); None: the site setting ib_ports, else sysfs.
    ports = variable(typ.List[str], type(None), value=None)

    #: More ib_write_bw options; None: the site setting ib_write_bw_opts.
    ib_write_bw_opts = variable(str, type(None), value=None)

    @run_after('setup')
    def plan_runs(self):
        ports = self.ports if self.ports is not None else self.site_setting('ib_ports')
        if ports is None:
            ports = ib_ports.ports()
            self.skip_if(not ports, f'no InfiniBand devices in {ib_ports.SYSFS}')

        found = ib_ports.devices(ports)
        self.skip_if(len(found) < 2, 'ib_write_bw needs two InfiniBand devices, found '
                     f'{len(found)}: {", ".join(found)}')

        opts = self.ib_write_bw_opts
        if opts is None:
            opts = self.site_setting('ib_write_bw_opts')

        self.pairs = ib_ports.pairs(ports)
        self.executable_opts = (['--opts', shlex.quote(opts)] if opts else []) + [
            f'{s}={r}' for s, r in self.pairs]
        # Both ends run on the node the job runs on: no MPI launcher.
        self.job.launcher = getlauncher('local')()

    def runs(self):
        if getattr(self, '_runs', None) is None:
            with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
                self._runs = perftest.parse_port_runs(fp.read())

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
