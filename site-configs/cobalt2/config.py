# ReFrame configuration for the site `cobalt2`: a machine offered for COBALT2, judged by
# the thresholds of the COBALT2 compliance document (../../shared/spec is its source;
# references.yaml carries its numbers).
#
# The machine under test runs the checks itself (local scheduler): the compliance tests
# are single-node tests, plus a sender machine for eth-test that the network checks name
# in their partition extras.
#
#   reframe -C site-configs/cobalt2/config.py -c reframe_checks -r --exec-policy serial
#
# Results, references: see python/cobalt_bench/reframe/site.py. Workloads are the kernels'
# own defaults, which are the compliance workloads (mem-test: 18 stations, 702 Gbit/s).

from cobalt_bench.reframe.site import Site

SITE = Site('cobalt2', __file__)

# SITE.checked: this site's references.yaml and compliance.yaml are validated when ReFrame
# loads this file (cobalt_bench.reframe.site).
site_configuration = SITE.checked({
    'systems': [
        {
            'name': SITE.name,
            'descr': 'A machine under COBALT2 compliance testing',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'prefix': SITE.prefix,
            'partitions': [
                {
                    'name': 'node',
                    'descr': 'The machine under test',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],
                    # A COBALT2 machine has NVIDIA GPUs and InfiniBand: gpu-copy and
                    # ib_write_bw run here (placement, docs/running-at-a-site.md).
                    'features': ['gpu', 'infiniband'],
                    'max_jobs': 1,
                    'env_vars': [
                        ['PATH', f'{SITE.root}/bin:$PATH'],
                        ['COBALT_BENCH_ROOT', SITE.root],
                    ],
                    'extras': {'cobalt_bench': {
                        # The compliance workload: mem-test's defaults.
                        'mem_test_opts': '',
                        # gpu-copy's defaults: every GPU, the compliance workload.
                        'gpu_copy_opts': '',
                        # eth-test (reframe_checks/network.py), once per 10GbE interface:
                        # list them here (e.g. ['ens1f0', 'ens1f1']; none listed: the check
                        # is skipped, saying so). The sender is a second machine that can
                        # send 9 Gbit/s to each (the compliance document), reached by ssh
                        # with eth-test-send on its PATH; the load is eth-test-send's default.
                        'eth_test_interfaces': [],
                        'eth_test_sender': 'ssh eth-test-sender',
                        'eth_test_receive_opts': '--timeout 120',
                    }},
                },
            ],
        },
    ],
    'general': SITE.general(),
    'storage': SITE.storage(),   # ReFrame's results database: --performance-compare
    'logging': SITE.logging(),
})
