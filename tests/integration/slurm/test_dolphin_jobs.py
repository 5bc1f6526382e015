'''The Dolphin Slurm jobs (jobs/dolphin-*.slurm) through the local cluster, with
stand-ins for Dolphin's tools that print the outputs recorded in Dolphin's manual.'''

import json
import os

from plugins.checkout import JOB_STATE, clean_env
from plugins.slurm import finished_job, sbatch
from plugins.tools import changed
from plugins.tools import dolphin_recorded as recorded


def test_slurm_jobs(root, tmp_path, dolphin_fake_tools, slurm_cluster):
    bindir, data = dolphin_fake_tools
    results = tmp_path / 'results'
    env = clean_env(slurm_cluster.env, drop=('DOLPHIN_', *JOB_STATE),
                    COBALT_BENCH_RESULTS=str(results), DOLPHIN_DIS_DIAG=str(bindir / 'dis_diag'),
                    DOLPHIN_TOOL_DIR=str(bindir), DOLPHIN_NODE_IDS='4,8',
                    DOLPHIN_SERVER_START='0.2')
    jobs = os.path.join(root, 'jobs')
    static = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    perf_job = sbatch(os.path.join(jobs, 'dolphin-perf.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(static, env) == ('COMPLETED', '0:0')
    assert finished_job(perf_job, env) == ('COMPLETED', '0:0')
    outdir = results / 'slurm' / f'dolphin-static-{static}'
    assert sorted(os.listdir(outdir)) == ['dis_diag-n1.out', 'dis_diag-n2.out']
    with open(tmp_path / f'dolphin-static-{static}.out') as fp:
        assert 'static interconnect test PASSED' in fp.read()
    with open(results / 'slurm' / f'dolphin-perf-{perf_job}' / 'dma_bench.json') as fp:
        assert json.load(fp)[0]['bandwidth_mbps'] == 235.57
    with open(results / 'slurm' / f'dolphin-perf-{perf_job}' / 'scipp-server.out') as fp:
        assert fp.read().strip() == 'scipp server: -server -rn 8'

    # node n2 reports *FAILED*: the job fails
    (data / 'dis_diag-n2.txt').write_text(
        changed(recorded('dis_diag'), 'TEST RESULT: *PASSED*', 'TEST RESULT: *FAILED*'))
    failing = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(failing, env) == ('FAILED', '1:0')
    with open(tmp_path / f'dolphin-static-{failing}.out') as fp:
        assert 'PROBLEM: dis_diag-n2.out: TEST RESULT is *FAILED*' in fp.read()
    # without the tool: could not run
    env['DOLPHIN_DIS_DIAG'] = str(tmp_path / 'nowhere' / 'dis_diag')
    missing = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(missing, env) == ('FAILED', '3:0')
