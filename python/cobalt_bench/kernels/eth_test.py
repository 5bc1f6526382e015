'''eth-test-receive (with eth-test-send): rate-paced UDP streams with exact loss
accounting (src/eth-test). The receiver writes the document.'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='eth-test-receive', family='ethernet', check='EthTest',
    binaries=('eth-test-send', 'eth-test-receive'),
    metrics={'total_speed': 'Gbit/s', 'average_loss': '%', 'sent_packets': 'packets',
             'received_packets': 'packets', 'lost_packets': 'packets',
             'duplicate_packets': 'packets', 'reordered_packets': 'packets',
             'foreign_datagrams': 'datagrams', 'malformed_datagrams': 'datagrams',
             'rejected_datagrams': 'datagrams', 'verification_errors': 'errors'},
    options_setting='eth_test_receive_opts',
    options_doc="eth-test-receive options (EthTest); '': compliant at >= 9.00 Gbit/s, 0% loss")
