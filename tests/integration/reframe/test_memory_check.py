'''The ReFrame checks with the `local` and `local-slurm` site configurations (real ReFrame,
real kernels, real Slurm), and the site references that judge them.'''

import json
import os
import shutil
import subprocess
import time

import pytest
import yaml

from plugins.checkout import REFRAME


RUN_ID = 'run'


@pytest.fixture(scope='module')
def mem_test(root):
    path = os.path.join(root, 'bin', 'mem-test')
    assert os.access(path, os.X_OK), f'{path} is not built (run make)'
    return path


class Run:
    '''One `reframe -r` and what it left: exit code, output, the JSON run report.'''

    def __init__(self, proc, prefix):
        self.returncode = proc.returncode
        self.output = proc.stdout
        self.prefix = prefix
        report = os.path.join(prefix, 'report.json')
        assert os.path.isfile(report), f'no run report {report}\n{self.output}'
        with open(report) as fp:
            self.report = json.load(fp)

        every = [tc for run in self.report['runs'] for tc in run['testcases']]
        # This file is about MemTest; the other families' checks (skipped here for
        # lack of hardware or tools, or passing) are kept apart.
        self.testcases = [tc for tc in every if tc['name'] == 'MemTest']
        self.others = [tc for tc in every if tc['name'] != 'MemTest']

    def by_partition(self):
        return {tc['partition']: tc for tc in self.testcases}

    def __str__(self):
        return self.output


def reframe(config, checks, results, *options, site, env=None, timeout=600):
    '''Run the checks in `checks` with a site configuration; results go to
    <results>/<site>/run/.'''
    env = dict(os.environ if env is None else env)
    for var in [v for v in env if v.startswith('RFM_')]:
        del env[var]    # the user's ReFrame settings must not leak into the tests

    env['COBALT_BENCH_RESULTS'] = str(results)
    env['COBALT_BENCH_RUN_ID'] = RUN_ID
    proc = subprocess.run(
        [*REFRAME, '-C', str(config), '-c', str(checks), '-r',
         '--exec-policy', 'serial', '--nocolor', *options],
        cwd=str(results), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=timeout
    )
    return Run(proc, os.path.join(str(results), site, RUN_ID))


