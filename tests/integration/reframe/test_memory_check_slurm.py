'''The MemTest check with the `local-slurm` site configuration through the local Slurm
cluster (real ReFrame, real kernels, real Slurm: both partitions, x86 and the aarch64
node), and the site references that judge it.'''

import os
import subprocess
import time

import pytest

from plugins.reframe_runs import (assert_passed, assert_performance_failure, checks,
                                  copy_site, reframe, unreachable)


# ---- site `local-slurm` -----------------------------------------------------------------

def slurm_config(root):
    return os.path.join(root, 'site-configs', 'local-slurm', 'config.py')


def sacct(jobid, env, timeout=60):
    '''(partition, state, exit code) of a job from Slurm's accounting (which may take a
    moment to fill in the partition).'''
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(['sacct', '-n', '-P', '-X', '-j', str(jobid),
                              '-o', 'JobID,Partition,State,ExitCode'],
                             env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30).stdout
        rows = {f[0]: tuple(f[1:4]) for f in (line.split('|') for line in out.splitlines())
                if len(f) >= 4}
        if rows.get(jobid, ('',))[0] or time.monotonic() > deadline:
            return rows.get(jobid)

        time.sleep(0.5)


@pytest.mark.measures
def test_local_slurm_passes_on_x86_and_arm(root, mem_test, tmp_path, slurm_cluster):
    env = dict(slurm_cluster.env)
    run = reframe(slurm_config(root), checks(root), tmp_path, '-n', 'MemTest',
                  site='local-slurm', env=env)
    assert_passed(run, ['x86', 'arm'])
    for part, tc in run.by_partition().items():
        # Really run by Slurm: the job ReFrame reports is in the accounting, in the
        # partition the test ran in, completed.
        jobid = tc['jobid']
        assert jobid and jobid.isdigit(), tc
        assert sacct(jobid, env) == (part, 'COMPLETED', '0:0')
        with open(os.path.join(tc['outputdir'], 'rfm_job.sh')) as fp:
            script = fp.read()

        assert 'module load cobalt-bench' in script
        assert f'-p {part}' in script


def test_local_slurm_unreachable_reference_fails(root, mem_test, tmp_path, slurm_cluster):
    config = copy_site(root, 'local-slurm', tmp_path / 'site', unreachable)
    env = dict(slurm_cluster.env, COBALT_BENCH_ROOT=root)
    run = reframe(config, checks(root), tmp_path, '--system', 'local-slurm:x86',
                  '-n', 'MemTest', site='local-slurm', env=env)
    assert_performance_failure(run, ['x86'])
