"""gpu-copy as a user runs it, on machines with or without an NVIDIA GPU.

- The build: bin/gpu-copy wherever nvcc is (statically linked CUDA runtime), a
  "skipped" line where it is not.
- Without a GPU: exit 3 and a clear message; bad options exit 2; --help, --version.
- --explain-links on the recorded sysfs trees of tests/data/gpu-copy/: the link
  arithmetic (2 x Gen3 x16 = 252 Gbit/s) and the riser case named as the likely cause.
- The whole program with a host-memory stand-in for CUDA (build/tests/gpu-copy-sim, see
  tests/c/test_gpu_copy_fake_cuda.h): phases, verification that catches a lost copy,
  results block, JSON, exit codes. Its speeds mean nothing.
- bench/gpu-copy without a GPU.
On a machine with an NVIDIA GPU, test_real_gpu_run runs the real thing (marked
needs_setup('gpu')). jobs/gpu-copy.slurm: tests/integration/slurm/; the ReFrame check on
simulated GPUs: tests/integration/reframe/."""
import json
import os
import re
import subprocess

import pytest

from plugins.checkout import ROOT, repo_version, results_block
from plugins.kernels import (GPU_COPY_RISER_BUSES, GPU_COPY_RISER_SIM, GPU_COPY_SMALL,
                             needs_gpu_copy_binary, no_gpu_only)

GPU_COPY = os.path.join(ROOT, 'bin', 'gpu-copy')
DATA = os.path.join(ROOT, 'tests', 'data', 'gpu-copy')
RISER_BUSES = GPU_COPY_RISER_BUSES


needs_binary = needs_gpu_copy_binary


def run(binary, *args, env=None, timeout=120):
    if not os.access(binary, os.X_OK):
        pytest.fail(f'{binary} is not built: run make (and make ctest for the simulation)')
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, env=e)


# ---- build ------------------------------------------------------------------------------

@needs_binary
def test_builds_where_nvcc_is():
    assert os.access(GPU_COPY, os.X_OK), 'nvcc is here but make did not build bin/gpu-copy'
    # the CUDA runtime is linked in: the binary needs only the driver where it runs
    ldd = subprocess.run(['ldd', GPU_COPY], capture_output=True, text=True).stdout
    assert 'libcudart' not in ldd
    assert 'libhwloc' in ldd


