# ReFrame checks for a Dolphin PCIe interconnect (Dolphin eXpressWare: MXH830, MXH930, ...),
# as the Dolphin manual's "Verifying Functionality and Performance" runs them:
#
#   DolphinStatic     dis_diag on every node: passes only with TEST RESULT: *PASSED*, zero
#                     errors, and the same set of nodes seen from every node
#   DolphinLoad       sciconntest on every node at once: every remote node found, zero
#                     failures for each
#   DolphinDmaBench   dma_bench between two nodes: bandwidth per message size (MBytes/s)
#   DolphinScipp      scipp between two nodes: round trip and half round trip per size (us)
#   DolphinIntrBench  intr_bench between two nodes: interrupt latency (us)
#
# The performance tests are judged by the site's references.yaml (entries named as the
# classes); site-configs/dolphin-example carries the manual's MXH830/MXH930 figures.
#
# A partition with a Dolphin interconnect says so in its extras (site config):
#
#   'dolphin': {
#       'nodes': {'node-a': 4, 'node-b': 8},   # the cluster's nodes and their NodeIds
#                                              # ("Local node-id" of the `query` tool)
#       'pair': ['node-a', 'node-b'],          # server (A) and client (B) of the
#                                              # performance tests
#       'run_on': 'ssh -o BatchMode=yes {host}',  # how to run a command on a node
#                                              # (Slurm: 'srun -N1 -n1 -w {host}'); '' = here
#       'tools': {'dis_diag': '/opt/DIS/sbin/dis_diag', ...},  # where the tools are
#       'server_start_s': 2,                   # time the server side gets to start
#   }
#
# Without 'nodes' the all-node tests run on this node alone. Tools not named in 'tools'
# are looked for on PATH, then in /opt/DIS/bin and /opt/DIS/sbin (Dolphin's defaults); a
# tool that is not found skips its check with the reason (so on a site without Dolphin
# hardware or software they are all skipped). `-S run_on=...` overrides the partition's.

import os
import re
import shlex
import shutil
import socket
import sys

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.backends import getlauncher
from reframe.core.builtins import (performance_function, run_after, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))
import dolphin_parse  # noqa: E402

DEFAULT_DIRS = ['/opt/DIS/bin', '/opt/DIS/sbin']
SCRIPT = 'dolphin-run.sh'


def _file_part(host):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', host) if host else 'local'


class DolphinTest(rfm.RunOnlyRegressionTest):
    '''Runs a Dolphin tool through a generated script (one node, all nodes, or a
    server/client pair), with the placement the site's extras['dolphin'] describes.'''

    valid_systems = ['*']
    valid_prog_environs = ['*']
    sourcesdir = None
    executable = 'bash'
    executable_opts = [SCRIPT]
    num_tasks = 1
    time_limit = '10m'
    maintainers = ['cobalt-bench']
    tags = {'dolphin', 'interconnect'}
    reference = {'$ref': 'references.yaml'}

    #: The Dolphin tool this check runs (its name, as installed).
    tool = variable(str)

    #: How to run a command on a node ('{host}' is replaced); None: the partition's
    #: extras['dolphin']['run_on'], else ssh.
    run_on = variable(str, type(None), value=None)

    def dolphin(self):
        return self.current_partition.extras.get('dolphin', {}) or {}

    @run_after('setup')
    def find_tool(self):
        named = self.dolphin().get('tools', {}).get(self.tool)
        if named:
            candidates = [named]
        else:
            candidates = [shutil.which(self.tool)] + [os.path.join(d, self.tool)
                                                      for d in DEFAULT_DIRS]
        found = [c for c in candidates if c and os.access(c, os.X_OK)]
        where = (named if named else
                 f'not on PATH, not in {" or ".join(DEFAULT_DIRS)}')
        self.skip_if(not found,
                     f'Dolphin tool {self.tool} not found ({where}): no Dolphin PCIe '
                     f'interconnect software on {self.current_partition.fullname}; a '
                     f"partition with one names it in extras['dolphin']['tools']")
        self.tool_path = os.path.abspath(found[0])

    def on(self, host):
        '''The command prefix that runs something on host (empty: here).'''
        template = self.run_on
        if template is None:
            template = self.dolphin().get('run_on', 'ssh -o BatchMode=yes {host}')
        if not host or not template:
            return ''
        return template.replace('{host}', shlex.quote(host)) + ' '

    def use_nodes(self, hosts):
        '''The job holds these nodes; the script places the tools itself.'''
        self.job.launcher = getlauncher('local')()
        named = [h for h in hosts if h]
        self.num_tasks = max(1, len(named))
        self.num_tasks_per_node = 1
        if named and self.current_partition.scheduler.registered_name in ('slurm', 'squeue'):
            self.job.options += [f'--nodelist={",".join(named)}']

    def script_lines(self):
        raise NotImplementedError

    @run_before('run')
    def write_script(self):
        with open(os.path.join(self.stagedir, SCRIPT), 'w') as fp:
            fp.write('#!/bin/bash\n# generated by cobalt-bench reframe_checks/dolphin.py\n')
            fp.write('\n'.join(self.script_lines()) + '\n')

    def read(self, name):
        path = os.path.join(self.stagedir, name)
        try:
            with open(path, errors='replace') as fp:
                return fp.read()
        except OSError as err:
            raise SanityError(f'{self.tool}: no output {name}: {err}')


