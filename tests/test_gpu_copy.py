"""gpu-copy as a user runs it, on machines with or without an NVIDIA GPU.

- The build: bin/gpu-copy wherever nvcc is (statically linked CUDA runtime), a
  "skipped" line where it is not.
- Without a GPU: exit 3 and a clear message; bad options exit 2; --help, --version.
- --explain-links on the recorded sysfs trees of tests/data/gpu-copy/: the link
  arithmetic (2 x Gen3 x16 = 252 Gbit/s) and the riser case named as the likely cause.
- The whole program with a host-memory stand-in for CUDA (build/tests/gpu-copy-sim, see
  tests/c/test_gpu_copy_fake_cuda.h): phases, verification that catches a lost copy,
  results block, JSON, exit codes, the ReFrame check. Its speeds mean nothing.
- jobs/gpu-copy.slurm directly and through the local Slurm cluster, bench/gpu-copy.
On a machine with an NVIDIA GPU, test_real_gpu_run runs the real thing."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU_COPY = os.path.join(ROOT, 'bin', 'gpu-copy')
# $GPU_COPY_SIM: a simulation built elsewhere (make BUILD=DIR DIR/tests/gpu-copy-sim);
# without it the fixture builds build/tests/gpu-copy-sim in the checkout.
SIM = os.environ.get('GPU_COPY_SIM') or os.path.join(ROOT, 'build', 'tests', 'gpu-copy-sim')
DATA = os.path.join(ROOT, 'tests', 'data', 'gpu-copy')
RISER_BUSES = '0000:3b:00.0', '0000:86:00.0'


def nvcc():
    return shutil.which('nvcc') or (
        '/usr/local/cuda/bin/nvcc' if os.access('/usr/local/cuda/bin/nvcc', os.X_OK) else None)


def has_nvidia_gpu():
    return os.path.exists('/proc/driver/nvidia/gpus') and bool(os.listdir('/proc/driver/nvidia/gpus'))


needs_binary = pytest.mark.skipif(not nvcc(), reason='nvcc (CUDA toolkit) not found: gpu-copy is not built')
no_gpu_only = pytest.mark.skipif(has_nvidia_gpu(), reason='this machine has an NVIDIA GPU')


def run(binary, *args, env=None, timeout=120):
    if not os.access(binary, os.X_OK):
        pytest.fail(f'{binary} is not built: run make (and make ctest for the simulation)')
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, env=e)


def results_block(stdout):
    lines = stdout.rstrip('\n').split('\n')
    i = max(k for k, line in enumerate(lines) if line == '----- Test results -----')
    return dict(re.match(r'([^:]+):\s+(.*)', line).groups() for line in lines[i + 1:])


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
    version = open(os.path.join(ROOT, 'VERSION')).read().strip()
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

@pytest.fixture(scope='module')
def sim():
    if os.environ.get('GPU_COPY_SIM'):
        return SIM
    if not shutil.which(os.environ.get('CXX', 'g++')):
        pytest.skip('no C++ compiler (g++) to build the simulation')
    r = subprocess.run(['make', '-C', ROOT, 'build/tests/gpu-copy-sim'], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return SIM


def fake(*specs):
    return {'GPU_COPY_FAKE_GPUS': ','.join(specs)}


# The riser machine's GPUs, 64 MiB each, copies slowed to 12 and 6 Gbit/s per direction.
RISER_SIM = fake(f'{RISER_BUSES[0]}=64M@12', f'{RISER_BUSES[1]}=64M@6')
SMALL = ['--sysfs-root', os.path.join(DATA, 'gen3-x8-riser'), '--device-buffer', '16M',
         '--chunk', '1M', '--iterations', '3', '--alone-iterations', '2', '--quiet']


def test_sim_run_reports_and_explains(sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(sim, *SMALL, '--json', str(out), env=RISER_SIM)
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
    assert m['total_write_speed_bytes']['value'] == pytest.approx(write * 1e9 / 8, rel=1e-3)
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


def test_sim_threshold_options(sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(sim, *SMALL, '--threshold', '0.5', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())['compliance'] == {'threshold': 0.5, 'passed': True}
    r = run(sim, *SMALL, '--threshold-per-gpu', '0.25', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0
    assert json.loads(out.read_text())['compliance']['threshold'] == 0.5  # 2 GPUs x 0.25


@pytest.mark.parametrize('phase', ['write', 'read', 'bidir'])
def test_sim_verification_catches_a_lost_copy(sim, tmp_path, phase):
    out = tmp_path / 'r.json'
    env = dict(RISER_SIM, GPU_COPY_FAULT=phase)
    r = run(sim, *SMALL, '--threshold', '0', '--json', str(out), env=env)
    assert r.returncode == 1, r.stdout
    assert re.search(rf'VERIFICATION FAILED: GPU 0, phase all GPUs, {phase}: 131072 wrong words',
                     r.stdout)  # one 1 MiB chunk of 8-byte words
    doc = json.loads(out.read_text())
    assert doc['metrics']['verification_errors']['value'] == 131072
    assert doc['compliance']['passed'] is False


def test_sim_partial_phases_are_not_judged(sim):
    r = run(sim, *SMALL, '--phases', 'read', '--threshold', '0', env=RISER_SIM)
    assert r.returncode == 1
    assert results_block(r.stdout)['Total write speed'] == 'not measured'
    assert 'Compliance needs both write and read' in r.stdout


def test_sim_cannot_set_up_exits_3(sim):
    r = run(sim, *SMALL[:2], '--device-buffer', '1G', env=RISER_SIM)
    assert r.returncode == 3
    assert 'allocating the device buffer: out of memory' in r.stderr


def test_sim_selects_gpus_and_rejects_missing_ones(sim, tmp_path):
    out = tmp_path / 'r.json'
    r = run(sim, *SMALL, '--gpus', '1', '--threshold', '0', '--json', str(out), env=RISER_SIM)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [g['pci_bus_id'] for g in doc['gpus']] == ['0000:86:00.0']
    assert 'alone_write_speed_gbits' not in doc['gpus'][0]  # one GPU: no "alone" phases
    r = run(sim, *SMALL, '--gpus', '0,5', env=RISER_SIM)
    assert r.returncode == 2
    assert 'GPU 5 does not exist: CUDA sees 2 devices (0-1)' in r.stderr


def test_sim_no_device_exits_3(sim):
    r = run(sim, '--sysfs-root', os.path.join(DATA, 'gen3-x16'), env={'GPU_COPY_FAKE_GPUS': ''})
    assert r.returncode == 3
    # CUDA sees nothing, but the (recorded) sysfs lists GPUs: a driver problem
    assert 'cannot use the NVIDIA GPUs' in r.stderr
    assert '0000:3b:00.0, 0000:d8:00.0' in r.stderr


# ---- job script and bench ------------------------------------------------------------------

def test_job_script_runs_gpu_copy(sim, tmp_path):
    script = os.path.join(ROOT, 'jobs', 'gpu-copy.slurm')
    assert '#SBATCH --gres=gpu\n' in open(script).read()
    # A cobalt-bench tree whose bin/gpu-copy is the simulation: the script finds the
    # module of the tree it belongs to, and the module puts that bin/ on PATH.
    tree = tmp_path / 'tree'
    for sub in ('bin', 'jobs', 'modulefiles/cobalt-bench'):
        (tree / sub).mkdir(parents=True)
    (tree / 'bin' / 'gpu-copy').symlink_to(sim)
    shutil.copy(script, tree / 'jobs')
    shutil.copytree(os.path.join(ROOT, 'jobs', 'lib'), tree / 'jobs' / 'lib')  # what it sources
    shutil.copy(os.path.join(ROOT, 'modulefiles', 'cobalt-bench', '0.1.0.lua'),
                tree / 'modulefiles' / 'cobalt-bench')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('SLURM_', 'COBALT_BENCH_'))}
    env.update(RISER_SIM, COBALT_BENCH_RESULTS=str(tmp_path),
               GPU_COPY_OPTS=' '.join(SMALL + ['--threshold', '0']))
    r = subprocess.run([str(tree / 'jobs' / 'gpu-copy.slurm')], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'{tree}/bin/gpu-copy' in r.stdout and 'gpu-copy exit code 0' in r.stdout
    (json_file,) = (tmp_path / 'slurm').glob('gpu-copy-*.json')
    assert json.loads(json_file.read_text())['config']['iterations'] == 3


@needs_binary
@no_gpu_only
def test_job_through_slurm(slurm_cluster, tmp_path):
    script = os.path.join(ROOT, 'jobs', 'gpu-copy.slurm')
    env = dict(slurm_cluster.env, COBALT_BENCH_RESULTS=str(tmp_path))
    # the job asks for a GPU, which the local cluster does not have
    r = slurm_cluster.run(['sbatch', '-p', 'x86', script], cwd=tmp_path)
    assert r.returncode != 0 and 'gres' in r.stderr.lower()
    # without the GPU request it runs, and gpu-copy's "cannot run" is the job's exit code
    r = subprocess.run(['sbatch', '--wait', '--gres=none', '-p', 'x86', '-o', str(tmp_path / 'job.out'),
                        script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    log = (tmp_path / 'job.out').read_text()
    assert 'no NVIDIA GPU' in log and 'gpu-copy exit code 3' in log


@needs_binary
@no_gpu_only
def test_bench_without_gpu_says_so():
    r = subprocess.run([os.path.join(ROOT, 'bench', 'gpu-copy'), '--repeat', '1'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 3
    assert 'no NVIDIA GPU to compare on' in r.stderr
    # it built its reference loop with nvcc before finding that out
    assert os.access(os.path.join(ROOT, 'build', 'bench', 'gpu-copy-ref'), os.X_OK)


# ---- the ReFrame check ---------------------------------------------------------------------

REFRAME = [sys.executable, '-c',
           'import sys; from reframe.frontend.cli import main; '
           'sys.argv[0] = "reframe"; sys.exit(main())']

SITE = '''from cobalt_bench.reframe.site import Site
SITE = Site('gpusim', __file__)
site_configuration = {{
    'systems': [{{
        'name': 'gpusim', 'hostnames': ['.*'], 'modules_system': 'nomod', 'prefix': SITE.prefix,
        'partitions': [
            {{'name': 'gpu', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin'],
              'features': ['gpu'], 'max_jobs': 1,
              'env_vars': [['PATH', '{bindir}:$PATH'], ['GPU_COPY_FAKE_GPUS', {fake!r}]],
              'extras': {{'gpu_copy_opts': {opts!r}}}}},
            {{'name': 'cpu', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin'],
              'max_jobs': 1}},
        ],
    }}],
    'general': SITE.general(),
    'logging': SITE.logging(),
}}
'''


def reframe_sim(sim, tmp_path, write_ref):
    '''GpuCopy through ReFrame on a site with a `gpu` partition (simulated GPUs) and a
    `cpu` partition without that feature.'''
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    if not (bindir / 'gpu-copy').exists():
        (bindir / 'gpu-copy').symlink_to(sim)
    site = tmp_path / 'site'
    site.mkdir(exist_ok=True)
    (site / 'config.py').write_text(SITE.format(
        bindir=bindir, fake=RISER_SIM['GPU_COPY_FAKE_GPUS'], opts=' '.join(SMALL)))
    (site / 'references.yaml').write_text(
        'GpuCopy:\n  gpusim:gpu:\n'
        f'    total_write_speed: [{write_ref}, 0, null, Gbit/s]\n'
        '    total_read_speed: [0.5, 0, null, Gbit/s]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path / 'results'), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run([*REFRAME, '-C', str(site / 'config.py'), '-c',
                           os.path.join(ROOT, 'reframe_checks', 'gpu.py'), '-r', '--nocolor'],
                          cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    with open(tmp_path / 'results' / 'gpusim' / 'run' / 'report.json') as fp:
        report = json.load(fp)
    return proc, [tc for run in report['runs'] for tc in run['testcases']]


def test_reframe_check_on_gpu_partition_only(sim, tmp_path):
    proc, cases = reframe_sim(sim, tmp_path, 0.5)
    assert proc.returncode == 0, proc.stdout
    # only the partition with the gpu feature gets the check
    assert [(tc['name'], tc['partition'], tc['result']) for tc in cases] == [('GpuCopy', 'gpu', 'pass')]
    perf = {k.split(':')[-1]: v for k, v in cases[0]['perfvalues'].items()}
    for metric in ('total_write_speed', 'total_read_speed', 'theoretical_link_speed', 'degraded_links'):
        assert metric in perf
    assert perf['total_write_speed'][1:3] == [0.5, 0]
    assert perf['degraded_links'][0] == 1


def test_reframe_check_fails_below_reference(sim, tmp_path):
    proc, cases = reframe_sim(sim, tmp_path, 1e6)
    assert proc.returncode != 0
    (tc,) = cases
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'performance'
    assert 'total_write_speed' in tc['fail_reason']


# ---- on a machine with an NVIDIA GPU ------------------------------------------------------

@needs_binary
@pytest.mark.skipif(not has_nvidia_gpu(), reason='no NVIDIA GPU on this machine')
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