def test_make_skips_without_nvcc():
    r = subprocess.run(['make', '-n', '-C', ROOT, 'NVCC=/nonexistent/nvcc'],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert 'gpu-copy: nvcc (CUDA toolkit) not found' in r.stdout
    assert 'bin/gpu-copy' not in r.stdout


# ---- the real binary without a GPU ----------------------------------------------------

@needs_binary
def test_version_and_help():
    r = run(GPU_COPY, '--version')
    assert r.returncode == 0
    version = repo_version()
    assert r.stdout.startswith(f'gpu-copy (cobalt-bench) {version}')
    r = run(GPU_COPY, '--help')
    assert r.returncode == 0
    for word in ('--gpus', '--iterations', '--device-fraction', '--threshold', '--explain-links',
                 '--sysfs-root', '--json', '252 Gbit/s', '128b/130b', 'Exit status'):
        assert word in r.stdout


@needs_binary
@no_gpu_only
def test_no_gpu_exits_3(tmp_path):
    out = tmp_path / 'r.json'
    r = run(GPU_COPY, '--json', str(out))
    assert r.returncode == 3, r.stdout + r.stderr
    assert 'no NVIDIA GPU' in r.stderr and 'CUDA reports' in r.stderr
    assert '----- Test results -----' not in r.stdout
    assert not out.exists()


@needs_binary
@pytest.mark.parametrize('args, message', [
    (['--bogus'], "unknown option '--bogus'"),
    (['--iterations', '0'], "invalid value '0' for --iterations"),
    (['--iterations', 'ten'], "invalid value 'ten' for --iterations"),
    (['--device-fraction', '1.5'], "invalid value '1.5' for --device-fraction"),
    (['--device-buffer', '12X'], "invalid value '12X' for --device-buffer"),
    (['--chunk', '5000'], '--chunk: must be a multiple of 4K'),
    (['--phases', 'write,copy'], "invalid list 'write,copy' for --phases"),
    (['--streams', '99'], "invalid value '99' for --streams"),
    (['--gpus', '0,,1'], "invalid list '0,,1' for --gpus"),
    (['--threshold', '100', '--threshold-per-gpu', '90'], 'give one'),
    (['--device-fraction', '0.5', '--device-buffer', '1G'], 'give one'),
    (['--sysfs-root', '/nonexistent'], 'no PCI devices there'),
    (['--json', '/nonexistent/dir/r.json'], 'cannot write --json'),
    (['--iterations'], "option '--iterations' needs a value"),
    (['extra'], "unexpected argument 'extra'"),
])
def test_bad_input_exits_2(args, message):
    r = run(GPU_COPY, *args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert message in r.stderr


# ---- --explain-links on recorded sysfs trees ----------------------------------------

@needs_binary
def test_explain_riser_names_the_degraded_link(tmp_path):
    out = tmp_path / 'links.json'
    r = run(GPU_COPY, '--explain-links', '--sysfs-root', os.path.join(DATA, 'gen3-x8-riser'),
            '--json', str(out))
    assert r.returncode == 1, r.stdout + r.stderr  # a degraded link
    cause = [line for line in r.stdout.splitlines() if line.startswith('Likely cause')]
    assert len(cause) == 1
    assert '0000:86:00.0' in cause[0] and 'x8' in cause[0] and 'x16' in cause[0]
    assert 'riser' in cause[0] and '0000:85:02.0' in cause[0]
    assert '0000:3b:00.0' not in cause[0]
    block = results_block(r.stdout)
    assert block['Test version'] == '1.0'
    assert block['Degraded links'] == '1 (GPU 0000:86:00.0)'
    assert block['Link speed'].startswith('189.05 Gbit/s')  # 126.03 + 63.02
    doc = json.loads(out.read_text())
    assert doc['test'] == 'gpu-copy' and doc['config']['mode'] == 'explain-links'
    assert doc['metrics']['degraded_links'] == {'value': 1, 'unit': 'links'}
    assert doc['compliance']['passed'] is False
    riser = {g['pci_bus_id']: g for g in doc['gpus']}['0000:86:00.0']
    assert riser['numa_node'] == 1 and riser['locality_source'] == 'sysfs'
    link = riser['links'][0]
    assert (link['current_width'], link['device_max_width'], link['port_max_width']) == (8, 16, 8)
    assert link['degraded'] is True
    assert riser['link_max_gbits'] == pytest.approx(126.0308, abs=1e-3)


@needs_binary
@pytest.mark.parametrize('case, gpus, speed', [
    ('gen3-x16', 2, '252.06'),   # the compliance document: 252 Gbit/s for 2 x Gen3 x16
    ('gen4-x16', 2, '252.06'),   # 2 x Gen4 x16 behind one Gen4 x16 switch uplink
    ('gen5-x16', 1, '504.12'),
])
def test_explain_healthy_trees(case, gpus, speed):
    r = run(GPU_COPY, '--explain-links', '--sysfs-root', os.path.join(DATA, case))
    assert r.returncode == 0, r.stdout + r.stderr
    block = results_block(r.stdout)
    assert block['GPUs'] == str(gpus)
    assert block['Degraded links'] == '0'
    assert block['Link speed'].startswith(f'{speed} Gbit/s')
    assert 'Likely cause' not in r.stdout and 'DEGRADED' not in r.stdout
    if case == 'gen4-x16':
        assert re.search(r'Shared uplink 0000:40:01\.1 -> 0000:41:00\.0 \(252\.06 Gbit/s\) carries GPUs '
                         r'0000:43:00\.0, 0000:44:00\.0.*cannot exceed the uplink', r.stdout)


@needs_binary
@no_gpu_only
def test_explain_live_sys_without_gpu():
    r = run(GPU_COPY, '--explain-links')
    assert r.returncode == 3
    assert 'no NVIDIA GPU found in /sys/bus/pci/devices' in r.stderr


# ---- cb-pcie-links: the one PCIe link rule, for every device (preflight runs it) ---------

PCIE_LINKS = os.path.join(ROOT, 'bin', 'cb-pcie-links')


def test_pcie_links_help_and_usage():
    r = run(PCIE_LINKS, '--help')
    assert r.returncode == 0
    for word in ('--sysfs-root', '--json', 'idle-low', 'degraded', 'Exit status'):
        assert word in r.stdout
    assert run(PCIE_LINKS, '--bogus').returncode == 2
    r = run(PCIE_LINKS, '--sysfs-root', '/nonexistent')
    assert r.returncode == 3 and 'no PCI devices in /nonexistent' in r.stderr


@pytest.mark.parametrize('case, rc, statuses', [
    ('gen3-x16', 0, {'0000:03:00.0': 'ok', '0000:3b:00.0': 'ok', '0000:d8:00.0': 'ok'}),
    ('gen4-x16', 0, {'0000:43:00.0': 'ok', '0000:44:00.0': 'ok'}),
    ('gen3-x8-riser', 1, {'0000:3b:00.0': 'ok', '0000:86:00.0': 'degraded'}),
])
def test_pcie_links_agrees_with_explain_links(case, rc, statuses, tmp_path):
    out = tmp_path / 'links.json'
    r = run(PCIE_LINKS, '--sysfs-root', os.path.join(DATA, case), '--json', str(out))
    assert r.returncode == rc, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc['test'] == 'cb-pcie-links' and doc['compliance']['passed'] == (rc == 0)
    listed = {d['address']: d for d in doc['devices']}
    for bdf, status in statuses.items():
        assert listed[bdf]['status'] == status and listed[bdf]['gpu'] is True
    assert not any(d['class'].startswith('0x06') for d in doc['devices'])   # no bridges
    # the functions of one card (its audio, USB, ... functions) share its link and verdict
    for d in doc['devices']:
        assert d['status'] == statuses[d['address'][:-1] + '0']
    assert doc['metrics']['degraded']['value'] == sum(d['status'] == 'degraded' for d in doc['devices'])
    if case == 'gen3-x8-riser':
        riser = listed['0000:86:00.0']
        assert 'riser' in riser['diagnosis'] and '0000:85:02.0' in riser['diagnosis']
        link = riser['links'][0]
        assert (link['current_width'], link['device_max_width'], link['port_max_width']) == (8, 16, 8)
        assert 'Degraded:        4 (0000:86:00.0, 0000:86:00.1,' in r.stdout
    if case == 'gen4-x16':   # the switch's uplink is part of each GPU's chain
        assert [l['down'] for l in listed['0000:43:00.0']['links']] == ['0000:43:00.0', '0000:41:00.0']


def test_pcie_links_this_machine():
    r = run(PCIE_LINKS, '--json', '-')
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    functions = [f for f in os.listdir('/sys/bus/pci/devices')
                 if not open(f'/sys/bus/pci/devices/{f}/class').read().startswith('0x06')]
    assert sorted(d['address'] for d in doc['devices']) == sorted(functions)
    for d in doc['devices']:
        has_link = os.path.exists(f'/sys/bus/pci/devices/{d["address"]}/current_link_speed')
        if not has_link:
            assert d['status'] == 'unknown'


# ---- the whole program on simulated GPUs -------------------------------------------------

# The riser machine's GPUs, 64 MiB each, copies slowed to 12 and 6 Gbit/s per direction.
RISER_SIM = GPU_COPY_RISER_SIM
SMALL = GPU_COPY_SMALL


def test_sim_run_reports_and_explains(gpu_copy_sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(gpu_copy_sim, *SMALL, '--json', str(out), env=RISER_SIM)
    assert r.returncode == 1, r.stdout + r.stderr  # far below 180 Gbit/s
    block = results_block(r.stdout)
    assert list(block) == ['Test version', 'Total write speed', 'Total read speed']
    # the compliance document's layout: values in one column
    tail = r.stdout.rstrip('\n').split('\n')[-3:]
    assert [line.index(line.split(':', 1)[1].strip()) for line in tail] == [19, 19, 19]
    write = float(block['Total write speed'].split()[0])
    read = float(block['Total read speed'].split()[0])
    doc = json.loads(out.read_text())
    m = doc['metrics']
    assert m['total_write_speed']['unit'] == 'Gbit/s'
    assert m['total_write_speed']['value'] == pytest.approx(write, abs=0.01)
    assert m['total_read_speed']['value'] == pytest.approx(read, abs=0.01)
    # the same measurement in bytes: against the document's Gbit/s (the results block's
    # two decimals are 0.2 % apart at 2.5 Gbit/s, which the simulator's timing reaches)
    assert m['total_write_speed_bytes']['value'] == \
        pytest.approx(m['total_write_speed']['value'] * 1e9 / 8, rel=1e-5)
    assert m['verification_errors']['value'] == 0
    assert m['verified_phases']['value'] == 2 * 3 + 2 * 2  # all at once, then each alone
    assert m['degraded_links']['value'] == 1
    assert m['theoretical_link_speed']['value'] == pytest.approx(189.046, abs=0.01)
    assert doc['compliance'] == {'threshold': 180, 'passed': False}
    gpus = doc['gpus']
    assert [g['pci_bus_id'] for g in gpus] == list(RISER_BUSES)
    assert [g['link_state'] for g in gpus] == ['under load', 'under load']
    # totals are the per-GPU speeds summed; no GPU beats the rate its copies were held to
    assert sum(g['write_speed_gbits'] for g in gpus) == pytest.approx(write, abs=0.01)
    for g, rate in zip(gpus, (12, 6)):
        for key in ('write_speed_gbits', 'read_speed_gbits', 'alone_write_speed_gbits',
                    'alone_read_speed_gbits', 'bidir_write_speed_gbits'):
            assert 0 < g[key] <= rate * 1.02, (key, g[key])
    cause = [line for line in r.stdout.splitlines() if 'Likely cause' in line]
    assert len(cause) == 1 and 'GPU 1 (0000:86:00.0)' in cause[0] and 'x8' in cause[0]


def test_sim_threshold_options(gpu_copy_sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(gpu_copy_sim, *SMALL, '--threshold', '0.5', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())['compliance'] == {'threshold': 0.5, 'passed': True}
    r = run(gpu_copy_sim, *SMALL, '--threshold-per-gpu', '0.25', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0
    assert json.loads(out.read_text())['compliance']['threshold'] == 0.5  # 2 GPUs x 0.25


@pytest.mark.parametrize('phase', ['write', 'read', 'bidir'])
def test_sim_verification_catches_a_lost_copy(gpu_copy_sim, tmp_path, phase):
    out = tmp_path / 'r.json'
    env = dict(RISER_SIM, GPU_COPY_FAULT=phase)
    r = run(gpu_copy_sim, *SMALL, '--threshold', '0', '--json', str(out), env=env)
    assert r.returncode == 1, r.stdout
    assert re.search(rf'VERIFICATION FAILED: GPU 0, phase all GPUs, {phase}: 131072 wrong words',
                     r.stdout)  # one 1 MiB chunk of 8-byte words
    doc = json.loads(out.read_text())
    assert doc['metrics']['verification_errors']['value'] == 131072
    assert doc['compliance']['passed'] is False


def test_sim_partial_phases_are_not_judged(gpu_copy_sim):
    r = run(gpu_copy_sim, *SMALL, '--phases', 'read', '--threshold', '0', env=RISER_SIM)
    assert r.returncode == 1
    assert results_block(r.stdout)['Total write speed'] == 'not measured'
    assert 'Compliance needs both write and read' in r.stdout


def test_sim_cannot_set_up_exits_3(gpu_copy_sim):
    r = run(gpu_copy_sim, *SMALL[:2], '--device-buffer', '1G', env=RISER_SIM)
    assert r.returncode == 3
    assert 'allocating the device buffer: out of memory' in r.stderr


def test_sim_selects_gpus_and_rejects_missing_ones(gpu_copy_sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(gpu_copy_sim, *SMALL, '--gpus', '1', '--threshold', '0', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [g['pci_bus_id'] for g in doc['gpus']] == ['0000:86:00.0']
    assert 'alone_write_speed_gbits' not in doc['gpus'][0]  # one GPU: no "alone" phases
    r = run(gpu_copy_sim, *SMALL, '--gpus', '0,5', env=RISER_SIM)
    assert r.returncode == 2
    assert 'GPU 5 does not exist: CUDA sees 2 devices (0-1)' in r.stderr


def test_sim_no_device_exits_3(gpu_copy_sim):
    r = run(gpu_copy_sim, '--sysfs-root', os.path.join(DATA, 'gen3-x16'), env={'GPU_COPY_FAKE_GPUS': ''})
    assert r.returncode == 3
    # CUDA sees nothing, but the (recorded) sysfs lists GPUs: a driver problem
    assert 'cannot use the NVIDIA GPUs' in r.stderr
    assert '0000:3b:00.0, 0000:d8:00.0' in r.stderr


# ---- bench ------------------------------------------------------------------------------

@needs_binary
@no_gpu_only
def test_bench_without_gpu_says_so():
    r = subprocess.run([os.path.join(ROOT, 'bench', 'gpu-copy'), '--repeat', '1'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 3
    assert 'no NVIDIA GPU to compare on' in r.stderr
    # it built its reference loop with nvcc before finding that out
    assert os.access(os.path.join(ROOT, 'build', 'bench', 'gpu-copy-ref'), os.X_OK)


# ---- on a machine with an NVIDIA GPU ------------------------------------------------------

@needs_binary
@pytest.mark.needs_setup('gpu')
def test_real_gpu_run(tmp_path):
    out = tmp_path / 'r.json'
    r = run(GPU_COPY, '--device-buffer', '1G', '--iterations', '3', '--alone-iterations', '1',
            '--threshold', '0', '--json', str(out), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    m = doc['metrics']
    assert m['verification_errors']['value'] == 0
    for g in doc['gpus']:
        assert g['link_state'] == 'under load'
        link = g['link_theoretical_gbits']
        # a real copy cannot beat its link's theoretical bandwidth
        assert 0 < g['write_speed_gbits'] <= link and 0 < g['read_speed_gbits'] <= link
