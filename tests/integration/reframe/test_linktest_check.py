'''The CbLinkTest check (reframe_checks/linktest.py) through the local Slurm cluster,
judged by the site's references: a pass on two nodes with its matrix and PDF report kept
with the outputs, and a performance failure against a reference it cannot meet.'''

import json
import os
import shutil
import subprocess

import pytest
import yaml

from plugins.checkout import REFRAME, ROOT
from plugins.kernels import check_matrix, kernel


def reframe_linktest(config, results, env):
    env = {k: v for k, v in env.items() if not k.startswith('RFM_')}
    env.update(COBALT_BENCH_RESULTS=str(results), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run(
        [*REFRAME, '-C', str(config), '-c', os.path.join(ROOT, 'reframe_checks', 'linktest.py'), '-r',
         '--exec-policy', 'serial', '--nocolor', '-n', 'CbLinkTest'],
        cwd=str(results), env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        timeout=600)
    with open(os.path.join(str(results), 'local-slurm', 'run', 'report.json')) as fp:
        report = json.load(fp)
    return proc, [tc for r in report['runs'] for tc in r['testcases']]


@pytest.mark.measures
def test_reframe_local_slurm_judged(tmp_path, slurm_cluster):
    kernel('cb-linktest')
    config = os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py')
    proc, cases = reframe_linktest(config, tmp_path, slurm_cluster.env)
    assert proc.returncode == 0, proc.stdout
    (tc,) = cases
    assert (tc['name'], tc['partition'], tc['result']) == ('CbLinkTest', 'x86', 'pass')
    perf = {k.split(':')[-1]: v for k, v in tc['perfvalues'].items()}
    value, ref, lower, upper, unit = perf['min_bandwidth'][:5]
    assert (unit, lower) == ('Gbit/s', 0.0) and value >= ref
    assert perf['pairs_tested'][0] == 1
    with open(os.path.join(tc['outputdir'], 'rfm_job.sh')) as fp:
        script = fp.read()
    assert 'srun --mpi=pmix cb-linktest' in script and '--ntasks-per-node=1' in script
    data = check_matrix(os.path.join(tc['outputdir'], 'cb-linktest.npz'), 2, {(0, 1)})
    assert sorted(data['hosts']) == ['n1', 'n2']  # two Slurm nodes
    # The PDF report is kept with the outputs, beside the matrix the compliance report reads.
    with open(os.path.join(tc['outputdir'], 'cb-linktest-report.pdf'), 'rb') as fp:
        assert fp.read(5) == b'%PDF-'

    # the same run against a reference it cannot meet: a performance failure
    site = tmp_path / 'site'
    shutil.copytree(os.path.join(ROOT, 'site-configs'), site,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    refs_path = site / 'local-slurm' / 'references.yaml'
    refs = yaml.safe_load(refs_path.read_text())
    refs['CbLinkTest']['local-slurm:x86']['min_bandwidth'] = [1.0e6, 0.0, None, 'Gbit/s']
    refs_path.write_text(yaml.safe_dump(refs))
    results = tmp_path / 'fail'
    results.mkdir()
    proc, cases = reframe_linktest(site / 'local-slurm' / 'config.py', results,
                                   dict(slurm_cluster.env, COBALT_BENCH_ROOT=ROOT))
    assert proc.returncode != 0
    (tc,) = cases
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'performance'
    assert 'min_bandwidth' in tc['fail_reason']
