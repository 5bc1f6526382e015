'''Debian's MPICH beside its Open MPI (issue 26, docs/mpi.md): cb-linktest (a `make install`
built with mpicc.mpich) and OSU osu_latency (built with MPICH from the offline sources),
run by the jobs through the local Slurm cluster on n1 and n2, set as an MPICH site sets
them: srun --mpi=pmi2 (Slurm's PMI-2, which MPICH's PMI client speaks) or MPICH's own
mpiexec (hydra, which starts its proxies with srun). The cluster's default plugin, pmix,
does not start MPICH ranks as one job: that fails, saying so.

That the ranks ran MPICH is checked twice: the binaries link libmpich, not Open MPI's
libmpi, and MPICH prints its own summary at MPI_Init (MPIR_CVAR_DEBUG_SUMMARY=1).
Skipped, saying why, where MPICH is not installed (Debian 12: mpich, libmpich-dev) and,
for OSU, where the offline sources are absent (../shared/third-party).'''

import json
import os
import shutil
import subprocess
import time

import pytest

from cobalt_bench.tools import osu as osu_parse
from plugins.checkout import DEBIAN_PATH, JOB_STATE, MODULE_STATE, ROOT, clean_env
from plugins.kernels import check_matrix
from plugins.setup import THIRD_PARTY
from plugins.slurm import finished_job, sbatch

MPICC, MPICXX, MPIEXEC = 'mpicc.mpich', 'mpicxx.mpich', 'mpiexec.mpich'
OSU_RELEASE = '7.0.1'
OSU_SOURCE = THIRD_PARTY / 'spack-mirror' / 'osu-micro-benchmarks' / \
    f'osu-micro-benchmarks-{OSU_RELEASE}.tar.gz'
OSU_SHORT = '-m 1:1024 -i 100 -x 10'
# What MPICH (and only MPICH: MPIR_ is its internal prefix) prints at MPI_Init when asked.
MPICH_SUMMARY_ENV = {'MPIR_CVAR_DEBUG_SUMMARY': '1'}
MPICH_SUMMARY = 'sizeof(MPIR_Comm)'


