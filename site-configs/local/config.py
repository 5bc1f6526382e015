# ReFrame configuration for the site `local`: the embedded default.
#
# This machine, ReFrame's local scheduler and launcher, no Slurm and no module system
# needed: the kernels are put on PATH from the cobalt-bench tree (SITE.root: the tree the
# cobalt_bench package belongs to, or $COBALT_BENCH_ROOT).
#
#   reframe -C site-configs/local/config.py -c reframe_checks -r --exec-policy serial
#
# Results, references: see python/cobalt_bench/reframe/site.py. The workload a partition
# can meet is the site's business, so per-partition kernel options live in the partition's
# `extras['cobalt_bench']` (for example `mem_test_opts`), not in the checks.

from cobalt_bench.reframe.site import Site

SITE = Site('local', __file__)

# SITE.checked: this site's references.yaml and compliance.yaml are validated when ReFrame
# loads this file (cobalt_bench.reframe.site).
site_configuration = SITE.checked({
    'systems': [
        {
            'name': SITE.name,
            'descr': 'This machine, without a batch system (cobalt-bench embedded default)',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'prefix': SITE.prefix,
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'This machine',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],   # ReFrame's own, nothing to compile
                    # One test at a time: benchmarks must not share the machine.
                    'max_jobs': 1,
                    'env_vars': [
                        ['PATH', f'{SITE.root}/bin:$PATH'],
                        ['COBALT_BENCH_ROOT', SITE.root],
                    ],
                    # cobalt-bench's settings, in their own namespace of the extras
                    # (cobalt_bench.reframe.settings; docs/running-at-a-site.md).
                    'extras': {'cobalt_bench': {
                        # A workload a small machine (2 cores) meets: one station paced
                        # at 8 Gbit/s in all, for 3 s.
                        'mem_test_opts': '--stations 1 --desired-rate 8 --duration 3',
                        # MemCapacity (after --max): one station's buffers, 3 s.
                        'mem_capacity_opts': '--stations 1 --duration 3',
                        # CpuTest: every core for 3 s (typed: checked against
                        # `cpu-test --describe` when the configuration loads).
                        'cpu_test': {'duration': 3},
                        # eth-test (reframe_checks/network.py) on the loopback interface
                        # (receiver and sender both here): 12 streams, 3 Gbit/s, 3 s, which
                        # this machine receives without loss while busy; judged to 1%
                        # (a fitted rate over 3 s), loss exactly.
                        'eth_test_interfaces': ['lo'],
                        'eth_test_send_opts': '--rate 3 --duration 3',
                        'eth_test_receive_opts': '--threshold 2.97 --timeout 60',
                    }},
                },
            ],
        },
    ],
    'general': SITE.general(),
    'storage': SITE.storage(),   # ReFrame's results database: --performance-compare
    'logging': SITE.logging(),
})
