'''One judge, real faults on a local Slurm cluster (``fault_cluster``, issue 35): a kernel ended by a signal
is a failure of its node, never a case that disappears, and nothing a sweep lost is a pass.

- mem-test killed by a real SIGKILL and a real SIGSEGV inside jobs/mem-test.slurm, and by Slurm's
  memory limit (`cluster restart --memory-limits`: cgroups, OUT_OF_MEMORY, where they are
  writable, else OverMemoryKill) in a job script, a sweep and ReFrame: the job
  fails, `cobalt-bench judge --exit-status` records the end (no document needed), and the
  report names the signal and the node (verdict.json bad_nodes, bad-nodes.txt);
- the same in a node sweep (jobs/node-sweep.slurm on two nodes, SIGKILL and SIGSEGV): the
  node whose kernel was killed is the bad node;
- a clean sweep that a compliance definition passes, copied and then damaged the ways a
  failing cluster and a hostile user do (a node that wrote nothing, a start mark alone, a
  truncated document, another host's document, a document in another unit, one without
  verification_errors, a known failure of a required metric): none is COMPLIANT or exit
  0, and each names the node and the cause.'''

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
import yaml

from plugins.checkout import JOB_STATE, ROOT, clean_env
from plugins.slurm import finished_job, reframe_env, run_reframe_memtest, sbatch, wait_for

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
MEM_TEST_JOB = os.path.join(ROOT, 'jobs', 'mem-test.slurm')
SWEEP = os.path.join(ROOT, 'jobs', 'node-sweep.slurm')
# Far longer than any test waits: only the signal ends it.
LONG = '--stations 1 --desired-rate 1 --duration 300'
# 1 Gbit/s with small buffers: two mem-tests share this machine's two cores.
SHORT = ('--stations 1 --desired-rate 1 --duration 3 --packet-size 1K --small-block 16 '
         '--large-block 128')


def job_env(base, **extra):
    return clean_env(base, drop=('MEM_TEST_', 'NODE_SWEEP_', *JOB_STATE), **extra)



def kernel_pids(jobid, name='mem-test', node=None):
    '''The pids of the kernel processes of a job (on one node where named).'''
    mark = f'SLURM_JOB_ID={jobid}'.encode()
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/comm') as fp:
                if fp.read().strip() != name:
                    continue
            with open(f'/proc/{pid}/environ', 'rb') as fp:
                env = fp.read().split(b'\0')
        except OSError:
            continue
        if mark in env and (node is None or f'SLURMD_NODENAME={node}'.encode() in env):
            pids.append(int(pid))
    return pids


def kill_kernel(jobid, sig, node=None):
    '''`sig` to the job's running mem-test (on `node`), once it runs.'''
    pids = wait_for(lambda: kernel_pids(jobid, node=node), 120,
                    f'mem-test of job {jobid} running' + (f' on {node}' if node else ''))
    time.sleep(2)       # under way: its buffers allocated, its load paced
    for pid in pids:
        os.kill(pid, sig)


def report(path, site, env):
    proc = subprocess.run([COBALT_BENCH, 'report', str(path), '--site', str(site),
                           '--format', 'md'], env=clean_env(env, COBALT_BENCH_ROOT=ROOT),
                          text=True, capture_output=True, timeout=300)
    out = proc.stdout + proc.stderr
    verdict = json.loads((path / 'report' / 'verdict.json').read_text())
    listed = [line for line in (path / 'report' / 'bad-nodes.txt').read_text().splitlines()
              if line and not line.startswith('#')]
    return proc.returncode, out, verdict, listed


