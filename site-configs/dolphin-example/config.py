# ReFrame configuration for the site `dolphin-example`: a small cluster whose nodes are
# connected by a Dolphin PCIe interconnect (Dolphin eXpressWare), checked with
# reframe_checks/dolphin.py as Dolphin's manual verifies an installation. An example to
# copy: set the hostnames, node names, NodeIds and tool paths of your cluster.
#
#   reframe -C site-configs/dolphin-example/config.py -c reframe_checks/dolphin.py -r \
#           --exec-policy serial
#
# ReFrame runs on one node of the cluster (local scheduler) and reaches the others with
# `run_on` (ssh by default; on a Slurm cluster use the slurm scheduler, launcher 'local',
# and 'run_on': 'srun -N1 -n1 -w {host}'). Two partitions, one per adapter generation, so
# that each is judged by the figures of its card (references.yaml):
#   mxh830  MXH830 (PCIe Gen3 x16): scipp and intr_bench figures of the manual;
#           dis_diag's recorded cluster (nodes 4 and 8)
#   mxh930  MXH930 (PCIe Gen4 x16): dma_bench figures of the manual
# Metrics without a reference are recorded, not judged.
#
# NodeIds: `query` on each node prints its "Local node-id"; dis_diag lists them too. Dolphin
# numbers the nodes of each interconnect 4, 8, 12, ..., so two clusters can both have 4 and 8.

import os

from cobalt_bench.reframe.site import Site

SITE = Site('dolphin-example', __file__)

# Dolphin's default install locations on Linux.
TOOLS = {
    'dis_diag': '/opt/DIS/sbin/dis_diag',
    'sciconntest': '/opt/DIS/bin/sciconntest',
    'dma_bench': '/opt/DIS/bin/dma_bench',
    'scipp': '/opt/DIS/bin/scipp',
    'intr_bench': '/opt/DIS/bin/intr_bench',
}
# COBALT_DOLPHIN_TOOLS=PATH looks the tools up on PATH instead (an install elsewhere).
if os.environ.get('COBALT_DOLPHIN_TOOLS') == 'PATH':
    TOOLS = {}


def _partition(name, descr, nodes):
    return {
        'name': name,
        'descr': descr,
        'scheduler': 'local',
        'launcher': 'local',
        'environs': ['builtin'],
        'max_jobs': 1,
        'env_vars': [['COBALT_BENCH_ROOT', SITE.root]],
        'features': ['dolphin'],
        'extras': {'cobalt_bench': {
            'dolphin': {
                'nodes': nodes,                 # node name -> NodeId
                'pair': list(nodes)[:2],        # server, client of the performance tests
                'run_on': 'ssh -o BatchMode=yes {host}',
                'tools': TOOLS,
                'server_start_s': 2,
            },
        }},
    }


# SITE.checked: this site's references.yaml and compliance.yaml are validated when ReFrame
# loads this file (cobalt_bench.reframe.site).
site_configuration = SITE.checked({
    'systems': [
        {
            'name': SITE.name,
            'descr': 'Example: a cluster with a Dolphin PCIe interconnect',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'prefix': SITE.prefix,
            'partitions': [
                _partition('mxh830', 'Nodes with one MXH830 adapter each (PCIe Gen3 x16)',
                           {'dolphin-a': 4, 'dolphin-b': 8}),
                _partition('mxh930', 'Nodes with one MXH930 adapter each (PCIe Gen4 x16)',
                           {'dolphin-c': 4, 'dolphin-d': 8}),
            ],
        },
    ],
    'general': SITE.general(),
    'storage': SITE.storage(),   # ReFrame's results database: --performance-compare
    'logging': SITE.logging(),
})
