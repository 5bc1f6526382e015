'''eth-test-receive (with eth-test-send): rate-paced UDP streams with exact loss
accounting (src/eth-test). The receiver writes the document.'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='eth-test-receive', family='ethernet', check='EthTest',
    binaries=('eth-test-send', 'eth-test-receive'),
    declared=('total_speed', 'average_loss', 'sent_packets', 'received_packets',
              'lost_packets', 'duplicate_packets', 'reordered_packets',
              'foreign_datagrams', 'malformed_datagrams', 'rejected_datagrams',
              'verification_errors'),
    options_setting='eth_test_receive_opts',
    options_doc="eth-test-receive options (EthTest); '': compliant at >= 9.00 Gbit/s, 0% loss")
