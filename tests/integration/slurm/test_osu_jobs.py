'''The OSU Slurm batch scripts (jobs/osu_*.slurm), submitted with sbatch to the local
Slurm cluster: with each OSU release the `local` site's Spack environment builds, loaded
as a site loads it (`OSU_MODULE="openmpi osu-micro-benchmarks/<version>"`, the Lmod
modules Spack generated; the `spack_site` fixture, marked needs_setup('spack'): skipped,
naming `scripts/spack-offline env`, without the offline Spack), they run to
completion and leave OSU's output under results/; with a build named by COBALT_OSU_PATH
too; without OSU, or with a module that does not exist, they fail with exit code 3 and say
why.'''

import os
import re
import shutil
import subprocess

import pytest

from cobalt_bench.tools import osu as osu_parse
from plugins.checkout import JOB_STATE, ROOT, clean_env
from plugins.slurm import finished_job, sbatch
from plugins.spack import osu_releases


JOBS = os.path.join(ROOT, 'jobs')
# Benchmark -> (OSU's title, tasks): point to point 2 x 1; broadcast 4 tasks over the two
# nodes this cluster has (--spread-job).
SCRIPTS = {
    'osu_latency': ('OSU MPI Latency Test', 2),
    'osu_bw': ('OSU MPI Bandwidth Test', 2),
    'osu_bibw': ('OSU MPI Bi-Directional Bandwidth Test', 2),
    'osu_mbw_mr': ('OSU MPI Multiple Bandwidth / Message Rate Test', 2),
    'osu_bcast': ('OSU MPI Broadcast Latency Test', 4),
}
SHORT = '-m 1:1024 -i 100 -x 10'


def job_env(base, **extra):
    '''The submitting shell's environment without cobalt-bench's or OSU's settings.'''
    return clean_env(base, drop=('COBALT_', 'OSU_', *JOB_STATE), **extra)


def log(cwd, bench, jobid):
    with open(os.path.join(cwd, f'{bench}-{jobid}.out')) as fp:
        return fp.read()


@pytest.fixture(scope='module', params=osu_releases())
def submitted(request, spack_site, slurm_cluster, tmp_path_factory):
    '''All five scripts submitted at once (they run one after the other: --exclusive)
    for one OSU release, from a directory that is not the checkout, without the
    cobalt-bench module loaded; OSU from its Spack module, srun's MPI plugin pmix.'''
    release = request.param
    cwd = tmp_path_factory.mktemp(f'osu-jobs-{release}')
    env = job_env(slurm_cluster.env, MODULEPATH=str(spack_site.lmod_core),
                  OSU_MODULE=spack_site.osu_module(release), OSU_SRUN_MPI='pmix',
                  OSU_OPTS=SHORT, COBALT_BENCH_RESULTS=str(cwd / 'results'),
                  # 4 ranks on this machine's 2 cores: Open MPI must not busy-wait
                  OMPI_MCA_mpi_yield_when_idle='1')
    jobs = {b: sbatch(os.path.join(JOBS, f'{b}.slurm'), cwd, env) for b in SCRIPTS}
    return release, spack_site.osu_binaries(release), cwd, env, jobs


def osu_crashed(text):
    '''Whether an OSU rank itself died of a segfault (srun's "task N: Segmentation fault"):
    OSU 7.0.1 under Open MPI over TCP, seen in CI beside the other workers' tests
    (osu_latency, rank 1, before its first size), not the job script's doing.'''
    return re.search(r'srun: error: \S+: task \d+: Segmentation fault', text) is not None


