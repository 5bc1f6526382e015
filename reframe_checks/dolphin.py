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
# The bases (placement, the generated script): cobalt_bench.reframe.dolphin; the outputs'
# parsers and verdicts: cobalt_bench.tools.dolphin.

import reframe as rfm
from reframe.core.builtins import performance_function, sanity_function
from reframe.core.exceptions import SanityError

from cobalt_bench.tools import dolphin
from cobalt_bench.reframe import DolphinAllNodes, DolphinPair


@rfm.simple_test
class DolphinStatic(DolphinAllNodes):
    '''Static interconnect test: dis_diag on every node.'''

    descr = 'Dolphin static PCIe interconnect test (dis_diag on every node)'
    tool = 'dis_diag'

    @sanity_function
    def validate(self):
        passed, problems, self.parsed = dolphin.judge_dis_diag(self.outputs())
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
        expected = set(self.dolphin()['nodes'].values()) or None
        passed, problems, self.parsed = dolphin.judge_sciconntest(self.outputs(), expected)
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