@pytest.fixture
def compliance_site(tmp_path):
    '''The local cluster as a compliance definition (no demonstration): MemTest required,
    judged at the small load two nodes meet.'''
    site = tmp_path / 'site'
    site.mkdir()
    shutil.copy(os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py'), site)
    (site / 'compliance.yaml').write_text(
        'title: the local cluster as a compliance definition (issue 35 tests)\n'
        'required:\n  MemTest:\n    what: mem-test at 1 Gbit/s\n')
    (site / 'references.yaml').write_text(yaml.safe_dump({'MemTest': {
        'local-slurm:x86': {'percent_of_desired': [100.0, -0.05, None, '%'],
                            'desired_speed': [1.0, -0.001, 0.001, 'Gbit/s']}}}))
    return site


# ---- a job script ---------------------------------------------------------------------

@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGSEGV])
def test_a_killed_kernel_in_a_job_script_is_a_named_failure(sig, tmp_path, fault_cluster,
                                                            compliance_site):
    results = tmp_path / 'results'
    env = job_env(fault_cluster.env, MEM_TEST_OPTS=LONG, COBALT_BENCH_RESULTS=str(results),
                  COBALT_BENCH_SITE=str(compliance_site))
    jobid = sbatch(MEM_TEST_JOB, tmp_path, env, '-p', 'x86')
    try:
        kill_kernel(jobid, sig)
        state, exitcode = finished_job(jobid, env, timeout=120)
    finally:
        subprocess.run(['scancel', jobid], env=env, timeout=30)
    log = (tmp_path / f'mem-test-{jobid}.out').read_text()
    assert (state, exitcode) == ('FAILED', '1:0'), log
    slurm_dir = results / 'slurm'
    record = json.loads((slurm_dir / f'mem-test-{jobid}.judged.json').read_text())
    assert record['exit_status']['signal'] == sig and record['kernel'] == 'mem-test', record
    assert f'killed by {sig.name}' in record['results'][0]['reason'], record
    assert not (slurm_dir / f'mem-test-{jobid}.started').exists(), 'its end is recorded'
    node = record['node']
    assert node, record
    rc, out, verdict, listed = report(slurm_dir, compliance_site, env)
    assert rc == 1 and verdict['state'] == 'NOT COMPLIANT', out
    assert f'killed by {sig.name}' in out, out
    assert [b['node'] for b in verdict['bad_nodes']] == [node], verdict['bad_nodes']
    assert f'killed by {sig.name}' in verdict['bad_nodes'][0]['why']
    assert listed == [node]


@pytest.fixture
def memory_limited(fault_cluster):
    '''The cluster restarted with Slurm's memory limit (`cluster restart --memory-limits`:
    CR_Core_Memory, OverMemoryKill), then restarted as it was.'''
    size = len(set(subprocess.run(['sinfo', '-h', '-p', 'x86', '-N', '-o', '%N'],
                                  env=fault_cluster.env, text=True, capture_output=True,
                                  timeout=30).stdout.split()))
    r = fault_cluster.cluster('restart', '--nodes', str(size), '--memory-limits')
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        yield fault_cluster
    finally:
        r = fault_cluster.cluster('restart', '--nodes', str(size))
        assert r.returncode == 0, r.stdout + r.stderr


def memory_limit_of(env):
    '''How the running cluster limits memory: 'cgroup' (task/cgroup, the kernel's OOM
    killer) or 'poll' (OverMemoryKill), from its slurm.conf.'''
    conf = subprocess.run(['scontrol', 'show', 'config'], env=env, text=True,
                          capture_output=True, timeout=30).stdout
    return 'cgroup' if re.search(r'^TaskPlugin\s*=.*task/cgroup', conf, re.M) else 'poll'


def test_a_kernel_over_its_jobs_memory_is_killed_by_slurm_and_named(tmp_path, memory_limited,
                                                                    compliance_site):
    '''Slurm's own memory limit, for real: mem-test's 152 MiB of buffers in a job of --mem
    100M. Where the machine lets Slurm make memory cgroups the kernel's OOM killer ends the
    step (sacct: OUT_OF_MEMORY); elsewhere OverMemoryKill kills it (SIGKILL; MaxRSS over
    ReqMem). Either way a failure of that node, with Slurm's reason, at the job's end and
    in the report.'''
    results = tmp_path / 'results'
    env = job_env(memory_limited.env, MEM_TEST_OPTS=LONG, COBALT_BENCH_RESULTS=str(results),
                  COBALT_BENCH_SITE=str(compliance_site))
    limit = memory_limit_of(env)
    jobid = sbatch(MEM_TEST_JOB, tmp_path, env, '-p', 'x86', '--mem=100M',
                   '--acctg-freq=task=1')
    try:
        state, exitcode = finished_job(jobid, env, timeout=180)
    finally:
        subprocess.run(['scancel', jobid], env=env, timeout=30)
    log = (tmp_path / f'mem-test-{jobid}.out').read_text()
    if limit == 'cgroup':
        assert 'oom-kill event' in log, log                 # Slurm's word, not ours
        why = 'Slurm job state OUT_OF_MEMORY'
    else:
        assert 'exceeded memory limit' in log, log
        why = "of the 100 MiB per node it requested (--mem): Slurm's memory limit"
        assert 'killed by SIGKILL' in log, log
    assert (state, exitcode) == ('FAILED', '1:0'), log
    assert why in log, log
    slurm_dir = results / 'slurm'
    record = json.loads((slurm_dir / f'mem-test-{jobid}.judged.json').read_text())
    assert why in record['results'][0]['reason'], record
    rc, out, verdict, listed = report(slurm_dir, compliance_site, env)
    assert rc == 1 and verdict['state'] == 'NOT COMPLIANT', out
    assert why in out, out
    assert [b['node'] for b in verdict['bad_nodes']] == [record['node']], verdict['bad_nodes']
    assert why in verdict['bad_nodes'][0]['why']
    assert listed == [record['node']]


