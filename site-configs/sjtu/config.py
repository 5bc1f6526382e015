# ReFrame configuration for the site `sjtu`: the three clusters of the SJTU OSU document
# (osu-benchmarks-sjtu.rst), as that document runs OSU on them, with its published figures
# as references (references.yaml).
#
#   sjtu-siyuan1:p64c512g  思源一号, Slurm partition 64c512g, OSU 5.7.1, mpirun;
#       modules openmpi, osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi
#   sjtu-pi2:cpu           π2.0, Slurm partition cpu, OSU 5.7.1, mpirun; modules gcc/9.2.0,
#       openmpi/4.0.5-gcc-9.2.0, osu-micro-benchmarks/5.7.1-gcc-9.2.0-openmpi-4.0.5
#   sjtu-arm:default       the ARM cluster, OSU 5.6.3, srun --mpi=pmi2;
#       module osu-micro-benchmarks/5.6.3-gcc-9.3.0-openmpi
#
# ReFrame partition names cannot start with a digit: p64c512g is Slurm's 64c512g.
# 思源一号 and π2.0 are x86 clusters; the ARM cluster's job scripts name no partition (its
# default partition) and raise the locked-memory and stack limits first. All jobs are
# exclusive; point to point runs 2 tasks on 2 nodes, broadcast 4 tasks on 4 nodes.
#
# ReFrame picks the system by host name; the patterns below (sylogin*, login<N>,
# armlogin*) are assumed login-node names, not from the document: name the system
# wherever they do not match:
#   reframe -C site-configs/sjtu/config.py --system sjtu-arm -c reframe_checks/osu.py -r
#   reframe -C site-configs/sjtu/config.py --system sjtu-pi2 -c reframe_checks/osu.py --dry-run
#
# Results, references: see python/cobalt_bench/reframe/site.py.

import os

from cobalt_bench.reframe.site import Site

SITE = Site('sjtu', __file__)

# ReFrame's lmod backend needs LMOD_CMD, which only a shell that initialised Lmod has.
if 'LMOD_CMD' not in os.environ and os.access('/usr/share/lmod/lmod/libexec/lmod', os.X_OK):
    os.environ['LMOD_CMD'] = '/usr/share/lmod/lmod/libexec/lmod'

# How the document runs its collectives: 4 tasks, one per node.
COLLECTIVES = {'osu_collective_tasks': 4, 'osu_collective_tasks_per_node': 1}


def _system(name, descr, hostnames, partition):
    return {
        'name': name,
        'descr': descr,
        'hostnames': hostnames,
        'modules_system': 'lmod',
        'prefix': SITE.prefix,
        'partitions': [partition],
    }


def _partition(name, descr, launcher, access, extras, prepare_cmds=()):
    return {
        'name': name,
        'descr': descr,
        'scheduler': 'slurm',
        'launcher': launcher,
        'access': access,
        'environs': ['osu'],
        'features': ['mpi'],
        'prepare_cmds': list(prepare_cmds),
        'extras': {'cobalt_bench': {**COLLECTIVES, **extras}},
    }


# SITE.checked: this site's references.yaml and compliance.yaml are validated when ReFrame
# loads this file (cobalt_bench.reframe.site).
site_configuration = SITE.checked({
    'systems': [
        _system('sjtu-siyuan1', '思源一号 (x86)', [r'^sylogin'],
                _partition('p64c512g', '思源一号 partition 64c512g', 'mpirun',
                           ['--partition=64c512g'], {})),
        _system('sjtu-pi2', 'π2.0 (x86)', [r'^login\d'],
                _partition('cpu', 'π2.0 partition cpu', 'mpirun',
                           ['--partition=cpu'], {})),
        _system('sjtu-arm', 'SJTU ARM cluster', [r'^armlogin'],
                _partition('default', 'ARM cluster, its default partition', 'srun', [],
                           {'mpi_launcher_options': ['--mpi=pmi2']},
                           prepare_cmds=['ulimit -l unlimited', 'ulimit -s unlimited'])),
    ],
    'environments': [
        {'name': 'osu', 'target_systems': ['sjtu-siyuan1'],
         'modules': ['openmpi', 'osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi']},
        {'name': 'osu', 'target_systems': ['sjtu-pi2'],
         'modules': ['gcc/9.2.0', 'openmpi/4.0.5-gcc-9.2.0',
                     'osu-micro-benchmarks/5.7.1-gcc-9.2.0-openmpi-4.0.5']},
        {'name': 'osu', 'target_systems': ['sjtu-arm'],
         'modules': ['osu-micro-benchmarks/5.6.3-gcc-9.3.0-openmpi']},
    ],
    # Job scripts start with `#!/bin/bash -l`: a login shell has Lmod's `module`. The
    # job scripts load the modules as the document does and Lmod swaps what conflicts;
    # ReFrame need not ask Lmod on the machine it runs on (which lets --dry-run generate
    # the scripts anywhere).
    'general': SITE.general(use_login_shell=True, resolve_module_conflicts=False),
    'storage': SITE.storage(),   # ReFrame's results database: --performance-compare
    'logging': SITE.logging(),
})
