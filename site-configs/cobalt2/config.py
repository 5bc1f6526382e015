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
# Results, references: see ../cobalt_site.py. Workloads are the kernels' own defaults,
# which are the compliance workloads (mem-test: 18 stations, 702 Gbit/s).

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import cobalt_site  # noqa: E402

SITE = cobalt_site.Site('cobalt2', __file__)

site_configuration = {
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
                    'max_jobs': 1,
                    'env_vars': [
                        ['PATH', f'{SITE.root}/bin:$PATH'],
                        ['COBALT_BENCH_ROOT', SITE.root],
                    ],
                    'extras': {
                        # The compliance workload: mem-test's defaults.
                        'mem_test_opts': '',
                    },
                },
            ],
        },
    ],
    'general': SITE.general(),
    'logging': SITE.logging(),
}
