'''cb-linktest on the local Slurm cluster's two nodes: srun with the pmix plugin (and
without an MPI plugin, which it refuses), and jobs/cb-linktest.slurm, whose matrix and PDF
report land under results/.'''

import json
import os

import pytest

from plugins.checkout import JOB_STATE, ROOT, clean_env
from plugins.kernels import check_matrix, expected_pairs, kernel
from plugins.slurm import finished_job, sbatch

SMALL = ['-w', '2', '-n', '10', '-s', '65536']


def test_srun_two_nodes(tmp_path, slurm_cluster):
    out = tmp_path / 's.npz'
    for extra, hosts in (([], None), (['--group-processes-by-hostname'], ['n1', 'n1', 'n2', 'n2'])):
        r = slurm_cluster.run(['srun', '--mpi=pmix', '-N', '2', '-n', '4', '-p', 'x86',
                               kernel('cb-linktest'), *SMALL, '-o', str(out), *extra],
                              timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        data = check_matrix(out, 4, expected_pairs(4, hosts=hosts))
        assert list(data['hosts']) == ['n1', 'n1', 'n2', 'n2']
        assert 'on 2 hosts' in r.stdout


def test_srun_without_mpi_plugin_exits_3(slurm_cluster):
    r = slurm_cluster.run(['srun', '--mpi=none', '-n', '2', '-p', 'x86', kernel('cb-linktest'),
                           *SMALL, '--no-output'], timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    assert 'srun --mpi=pmix' in r.stderr


@pytest.mark.measures
def test_sbatch_job(tmp_path, slurm_cluster):
    kernel('cb-linktest')   # skipped where it is not built
    results = tmp_path / 'results'
    env = clean_env(slurm_cluster.env, drop=('CB_LINKTEST_', *JOB_STATE),
                    CB_LINKTEST_OPTS='-w 1 -n 4 -s 1048576', COBALT_BENCH_RESULTS=str(results))
    jobid = sbatch(os.path.join(ROOT, 'jobs', 'cb-linktest.slurm'), tmp_path, env, '-p', 'x86')
    state = finished_job(jobid, env)
    log = (tmp_path / f'cb-linktest-{jobid}.out')
    assert state == ('COMPLETED', '0:0'), (state, log.read_text() if log.exists() else 'no log')
    doc = json.loads((results / 'slurm' / f'cb-linktest-{jobid}.json').read_text())
    assert doc['config']['ranks'] == 2 and doc['config']['hosts'] == 2
    data = check_matrix(results / 'slurm' / f'cb-linktest-{jobid}.npz', 2, {(0, 1)})
    assert sorted(data['hosts']) == ['n1', 'n2']
    # The job writes the PDF report beside the matrix (cb-linktest-report.pdf).
    pdf = results / 'slurm' / f'cb-linktest-{jobid}-report.pdf'
    assert pdf.read_bytes()[:5] == b'%PDF-', log.read_text()
