'''cb-linktest: all-pairs MPI link test, slowest pairs retested (src/cb-linktest).'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='cb-linktest', family='interconnect', check='CbLinkTest', binaries=('cb-linktest',),
    declared=('min_bandwidth', 'max_time', 'avg_bandwidth', 'pairs_tested',
              'pairs_expected'),
    # not cb_linktest_opts: the sites' name for it
    options_setting='linktest_opts', options_default='-w 2 -n 4 -s 16777216',
    options_doc="cb-linktest options (CbLinkTest); the default: 16 MiB messages, as JSC "
                "LinkTest's example",
    config_numbers=('size_messages',), config_files=('output',),
    plots=('linktest_heatmap',))
