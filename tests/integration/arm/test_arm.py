"""The arm partition runs ARM code (issue 17): aarch64 builds of the kernels (make
CC=aarch64-linux-gnu-gcc, bin/aarch64), run in the arm64 Debian root of scripts/arm64-root
through qemu-user, and by the local cluster's aarch64 node a1 in partition arm.

Everything here runs real aarch64 machine code under emulation; nothing is timed (emulated
speed says nothing about ARM hardware). Every test needs the arm64 root that `make arm`
builds (marked needs_setup("arm64-root")): skipped, naming `make arm` and what is missing,
where it is not built or this machine cannot run aarch64 programs (not root, no
qemu-user-static, no binfmt_misc, no cross compiler).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest


from plugins.checkout import REPO_ROOT
from plugins.setup import (ARM64_OSU_LATENCY, ARM64_OSU_MODULE, ARM64_ROOT, CROSS_CC,
                           arm64_root_path)

EM_AARCH64 = 183   # ELF e_machine of aarch64

pytestmark = pytest.mark.needs_setup('arm64-root')


@pytest.fixture(scope='module')
def arm64():
    """scripts/arm64-root, whose root is built (the marker has checked)."""
    return ARM64_ROOT


def in_root(*args, timeout=300, env=None):
    '''Run a command inside the arm64 root (aarch64 userland, through qemu-user).'''
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([ARM64_ROOT, 'run', *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, env=e)


@pytest.fixture(scope='module')
def aarch64_build(arm64):
    '''The checkout's aarch64 build: make CC=aarch64-linux-gnu-gcc against the root's
    libraries, which puts it in build/aarch64 and bin/aarch64 (what the module and the
    aarch64 node use), with mem-test's C unit test.'''
    env_lines = subprocess.run([arm64, 'env'], capture_output=True, text=True,
                               check=True).stdout
    script = env_lines + f'\nexec make -C {REPO_ROOT} CC={CROSS_CC} kernels build/aarch64/tests/test_memtest build/aarch64/tests/test_common\n'
    res = subprocess.run(['bash', '-c', script], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return REPO_ROOT / 'bin' / 'aarch64'


def elf_machine(path):
    with open(path, 'rb') as fp:
        head = fp.read(20)
    assert head[:4] == b'\x7fELF', path
    return int.from_bytes(head[18:20], 'little')


def test_cross_build_is_aarch64_beside_the_native_one(aarch64_build):
    assert elf_machine(aarch64_build / 'mem-test') == EM_AARCH64
    assert elf_machine(REPO_ROOT / 'build' / 'aarch64' / 'tests' / 'test_memtest') == EM_AARCH64
    # the native build keeps its places
    native = REPO_ROOT / 'bin' / 'mem-test'
    if native.exists():
        assert elf_machine(native) != EM_AARCH64


def test_root_is_aarch64(arm64):
    res = in_root('uname', '-m')
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == 'aarch64'


def test_memtest_unit_test_passes_on_aarch64(aarch64_build):
    '''tests/c/test_memtest.c (every operation's data movement and verification, the corner
    turn included) compiled for aarch64 and run there.'''
    res = in_root(REPO_ROOT / 'build' / 'aarch64' / 'tests' / 'test_memtest')
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_common_unit_test_passes_on_aarch64(aarch64_build):
    '''tests/c/test_common.c (options, JSON, signals of src/common) on aarch64.'''
    res = in_root(REPO_ROOT / 'build' / 'aarch64' / 'tests' / 'test_common')
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


SMALL = ['--stations', '1', '--desired-rate', '1', '--duration', '1', '--quiet']


def test_mem_test_verifies_every_operation_on_aarch64(aarch64_build, tmp_path):
    out = tmp_path / 'arm.json'
    res = in_root(aarch64_build / 'mem-test', *SMALL, '--json', out)
    # 0 or 1: emulation may not keep pace (not judged here); verification must hold.
    assert res.returncode in (0, 1), res.stdout + res.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['arch'] == 'aarch64'
    assert doc['config']['kernels'] == 'generic'   # portable C: no x86 intrinsics on ARM
    assert doc['config']['ops'] == ['write', 'read', 'copy', 'transpose']
    assert doc['metrics']['verification_errors']['value'] == 0
    assert doc['metrics']['verified_blocks']['value'] > 0


@pytest.mark.parametrize('op', ['write', 'read', 'copy', 'transpose'])
def test_verification_catches_a_skipped_operation_on_aarch64(aarch64_build, tmp_path, op):
    out = tmp_path / 'fault.json'
    res = in_root(aarch64_build / 'mem-test', *SMALL, '--json', out,
                  env={'MEM_TEST_FAULT': op})
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['arch'] == 'aarch64'
    assert doc['metrics']['verification_errors']['value'] == 1


def test_module_picks_the_nodes_architecture(aarch64_build):
    '''`module load cobalt-bench` in the root puts bin/aarch64 first; on this machine bin/.'''
    load = f'module use {REPO_ROOT}/modulefiles && module load cobalt-bench && command -v mem-test'
    res = in_root('bash', '-lc', load)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == str(aarch64_build / 'mem-test')
    host = subprocess.run(['bash', '-lc', load], capture_output=True, text=True, timeout=60)
    if host.returncode == 0:
        assert host.stdout.strip().splitlines()[-1] != str(aarch64_build / 'mem-test')


def arm_kernel_job(slurm_cluster, tmp_path, kernel, opts):
    '''`sbatch -p arm jobs/KERNEL.slurm` with KERNEL_OPTS=`opts`: (its JSON document, the
    job's log), after checking that the aarch64 node a1 ran it to its end.'''
    if not slurm_cluster.has_arm_node():
        pytest.skip('the running cluster has no aarch64 node (started before the arm64 '
                    'root was built: site-configs/local-slurm/cluster restart)')
    variable = kernel.upper().replace('-', '_') + '_OPTS'
    job = slurm_cluster.sbatch(tmp_path, '-p', 'arm', '-t', '10',
                               f'--export=ALL,{variable}={opts},COBALT_BENCH_RESULTS={tmp_path}',
                               REPO_ROOT / 'jobs' / f'{kernel}.slurm')
    rec = slurm_cluster.wait_for_job(job, timeout=600)
    log = slurm_cluster.job_output(tmp_path, job)
    assert rec['Partition'] == 'arm' and rec['NodeList'] == 'a1', rec
    assert rec['State'] in ('COMPLETED', 'FAILED'), (rec, log)
    return json.loads((tmp_path / 'slurm' / f'{kernel}-{job}.json').read_text()), log


def test_sbatch_arm_mem_test_runs_on_aarch64(aarch64_build, slurm_cluster, tmp_path):
    '''`sbatch -p arm jobs/mem-test.slurm`: run by the aarch64 node a1, its JSON says so.'''
    doc, log = arm_kernel_job(slurm_cluster, tmp_path, 'mem-test', ' '.join(SMALL))
    assert doc['config']['arch'] == 'aarch64', log
    assert str(aarch64_build / 'mem-test') in log
    assert doc['metrics']['verification_errors']['value'] == 0


def test_sbatch_arm_cpu_test_runs_neon_on_aarch64(aarch64_build, slurm_cluster, tmp_path):
    '''`sbatch -p arm jobs/cpu-test.slurm`: the aarch64 node a1 runs the aarch64 cpu-test,
    whose FMA streams are NEON's, verified.'''
    doc, log = arm_kernel_job(slurm_cluster, tmp_path, 'cpu-test', '--duration 1')
    assert doc['config']['arch'] == 'aarch64' and doc['config']['isa'] == 'neon', log
    assert doc['config']['requested_duration_s'] == 1, log
    assert str(aarch64_build / 'cpu-test') in log
    assert doc['metrics']['verification_errors']['value'] == 0
    assert doc['metrics']['verified_blocks']['value'] > 0


def test_arm_jobs_carry_the_arm_limits(arm64, slurm_cluster, tmp_path):
    '''Jobs on the aarch64 node set the ARM cluster's `ulimit -l/-s unlimited`
    (jobs/lib/cobalt-job.sh), as the ReFrame site configs' arm partitions do; x86 jobs do not.

    What can be checked here: locked memory is raised, or the job says that the node's hard
    limit forbids it (a container without CAP_SYS_RESOURCE). The stack limit cannot be seen:
    qemu-user accepts a guest's setrlimit(RLIMIT_STACK) without applying it (docs/arm.md).'''
    if not slurm_cluster.has_arm_node():
        pytest.skip('the running cluster has no aarch64 node')
    script = tmp_path / 'limits.sh'
    script.write_text('#!/bin/bash\n'
                      f'. {REPO_ROOT}/jobs/lib/cobalt-job.sh\n'
                      'echo "ARCH=$(uname -m) MEMLOCK=$(ulimit -l) HARD=$(ulimit -H -l)"\n')
    outs = {}
    for part in ('arm', 'x86'):
        job = slurm_cluster.sbatch(tmp_path, '-p', part, '-t', '2', script)
        rec = slurm_cluster.wait_for_job(job, timeout=300)
        outs[part] = slurm_cluster.job_output(tmp_path, job)
        assert rec['State'] == 'COMPLETED', (rec, outs[part])
    arm, x86 = outs['arm'], outs['x86']
    assert 'ARCH=aarch64' in arm and 'ARCH=x86_64' in x86
    assert ('MEMLOCK=unlimited' in arm or
            'cobalt-job: cannot raise ulimit -l (hard limit' in arm), arm
    assert 'cobalt-job:' not in x86   # the ARM settings are the ARM nodes' only


# The ARM OSU job (the OSU document's ARM cluster): osu_latency, built for aarch64 against
# the root's Open MPI (`make arm`: scripts/arm64-root osu), loaded as the document loads it
# (an Lmod module) and started by the job with srun, on the aarch64 node a1. a1 is the arm
# partition's one node, so the job's two ranks share it (-N 1 --ntasks-per-node=2 on the
# command line overrides the script's 2 nodes x 1 task).
OSU_MODULE = ARM64_OSU_MODULE
OSU_LATENCY = ARM64_OSU_LATENCY


@pytest.fixture(scope='module')
def aarch64_osu(arm64):
    '''OSU 5.7 for aarch64 in the root, as `make arm` built it (the marker has checked).'''
    binary = Path(str(arm64_root_path()) + OSU_LATENCY)
    assert elf_machine(binary) == EM_AARCH64
    return binary


@pytest.mark.needs_setup('arm64-osu')
def test_arm_osu_latency_job_runs_on_aarch64(aarch64_osu, slurm_cluster, tmp_path):
    '''`sbatch -p arm jobs/osu_latency.slurm` with the aarch64 OSU module: Open MPI's two
    ranks run on a1 (srun with the cluster's MPI plugin, pmix: Debian's Open MPI has no
    PMI-2 client, docs/arm.md) and OSU's latency table comes back, every size measured.'''
    from cobalt_bench.tools import osu as osu_parse
    if not slurm_cluster.has_arm_node():
        pytest.skip('the running cluster has no aarch64 node')
    job = slurm_cluster.sbatch(tmp_path, '-p', 'arm', '-N', '1', '--ntasks-per-node=2',
                 '-t', '10',
                 f'--export=ALL,OSU_MODULE={OSU_MODULE},OSU_OPTS=-m 1:4096 -i 200 -x 20,'
                 f'COBALT_BENCH_RESULTS={tmp_path}',
                 REPO_ROOT / 'jobs' / 'osu_latency.slurm')
    rec = slurm_cluster.wait_for_job(job, timeout=600)
    log = slurm_cluster.job_output(tmp_path, job)
    assert rec['Partition'] == 'arm' and rec['NodeList'] == 'a1', rec
    assert rec['State'] == 'COMPLETED', (rec, log)
    # the aarch64 build, found through the module, started on the node's 2 tasks
    assert f'modules: {OSU_MODULE}' in log, log
    assert f'running: srun {OSU_LATENCY}' in log, log
    assert 'job %d: 2 tasks on 1 nodes (a1' % job in log, log
    # Open MPI said nothing: no failed copy between the ranks (errno 38, ENOSYS: qemu-user
    # has no process_vm_readv, which the root's MCA parameters turn off, docs/arm.md)
    assert 'errno' not in log and 'error' not in log.lower(), log
    table = osu_parse.parse_file(tmp_path / 'slurm' / f'osu_latency-{job}.txt')
    assert table.title == 'OSU MPI Latency Test' and table.version == '5.7', table
    latency = table.column('latency')
    assert sorted(latency) == [2 ** k for k in range(13)], latency   # 1 B .. 4 KiB
    assert all(v > 0 for v in latency.values()), latency


def _local_slurm_partitions():
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        'local_slurm_config', REPO_ROOT / 'site-configs' / 'local-slurm' / 'config.py')
    config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config)
    return {p['name']: p for p in config.site_configuration['systems'][0]['partitions']}


def test_reframe_arm_partition_carries_the_jobs_arm_limits(arm64):
    '''ReFrame's arm partition (site-configs/local-slurm/config.py) prepares its job scripts
    with the Slurm jobs' own ARM settings (jobs/lib/cobalt-job.sh): run on aarch64, they
    raise the locked-memory limit, or say that the hard limit forbids it; the x86 partition
    prepares nothing.'''
    parts = _local_slurm_partitions()
    assert parts['x86'].get('prepare_cmds', []) == []
    prepare = '\n'.join(parts['arm']['prepare_cmds'])
    assert prepare, parts['arm']
    res = in_root('bash', '-c', prepare + '\necho "ARCH=$(uname -m) MEMLOCK=$(ulimit -l)"')
    assert res.returncode == 0, res.stdout + res.stderr
    assert 'ARCH=aarch64' in res.stdout
    assert ('MEMLOCK=unlimited' in res.stdout or
            'cobalt-job: cannot raise ulimit -l (hard limit' in res.stderr), res.stdout + res.stderr
