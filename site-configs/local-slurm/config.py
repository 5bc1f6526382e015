# ReFrame configuration for the site `local-slurm`: the Slurm cluster that
# site-configs/local-slurm/cluster starts on this machine (partitions x86 and arm, nodes n1
# and n2, both this machine), used as a real site would be: the slurm scheduler (sbatch,
# sacct), srun, and the `cobalt-bench` Lmod module.
#
#   site-configs/local-slurm/cluster start
#   reframe -C site-configs/local-slurm/config.py -c reframe_checks -r --exec-policy serial
#
# Run it with --exec-policy serial: x86 and arm are the same machine, and two benchmarks at
# once would measure each other.
#
# Where things go (one directory per run, for the report tool):
#   ${COBALT_BENCH_RESULTS:-<checkout>/results}/local-slurm/<run-id>/
#       output/    test outputs (stdout, stderr, job script, the kernels' --json files)
#       stage/     working directories (removed for tests that pass)
#       perflogs/  ReFrame performance logs
#       report.json, and ReFrame's log in output/
#   <run-id> is $COBALT_BENCH_RUN_ID or the start time and ReFrame's pid
#   (YYYYmmddTHHMMSS-PID).
#
# References: `references.yaml` beside this file, in ReFrame's external reference format
# (checks say `reference = {'$ref': 'references.yaml'}`), found through ReFrame's
# reference prefix, which this file points at its own directory (see below). To judge a
# machine differently, copy this directory and edit the copy's references.yaml; never the
# checks.
#
# Workload: what the partition can meet is the site's business, so the per-partition kernel
# options live in the partition's `extras` (for example `mem_test_opts`), not in the checks.

import os
import time

SITE = 'local-slurm'
SITE_DIR = os.path.dirname(os.path.abspath(__file__))


def _cobalt_root():
    '''The cobalt-bench tree this file belongs to.

    A checkout: ROOT/site-configs/<site>/config.py; a `make install` tree:
    ROOT/share/cobalt-bench/site-configs/<site>/config.py. Either way ROOT holds
    bin/ and modulefiles/.'''
    here = SITE_DIR
    candidates = [os.path.join(here, '..', '..'),
                  os.path.join(here, '..', '..', '..', '..'),
                  os.environ.get('COBALT_BENCH_ROOT')]
    for c in candidates:
        if c and os.path.isdir(os.path.join(c, 'modulefiles', 'cobalt-bench')):
            return os.path.realpath(c)

    return os.path.realpath(os.path.join(here, '..', '..'))


def _run_prefix(root):
    '''results/<site>/<run-id>: $COBALT_BENCH_RESULTS, else the checkout's results/,
    else ./results (an install tree is usually not writable).'''
    base = os.environ.get('COBALT_BENCH_RESULTS')
    if not base:
        base = os.path.join(root, 'results')
        if not (os.path.isdir(base) and os.access(base, os.W_OK)):
            base = os.path.join(os.getcwd(), 'results')

    run_id = (os.environ.get('COBALT_BENCH_RUN_ID') or
              f'{time.strftime("%Y%m%dT%H%M%S")}-{os.getpid()}')
    return os.path.join(os.path.abspath(base), SITE, run_id)


ROOT = _cobalt_root()
PREFIX = _run_prefix(ROOT)

# ReFrame's reference prefix (--reference-prefix, RFM_REFERENCE_PREFIX) is where checks'
# external references are looked up. ReFrame 4.10.4 reads it as `general/reference_prefix`
# but its configuration schema rejects that key in a file, so point the environment
# variable at this site's directory instead. ReFrame reads it after loading this file;
# an explicit --reference-prefix or RFM_REFERENCE_PREFIX still wins.
os.environ.setdefault('RFM_REFERENCE_PREFIX', SITE_DIR)

# ReFrame's lmod backend needs LMOD_CMD, which only a shell that initialised Lmod has.
if 'LMOD_CMD' not in os.environ and os.access('/usr/share/lmod/lmod/libexec/lmod', os.X_OK):
    os.environ['LMOD_CMD'] = '/usr/share/lmod/lmod/libexec/lmod'

# The module, from the tree this file belongs to; job scripts get
# `module use <ROOT>/modulefiles; module load cobalt-bench`.
MODULES = [{'name': 'cobalt-bench', 'path': os.path.join(ROOT, 'modulefiles')}]

# Both nodes are this machine and declare all of it (`slurmd -C`).
PROCESSOR = {'num_cpus': os.cpu_count()}


def _partition(name, descr):
    return {
        'name': name,
        'descr': descr,
        'scheduler': 'slurm',
        'launcher': 'srun',
        'access': [f'-p {name}'],
        'environs': ['builtin'],   # ReFrame's own, nothing to compile
        'modules': MODULES,
        'processor': PROCESSOR,
        'max_jobs': 1,
        'time_limit': '10m',
        'extras': {
            # A workload a small machine (2 cores) meets: one station paced at
            # 8 Gbit/s in all, for 3 s.
            'mem_test_opts': '--stations 1 --desired-rate 8 --duration 3',
        },
    }


site_configuration = {
    'systems': [
        {
            'name': SITE,
            'descr': 'Local Slurm cluster on this machine (site-configs/local-slurm/cluster)',
            'hostnames': ['.*'],
            'modules_system': 'lmod',
            'prefix': PREFIX,
            'partitions': [
                _partition('x86', 'Slurm partition x86 (nodes n1, n2)'),
                _partition('arm', 'Slurm partition arm (stands in for an ARM partition)'),
            ],
        },
    ],
    'general': [
        {
            # Job scripts start with `#!/bin/bash -l`: a login shell has Lmod's `module`.
            'use_login_shell': True,
            'report_file': os.path.join(PREFIX, 'report.json'),
            'save_log_files': True,
        },
    ],
    'logging': [
        {
            'handlers$': [
                {
                    'type': 'stream',
                    'name': 'stdout',
                    'level': 'info',
                    'format': '%(message)s',
                },
            ],
            'handlers': [
                {
                    'type': 'file',
                    'level': 'debug2',
                    'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
                    'append': False,
                },
            ],
            'handlers_perflog': [
                {
                    'type': 'filelog',
                    'basedir': os.path.join(PREFIX, 'perflogs'),
                    'prefix': '%(check_system)s/%(check_partition)s',
                    'level': 'info',
                    'format': ('%(check_result)s|%(check_job_completion_time)s|'
                               '%(check_name)s|%(check_jobid)s|%(check_perfvalues)s'),
                    'format_perfvars': ('%(check_perf_value)s|%(check_perf_unit)s|'
                                        '%(check_perf_ref)s|%(check_perf_lower_thres)s|'
                                        '%(check_perf_upper_thres)s|'),
                    'append': True,
                },
            ],
        },
    ],
}
