'''The Slurm batch scripts in jobs/, submitted with sbatch to the local Slurm cluster.'''

import json
import os
import subprocess
import time

import pytest

from plugins.checkout import JOB_STATE, ROOT, clean_env
from plugins.slurm import finished_job, sbatch


# what the job tests read from sacct: where the job ran and how it ended
ACCOUNTED = ('Partition', 'State', 'ExitCode')

LMOD_INIT = '/usr/share/lmod/lmod/init/bash'
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')

# A workload this small machine meets, and short: 1 station at 8 Gbit/s for 2 s.
SMALL = '--stations 1 --desired-rate 8 --duration 2'


@pytest.fixture(scope='module')
def job_script(root):
    path = os.path.join(root, 'jobs', 'mem-test.slurm')
    assert os.access(os.path.join(root, 'bin', 'mem-test'), os.X_OK), 'run make first'
    return path


def job_env(base=None, **extra):
    '''The submitting shell's environment (`base`, else ours), without a loaded
    cobalt-bench.'''
    return clean_env(base, drop=('MEM_TEST_', *JOB_STATE), **extra)


def load_result(path):
    assert os.path.isfile(path), f'no JSON result {path}'
    with open(path) as fp:
        doc = json.load(fp)

    assert doc['test'] == 'mem-test'
    return doc


@pytest.mark.parametrize('partition', ['x86', 'arm'])
@pytest.mark.measures
def test_sbatch_mem_test(partition, job_script, tmp_path, slurm_cluster):
    # Submitted from a directory that is not the checkout, without the module loaded: the
    # script finds the module through the path Slurm recorded for it.
    results = tmp_path / 'results'
    env = job_env(slurm_cluster.env, MEM_TEST_OPTS=SMALL, COBALT_BENCH_RESULTS=str(results))
    jobid = sbatch(job_script, tmp_path, env, '-p', partition)
    assert finished_job(jobid, env, fields=ACCOUNTED) == (partition, 'COMPLETED', '0:0')

    doc = load_result(results / 'slurm' / f'mem-test-{jobid}.json')
    assert doc['config']['stations'] == 1
    assert doc['metrics']['desired_speed']['value'] == pytest.approx(8.0)
    assert doc['metrics']['verification_errors']['value'] == 0
    assert doc['compliance']['passed'] is True

    # The job's log is in the submission directory and ends with the results block.
    with open(tmp_path / f'mem-test-{jobid}.out') as fp:
        log = fp.read()

    assert f'job {jobid} on ' in log
    assert '----- Test results -----' in log
    assert 'exit code 0' in log


@pytest.mark.measures
def test_sbatch_with_module_loaded_and_default_results(root, job_script, tmp_path,
                                                        slurm_cluster):
    # Submitted from a shell with the module loaded (sbatch hands its environment to the
    # job) and without COBALT_BENCH_RESULTS: the result goes to results/slurm/ in the
    # submission directory.
    env = job_env(slurm_cluster.env, MEM_TEST_OPTS=SMALL)
    proc = subprocess.run(
        ['bash', '-c', f'source {LMOD_INIT}\n'
                       f'module use {root}/modulefiles\n'
                       'module load cobalt-bench\n'
                       'sbatch --parsable "$COBALT_BENCH_JOBS/mem-test.slurm"'],
        cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        timeout=60)
    assert proc.returncode == 0, proc.stderr
    jobid = proc.stdout.strip().split(';')[0]
    partition, state, exitcode = finished_job(jobid, env, fields=ACCOUNTED)
    assert (state, exitcode) == ('COMPLETED', '0:0')
    load_result(tmp_path / 'results' / 'slurm' / f'mem-test-{jobid}.json')


def test_sbatch_not_compliant(job_script, tmp_path, slurm_cluster):
    # A rate the node cannot meet: the result is still written, and the job fails with
    # mem-test's exit code 1 (not compliant).
    results = tmp_path / 'results'
    env = job_env(slurm_cluster.env,
                  MEM_TEST_OPTS='--stations 1 --desired-rate 100000 --duration 1',
                  COBALT_BENCH_RESULTS=str(results))
    jobid = sbatch(job_script, tmp_path, env, '-p', 'x86')
    assert finished_job(jobid, env, fields=ACCOUNTED) == ('x86', 'FAILED', '1:0')
    doc = load_result(results / 'slurm' / f'mem-test-{jobid}.json')
    assert doc['compliance']['passed'] is False
    assert doc['metrics']['percent_of_desired']['value'] < 99.75


@pytest.mark.measures
def test_run_without_slurm(job_script, tmp_path):
    # The batch script also runs as a plain script (no Slurm, no srun).
    results = tmp_path / 'results'
    env = job_env(MEM_TEST_OPTS=SMALL, COBALT_BENCH_RESULTS=str(results),
                  PATH='/usr/local/bin:/usr/bin:/bin')
    proc = subprocess.run(['bash', job_script], cwd=tmp_path, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert proc.returncode == 0, proc.stdout
    # The document, and the record of the job's end (cobalt-bench judge --exit-status).
    result, record = sorted((results / 'slurm').iterdir(), key=lambda p: len(p.name))
    assert result.name.startswith('mem-test-') and result.suffix == '.json'
    assert record.name == result.name.replace('.json', '.judged.json')
    assert json.loads(record.read_text())['exit_status']['code'] == 0
    load_result(result)


def test_job_script_results_land_in_the_store(job_script, tmp_path, slurm_cluster):
    '''jobs/mem-test.slurm writes its document to $COBALT_BENCH_RESULTS/slurm/, where the
    report reads it like a run.'''
    env = job_env(slurm_cluster.env, COBALT_BENCH_RESULTS=str(tmp_path),
                  MEM_TEST_OPTS='--stations 1 --desired-rate 8 --duration 1')
    sub = subprocess.run(['sbatch', '--parsable', '-p', 'x86', '-o',
                          str(tmp_path / 'mem-test-%j.out'), job_script],
                         env=env, cwd=str(tmp_path), text=True, capture_output=True,
                         timeout=60)
    assert sub.returncode == 0, sub.stderr
    jobid = sub.stdout.strip().split(';')[0]
    doc = tmp_path / 'slurm' / f'mem-test-{jobid}.json'
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        state = slurm_cluster.run(['squeue', '-h', '-j', jobid, '-o', '%T']).stdout.strip()
        if not state and doc.exists():
            break
        time.sleep(0.5)
    assert doc.exists(), (tmp_path / f'mem-test-{jobid}.out').read_text()
    rep = subprocess.run([COBALT_BENCH, 'report', str(tmp_path / 'slurm'), '--format', 'md'],
                         text=True, capture_output=True, timeout=120)
    assert rep.returncode in (0, 1), rep.stderr
    md = (tmp_path / 'slurm' / 'report' / 'report.md').read_text()
    assert f'| mem-test | job {jobid} |' in md
