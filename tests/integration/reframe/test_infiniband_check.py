'''The IbWriteBw check (reframe_checks/infiniband.py) under ReFrame: skipped without
InfiniBand devices; failing with ib_write_bw's own error where it cannot run; and, with a
stand-in for ib_write_bw that replays the COBALT2 compliance document's recorded output
(this machine has no InfiniBand), judged by the site's references, once per sending port.
Its port runner (the script the check runs, shipped in the package) first.'''

import json
import os
import shutil
import subprocess

import pytest
import yaml

from cobalt_bench.tools import ib_ports
from cobalt_bench.reframe.infiniband import PORT_RUNNER
from plugins.checkout import REFRAME, ROOT
from plugins.tools import PERFTEST_RECORDED as RECORDED

CHECK = os.path.join(ROOT, 'reframe_checks', 'infiniband.py')
RUNNER = PORT_RUNNER   # the script the check runs, shipped in the package
COBALT2 = os.path.join(ROOT, 'site-configs', 'cobalt2', 'config.py')


# ---- the port runner --------------------------------------------------------------------

@pytest.mark.parametrize('args', [[], ['mlx4_0=mlx4_1:1'], ['mlx4_0:1:mlx4_1:1'],
                                  ['--bogus', 'a:1=b:1']])
def test_runner_usage_errors(args):
    # Checked before anything runs (and whether or not perftest is installed).
    proc = subprocess.run([RUNNER, *args], text=True, capture_output=True, timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert 'ib-write-bw-ports' in proc.stderr


def test_runner_passes_shellcheck():
    if shutil.which('shellcheck') is None:
        pytest.skip('shellcheck not installed (Debian package shellcheck)')
    proc = subprocess.run(['shellcheck', RUNNER], text=True, capture_output=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout


# ---- the check under ReFrame ------------------------------------------------------------

def reframe(tmp_path, *options, config=COBALT2, env=None):
    env = {k: v for k, v in (env or os.environ).items() if not k.startswith('RFM_')}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path), COBALT_BENCH_RUN_ID='run')
    os.makedirs(tmp_path, exist_ok=True)
    proc = subprocess.run([*REFRAME, '-C', str(config), '-c', CHECK, '-r', '--nocolor',
                           *options], cwd=str(tmp_path), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    with open(os.path.join(tmp_path, 'cobalt2', 'run', 'report.json')) as fp:
        (tc,) = [tc for run in json.load(fp)['runs'] for tc in run['testcases']]
    return proc, tc


def test_skipped_without_infiniband_devices(tmp_path):
    if ib_ports.ports():
        pytest.skip(f'this machine has InfiniBand devices: {ib_ports.ports()}')
    proc, tc = reframe(tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert tc['result'] == 'skip'
    assert 'SKIP' in proc.stdout
    assert '[no InfiniBand devices in /sys/class/infiniband]' in proc.stdout


def test_one_device_is_not_enough(tmp_path):
    proc, tc = reframe(tmp_path, '-S', 'ports=mlx5_0:1,mlx5_0:2')
    assert tc['result'] == 'skip'
    assert 'ib_write_bw needs two InfiniBand devices, found 1: mlx5_0' in proc.stdout


def test_real_ib_write_bw_without_devices_fails_with_its_error(tmp_path):
    # The real perftest on a machine without the named devices: each port's run fails
    # with ib_write_bw's exit code, and the check says so (sanity, not a number).
    if shutil.which('ib_write_bw') is None:
        pytest.skip('perftest (ib_write_bw) not installed')
    if ib_ports.ports():
        pytest.skip(f'this machine has InfiniBand devices: {ib_ports.ports()}')
    proc, tc = reframe(tmp_path, '-S', 'ports=mlx4_0:1,mlx4_1:1')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'sanity'), proc.stdout
    assert tc['fail_reason'].endswith(
        'ib_write_bw: mlx4_0:1->mlx4_1:1: ib_write_bw exit code 1; '
        'mlx4_1:1->mlx4_0:1: ib_write_bw exit code 1')


@pytest.fixture
def replaying_ib_write_bw(tmp_path):
    '''A directory with an `ib_write_bw` that stands in for the absent hardware: as the
    sender (its last argument is the server's host) it prints the compliance document's
    recorded output, as the receiver it just exits; every call is logged.'''
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    fake = bindir / 'ib_write_bw'
    fake.write_text('#!/bin/bash\n'
                    f'echo "$*" >> {bindir}/calls\n'
                    'case "${@: -1}" in\n'
                    f'  localhost) cat {RECORDED} ;;\n'
                    '  *) sleep 0.5 ;;\n'
                    'esac\n')
    fake.chmod(0o755)
    return bindir


def test_each_port_is_judged_by_the_site_reference(tmp_path, replaying_ib_write_bw):
    env = dict(os.environ, PATH=f'{replaying_ib_write_bw}:{os.environ["PATH"]}')
    proc, tc = reframe(tmp_path / 'run', '-S', 'ports=mlx4_0:1,mlx4_0:2,mlx4_1:1', env=env)
    assert tc['result'] == 'pass', proc.stdout
    perf = {k.split(':', 2)[-1]: v for k, v in tc['perfvalues'].items()}
    # Judged: the lowest BW average of all ports, against the document's 50 Gb/s.
    assert perf['bw_average'][:5] == [51.04, 50.0, 0, None, 'Gb/s']
    assert perf['bw_peak'][0] == 51.05
    for port in ('mlx4_0_1', 'mlx4_0_2', 'mlx4_1_1'):
        assert perf[f'bw_average_{port}'][0] == 51.04
    # One run per sending port, the receiver on the other device, through localhost.
    calls = (replaying_ib_write_bw / 'calls').read_text().splitlines()
    senders = [c for c in calls if c.endswith('--report_gbits localhost')]
    receivers = [c for c in calls if not c.endswith('localhost')]
    assert [c.split()[:4] for c in senders] == [
        ['-d', 'mlx4_0', '-i', '1'], ['-d', 'mlx4_0', '-i', '2'], ['-d', 'mlx4_1', '-i', '1']]
    assert [c.split()[:4] for c in receivers] == [
        ['-d', 'mlx4_1', '-i', '1'], ['-d', 'mlx4_1', '-i', '1'], ['-d', 'mlx4_0', '-i', '1']]

    # The same output against a site that asks for more: a performance failure.
    site = tmp_path / 'site-configs'
    shutil.copytree(os.path.join(ROOT, 'site-configs'), site,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm', '.spack*'))
    refs_path = site / 'cobalt2' / 'references.yaml'
    refs = yaml.safe_load(refs_path.read_text())
    refs['IbWriteBw']['cobalt2:node']['bw_average'] = [52.0, 0, None, 'Gb/s']
    refs_path.write_text(yaml.safe_dump(refs))
    env['COBALT_BENCH_ROOT'] = ROOT
    proc, tc = reframe(tmp_path / 'strict', '-S', 'ports=mlx4_0:1,mlx4_1:1',
                       config=site / 'cobalt2' / 'config.py', env=env)
    assert (tc['result'], tc['fail_phase']) == ('fail', 'performance'), proc.stdout
    assert 'bw_average' in tc['fail_reason']
