"""ReFrame runs of the suite's checks with a site configuration of the checkout, and what
they left (tests/integration/reframe/test_memory_check*.py): the run's exit code, output
and JSON run report, a copy of the site configurations with changed references, and what
a passed or a performance-failed MemTest case must show."""

import json
import os
import shutil
import subprocess

import pytest
import yaml

from plugins.checkout import REFRAME

RUN_ID = 'run'


@pytest.fixture(scope='module')
def mem_test(root):
    '''bin/mem-test of the checkout (built by make).'''
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
        # MemTest's cases; the other families' checks (skipped for lack of hardware or
        # tools, or passing) are kept apart.
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


def checks(root):
    return os.path.join(root, 'reframe_checks')
