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
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

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
    assert tc['fail_phase'] == 'sanity' and 'usage error (exit status 2)' in tc['fail_reason']
    assert time.monotonic() - start < 30


@pytest.mark.measures
def test_reframe_local_slurm(tmp_path, slurm_cluster):
    proc, cases = reframe(os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py'),
                          tmp_path, env=slurm_cluster.env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(tc['partition'] for tc in cases) == ['arm', 'x86']
    assert all(tc['result'] == 'pass' for tc in cases)


def test_reframe_measures_its_own_sender_not_one_that_started_first(tmp_path):
    # Once the receiver listens, another eth-test-send (session 0x5) starts streaming to the
    # same ports a second before the check's own sender (the site's eth_test_sender prefix
    # is this wrapper). The check's two ends share a session id of their own, so the other
    # is counted as foreign and never measured (issue 27: the first session seen was).
    wrapper = tmp_path / 'other-sender-first'
    wrapper.write_text('#!/bin/bash\n'
                       '"$@" --session 0x5 --rate 0.2 --duration 8 -q >/dev/null 2>&1 &\n'
                       'sleep 1\nexec "$@"\n')
    wrapper.chmod(0o755)
    site = tmp_path / 'sites' / 'local'   # the helper finds the run by the site's name
    shutil.copytree(os.path.join(ROOT, 'site-configs', 'local'), site,
                    ignore=shutil.ignore_patterns('__pycache__', 'spack.yaml', '.spack-env'))
    config = site / 'config.py'
    text = config.read_text()
    config.write_text(text.replace("'eth_test_interfaces': ['lo'],",
                                   f"'eth_test_interfaces': ['lo'], "
                                   f"'eth_test_sender': {str(wrapper)!r},"))
    assert config.read_text() != text
    proc, cases = reframe(config, tmp_path, '-S',
                          'kernel_opts=--port 47600 --threshold 0.1 --timeout 60',
                          COBALT_BENCH_ROOT=ROOT)
    (tc,) = cases
    with open(os.path.join(tc['outputdir'], 'eth-test-receive.json')) as fp:
        doc = json.load(fp)
    assert doc['config']['session'] != '0x5', proc.stdout
    assert doc['metrics']['foreign_datagrams']['value'] > 0, doc['metrics']
    with open(os.path.join(tc['outputdir'], 'eth-test-send.out')) as fp:
        assert doc['config']['session'] in fp.read()