@pytest.mark.needs_setup('spack')
@pytest.mark.parametrize('bench', list(SCRIPTS))
def test_job_runs_osu(bench, submitted):
    release, binaries, cwd, env, jobs = submitted
    jobid = jobs[bench]
    state = finished_job(jobid, env)
    if state == ('FAILED', '15:0') and osu_crashed(log(cwd, bench, jobid)):
        # Submitted once more, alone: the one crash is kept in the output, and a second
        # one fails the test.
        print(f'{bench} job {jobid}: OSU itself crashed, once more:', log(cwd, bench, jobid))
        jobid = sbatch(os.path.join(JOBS, f'{bench}.slurm'), cwd, env)
        state = finished_job(jobid, env)
    assert state == ('COMPLETED', '0:0'), log(cwd, bench, jobid)
    title, tasks = SCRIPTS[bench]
    text = log(cwd, bench, jobid)
    assert f'modules: openmpi osu-micro-benchmarks/{release}' in text
    assert f'job {jobid}: {tasks} tasks on 2 nodes' in text
    assert f'srun --mpi=pmix {binaries[bench]} {SHORT}' in text
    # OSU's own output is kept under results/, and is a whole table of that release.
    table = osu_parse.parse_file(cwd / 'results' / 'slurm' / f'{bench}-{jobid}.txt')
    assert table.title == title
    assert release.startswith(table.version), (release, table.version)
    assert table.sizes == [1 << i for i in range(11)]
    assert f'{title} v{table.version}' in text and 'exit code 0' in text


@pytest.mark.needs_setup('spack')
def test_job_finds_osu_through_cobalt_osu_path(spack_site, slurm_cluster, tmp_path):
    # No module: COBALT_OSU_PATH names the install prefix (libexec/osu-micro-benchmarks/...).
    release = osu_releases()[0]
    binary = spack_site.osu_binaries(release)['osu_latency']
    prefix = binary.split('/libexec/')[0]
    env = job_env(slurm_cluster.env, MODULEPATH=str(tmp_path), COBALT_OSU_PATH=prefix,
                  OSU_SRUN_MPI='pmix', OSU_OPTS=SHORT,
                  COBALT_BENCH_RESULTS=str(tmp_path / 'results'))
    jobid = sbatch(os.path.join(JOBS, 'osu_latency.slurm'), tmp_path, env)
    assert finished_job(jobid, env) == ('COMPLETED', '0:0'), log(tmp_path, 'osu_latency', jobid)
    text = log(tmp_path, 'osu_latency', jobid)
    assert f'running: srun --mpi=pmix {binary} ' in text
    osu_parse.parse_file(tmp_path / 'results' / 'slurm' / f'osu_latency-{jobid}.txt')


def test_job_without_osu_fails_saying_so(slurm_cluster, tmp_path):
    path = ':'.join(d for d in slurm_cluster.env.get('PATH', '').split(':')
                    if d and not os.path.exists(os.path.join(d, 'osu_bcast')))
    env = job_env(slurm_cluster.env, PATH=path, MODULEPATH=str(tmp_path))
    jobid = sbatch(os.path.join(JOBS, 'osu_bcast.slurm'), tmp_path, env)
    assert finished_job(jobid, env) == ('FAILED', '3:0')
    text = log(tmp_path, 'osu_bcast', jobid)
    assert 'osu_bcast not found: not on PATH, nor under COBALT_OSU_PATH (not set)' in text
    assert not os.path.exists(tmp_path / 'results' / 'slurm' / f'osu_bcast-{jobid}.txt')


def test_job_with_a_module_that_does_not_exist_fails(slurm_cluster, tmp_path):
    env = job_env(slurm_cluster.env,
                  OSU_MODULE='osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi')
    jobid = sbatch(os.path.join(JOBS, 'osu_latency.slurm'), tmp_path, env)
    assert finished_job(jobid, env) == ('FAILED', '3:0')
    assert 'cannot load module osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi' in \
        log(tmp_path, 'osu_latency', jobid)


def test_job_outside_slurm_refuses(tmp_path):
    env = job_env(os.environ)
    proc = subprocess.run(['bash', os.path.join(JOBS, 'osu_mbw_mr.slurm')], cwd=tmp_path,
                          env=env, text=True, capture_output=True, timeout=60)
    assert proc.returncode == 3
    assert 'not in a Slurm job: submit it with sbatch' in proc.stdout + proc.stderr


def test_scripts_pass_shellcheck():
    if shutil.which('shellcheck') is None:
        pytest.skip('shellcheck not installed (Debian package shellcheck)')
    scripts = [f'{b}.slurm' for b in SCRIPTS] + ['lib/osu-common.sh']
    proc = subprocess.run(['shellcheck', '-x', *scripts], cwd=JOBS, text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
