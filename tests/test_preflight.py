'''`cobalt-bench preflight`: on this machine's real sysfs/procfs (cross-checked with
independent tools: sysctl, ip, chrt, numactl), on the recorded trees in tests/data/sysfs
(a compliant and a non-compliant node, and this VM recorded with --record), and as the
ReFrame check `Preflight`.'''

import json
import os
import shutil
import subprocess
import sys

import pytest

DATA = os.path.join(os.path.dirname(__file__), 'data', 'sysfs')
REQUIRED_FIELDS = {'setting', 'status', 'value', 'expected', 'fix', 'level', 'affects',
                   'source', 'note'}
STATUSES = {'pass', 'fail', 'warn', 'unknown', 'skip'}


@pytest.fixture(scope='module')
def cobalt_bench(repo_root):
    path = repo_root / 'bin' / 'cobalt-bench'
    assert os.access(path, os.X_OK), f'{path} is not built (run make)'
    return str(path)


def preflight(cobalt_bench, *args, tmp_path=None):
    '''Run `cobalt-bench preflight ARGS --json FILE`: (exit code, stdout, document).'''
    doc_path = os.path.join(str(tmp_path), 'preflight.json') if tmp_path else None
    cmd = [cobalt_bench, 'preflight', *args] + (['--json', doc_path] if doc_path else [])
    proc = subprocess.run(cmd, text=True, capture_output=True, timeout=60)
    doc = None
    if doc_path and os.path.exists(doc_path):
        with open(doc_path) as fp:
            doc = json.load(fp)
    return proc, doc


def by_setting(doc):
    return {f['setting']: f for f in doc['findings']}


