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

from plugins.checkout import DATA as TEST_DATA

DATA = str(TEST_DATA / 'sysfs')
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
    # preflight's own summary, labelled, in no verdict word of a run's (issue 56)
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last.startswith('Own summary:       ') and 'not the run\'s verdict' in last
    assert 'failed' in last and 'COMPLIANT' not in last and 'Verdict' not in proc.stdout


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


# ---- PCIe links: one rule, cb-pcie-links's, which gpu-copy applies too -------------------

def gen4_gpu_in_gen3_slot(tmp_path):
    '''The compliant node with its first GPU, a Gen4 card, moved below a Gen3 root port
    (0000:3a:00.0) and read idle: it runs at 8.0 of its 16.0 GT/s.'''
    root = tmp_path / 'tree'
    shutil.copytree(os.path.join(DATA, 'compliant'), root, symlinks=True)
    host = root / 'sys/devices/pci0000:3b'
    port = host / '0000:3a:00.0'
    port.mkdir()
    for name, text in (('class', '0x060400'), ('vendor', '0x8086'),
                       ('current_link_speed', '8.0 GT/s PCIe'), ('current_link_width', '16'),
                       ('max_link_speed', '8.0 GT/s PCIe'), ('max_link_width', '16')):
        (port / name).write_text(text + '\n')
    shutil.move(str(host / '0000:3b:00.0'), str(port / '0000:3b:00.0'))
    (port / '0000:3b:00.0/max_link_speed').write_text('16.0 GT/s PCIe\n')
    devices = root / 'sys/bus/pci/devices'
    (devices / '0000:3b:00.0').unlink()
    os.symlink('../../../devices/pci0000:3b/0000:3a:00.0/0000:3b:00.0', devices / '0000:3b:00.0')
    os.symlink('../../../devices/pci0000:3b/0000:3a:00.0', devices / '0000:3a:00.0')
    return root


def test_pcie_one_rule_where_the_old_rules_disagreed(cobalt_bench, repo_root, tmp_path):
    # preflight's own rule saw "8.0 of 16.0 GT/s on an idle GPU" and warned (GPUs rest their
    # link); gpu-copy's rule sees that the port supports only Gen3, so the GPU is not resting:
    # degraded. Now both are the same rule (cb-pcie-links), and preflight fails the link.
    root = gen4_gpu_in_gen3_slot(tmp_path)
    proc, doc = preflight(cobalt_bench, '--root', str(root), tmp_path=tmp_path)
    f = by_setting(doc)['pcie.gpu.0000:3b:00.0']
    assert f['status'] == 'fail', f
    assert 'only Gen3' in f['note'] and '0000:3a:00.0' in f['note']
    assert 'x16 8.0 GT/s PCIe (max x16 16.0 GT/s PCIe)' in f['value']
    assert doc['verdict'] == 'NOT COMPLIANT' and proc.returncode == 1
    tool = subprocess.run([str(repo_root / 'bin' / 'cb-pcie-links'), '--sysfs-root',
                           str(root / 'sys'), '--json', '-'], text=True, capture_output=True,
                          timeout=60)
    assert tool.returncode == 1
    listed = {d['address']: d for d in json.loads(tool.stdout)['devices']}
    assert listed['0000:3b:00.0']['status'] == 'degraded'
    assert '0000:3a:00.0' not in listed          # a port: the upper end of a link
    gpu_copy = repo_root / 'bin' / 'gpu-copy'
    if os.access(gpu_copy, os.X_OK):
        r = subprocess.run([str(gpu_copy), '--explain-links', '--sysfs-root', str(root / 'sys')],
                           text=True, capture_output=True, timeout=60)
        assert r.returncode == 1 and 'Degraded links:    1 (GPU 0000:3b:00.0)' in r.stdout


def test_pcie_verdicts_are_cb_pcie_links(cobalt_bench, repo_root, tmp_path):
    root = os.path.join(DATA, 'noncompliant')
    _, doc = preflight(cobalt_bench, '--root', root, tmp_path=tmp_path)
    tool = subprocess.run([str(repo_root / 'bin' / 'cb-pcie-links'), '--sysfs-root',
                           os.path.join(root, 'sys'), '--json', '-'], text=True,
                          capture_output=True, timeout=60)
    listed = {d['address']: d['status'] for d in json.loads(tool.stdout)['devices']}
    status = {'ok': 'pass', 'idle-low': 'warn', 'degraded': 'fail', 'unknown': 'unknown'}
    pcie = {s[9:]: f['status'] for s, f in by_setting(doc).items()
            if s.startswith(('pcie.gpu.', 'pcie.nic.'))}
    assert pcie and pcie == {a: status[listed[a]] for a in pcie}


def test_pcie_without_cb_pcie_links_is_unknown(cobalt_bench, tmp_path):
    env = dict(os.environ, COBALT_BENCH_PCIE_LINKS='')
    doc_path = tmp_path / 'p.json'
    proc = subprocess.run([cobalt_bench, 'preflight', '--root', os.path.join(DATA, 'compliant'),
                           '--json', str(doc_path)], text=True, capture_output=True,
                          timeout=60, env=env)
    doc = json.loads(doc_path.read_text())
    f = by_setting(doc)
    for setting in ('pcie.gpu.0000:3b:00.0', 'pcie.nic.0000:17:00.0'):
        assert f[setting]['status'] == 'unknown'
        assert 'unknown: cb-pcie-links not installed' in f[setting]['value']
    assert doc['verdict'] == 'UNDETERMINED' and proc.returncode == 1
    assert 'cb-pcie-links not installed' in proc.stdout


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


def test_net_sysctl_tips_come_from_one_table(tmp_path):
    # The tips are one list, python/cobalt_bench/data/net-sysctls.tsv, which eth-test's
    # preflight is built from too (tests/kernels/eth_test/ compares what both print).
    from cobalt_bench.preflight import NET_SYSCTLS, load_net_sysctls
    assert [(name, mins) for name, mins, _ in NET_SYSCTLS] == [
        ('net.core.rmem_max', (16777216,)), ('net.core.rmem_default', (16777216,)),
        ('net.core.wmem_max', (16777216,)), ('net.core.wmem_default', (16777216,)),
        ('net.core.netdev_max_backlog', (250000,)),
        ('net.ipv4.udp_mem', (262144, 327680, 393216))]
    table = tmp_path / 'tips.tsv'
    table.write_text('# comment\n\nnet.core.rmem_max\t4096\t\nnet.ipv4.udp_mem\t1 2 3\teach, pages\n')
    assert load_net_sysctls(str(table)) == [('net.core.rmem_max', (4096,), ''),
                                            ('net.ipv4.udp_mem', (1, 2, 3), 'each, pages')]
