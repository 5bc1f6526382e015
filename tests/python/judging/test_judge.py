'''One judge: the same mem-test JSON document judged through a Slurm job (jobs/mem-test.slurm
with a site named, which calls `cobalt-bench judge`) and through ReFrame (the same site's
config, KernelJsonTest) gets the same verdict, metric by metric, also at the exact bound;
and a reference changed in the site's references.yaml changes both.

Real parts: the local Slurm cluster, ReFrame, mem-test. To have ReFrame judge the very
document the job wrote (not a second measurement), the ReFrame run's executable copies that
document and the job's log into its stage directory (-S executable=...); everything after
that (sanity, performance, references) is the check's and ReFrame's own.'''

import json
import math
import os
import shutil
import subprocess
import time

import pytest
import yaml

from cobalt_bench import kernels as cb_kernels
from cobalt_bench.judging import sanity
from plugins.checkout import JOB_STATE, REFRAME, ROOT, clean_env

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
SMALL = '--stations 1 --desired-rate 8 --duration 2'


def job_env(base, **extra):
    return clean_env(base, drop=('MEM_TEST_', *JOB_STATE), **extra)


def copy_site(repo_root, dest):
    shutil.copytree(repo_root / 'site-configs' / 'local-slurm', dest,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    return dest


def set_reference(site, metric, ref):
    path = site / 'references.yaml'
    refs = yaml.safe_load(path.read_text())
    refs['MemTest']['local-slurm:x86'] = dict(refs['MemTest']['local-slurm:x86'])
    refs['MemTest']['local-slurm:x86'][metric] = ref
    path.write_text(yaml.safe_dump(refs))


def sbatch_mem_test(cluster, site, workdir):
    env = job_env(cluster.env, MEM_TEST_OPTS=SMALL, COBALT_BENCH_SITE=str(site),
                    COBALT_BENCH_ROOT=ROOT, COBALT_BENCH_RESULTS=str(workdir / 'results'))
    sub = subprocess.run(['sbatch', '--parsable', '-p', 'x86',
                          os.path.join(ROOT, 'jobs', 'mem-test.slurm')], cwd=str(workdir),
                         env=env, text=True, capture_output=True, timeout=60)
    assert sub.returncode == 0, sub.stderr
    jobid = sub.stdout.strip().split(';')[0]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        out = cluster.run(['sacct', '-n', '-P', '-X', '-j', jobid, '-o',
                           'JobID,State,ExitCode']).stdout
        fields = next((line.split('|') for line in out.splitlines()
                       if line.startswith(jobid + '|')), None)
        if fields and fields[1] not in ('PENDING', 'RUNNING', 'COMPLETING', 'CONFIGURING'):
            break
        time.sleep(0.5)
    else:
        pytest.fail(f'job {jobid} did not finish')
    doc = workdir / 'results' / 'slurm' / f'mem-test-{jobid}.json'
    log = workdir / f'mem-test-{jobid}.out'
    return jobid, tuple(fields[1:3]), doc, log


def reframe_on(cluster, site, doc, log, workdir, run_id):
    '''ReFrame with the site's config judging `doc` (the MemTest check on local-slurm:x86);
    the test case of report.json.'''
    env = job_env(cluster.env, COBALT_BENCH_ROOT=ROOT,
                    COBALT_BENCH_RESULTS=str(workdir / 'rfm'), COBALT_BENCH_RUN_ID=run_id)
    exe = f"sh -c 'cp {doc} mem-test.json && cat {log}' sh"
    proc = subprocess.run([*REFRAME, '-C', str(site / 'config.py'), '-c',
                           os.path.join(ROOT, 'reframe_checks'), '-n', 'MemTest', '-r',
                           '--system', 'local-slurm:x86', '--nocolor', '-S',
                           f'executable={exe}'], cwd=str(workdir), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    report = workdir / 'rfm' / 'local-slurm' / run_id / 'report.json'
    assert report.is_file(), proc.stdout
    (tc,) = [t for r in json.loads(report.read_text())['runs'] for t in r['testcases']
             if t['name'] == 'MemTest']
    return tc


def judge(site, doc, workdir):
    out = workdir / 'judged.json'
    proc = subprocess.run([COBALT_BENCH, 'judge', '--site', str(site), '--partition', 'x86',
                           '--json', str(out), str(doc)],
                          env=job_env(os.environ, COBALT_BENCH_ROOT=ROOT), text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())['results']
    return proc.returncode, result


def same_verdicts(tc, judged):
    '''ReFrame's per-metric verdicts (its perfvalues' results, for the metrics the
    references name) and the judge's, and the case's result.'''
    prefix = 'local-slurm:x86:'
    rf = {k[len(prefix):]: v[5] for k, v in tc['perfvalues'].items()
          if v[1] is not None and not (v[1] == 0 and v[2] is None and v[3] is None)}
    jd = {j['metric']: j['verdict'] for j in judged['judged']}
    assert rf == jd, (rf, jd)
    assert tc['result'] == judged['result'], (tc['fail_reason'], judged['reason'])
    return tc['result']


def test_slurm_job_and_reframe_give_the_same_verdict(repo_root, tmp_path, slurm_cluster):
    site = copy_site(repo_root, tmp_path / 'site')
    jobid, state, doc, log = sbatch_mem_test(slurm_cluster, site, tmp_path)
    # The job judged its document by the site: passed, recorded beside it.
    assert state == ('COMPLETED', '0:0'), log.read_text()
    recorded = json.loads(doc.with_name(f'mem-test-{jobid}.judged.json').read_text())
    assert recorded['site_dir'] == str(site) and recorded['partition'] == 'local-slurm:x86'
    assert recorded['results'][0]['result'] == 'pass'

    # The same document through ReFrame with the same site: the same verdicts.
    tc = reframe_on(slurm_cluster, site, doc, log, tmp_path, 'a')
    rc, judged = judge(site, doc, tmp_path)
    assert same_verdicts(tc, judged) == 'pass' and rc == 0

    # At the exact bound (ReFrame's rule: lower bound inclusive, threshold a fraction):
    # a reference equal to the measured value passes both, the next float up fails both.
    value = json.loads(doc.read_text())['metrics']['measured_speed']['value']
    set_reference(site, 'measured_speed', [float(value), 0.0, None, 'Gbit/s'])
    tc = reframe_on(slurm_cluster, site, doc, log, tmp_path, 'b')
    rc, judged = judge(site, doc, tmp_path)
    assert same_verdicts(tc, judged) == 'pass' and rc == 0
    set_reference(site, 'measured_speed',
                  [math.nextafter(float(value), math.inf), 0.0, None, 'Gbit/s'])
    tc = reframe_on(slurm_cluster, site, doc, log, tmp_path, 'c')
    rc, judged = judge(site, doc, tmp_path)
    assert same_verdicts(tc, judged) == 'fail' and rc == 1
    assert tc['fail_phase'] == 'performance' and 'measured_speed' in tc['fail_reason']

    # A reference no machine meets, changed in references.yaml only: the next job fails
    # by the site's verdict although mem-test itself (its built-in threshold) passed.
    set_reference(site, 'measured_speed', [1000.0, -0.05, None, 'Gbit/s'])
    jobid, state, doc2, log2 = sbatch_mem_test(slurm_cluster, site, tmp_path)
    assert state == ('FAILED', '1:0'), log2.read_text()
    text = log2.read_text()
    assert 'mem-test exit code 0' in text and 'measured_speed' in text
    assert "the kernel's own (built-in threshold): exit code 0" in text
    assert json.loads(doc2.read_text())['compliance']['passed'] is True
    # The report of the job documents reads the judgements and says the same.
    rep = subprocess.run([COBALT_BENCH, 'report', str(tmp_path / 'results' / 'slurm'),
                          '--site', str(site), '--format', 'md'], env=job_env(os.environ, COBALT_BENCH_ROOT=ROOT),
                         text=True, capture_output=True, timeout=120)
    assert rep.returncode == 1, rep.stdout + rep.stderr
    md = (tmp_path / 'results' / 'slurm' / 'report' / 'report.md').read_text()
    checks = md.split('\n## Checks\n')[1].split('\n## ')[0]
    cases = {r[1]: r for r in ([c.strip() for c in line.strip('|').split(' | ')]
                               for line in checks.splitlines()
                               if line.startswith('| mem-test |'))}
    # The site's verdict and, apart, labelled, the kernel's own.
    assert cases[f'job {jobid}'][3] == 'FAIL'
    assert cases[f'job {jobid}'][5] == 'mem-test: passed (its threshold 99.75)'
    assert f'mem-test --stations 1 --desired-rate 8 --duration 2 --json {doc2}' in md
    assert "site/references.yaml: MemTest / 'local-slurm:x86' / measured_speed" in md


def test_judge_usage_and_errors(tmp_path):
    doc = tmp_path / 'mem-test-5.json'
    doc.write_text(json.dumps({'test': 'mem-test', 'host': 'h', 'metrics': {
        'percent_of_desired': {'value': 100.0, 'unit': '%'}}}))
    env = job_env(os.environ)
    cases = [
        (['judge', str(doc)], 2, '--site'),
        (['judge', '--site', 'nosuchsite', str(doc)], 3, "no site 'nosuchsite'"),
        (['judge', '--site', 'local-slurm', str(doc)], 2, 'several partitions'),
        (['judge', '--site', 'local-slurm', '--partition', 'x68', str(doc)], 2,
         "--partition 'x68'"),
        (['judge', '--site', 'local', str(tmp_path / 'none.json')], 3, 'no such result'),
    ]
    for args, status, message in cases:
        proc = subprocess.run([COBALT_BENCH, *args], env=env, text=True, capture_output=True,
                              timeout=120)
        assert proc.returncode == status, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr, (args, proc.stderr)
    # A document whose check the site's references do not name at all: not judged, not a
    # pass (exit 1).
    other = tmp_path / 'smp-mad-stress-6.json'
    other.write_text(json.dumps({'test': 'smp-mad-stress', 'host': 'h', 'metrics': {
        name: {'value': 0, 'unit': unit}
        for name, unit in cb_kernels.KERNELS['smp-mad-stress'].metrics.items()}}))
    proc = subprocess.run([COBALT_BENCH, 'judge', '--site', 'local', str(other)], env=env,
                          text=True, capture_output=True, timeout=120)
    assert proc.returncode == 1 and 'UNJUDGED' in proc.stdout, proc.stdout + proc.stderr
    # The same document without its metrics fails the sanity rule ReFrame's checks apply.
    other.write_text(json.dumps({'test': 'smp-mad-stress', 'host': 'h', 'metrics': {
        'errors': {'value': 0, 'unit': 'errors'}}}))
    proc = subprocess.run([COBALT_BENCH, 'judge', '--site', 'local', str(other)], env=env,
                          text=True, capture_output=True, timeout=120)
    assert proc.returncode == 1 and 'FAIL: JSON result lacks metrics' in proc.stdout, \
        proc.stdout + proc.stderr


# ---- a kernel Slurm could not start ----------------------------------------------------

# What srun printed on the local cluster's aarch64 node a1 when the tree had no aarch64
# build (srun then exits 2, the status of a kernel's usage error).
A1_STDERR = ['slurmstepd-a1: error: execve(): /work/main/bin/mem-test: No such file or '
             'directory', 'srun: error: a1: task 0: Exited with exit code 2']


def test_a_kernel_slurm_could_not_start_is_no_usage_error():
    why = sanity.launch_failure('mem-test', A1_STDERR)
    assert why.startswith('mem-test could not be started on its node (Slurm: execve(): '
                          '/work/main/bin/mem-test: No such file or directory)')
    assert 'not run' not in why and 'usage' not in why
    assert sanity.launch_failure('mem-test', ['mem-test: --stations: not a number']) == ''


@pytest.mark.parametrize('value', [7.0, 8.0, 9.5])
def test_a_judged_metric_is_the_copy_replace_makes(value):
    # judge._judged_metric builds its Metric by position: every field, as replace() sets.
    from cobalt_bench.judging import judge
    from cobalt_bench.site.references import Ref
    from cobalt_bench.store.model import Metric, replace
    m = Metric('measured_speed', value, 'Gbit/s', ref=3.0, lower_thres=-0.5, verdict='pass',
               lower=1.0, upper=9.0, entry='recorded')
    ref = Ref(8.0, -0.1, 0.1, 'Gbit/s', file='references.yaml', check='MemTest',
              key=('local:default',), metric='measured_speed')
    b = ref.bounds
    expected = replace(m, ref=ref.value, lower_thres=ref.lower, upper_thres=ref.upper,
                       lower=b.lower, upper=b.upper, verdict=judge.verdict_of(value, ref),
                       entry=ref)
    assert judge._judged_metric(m, ref) == expected
    assert expected.verdict is (judge.Result.PASS if value == 8.0 else judge.Result.FAIL)