def test_this_machine(cobalt_bench, tmp_path):
    proc, doc = preflight(cobalt_bench, tmp_path=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    assert doc['test'] == 'preflight'
    assert doc['compliance']['passed'] == (proc.returncode == 0)
    findings = by_setting(doc)
    for f in doc['findings']:
        assert REQUIRED_FIELDS <= set(f), f
        assert f['status'] in STATUSES
        assert f['value'] and f['expected']
        # Printed with value and expectation; what fails says how to fix it.
        line = next(line for line in proc.stdout.splitlines()
                    if line.split()[1:2] == [f['setting']])
        assert f['value'] in line and f['expected'] in line
        if f['status'] == 'fail':
            assert f['fix'], f
            assert f'fix: {f["fix"]}' in proc.stdout

    # No cpufreq (as in this VM): unknown, never pass.
    cpufreq = '/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor'
    if not os.path.exists(cpufreq):
        assert findings['cpu.governor']['status'] == 'unknown'
        assert 'UNKNOWN' in proc.stdout
    else:
        with open(cpufreq) as fp:
            assert fp.read().strip() in findings['cpu.governor']['value']
    turbo_files = ['/sys/devices/system/cpu/intel_pstate/no_turbo',
                   '/sys/devices/system/cpu/cpufreq/boost']
    if not any(os.path.exists(p) for p in turbo_files):
        assert findings['cpu.turbo']['status'] in ('unknown', 'pass', 'fail')
        if not os.path.isdir('/sys/devices/system/cpu/cpufreq/policy0'):
            assert findings['cpu.turbo']['status'] == 'unknown'

    # The network values agree with sysctl (procps) and ip (iproute2).
    for name in ('net.core.rmem_max', 'net.core.wmem_default', 'net.core.netdev_max_backlog'):
        out = subprocess.run(['sysctl', '-n', name], text=True, capture_output=True).stdout
        assert findings[name]['value'] == out.strip()
        assert findings[name]['status'] == ('pass' if int(out) >= int(
            findings[name]['expected'].split()[-1]) else 'fail')
    links = json.loads(subprocess.run(['ip', '-j', 'link'], text=True,
                                      capture_output=True).stdout)
    mtus = {link['ifname']: link['mtu'] for link in links}
    for setting, f in findings.items():
        if setting.startswith('net.') and setting.endswith('.mtu') and setting != 'net.mtu':
            ifname = setting[4:-4]
            assert f['value'].split()[0] == str(mtus[ifname])
            assert f['status'] == ('pass' if mtus[ifname] >= 9000 else 'fail')
    assert 'net.lo.mtu' not in findings      # loopback is not a tested interface

    # Real-time priority: what chrt itself says.
    chrt = subprocess.run(['chrt', '-f', '1', 'true'], capture_output=True)
    assert findings['sched.realtime']['status'] == ('pass' if chrt.returncode == 0 else 'fail')

    # NUMA nodes as numactl sees them.
    hw = subprocess.run(['numactl', '--hardware'], text=True, capture_output=True).stdout
    nodes = int(hw.split('available:')[1].split()[0])
    assert findings['numa.layout']['value'].startswith(f'{nodes} node(s)')


def test_compliant_tree(cobalt_bench, tmp_path):
    proc, doc = preflight(cobalt_bench, '--root', os.path.join(DATA, 'compliant'),
                          tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert doc['verdict'] == 'COMPLIANT' and doc['compliance']['passed']
    assert doc['host'] == 'cobalt-ok'
    f = by_setting(doc)
    assert all(x['status'] == 'pass' for x in doc['findings']), \
        [x for x in doc['findings'] if x['status'] != 'pass']
    assert f['cpu.governor']['value'] == 'performance on 16 of 16 CPUs'
    assert f['cpu.turbo']['value'] == 'intel_pstate no_turbo=1'
    assert {'net.ens1f0.mtu', 'net.ens1f1.mtu', 'pcie.gpu.0000:3b:00.0',
            'pcie.gpu.0000:d8:00.0', 'pcie.nic.0000:17:00.0', 'pcie.nic.0000:5e:00.0'} <= set(f)
    assert 'ens1f0' in f['pcie.nic.0000:17:00.0']['value']
    assert 'mlx4_0' in f['pcie.nic.0000:5e:00.0']['value']
    # The SR-IOV virtual function has no link of its own: not judged.
    assert 'pcie.nic.0000:17:02.0' not in f
    assert doc['metrics']['settings_failed']['value'] == 0
    assert doc['metrics']['settings_passed']['value'] == len(doc['findings'])


def test_noncompliant_tree(cobalt_bench, tmp_path):
    proc, doc = preflight(cobalt_bench, '--root', os.path.join(DATA, 'noncompliant'),
                          tmp_path=tmp_path)
    assert proc.returncode == 1
    assert doc['verdict'] == 'NOT COMPLIANT'
    f = by_setting(doc)
    expected = {
        'cpu.governor': ('fail', 'cpupower frequency-set -g performance'),
        'cpu.turbo': ('fail', 'echo 0 > /sys/devices/system/cpu/cpufreq/boost'),
        'net.ens1f0.mtu': ('fail', 'ip link set ens1f0 mtu 9000'),
        'net.ens1f1.mtu': ('pass', None),
        'net.core.rmem_max': ('fail', 'sysctl -w net.core.rmem_max=16777216'),
        'net.core.wmem_max': ('pass', None),
        'net.ipv4.udp_mem': ('fail', "sysctl -w net.ipv4.udp_mem='262144 327680 393216'"),
        'numa.layout': ('fail', None),
        'pcie.gpu.0000:3b:00.0': ('warn', None),     # idle GPU: a lower speed is a warning
        'pcie.gpu.0000:d8:00.0': ('fail', None),     # x8 of x16
        'pcie.nic.0000:17:00.0': ('pass', None),
        'pcie.nic.0000:17:00.1': ('fail', None),     # 5.0 of 8.0 GT/s
        'sched.realtime': ('fail', None),
    }
    for setting, (status, fix) in expected.items():
        assert f[setting]['status'] == status, f[setting]
        if fix:
            assert f[setting]['fix'] == fix
    assert 'schedutil on 12 of 16 CPUs' in f['cpu.governor']['value']
    assert 'x8' in f['pcie.gpu.0000:d8:00.0']['value'] and 'max x16' in \
        f['pcie.gpu.0000:d8:00.0']['value']
    assert doc['metrics']['required_failed']['value'] == 5   # governor, turbo, mtu, 2 links
    assert '----- Test results -----' in proc.stdout
    assert proc.stdout.rstrip().endswith('Verdict:           NOT COMPLIANT')


def test_absent_files_are_unknown(cobalt_bench, tmp_path):
    # The compliant node with cpufreq and the PCI link attributes taken away (as in a VM).
    root = tmp_path / 'tree'
    shutil.copytree(os.path.join(DATA, 'compliant'), root, symlinks=True)
    shutil.rmtree(root / 'sys/devices/system/cpu/cpufreq')
    shutil.rmtree(root / 'sys/devices/system/cpu/intel_pstate')
    for dirpath, _, files in os.walk(root / 'sys/devices'):
        for name in files:
            if name.endswith('_link_width') or name.endswith('_link_speed'):
                os.remove(os.path.join(dirpath, name))
    proc, doc = preflight(cobalt_bench, '--root', str(root), tmp_path=tmp_path)
    f = by_setting(doc)
    assert f['cpu.governor']['status'] == 'unknown'
    assert f['cpu.turbo']['status'] == 'unknown'
    assert f['pcie.gpu.0000:3b:00.0']['status'] == 'unknown'
    assert doc['verdict'] == 'UNDETERMINED'        # nothing failed, but not a pass either
    assert proc.returncode == 1
    assert not doc['compliance']['passed']


def test_recorded_vm_tree_and_record_roundtrip(cobalt_bench, tmp_path):
    # tests/data/sysfs/vm was recorded on this project's VM with --record; a fresh record of
    # this machine judged with --root gives what the live run gives.
    _, recorded = preflight(cobalt_bench, '--root', os.path.join(DATA, 'vm'),
                            tmp_path=tmp_path)
    assert by_setting(recorded)['cpu.governor']['status'] in STATUSES
    record = tmp_path / 'record'
    live, live_doc = preflight(cobalt_bench, '--no-probe', '--record', str(record),
                               tmp_path=tmp_path)
    assert live.returncode in (0, 1)
    assert (record / 'proc/sys/net/core/rmem_max').is_file()
    assert (record / 'sys/class/net').is_dir()
    (tmp_path / 'replay').mkdir()
    replay, replay_doc = preflight(cobalt_bench, '--root', str(record),
                                   tmp_path=tmp_path / 'replay')
    assert replay_doc['findings'] == live_doc['findings']
    assert replay.returncode == live.returncode


def test_interfaces_option(cobalt_bench, tmp_path):
    root = os.path.join(DATA, 'noncompliant')
    _, doc = preflight(cobalt_bench, '--root', root, '-i', 'ens1f1', tmp_path=tmp_path)
    mtus = [s for s in by_setting(doc) if s.endswith('.mtu')]
    assert mtus == ['net.ens1f1.mtu']
    _, doc = preflight(cobalt_bench, '--root', root, '--interface', 'nosuch0',
                       tmp_path=tmp_path)
    f = by_setting(doc)['net.nosuch0.mtu']
    assert f['status'] == 'unknown' and f['value'] == 'no such interface'


def test_json_to_stdout(cobalt_bench):
    proc = subprocess.run([cobalt_bench, 'preflight', '--root',
                           os.path.join(DATA, 'compliant'), '--json', '-'],
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)['verdict'] == 'COMPLIANT'


@pytest.mark.parametrize('args, status, message', [
    (['--root', '/nonexistent/tree'], 2, 'no such directory'),
    (['--no-such-option'], 2, 'unrecognized arguments'),
    (['--root'], 2, 'expected one argument'),
    (['--record', DATA], 2, 'not empty'),
])
def test_usage_errors(cobalt_bench, args, status, message):
    proc = subprocess.run([cobalt_bench, 'preflight', *args], text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ''


def test_cannot_run_on_an_empty_tree(cobalt_bench, tmp_path):
    proc = subprocess.run([cobalt_bench, 'preflight', '--root', str(tmp_path)],
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 3
    assert 'neither sys/ nor proc/' in proc.stderr


def test_help(cobalt_bench):
    proc = subprocess.run([cobalt_bench, 'preflight', '--help'], text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    for word in ('--root', '--interface', '--json', '--record', 'unknown'):
        assert word in proc.stdout


def test_reframe_check_records_the_findings(repo_root, tmp_path):
    '''The ReFrame check Preflight on the site `local` (recorded, not judged there).'''
    env = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run(
        [sys.executable, '-c', 'import sys; from reframe.frontend.cli import main; '
                               'sys.argv[0] = "reframe"; sys.exit(main())',
         '-C', str(repo_root / 'site-configs/local/config.py'),
         '-c', str(repo_root / 'reframe_checks/preflight.py'), '-r', '--nocolor'],
        cwd=str(tmp_path), env=env, text=True, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(tmp_path / 'local/run/report.json') as fp:
        (tc,) = [tc for r in json.load(fp)['runs'] for tc in r['testcases']]
    assert tc['name'] == 'Preflight' and tc['result'] == 'pass'
    perf = {k.split(':')[-1]: v for k, v in tc['perfvalues'].items()}
    with open(os.path.join(tc['outputdir'], 'preflight.json')) as fp:
        doc = json.load(fp)
    for name in ('required_failed', 'required_unknown', 'settings_failed', 'settings_passed'):
        assert perf[name][0] == doc['metrics'][name]['value']
        assert perf[name][4] == 'settings'