class DolphinAllNodes(DolphinTest):
    '''The tool on every node of the cluster at once, one output file per node.'''

    tool_opts = variable(list, value=[])

    @run_after('setup')
    def place(self):
        nodes = self.dolphin().get('nodes') or {}
        self.hosts = list(nodes) or [None]
        self.use_nodes(self.hosts)
        self.keep_files = [SCRIPT] + [self.output_name(h) for h in self.hosts]

    def output_name(self, host):
        return f'{self.tool}-{_file_part(host)}.out'

    def script_lines(self):
        tool = ' '.join(shlex.quote(a) for a in [self.tool_path, *self.tool_opts])
        lines = [f'{self.on(h)}{tool} > {shlex.quote(self.output_name(h))} 2>&1 &'
                 for h in self.hosts]
        return lines + ['wait', f'echo "{self.tool} ran on {len(self.hosts)} node(s)"']

    def outputs(self):
        return {h or socket.gethostname(): self.read(self.output_name(h)) for h in self.hosts}


@rfm.simple_test
class DolphinStatic(DolphinAllNodes):
    '''Static interconnect test: dis_diag on every node.'''

    descr = 'Dolphin static PCIe interconnect test (dis_diag on every node)'
    tool = 'dis_diag'

    @sanity_function
    def validate(self):
        passed, problems, self.parsed = dolphin_parse.judge_dis_diag(self.outputs())
        if not passed:
            raise SanityError('dis_diag: ' + '; '.join(problems))
        return True

    @performance_function('nodes')
    def nodes_detected(self):
        return min(len(d['nodes_detected']) for d in self.parsed.values())

    @performance_function('warnings')
    def warnings(self):
        return sum(d['warnings'] or 0 for d in self.parsed.values())


@rfm.simple_test
class DolphinLoad(DolphinAllNodes):
    '''Interconnect load test: sciconntest on every node at once.'''

    descr = 'Dolphin PCIe interconnect load test (sciconntest on every node)'
    tool = 'sciconntest'

    @sanity_function
    def validate(self):
        expected = set((self.dolphin().get('nodes') or {}).values()) or None
        passed, problems, self.parsed = dolphin_parse.judge_sciconntest(self.outputs(),
                                                                        expected)
        if not passed:
            raise SanityError('sciconntest: ' + '; '.join(problems))
        return True

    @performance_function('nodes')
    def nodes_found(self):
        return min(d['nodes_found'] for d in self.parsed.values())

    @performance_function('failures')
    def failures(self):
        return sum(s['failures'] or 0 for d in self.parsed.values()
                   for s in d['nodes'].values())