def _run(cmd, cwd=None, timeout=600):
    proc = subprocess.run(cmd, cwd=cwd, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    assert proc.returncode == 0, f'{" ".join(map(str, cmd))}:\n{proc.stdout[-4000:]}'
    return proc.stdout


def _need_mpich():
    missing = [c for c in (MPICC, MPICXX, MPIEXEC) if shutil.which(c) is None]
    if missing:
        pytest.skip(f'MPICH is not installed ({", ".join(missing)} not found): '
                    'apt-get install mpich libmpich-dev (Debian 12; debian-packages.txt)')


def assert_links_mpich(binary):
    libs = _run(['ldd', str(binary)])
    assert 'libmpich.so' in libs, libs
    assert 'libmpi.so' not in libs, libs     # Open MPI's library


@pytest.fixture(scope='module')
def mpich_tree(tmp_path_factory):
    '''An install tree of cobalt-bench built with MPICH, as an MPICH site makes it (make
    install MPICC=mpicc.mpich), its objects and kernels outside the checkout's build/ and
    bin/. gpu-copy is left out (WITH_CUDA=no): it has no MPI and nvcc is slow.'''
    _need_mpich()
    base = tmp_path_factory.mktemp('mpich-cobalt-bench')
    _run(['make', '-C', ROOT, '-j2', '--no-print-directory', 'install', f'PREFIX={base}/prefix',
          f'MPICC={MPICC}', f'BUILD={base}/build', f'BIN={base}/bin', 'WITH_CUDA=no'])
    return base / 'prefix'


@pytest.fixture(scope='module')
def mpich_osu(tmp_path_factory):
    '''osu_latency of OSU 7.0.1 built with MPICH: configure CC=mpicc.mpich, then only the
    point-to-point benchmarks (about 10 s here, not the 2 minutes of all of OSU).'''
    _need_mpich()
    if not OSU_SOURCE.is_file():
        pytest.skip(f'the OSU source is absent: {OSU_SOURCE} (the offline sources, '
                    '../shared/third-party beside the checkout, or CB_THIRD_PARTY)')
    base = tmp_path_factory.mktemp('mpich-osu')
    src, obj, prefix = base / 'src', base / 'obj', base / 'prefix'
    src.mkdir()
    obj.mkdir()
    _run(['tar', '-xzf', OSU_SOURCE, '-C', src, '--strip-components=1'])
    _run([src / 'configure', f'--prefix={prefix}', f'CC={MPICC}', f'CXX={MPICXX}'], cwd=obj)
    _run(['make', '-j2', '-C', 'c/mpi/pt2pt', 'install'], cwd=obj)
    binary = prefix / 'libexec' / 'osu-micro-benchmarks' / 'mpi' / 'pt2pt' / 'osu_latency'
    assert binary.is_file()
    return prefix, binary


def job_env(cluster, cwd, **extra):
    '''A submitting shell with no module loaded and none available, no cobalt-bench, OSU or
    MPI settings of the caller, results under cwd.'''
    return clean_env(cluster.env, drop=('COBALT_', 'OSU_', 'CB_LINKTEST_', 'MPIR_', 'OMPI_',
                                        *JOB_STATE, *MODULE_STATE),
                     PATH=DEBIAN_PATH, MODULEPATH=str(cwd),
                     COBALT_BENCH_RESULTS=str(cwd / 'results'), **MPICH_SUMMARY_ENV, **extra)


def step_nodes(jobid, env, timeout=60):
    '''NodeList of the job's first step (the launcher's: srun's tasks, or hydra's proxies),
    once sacct has it.'''
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(['sacct', '-n', '-P', '-j', str(jobid), '-o', 'JobID,NodeList'],
                             env=env, text=True, capture_output=True, timeout=30).stdout
        nodes = dict(line.split('|', 1) for line in out.splitlines() if '|' in line)
        if f'{jobid}.0' in nodes or time.monotonic() > deadline:
            return nodes.get(f'{jobid}.0'), out
        time.sleep(0.5)


def test_plain_mpicc_and_mpirun_stay_open_mpi():
    # The rest of the suite builds and starts with plain mpicc/mpirun, Open MPI's: Debian's
    # alternatives keep them so with MPICH installed (priority 50 against MPICH's 40).
    _need_mpich()
    for command, version in (('mpicc', '--showme:version'), ('mpirun', '--version')):
        if shutil.which(command) is None:
            pytest.skip(f'{command} not found (Debian: openmpi-bin, libopenmpi-dev)')
        proc = subprocess.run([command, version], text=True, capture_output=True, timeout=60)
        assert 'Open MPI' in proc.stdout, proc.stdout + proc.stderr


def test_cb_linktest_job_with_pmi2(mpich_tree, slurm_cluster, tmp_path):
    binary = mpich_tree / 'bin' / 'cb-linktest'
    assert_links_mpich(binary)
    # The MPICH tree's module (COBALT_BENCH_ROOT) gives the job its cb-linktest.
    env = job_env(slurm_cluster, tmp_path, COBALT_BENCH_ROOT=str(mpich_tree),
                  CB_LINKTEST_SRUN_OPTS='--mpi=pmi2', CB_LINKTEST_OPTS='-w 1 -n 4 -s 1048576')
    jobid = sbatch(os.path.join(ROOT, 'jobs', 'cb-linktest.slurm'), tmp_path, env, '-p', 'x86')
    state = finished_job(jobid, env)
    log_file = tmp_path / f'cb-linktest-{jobid}.out'
    log = log_file.read_text() if log_file.exists() else 'no log'
    assert state == ('COMPLETED', '0:0'), log
    assert f'on n[1-2], {binary}' in log
    assert MPICH_SUMMARY in log
    assert '2 on 2 hosts' in log
    assert step_nodes(jobid, env)[0] == 'n[1-2]'
    results = tmp_path / 'results' / 'slurm'
    doc = json.loads((results / f'cb-linktest-{jobid}.json').read_text())
    assert doc['config']['ranks'] == 2 and doc['config']['hosts'] == 2
    assert doc['compliance']['passed'] is True
    data = check_matrix(results / f'cb-linktest-{jobid}.npz', 2, {(0, 1)})
    assert list(data['hosts']) == ['n1', 'n2']


def test_srun_with_pmix_does_not_start_mpich(mpich_tree, slurm_cluster):
    # Slurm's pmix plugin (this cluster's MpiDefault, Open MPI's): MPICH's PMI client finds
    # no PMI-1/PMI-2 server, each rank is a singleton, and cb-linktest says so (exit 3).
    # srun's own exit code is the first task's to end (3), or 143 where srun has already
    # killed the other one: the task's 3 is in srun's message either way.
    r = slurm_cluster.run(['srun', '--mpi=pmix', '-N', '2', '-n', '2', '-p', 'x86',
                           mpich_tree / 'bin' / 'cb-linktest', '-w', '1', '-n', '4',
                           '-s', '65536', '--no-output'], timeout=120)
    assert r.returncode != 0 and 'Exited with exit code 3' in r.stderr, r.stdout + r.stderr
    assert 'the launcher started 2 tasks but MPI connects 1' in r.stderr


# (OSU_LAUNCHER or OSU_SRUN_MPI set, the launcher as the job's log shows it)
LAUNCHERS = {
    'srun-pmi2': ({'OSU_SRUN_MPI': 'pmi2'}, 'srun --mpi=pmi2'),
    'hydra': ({'OSU_LAUNCHER': MPIEXEC}, MPIEXEC),
}


@pytest.mark.parametrize('launcher', list(LAUNCHERS))
def test_osu_latency_job(launcher, mpich_osu, slurm_cluster, tmp_path):
    prefix, binary = mpich_osu
    assert_links_mpich(binary)
    settings, shown = LAUNCHERS[launcher]
    env = job_env(slurm_cluster, tmp_path, COBALT_OSU_PATH=str(prefix), OSU_MODULE='',
                  OSU_OPTS=OSU_SHORT, **settings)
    jobid = sbatch(os.path.join(ROOT, 'jobs', 'osu_latency.slurm'), tmp_path, env, '-p', 'x86')
    state = finished_job(jobid, env)
    log_file = tmp_path / f'osu_latency-{jobid}.out'
    log = log_file.read_text() if log_file.exists() else 'no log'
    assert state == ('COMPLETED', '0:0'), log
    assert f'job {jobid}: 2 tasks on 2 nodes (n[1-2]' in log
    assert f'running: {shown} {binary} {OSU_SHORT}' in log
    assert MPICH_SUMMARY in log
    # srun's tasks, or hydra's proxies (which it starts with srun), on both nodes.
    nodes, sacct = step_nodes(jobid, env)
    assert nodes == 'n[1-2]', sacct
    table = osu_parse.parse_file(tmp_path / 'results' / 'slurm' / f'osu_latency-{jobid}.txt')
    assert table.title == 'OSU MPI Latency Test'
    assert OSU_RELEASE.startswith(table.version), table.version
    assert table.sizes == [1 << i for i in range(11)]
    assert all(v > 0 for v in table.column('latency').values())
    assert 'exit code 0' in log
