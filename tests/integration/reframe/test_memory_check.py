'''The MemTest check with the `local` site configuration (real ReFrame, real kernels), and
the site references that judge it; with `local-slurm` through the local Slurm cluster:
test_memory_check_slurm.py. The `local` suite runs whole here, eth-test on loopback
among it: the module holds eth-test's ports (tests/plugins/workers.py).'''

import os

import pytest

from plugins.reframe_runs import (assert_passed, assert_performance_failure, checks,
                                  copy_site, reframe, unreachable)
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS


# ---- site `local` ---------------------------------------------------------------------

def local_config(root):
    return os.path.join(root, 'site-configs', 'local', 'config.py')


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
