'''The EthTest check (reframe_checks/network.py) on `local` and through the local Slurm
cluster (`local-slurm`), in eth-test's one-node form on loopback, judged by the site's
references.'''

import json
import os
import shutil
import subprocess
import time

import pytest

from plugins.checkout import JOB_STATE, REFRAME, ROOT, clean_env


def reframe(site_config, tmp_path, *options, env=None, **extra):
    env = clean_env(env, drop=('ETH_TEST_', *JOB_STATE), **extra)
    env.update(COBALT_BENCH_RESULTS=str(tmp_path), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run([*REFRAME, '-C', str(site_config), '-c',
                           os.path.join(ROOT, 'reframe_checks', 'network.py'), '-r',
                           '--exec-policy', 'serial', '--nocolor', *options],
                          cwd=tmp_path, env=env, text=True, capture_output=True, timeout=600)
    site = os.path.basename(os.path.dirname(str(site_config)))
    with open(tmp_path / site / 'run' / 'report.json') as fp:
        report = json.load(fp)
    cases = [tc for r in report['runs'] for tc in r['testcases']]
    return proc, cases


@pytest.mark.measures
def test_reframe_local_judged_by_references(tmp_path):
    proc, cases = reframe(os.path.join(ROOT, 'site-configs', 'local', 'config.py'), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tc,) = cases
    assert tc['name'] == 'EthTest %interface=lo' and tc['result'] == 'pass'
    perf = {k.split(':')[-1]: v for k, v in tc['perfvalues'].items()}
    value, ref, lower, upper, unit = perf['total_speed'][:5]
    assert (ref, lower, upper, unit) == (3.0, -0.01, None, 'Gbit/s')
    assert perf['average_loss'][:5] == [0, 0.0, None, 0.0, '%']
    # the receiver's JSON document and the sender's log are kept with the outputs
    assert os.path.isfile(os.path.join(tc['outputdir'], 'eth-test-receive.json'))
    with open(os.path.join(tc['outputdir'], 'eth-test-send.out')) as fp:
        assert 'Sent speed:' in fp.read()


def test_reframe_unreachable_reference_fails(tmp_path):
    import yaml
    sites = tmp_path / 'site-configs'
    shutil.copytree(os.path.join(ROOT, 'site-configs'), sites,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    refs_path = sites / 'local' / 'references.yaml'
    refs = yaml.safe_load(refs_path.read_text())
    refs['EthTest']['local:default']['total_speed'] = [1.0e6, -0.01, None, 'Gbit/s']
    refs_path.write_text(yaml.safe_dump(refs))
    # the copy finds the checkout's bin/ through COBALT_BENCH_ROOT
    proc, cases = reframe(sites / 'local' / 'config.py', tmp_path, COBALT_BENCH_ROOT=ROOT)
    assert proc.returncode != 0
    (tc,) = cases
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'performance', tc['fail_reason']
    assert 'total_speed' in tc['fail_reason']


def test_reframe_receiver_that_cannot_run_is_a_sanity_failure(tmp_path):
    # A usage error: the receiver never listens, and the waiting sender is stopped at once.
    start = time.monotonic()
    proc, cases = reframe(os.path.join(ROOT, 'site-configs', 'local', 'config.py'), tmp_path,
                          '-S', 'kernel_opts=--no-such-option')
    assert proc.returncode != 0
    (tc,) = cases
    assert tc['fail_phase'] == 'sanity' and 'exit code 2' in tc['fail_reason']
    assert time.monotonic() - start < 30


@pytest.mark.measures
def test_reframe_local_slurm(tmp_path, slurm_cluster):
    proc, cases = reframe(os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py'),
                          tmp_path, env=slurm_cluster.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(tc['partition'] for tc in cases) == ['arm', 'x86']
    assert all(tc['result'] == 'pass' for tc in cases)
