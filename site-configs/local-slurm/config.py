# ReFrame configuration for the site `local-slurm`: the Slurm cluster that
# site-configs/local-slurm/cluster starts on this machine (partition x86: nodes n1 and n2,
# both this machine; partition arm: the aarch64 node a1 under qemu-user, docs/arm.md), used
# as a real site would be: the slurm scheduler (sbatch,
# sacct), srun, and the `cobalt-bench` Lmod module.
#
#   site-configs/local-slurm/cluster start
#   reframe -C site-configs/local-slurm/config.py -c reframe_checks -r --exec-policy serial
#
# Run it with --exec-policy serial: x86 and arm are the same machine's CPUs, and two
# benchmarks at once would measure each other.
#
# Results, references: see python/cobalt_bench/reframe/site.py.
#
# Workload: what the partition can meet is the site's business, so the per-partition kernel
# options live in the partition's `extras['cobalt_bench']` (for example `mem_test_opts`), not
# in the checks.

import os
import shlex

from cobalt_bench import paths
from cobalt_bench.reframe.site import Site

SITE = Site('local-slurm', __file__)
ROOT = SITE.root

# ReFrame's lmod backend needs LMOD_CMD, which only a shell that initialised Lmod has.
if 'LMOD_CMD' not in os.environ and os.access('/usr/share/lmod/lmod/libexec/lmod', os.X_OK):
    os.environ['LMOD_CMD'] = '/usr/share/lmod/lmod/libexec/lmod'

# The module, from the tree this file belongs to; job scripts get
# `module use <ROOT>/modulefiles; module load cobalt-bench`.
MODULES = [{'name': 'cobalt-bench', 'path': os.path.join(ROOT, 'modulefiles')}]

# Both nodes are this machine and declare all of it (`slurmd -C`).
PROCESSOR = {'num_cpus': os.cpu_count()}


def _partition(name, descr, features=(), processor=PROCESSOR, extras=None, prepare_cmds=()):
    return {
        'name': name,
        'descr': descr,
        'scheduler': 'slurm',
        'launcher': 'srun',
        'access': [f'-p {name}'],
        'environs': ['builtin'],   # ReFrame's own, nothing to compile
        'modules': MODULES,
        'processor': processor,
        'max_jobs': 1,
        'time_limit': '10m',
        'prepare_cmds': list(prepare_cmds),
        # 'mpi': MPI checks (cb-linktest) run here; x86 only, the two are one machine.
        'features': list(features),
        'extras': {'cobalt_bench': {
            # A workload a small machine (2 cores) meets: one station paced at
            # 8 Gbit/s in all, for 3 s.
            'mem_test_opts': '--stations 1 --desired-rate 8 --duration 3',
            # MemCapacity (after --max): one station's buffers, 3 s unpaced.
            'mem_capacity_opts': '--stations 1 --duration 3',
            # CpuTest: every core of the node for 3 s (typed: checked against
            # `cpu-test --describe` when the configuration loads).
            'cpu_test': {'duration': 3},
            # MPI jobs: Debian's Open MPI under Slurm starts with srun --mpi=pmix.
            'mpi_launcher_options': ['--mpi=pmix'],
            # cb-linktest: one task on each of the two nodes, 16 MiB messages.
            'linktest_tasks': 2,
            'linktest_opts': '-w 2 -n 4 -s 16777216',
            # OSU (reframe_checks/osu.py): OSU's default options and sizes; collectives
            # with 4 tasks as the SJTU document runs broadcast, here 2 per node (2 nodes),
            # which puts 4 busy-polling ranks on 2 cores: let Open MPI yield when idle.
            'osu_collective_tasks': 4,
            'osu_collective_tasks_per_node': 2,
            'osu_env_vars': {'OMPI_MCA_mpi_yield_when_idle': '1'},
            # eth-test (reframe_checks/network.py): n1 and n2 share one network stack, so
            # the one-node form on the loopback interface: 12 streams, 3 Gbit/s, 3 s.
            'eth_test_interfaces': ['lo'],
            'eth_test_send_opts': '--rate 3 --duration 3',
            'eth_test_receive_opts': '--threshold 2.97 --timeout 60',
            **(extras or {}),
        }},
    }


# Partition arm is the aarch64 node a1: the arm64 root of scripts/arm64-root, whose slurmd
# and jobs the kernel runs through qemu-user (site-configs/local-slurm/cluster). Emulated
# aarch64 is many times slower than ARM hardware, so its workloads are smaller and its
# references (references.yaml) are those of the emulator, not of any ARM machine.
ARM_PROCESSOR = dict(PROCESSOR, arch='aarch64', platform='aarch64')
# The ARM cluster's job settings (the OSU document): `ulimit -l unlimited`, `ulimit -s
# unlimited`. They are the Slurm jobs' own (jobs/lib/cobalt-job.sh applies them on aarch64
# nodes when sourced), so ReFrame's job scripts source that same file: one declaration.
# MPI: Debian's arm64 Open MPI starts under srun --mpi=pmix, as on x86 (the extras'
# mpi_launcher_options); the document's --mpi=pmi2 needs an Open MPI built with Slurm's
# PMI-2 (--with-pmi), which Debian's is not (docs/arm.md).
ARM_PREPARE_CMDS = [f'. {shlex.quote(os.path.join(paths.data_dir(ROOT), "jobs", "lib", "cobalt-job.sh"))}']
ARM_EXTRAS = {
    'mem_test_opts': '--stations 1 --desired-rate 1 --duration 3',
    'mem_capacity_opts': '--stations 1 --duration 3',
    'cpu_test': {'duration': 3},
    'eth_test_send_opts': '--rate 0.3 --duration 3',
    'eth_test_receive_opts': '--threshold 0.297 --timeout 120',
}


# SITE.checked: this site's references.yaml and compliance.yaml are validated when ReFrame
# loads this file (cobalt_bench.reframe.site).
site_configuration = SITE.checked({
    'systems': [
        {
            'name': SITE.name,
            'descr': 'Local Slurm cluster on this machine (site-configs/local-slurm/cluster)',
            'hostnames': ['.*'],
            'modules_system': 'lmod',
            'prefix': SITE.prefix,
            'partitions': [
                _partition('x86', 'Slurm partition x86 (nodes n1, n2)', features=['mpi']),
                _partition('arm', 'Slurm partition arm (node a1: aarch64 under qemu-user)',
                           processor=ARM_PROCESSOR, extras=ARM_EXTRAS,
                           prepare_cmds=ARM_PREPARE_CMDS),
            ],
        },
    ],
    # Job scripts start with `#!/bin/bash -l`: a login shell has Lmod's `module`.
    'general': SITE.general(use_login_shell=True),
    'storage': SITE.storage(),   # ReFrame's results database: --performance-compare
    'logging': SITE.logging(),
})
