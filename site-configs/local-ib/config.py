# ReFrame configuration for the site `local-ib`: this machine and the simulated InfiniBand
# fabric that site-configs/local-ib/fabric starts on it (ibsim, opensm, and libibumad under
# the libumad2sim.so preload; src/smp-mad-stress/README.md), ReFrame's local scheduler.
#
#   site-configs/local-ib/fabric start
#   reframe -C site-configs/local-ib/config.py -c reframe_checks/subnet_management.py -r
#
# The partition's environment is the fabric's, as `fabric env` prints it when ReFrame
# loads this file (the same COBALT_IB_DIR selects the same fabric): LD_PRELOAD,
# IBSIM_SOCKNAME and the LIDs and routes opensm gave it. A fabric that is not up adds
# nothing, and SmpMadStress is then skipped, saying so. The other checks run as on the
# site `local`, where their workloads and references are.
#
# The simulator answers in software: the references are a sanity floor for this machine,
# not a switch's figures.

import shlex
import subprocess

from cobalt_bench.reframe.site import Site

SITE = Site('local-ib', __file__)
FABRIC = f'{SITE.dir}/fabric'


def fabric_env():
    '''[[name, value]] of the running fabric's environment; [] when it is not up (or its
    tools are missing: `fabric start` names them).'''
    try:
        proc = subprocess.run([FABRIC, 'env'], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    if proc.returncode != 0:
        return []
    env = []
    for line in proc.stdout.splitlines():
        if line.startswith('export ') and '=' in line:
            name, _, value = line[len('export '):].partition('=')
            # ReFrame writes `export NAME=value` as given: quoted here for the ';' of
            # COBALT_IB_PATHS (shlex.quote leaves plain words, like LD_PRELOAD's, alone)
            env.append([name, shlex.quote(value.strip("'"))])
    return env


site_configuration = SITE.checked({
    'systems': [
        {
            'name': SITE.name,
            'descr': 'This machine with a simulated InfiniBand fabric (ibsim, opensm)',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'prefix': SITE.prefix,
            'partitions': [
                {
                    'name': 'default',
                    'descr': 'This machine, attached to the fabric as its host H1-1',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['builtin'],
                    'max_jobs': 1,
                    'env_vars': [
                        ['PATH', f'{SITE.root}/bin:$PATH'],
                        ['COBALT_BENCH_ROOT', SITE.root],
                        *fabric_env(),
                    ],
                    # The simulated fabric: the InfiniBand checks run here (placement).
                    'features': ['infiniband'],
                    'extras': {'cobalt_bench': {
                        # NodeInfo GET to every LID of the fabric (5 switches, 12 hosts),
                        # LID-routed, 2 MADs on the wire to each, for 3 s. One worker:
                        # libumad2sim routes every response to the last port opened.
                        'smp_mad_stress_opts': '-d 3 -n 2 -N 16 -L $COBALT_IB_LIDS NodeInfo',
                        'mem_test_opts': '--stations 1 --desired-rate 8 --duration 3',
                        'mem_capacity_opts': '--stations 1 --duration 3',
                        'cpu_test': {'duration': 3},
                        'eth_test_interfaces': ['lo'],
                        'eth_test_send_opts': '--rate 3 --duration 3',
                        'eth_test_receive_opts': '--threshold 2.97 --timeout 60',
                    }},
                },
            ],
        },
    ],
    'general': SITE.general(),
    'storage': SITE.storage(),
    'logging': SITE.logging(),
})