def copy_site(root, site, dest, change):
    '''A copy of site-configs/ in `dest`, the references.yaml of <site> changed by
    `change(refs)`; the copy finds the checkout through COBALT_BENCH_ROOT.'''
    shutil.copytree(os.path.join(root, 'site-configs'), dest,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    dest = os.path.join(dest, site)
    path = os.path.join(dest, 'references.yaml')
    with open(path) as fp:
        refs = yaml.safe_load(fp)

    change(refs)
    with open(path, 'w') as fp:
        yaml.safe_dump(refs, fp)

    return os.path.join(dest, 'config.py')


def unreachable(refs):
    for entry in refs['MemTest'].values():
        entry['percent_of_desired'] = [1.0e6, -0.0025, None, '%']


def assert_passed(run, partitions):
    assert run.returncode == 0, run
    assert sorted(run.by_partition()) == sorted(partitions), run
    for tc in run.testcases:
        assert tc['name'] == 'MemTest'
        assert tc['result'] == 'pass', (tc['fail_phase'], tc['fail_reason'])
        # The metrics of the JSON document are the performance variables, with the
        # references of the site attached.
        prefix = f'{tc["system"]}:{tc["partition"]}:'
        perf = {k[len(prefix):]: v for k, v in tc['perfvalues'].items()}
        for metric in ('measured_speed', 'percent_of_desired', 'average_late',
                       'write_speed', 'read_speed', 'copy_speed', 'transpose_speed'):
            assert metric in perf, metric

        value, ref, lower, upper, unit = perf['percent_of_desired'][:5]
        assert (ref, lower, unit) == (100.0, -0.0025, '%')
        assert value >= 99.75
        # The kernel's JSON document is kept with the outputs, for the report.
        with open(os.path.join(tc['outputdir'], 'mem-test.json')) as fp:
            doc = json.load(fp)

        assert doc['metrics']['measured_speed']['value'] == perf['measured_speed'][0]
        # One performance log per partition.
        assert os.path.isfile(os.path.join(run.prefix, 'perflogs', tc['system'],
                                           tc['partition'], 'MemTest.log'))


def assert_performance_failure(run, partitions):
    assert run.returncode != 0, run
    assert sorted(run.by_partition()) == sorted(partitions), run
    for tc in run.testcases:
        assert tc['result'] == 'fail'
        assert tc['fail_phase'] == 'performance', tc['fail_reason']
        assert 'percent_of_desired' in tc['fail_reason']


# ---- site `local` ---------------------------------------------------------------------

def local_config(root):
    return os.path.join(root, 'site-configs', 'local', 'config.py')


def checks(root):
    return os.path.join(root, 'reframe_checks')


@pytest.mark.measures
def test_local_passes(root, mem_test, tmp_path):
    run = reframe(local_config(root), checks(root), tmp_path, site='local')
    assert_passed(run, ['default'])
    # The whole suite ran: every other check passed or was skipped with a reason.
    for tc in run.others:
        assert tc['result'] in ('pass', 'skip'), (tc['name'], tc['fail_reason'])
    # mem-test came from this checkout.
    with open(os.path.join(run.testcases[0]['outputdir'], 'rfm_job.sh')) as fp:
        assert f'{root}/bin' in fp.read()


def test_local_unreachable_reference_fails(root, mem_test, tmp_path):
    config = copy_site(root, 'local', tmp_path / 'site', unreachable)
    env = dict(os.environ, COBALT_BENCH_ROOT=root)
    run = reframe(config, checks(root), tmp_path, site='local', env=env)
    assert_performance_failure(run, ['default'])


def test_local_not_compliant_is_a_performance_failure(root, mem_test, tmp_path):
    # A workload the machine cannot meet: mem-test exits 1 (not compliant), which is a run
    # to judge, so sanity passes and the site's references fail it.
    run = reframe(local_config(root), checks(root), tmp_path,
                  '-S', 'kernel_opts=--stations 1 --desired-rate 100000 --duration 1',
                  site='local')
    assert_performance_failure(run, ['default'])


def test_local_usage_error_is_a_sanity_failure(root, mem_test, tmp_path):
    run = reframe(local_config(root), checks(root), tmp_path,
                  '-S', 'kernel_opts=--no-such-option', site='local')
    assert run.returncode != 0, run
    (tc,) = run.testcases
    assert tc['fail_phase'] == 'sanity'
    assert 'usage error (exit status 2)' in tc['fail_reason']


@pytest.mark.measures
def test_installed_tree(root, mem_test, tmp_path, installed_tree):
    # `make install` gives a tree whose site configs find its own bin/.
    prefix = installed_tree
    share = prefix / 'share' / 'cobalt-bench'
    env = {k: v for k, v in os.environ.items() if not k.startswith('COBALT_BENCH_')}
    run = reframe(share / 'site-configs' / 'local' / 'config.py', share / 'reframe_checks',
                  tmp_path, site='local', env=env)
    assert_passed(run, ['default'])
    with open(os.path.join(run.testcases[0]['outputdir'], 'rfm_job.sh')) as fp:
        assert f'{prefix}/bin' in fp.read()


# ---- site `local-slurm` -----------------------------------------------------------------

def slurm_config(root):
    return os.path.join(root, 'site-configs', 'local-slurm', 'config.py')


def sacct(jobid, env, timeout=60):
    '''(partition, state, exit code) of a job from Slurm's accounting (which may take a
    moment to fill in the partition).'''
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run(['sacct', '-n', '-P', '-X', '-j', str(jobid),
                              '-o', 'JobID,Partition,State,ExitCode'],
                             env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=30).stdout
        rows = {f[0]: tuple(f[1:4]) for f in (line.split('|') for line in out.splitlines())
                if len(f) >= 4}
        if rows.get(jobid, ('',))[0] or time.monotonic() > deadline:
            return rows.get(jobid)

        time.sleep(0.5)


@pytest.mark.measures
def test_local_slurm_passes_on_x86_and_arm(root, mem_test, tmp_path, slurm_cluster):
    env = dict(slurm_cluster.env)
    run = reframe(slurm_config(root), checks(root), tmp_path, '-n', 'MemTest',
                  site='local-slurm', env=env)
    assert_passed(run, ['x86', 'arm'])
    for part, tc in run.by_partition().items():
        # Really run by Slurm: the job ReFrame reports is in the accounting, in the
        # partition the test ran in, completed.
        jobid = tc['jobid']
        assert jobid and jobid.isdigit(), tc
        assert sacct(jobid, env) == (part, 'COMPLETED', '0:0')
        with open(os.path.join(tc['outputdir'], 'rfm_job.sh')) as fp:
            script = fp.read()

        assert 'module load cobalt-bench' in script
        assert f'-p {part}' in script


def test_local_slurm_unreachable_reference_fails(root, mem_test, tmp_path, slurm_cluster):
    config = copy_site(root, 'local-slurm', tmp_path / 'site', unreachable)
    env = dict(slurm_cluster.env, COBALT_BENCH_ROOT=root)
    run = reframe(config, checks(root), tmp_path, '--system', 'local-slurm:x86',
                  '-n', 'MemTest', site='local-slurm', env=env)
    assert_performance_failure(run, ['x86'])
