# ReFrame checks for the network family: eth-test (the compliance document's 10GbE UDP
# reception test), one run per interface of the node under test.
#
# The node under test runs eth-test-receive on the interface (-I IFACE); the sender,
# eth-test-send, is started by the job beside it, once the receiver listens (its
# --ready-file names the address, first port and stream count). Site settings, in the
# partition's `extras['cobalt_bench']` (cobalt_bench.reframe.settings; the check never
# names a site):
#   eth_test_interfaces    the interfaces to test, one run each, e.g. ['ens1f0', 'ens1f1'];
#                          a partition that lists none gets one run that is skipped, saying so
#   eth_test_receive_opts  eth-test-receive options (default: its own, compliant at
#                          >= 9.00 Gbit/s and 0.000% loss); -S kernel_opts=... overrides
#   eth_test_send_opts     eth-test-send options (default: its own, the compliance load:
#                          12 streams, 9 Gbit/s, 8900 B, batches of 128, 10 s)
#   eth_test_sender        a command prefix that starts the sender on the sending machine,
#                          e.g. 'ssh sender01' (eth-test-send on its PATH); '' (default): on
#                          this node, which tests the receiving software, not the NIC
# Judged by the site's references.yaml, entry EthTest: total_speed (Gbit/s) and
# average_loss (%); every other metric of eth-test-receive's JSON document is recorded.

import reframe as rfm
from reframe.core.builtins import parameter, run_after

from cobalt_bench.reframe import (KernelJsonTest, session_id, shell_arg, shell_words,
                                  values_of_partitions)

NO_INTERFACE = ''    # the run of a partition that lists no interface


def _interfaces():
    '''Every interface some partition of this system lists, and NO_INTERFACE if a partition
    lists none.'''
    names = set()
    for _, listed in values_of_partitions('eth_test_interfaces'):
        names.update(listed or [NO_INTERFACE])

    return sorted(names)


@rfm.simple_test
class EthTest(KernelJsonTest):
    '''eth-test: UDP streams received on one interface, speed and exact loss.'''

    interface = parameter(_interfaces())
    descr = 'eth-test: 10GbE UDP reception (compliance network test)'
    kernel = 'eth-test-receive'
    exclusive_access = True
    tags = {'network', 'compliance'}

    @run_after('init')
    def partitions_listing_the_interface(self):
        # Of the partitions it fits (SiteSettings.placement), those that list it.
        listing = {p.fullname for p, listed in values_of_partitions('eth_test_interfaces')
                   if self.interface in (listed or [NO_INTERFACE])}
        self.valid_systems = [p for p in self.valid_systems if p in listing]

    @run_after('setup')
    def receiver_and_sender(self):
        self.skip_if(self.interface == NO_INTERFACE,
                     f'partition {self.current_partition.fullname} lists no interfaces to '
                     f"test in extras['cobalt_bench']['eth_test_interfaces']")
        # The receiver (the executable) says where it listens; the sender waits for that
        # (at most 60 s), then streams to it. The job's exit code stays the receiver's.
        # One session id for both ends: the receiver measures this sender only, never
        # another eth-test-send streaming to the same ports (counted as foreign).
        session = session_id()
        self.executable_opts = ['-I', shell_arg(self.interface), '--ready-file', 'ready',
                                '--session', session, *self.executable_opts]
        sender = self.site_setting('eth_test_sender')
        send_opts = shell_words(self.site_setting('eth_test_send_opts'))
        self.prerun_cmds = [
            'rm -f ready',
            '(for i in $(seq 600); do [ -s ready ] && break; sleep 0.1; done; '
            'read -r address port streams < ready; '
            f'exec {sender} eth-test-send -H "$address" --port "$port" --streams "$streams" '
            f'--session {session} '
            f'{send_opts}'
            ') > eth-test-send.out 2>&1 &',
            'sender=$!',
        ]
        # A receiver that never listened (a usage error, say) leaves a sender waiting.
        self.postrun_cmds = ['receiver_rc=$?', '[ -s ready ] || kill $sender 2>/dev/null',
                             'wait $sender', 'exit $receiver_rc']
        self.keep_files = [self.json_file, 'eth-test-send.out']