def test_a_kernel_over_its_jobs_memory_under_reframe_is_a_named_failure(tmp_path,
                                                                       memory_limited):
    env = reframe_env(tmp_path, memory_limited)
    why = ('Slurm job state OUT_OF_MEMORY' if memory_limit_of(env) == 'cgroup' else
           "per node it requested (--mem): Slurm's memory limit")
    tc = run_reframe_memtest(tmp_path, env, '-J', 'mem=100M')
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity', tc
    assert why in tc['fail_reason'], tc['fail_reason']
    run = tmp_path / 'local-slurm' / 'run'
    rc, out, verdict, listed = report(run, os.path.join(ROOT, 'site-configs', 'local-slurm'),
                                      env)
    assert rc == 1 and why in out, out
    node = verdict['bad_nodes'][0]['node'] if verdict['bad_nodes'] else None
    assert node and node in listed, (verdict['bad_nodes'], listed)


# ---- a node sweep ---------------------------------------------------------------------

def two_nodes(env):
    out = subprocess.run(['sinfo', '-h', '-p', 'x86', '-N', '-o', '%N'], env=env, text=True,
                         capture_output=True, timeout=30).stdout.split()
    nodes = sorted(set(out))
    if len(nodes) < 2:
        pytest.skip(f'the local cluster has {len(nodes)} x86 node(s); a sweep needs 2')
    return nodes[:2]


def run_sweep(tmp_path, cluster, site, opts, during=None, sbatch_options=()):
    results = tmp_path / 'results'
    env = job_env(cluster.env, COBALT_BENCH_SITE=str(site), COBALT_BENCH_RESULTS=str(results),
                  MEM_TEST_OPTS=opts, NODE_SWEEP_TESTS='mem-test')
    jobid = sbatch(SWEEP, tmp_path, env, '-N', '2', '-p', 'x86', *sbatch_options)
    try:
        if during:
            during(jobid)
        state, _ = finished_job(jobid, env, timeout=300)
    finally:
        subprocess.run(['scancel', jobid], env=env, timeout=30)
    log = (tmp_path / f'node-sweep-{jobid}.out').read_text()
    return jobid, results / 'slurm' / f'node-sweep-{jobid}', log, env


@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGSEGV])
def test_a_killed_kernel_in_a_sweep_makes_its_node_the_bad_node(sig, tmp_path, fault_cluster,
                                                                compliance_site):
    victim = two_nodes(fault_cluster.env)[1]
    jobid, out, log, env = run_sweep(tmp_path, fault_cluster, compliance_site,
                                     LONG.replace('300', '20'),
                                     lambda j: kill_kernel(j, sig, node=victim))
    verdict = json.loads((out / 'report' / 'verdict.json').read_text())
    assert verdict['state'] == 'NOT COMPLIANT', log
    assert [b['node'] for b in verdict['bad_nodes']] == [victim], (verdict['bad_nodes'], log)
    assert f'killed by {sig.name}' in verdict['bad_nodes'][0]['why']
    listed = (out / 'report' / 'bad-nodes.txt').read_text()
    assert victim in listed.split(), listed


def test_kernels_over_the_sweeps_memory_make_their_nodes_bad(tmp_path, memory_limited,
                                                            compliance_site):
    '''A sweep of --mem 100M per node whose mem-tests need 152 MiB: Slurm kills each node's
    kernel (OUT_OF_MEMORY under cgroups, else OverMemoryKill), and both nodes are bad.'''
    nodes = two_nodes(memory_limited.env)
    why = ('Slurm job state OUT_OF_MEMORY' if memory_limit_of(memory_limited.env) == 'cgroup'
           else "per node it requested (--mem): Slurm's memory limit")
    jobid, sweep, log, env = run_sweep(tmp_path, memory_limited, compliance_site, LONG,
                                       sbatch_options=('--mem=100M', '--acctg-freq=task=1'))
    rc, out, verdict, listed = report(sweep, compliance_site, env)
    assert rc == 1 and verdict['state'] == 'NOT COMPLIANT', out
    assert sorted(b['node'] for b in verdict['bad_nodes']) == nodes, verdict['bad_nodes']
    assert all(why in b['why'] for b in verdict['bad_nodes']), verdict['bad_nodes']
    # bad-nodes.txt is a Slurm hostlist (n[1-2]), as scontrol takes it
    named = subprocess.run(['scontrol', 'show', 'hostnames', ','.join(listed)], env=env,
                           text=True, capture_output=True, timeout=30).stdout.split()
    assert sorted(named) == nodes, listed


