'''jobs/smp-mad-stress.slurm through the local Slurm cluster: a run on the simulated fabric
completes with its document under results/; without an InfiniBand device the job fails
with the tool's "could not run" (exit 3).'''

import json
import os

from plugins.checkout import JOB_STATE, ROOT, clean_env
from plugins.slurm import finished_job, sbatch

HAVE_IB = os.path.exists('/sys/class/infiniband_mad/abi_version')


def test_slurm_job(smp_mad_stress, tmp_path, slurm_cluster):
    script = os.path.join(ROOT, 'jobs', 'smp-mad-stress.slurm')
    results = tmp_path / 'results'
    env = clean_env(slurm_cluster.env, drop=('SMP_MAD_STRESS_', *JOB_STATE),
                    COBALT_BENCH_RESULTS=str(results),
                    SMP_MAD_STRESS_OPTS='--simulate=rtt=300us -d 0.5 -q -L 4,5 NodeInfo')
    jobid = sbatch(script, tmp_path, env, '-p', 'x86')
    assert finished_job(jobid, env) == ('COMPLETED', '0:0')
    doc = json.loads((results / 'slurm' / f'smp-mad-stress-{jobid}.json').read_text())
    assert doc['test'] == 'smp-mad-stress'
    for key in ('version', 'test_version', 'host', 'started', 'duration_s', 'interrupted',
                'config', 'metrics', 'compliance'):
        assert key in doc, key
    assert [d['lid'] for d in doc['per_destination']] == [4, 5]
    with open(tmp_path / f'smp-mad-stress-{jobid}.out') as fp:
        log = fp.read()
    assert '----- Test results -----' in log and 'exit code 0' in log

    if HAVE_IB:
        return
    # Without a device the job fails with the tool's "could not run".
    env['SMP_MAD_STRESS_OPTS'] = '-d 1 -L 4 NodeInfo'
    jobid = sbatch(script, tmp_path, env, '-p', 'x86')
    assert finished_job(jobid, env) == ('FAILED', '3:0')
    with open(tmp_path / f'smp-mad-stress-{jobid}.out') as fp:
        assert 'no InfiniBand device' in fp.read()