class DolphinPair(DolphinTest):
    '''A performance tool between two nodes: the server on A (-server -rn <B>), then the
    client on B (-client -rn <A>), whose output is the job's stdout.'''

    #: extra client options (for example a size range)
    client_opts = variable(list, value=[])

    #: seconds the server side gets to start; None: extras['dolphin']['server_start_s'], 2
    server_start_s = variable(float, int, type(None), value=None)

    @run_after('setup')
    def place(self):
        cfg = self.dolphin()
        pair, nodes = cfg.get('pair'), cfg.get('nodes') or {}
        self.skip_if(not pair or len(pair) != 2,
                     f"{self.tool} needs two Dolphin nodes: extras['dolphin']['pair'] of "
                     f'{self.current_partition.fullname} names none')
        missing = [h for h in pair if h not in nodes]
        self.skip_if(missing, f"{self.tool}: no NodeId for {', '.join(missing)} in "
                              f"extras['dolphin']['nodes']")
        self.server, self.client = pair
        self.ids = nodes
        self.use_nodes(pair)
        self.keep_files = [SCRIPT, 'server.out']

    def script_lines(self):
        q = shlex.quote
        wait = self.server_start_s
        if wait is None:
            wait = self.dolphin().get('server_start_s', 2)
        client = ' '.join(q(str(a)) for a in self.client_opts)
        return [
            f'{self.on(self.server)}{q(self.tool_path)} -server -rn {self.ids[self.client]} '
            '> server.out 2>&1 &',
            'server=$!',
            f'sleep {wait}',
            f'{self.on(self.client)}{q(self.tool_path)} -client -rn {self.ids[self.server]} '
            f'{client}',
            'rc=$?',
            '# the server ends with its client; do not wait for it forever',
            'for i in $(seq 1 30); do kill -0 $server 2>/dev/null || break; sleep 1; done',
            'kill $server 2>/dev/null',
            'exit $rc',
        ]

    def parsed(self):
        if getattr(self, '_parsed', None) is None:
            try:
                self._parsed = dolphin_parse.PARSERS[self.tool](self.read(self.stdout.evaluate()))
            except dolphin_parse.DolphinParseError as err:
                raise SanityError(str(err))
        return self._parsed

    @sanity_function
    def validate(self):
        if self.job.exitcode != 0:
            raise SanityError(f'{self.tool} client exited with {self.job.exitcode}')
        self.parsed()
        return True

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in self.figures().items()
        }


@rfm.simple_test
class DolphinDmaBench(DolphinPair):
    '''Streaming remote memory DMA bandwidth per message size.'''

    descr = 'Dolphin PCIe DMA bandwidth between two nodes (dma_bench)'
    tool = 'dma_bench'

    def figures(self):
        rows = self.parsed()
        out = {f'bw_{r["message_size"]}': (r['bandwidth_mbps'], 'MB/s') for r in rows}
        out['bw_max'] = (max(r['bandwidth_mbps'] for r in rows), 'MB/s')
        return out


@rfm.simple_test
class DolphinScipp(DolphinPair):
    '''Request-response remote memory PIO write latency per message size.'''

    descr = 'Dolphin PCIe ping-pong latency between two nodes (scipp)'
    tool = 'scipp'

    def figures(self):
        out = {}
        for r in self.parsed():
            out[f'latency_{r["size"]}'] = (r['latency_us'], 'us')
            out[f'half_latency_{r["size"]}'] = (r['half_latency_us'], 'us')
        return out


@rfm.simple_test
class DolphinIntrBench(DolphinPair):
    '''Remote interrupt latency.'''

    descr = 'Dolphin PCIe remote interrupt latency between two nodes (intr_bench)'
    tool = 'intr_bench'

    def figures(self):
        p = self.parsed()
        return {'unidirectional': (p['unidirectional_us'], 'us'),
                'round_trip': (p['round_trip_us'], 'us')}