def test_nothing_lost_in_a_sweep_is_a_pass(tmp_path, fault_cluster, compliance_site):
    nodes = two_nodes(fault_cluster.env)
    jobid, clean, log, env = run_sweep(tmp_path, fault_cluster, compliance_site, SHORT)
    # The untouched sweep passes the compliance definition: what follows is the faults'.
    rc, out, verdict, listed = report(clean, compliance_site, env)
    if verdict['state'] != 'COMPLIANT':
        pytest.skip(f'the clean sweep did not pass on this busy machine: {verdict["reasons"]}')
    assert rc == 0 and listed == [], out
    victim = nodes[1]
    doc_name = f'mem-test-{jobid}.json'

    def doc_of(path):
        return json.loads((path / victim / doc_name).read_text())

    def write_doc(path, doc):
        (path / victim / doc_name).write_text(json.dumps(doc))

    def nothing(path):
        shutil.rmtree(path / victim)

    def start_mark_alone(path):
        for name in (doc_name, doc_name.replace('.json', '.judged.json')):
            (path / victim / name).unlink()
        (path / victim / doc_name.replace('.json', '.started')).write_text(
            f'kernel mem-test\njob {jobid}\nnodes {victim}\nstarted 2026-11-27T00:00:00Z\n')

    def truncated(path):
        text = (path / victim / doc_name).read_text()
        (path / victim / doc_name).write_text(text[:len(text) // 2])

    def another_host(path):
        write_doc(path, {**doc_of(path), 'host': nodes[0]})

    def another_unit(path):
        doc = doc_of(path)
        doc['metrics']['percent_of_desired'] = {'value': 1.0, 'unit': 'fraction'}
        write_doc(path, doc)

    def unverified(path):
        doc = doc_of(path)
        del doc['metrics']['verification_errors']
        write_doc(path, doc)

    faults = {
        nothing: 'wrote nothing',
        start_mark_alone: 'left no document',
        truncated: 'cannot be read',
        another_host: f'says it ran on host {nodes[0]!r}',
        another_unit: "percent_of_desired ('fraction', expected '%')",
        unverified: "lacks metrics ['verification_errors']",
    }
    for plant, cause in faults.items():
        damaged = tmp_path / plant.__name__
        shutil.copytree(clean, damaged, ignore=shutil.ignore_patterns('report'))
        plant(damaged)
        rc, out, verdict, listed = report(damaged, compliance_site, env)
        what = f'{plant.__name__}: {out}'
        assert rc != 0 and verdict['state'] != 'COMPLIANT', what
        assert any(victim in r and cause in r for r in verdict['reasons']), what
        assert victim in [b['node'] for b in verdict['bad_nodes']], what
        assert victim in listed, what
    # A known failure ($xfail) of a metric the compliance definition requires.
    refs = yaml.safe_load((compliance_site / 'references.yaml').read_text())
    refs['MemTest']['local-slurm:x86']['percent_of_desired'] = [
        '$xfail', 'known: slow memory on this cluster', [200.0, -0.0025, None, '%']]
    (compliance_site / 'references.yaml').write_text(yaml.safe_dump(refs))
    xfail = tmp_path / 'xfail'
    shutil.copytree(clean, xfail, ignore=shutil.ignore_patterns('report'))
    rc, out, verdict, listed = report(xfail, compliance_site, env)
    assert rc != 0 and verdict['state'] == 'NOT COMPLIANT', out
    assert any('known failure ($xfail)' in r and 'known: slow memory' in r
               for r in verdict['reasons']), out


# ---- ReFrame ----------------------------------------------------------------------------

@pytest.mark.parametrize('sig', [signal.SIGKILL, signal.SIGSEGV])
def test_a_killed_kernel_under_reframe_is_a_named_failure(sig, tmp_path, fault_cluster):
    env = reframe_env(tmp_path, fault_cluster)
    tc = run_reframe_memtest(tmp_path, env, during=lambda jobid: kill_kernel(jobid, sig))
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity', tc
    assert f'mem-test was killed by {sig.name}' in tc['fail_reason'], tc['fail_reason']
    run = tmp_path / 'local-slurm' / 'run'
    rc, out, verdict, listed = report(run, os.path.join(ROOT, 'site-configs', 'local-slurm'),
                                      env)
    assert rc == 1, out
    assert any(f'killed by {sig.name}' in r and r.startswith('FAILED') for r in
               verdict['reasons']), out
    node = verdict['bad_nodes'][0]['node'] if verdict['bad_nodes'] else None
    assert node and node in listed, (verdict['bad_nodes'], listed)
