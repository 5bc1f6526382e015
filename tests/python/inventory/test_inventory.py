'''`cobalt-bench inventory`: the roots of tests/data/inventory (each with an expected.json,
worked out from its files), this machine live (cross-checked with os, taskset and
dpkg-query), a recording read back, absent files, and the command's usage.'''

import json
import os
import resource
import shutil
import socket
import subprocess

import pytest

from plugins.checkout import BIN, DATA, clean_env

ROOTS = DATA / 'inventory'
EXPECTED = sorted(p.parent.name for p in ROOTS.glob('*/expected.json'))
ENVELOPE = ['test', 'version', 'test_version', 'host', 'started', 'duration_s', 'config',
            'items', 'identity']


COBALT_BENCH = str(BIN / 'cobalt-bench')


def inventory(*args, taskset=None):
    '''`cobalt-bench inventory ARGS --json -` (under `taskset -c CPUS`): (process, document).'''
    cmd = (['taskset', '-c', taskset] if taskset else []) + [
        COBALT_BENCH, 'inventory', *args, '--json', '-']
    proc = subprocess.run(cmd, text=True, capture_output=True, timeout=120, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(proc.stdout)


def test_every_root_is_tested():
    # A root without expected.json is never tested: none may be left without one.
    roots = sorted(p.name for p in ROOTS.iterdir() if p.is_dir())
    assert {'vm-x86', 'xeon-vm', 'server-2s'} <= set(EXPECTED) and roots == EXPECTED


@pytest.mark.parametrize('root', EXPECTED)
def test_root_gives_its_expected_items(root):
    expected = json.loads((ROOTS / root / 'expected.json').read_text())
    _, doc = inventory('--root', str(ROOTS / root))
    assert list(doc) == ENVELOPE
    assert doc['test'] == 'inventory' and doc['test_version'] == '1.0'
    assert doc['config'] == {'root': str(ROOTS / root)}
    assert list(doc['items'].items()) == list(expected['items'].items())   # order too
    assert doc['identity'] == expected['identity'] and doc['host'] == expected['host']


# What each root is, read off its files (README.md): the facts the fleet analysis uses.
FACTS = {
    'vm-x86': {'cpu.model': 'AMD EPYC', 'cpu.sockets': 1, 'cpu.cores': 2, 'cpu.threads': 2,
               'cpu.usable': 2, 'cpu.usable_list': '0-1', 'numa.nodes': 1,
               'memory.total': 24684084 * 1024, 'memory.node0': 9660620 * 1024,
               'net.eth0.driver': 'virtio_net', 'net.eth0.speed': -1, 'net.eth0.mtu': 1400,
               'os.release': 'Debian GNU/Linux 12 (bookworm)', 'packages.count': 1109},
    'xeon-vm': {'cpu.model': 'Intel(R) Xeon(R) Processor', 'cpu.microcode': '0x1',
                'cpu.sockets': 1, 'cpu.cores': 2, 'cpu.threads': 2, 'cpu.usable': 2,
                'numa.nodes': 1, 'memory.total': 24683792 * 1024,
                'memory.node0': 24683792 * 1024, 'kernel.release': '6.18.44-fc-v1252',
                'net.eth0.driver': 'virtio_net', 'net.eth0.speed': -1, 'net.eth0.mtu': 1400,
                'os.release': 'Debian GNU/Linux 12 (bookworm)', 'packages.count': 1139},
    'server-2s': {'cpu.model': 'Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz',
                  'cpu.microcode': '0x5003604', 'cpu.sockets': 2, 'cpu.cores': 40,
                  'cpu.threads': 80, 'cpu.usable': 80, 'numa.nodes': 2,
                  'memory.total': (197426100 + 198177724) * 1024,
                  'memory.node0': 197426100 * 1024, 'memory.node1': 198177724 * 1024,
                  'memory.usable_nodes': '0-1', 'dmi.product_name': 'PowerEdge R640',
                  'dimm.count': 12, 'dimm.sizes': ['32 GB'] * 12,
                  'dimm.speeds': ['2933 MT/s'] * 12, 'net.ens2f0.driver': 'ice',
                  'net.ens2f0.firmware': '4.20 0x80017785 1.3346.0',
                  'net.ens2f0.speed': 25000, 'net.ens2f0.mtu': 9000,
                  'net.ib0.driver': 'mlx5_core', 'ib.mlx5_0.fw_ver': '20.38.1002',
                  'ib.mlx5_0.port1.rate': '100 Gb/sec (2X HDR)',
                  'sysctl.net.ipv4.udp_mem': '9270432 12360576 18540864',
                  'packages.count': 13},
}
ABSENT = {
    'vm-x86': ['dmi.bios_version', 'dimm.count', 'net.eth0.firmware', 'gpu.count',
               'net.lo.mtu', 'net.ifb0.mtu'],
    'xeon-vm': ['dmi.bios_version', 'dmi.product_serial', 'dimm.count', 'net.eth0.firmware',
                'gpu.driver', 'ib.mlx5_0.fw_ver'],
    'server-2s': ['net.ens2f1.speed', 'net.lo.mtu', 'gpu.driver', 'gpu.count'],
}


@pytest.mark.parametrize('root', sorted(FACTS))
def test_root_facts(root):
    _, doc = inventory('--root', str(ROOTS / root))
    items = doc['items']
    assert {k: items.get(k) for k in FACTS[root]} == FACTS[root]
    assert not set(ABSENT[root]) & set(items)
    assert {'host.name', 'host.boot_id'} <= set(doc['identity'])
    assert not {k for k in doc['identity'] if k.startswith(('cpu.', 'memory.'))}


def test_this_machine():
    proc, doc = inventory()
    items = doc['items']
    assert items['cpu.usable'] == len(os.sched_getaffinity(0))
    assert items['cpu.threads'] == os.cpu_count()
    assert items['memory.total'] == os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
    assert items['kernel.release'] == os.uname().release
    assert doc['host'] == items['host.name'] == socket.gethostname()
    if shutil.which('dpkg-query') and os.path.exists('/var/lib/dpkg/status'):
        listed = subprocess.run(['dpkg-query', '-W', '-f', '${db:Status-Status} '
                                 '${Package}=${Version}\n'], text=True, capture_output=True,
                                timeout=60).stdout.splitlines()
        installed = sorted(line.split(' ', 1)[1] for line in listed
                           if line.startswith('installed '))
        assert items['packages.count'] == len(installed)


def test_a_job_given_one_cpu_says_so():
    # What a node whose jobs get fewer CPUs shows: the CPUs are online, one is usable.
    _, doc = inventory(taskset='0')
    assert doc['items']['cpu.usable'] == 1 and doc['items']['cpu.usable_list'] == '0'
    assert doc['items']['cpu.threads'] == os.cpu_count()


def test_record_then_root_gives_the_same(tmp_path):
    # Recorded under taskset: the recording keeps what the job was given.
    rec = tmp_path / 'rec'
    _, live = inventory('--record', str(rec), taskset='0')
    _, replay = inventory('--root', str(rec))
    assert replay['items'] == live['items'] and replay['identity'] == live['identity']
    assert replay['host'] == live['host'] and replay['items']['cpu.usable'] == 1
    # The package list is recorded, not dpkg's status file (megabytes).
    assert (rec / 'cobalt-bench' / 'packages').is_file() == ('packages.count' in live['items'])
    assert not (rec / 'var').exists()
    size = sum(p.stat().st_size for p in rec.rglob('*') if p.is_file() and not p.is_symlink())
    assert size < 400_000


def test_absent_files_give_absent_items(tmp_path):
    root = tmp_path / 'root'
    shutil.copytree(ROOTS / 'server-2s', root, symlinks=True)
    (root / 'expected.json').unlink()
    for path in ('sys/devices/virtual/dmi', 'sys/class/infiniband', 'cobalt-bench',
                 'proc/self', 'proc/stat', 'etc/os-release',
                 'sys/devices/system/cpu/cpu79/topology/core_id'):
        target = root / path
        shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else \
            target.unlink()
    _, doc = inventory('--root', str(root))
    items = doc['items']
    gone = ('dmi.', 'ib.', 'dimm.', 'packages.', 'cpu.usable', 'memory.usable_nodes',
            'host.boot_time', 'os.release', 'cpu.cores', 'cpu.sockets', 'net.ib0.firmware')
    assert not [k for k in items if k.startswith(gone)]
    # The rest is still read: a part of the topology is no count, the online CPUs are.
    assert items['cpu.threads'] == 80 and items['memory.total'] == 395603824 * 1024
    assert items['net.ens2f0.mtu'] == 9000 and 'net.ens2f0.firmware' not in items
    assert None not in items.values()


def test_a_root_of_one_file(tmp_path):
    (tmp_path / 'proc').mkdir()
    (tmp_path / 'proc' / 'meminfo').write_text('MemTotal:       1024 kB\n')
    _, doc = inventory('--root', str(tmp_path))
    assert doc['items'] == {'memory.total': 1048576} and doc['identity'] == []
    assert doc['host'] == tmp_path.name


def test_human_output():
    proc = subprocess.run([COBALT_BENCH, 'inventory', '--root', str(ROOTS / 'server-2s')],
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    head, *lines = proc.stdout.splitlines()
    assert head.startswith('cobalt-bench inventory ') and 'on cn042' in head
    expected = json.loads((ROOTS / 'server-2s' / 'expected.json').read_text())['items']
    assert [line.split()[0] for line in lines] == list(expected)
    column = {len(line) - len(line[len(line.split()[0]):].lstrip()) for line in lines}
    assert len(column) == 1                                         # values aligned
    assert 'cpu.threads' in lines[8] and lines[8].endswith('  80')
    assert any(line.endswith('32 GB, 32 GB') for line in lines)     # lists joined


def test_json_file_and_quiet(tmp_path):
    dest = tmp_path / 'inv.json'
    proc = subprocess.run([COBALT_BENCH, 'inventory', '--root', str(ROOTS / 'vm-x86'),
                           '--json', str(dest), '-q'], text=True, capture_output=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout == '' and proc.stderr == ''
    assert json.loads(dest.read_text())['items']['cpu.threads'] == 2
    assert os.listdir(tmp_path) == ['inv.json']


def test_json_that_cannot_be_written_exits_3(tmp_path):
    dest = tmp_path / 'inv.json'
    dest.write_text('{"earlier": true}\n')

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
    proc = subprocess.run([COBALT_BENCH, 'inventory', '--root', str(ROOTS / 'server-2s'),
                           '--json', str(dest), '-q'], text=True, capture_output=True,
                          timeout=60, preexec_fn=small_files)
    assert proc.returncode == 3 and f'cannot write {dest}' in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == ['inv.json'] and 'earlier' in dest.read_text()


@pytest.mark.parametrize('args, status, message', [
    (['--root', '/nonexistent/root'], 2, '--root /nonexistent/root: no such directory'),
    (['--root', str(ROOTS / 'vm-x86'), '--record', 'X'], 2, 'cannot be combined'),
    (['--record', str(ROOTS / 'vm-x86')], 2, 'not empty'),
    (['--record', '/proc/cb-inventory'], 2, 'cannot write there'),
    (['--json', '/nonexistent/dir/inv.json'], 2, 'no such directory'),
    (['--bogus'], 2, 'unrecognized arguments: --bogus'),
    (['--root'], 2, 'expected one argument'),
    (['--root', str(DATA / 'store')], 3, 'holds neither sys/ nor proc/'),
])
def test_usage_errors(args, status, message):
    proc = subprocess.run([COBALT_BENCH, 'inventory', *args], text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == status and message in proc.stderr, proc.stderr
    assert proc.stdout == '' and 'Traceback' not in proc.stderr


def test_help():
    proc = subprocess.run([COBALT_BENCH, 'inventory', '--help'], text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0
    for word in ('--root', '--record', '--json', '-q', 'identity', 'cpu.usable',
                 'exit status: 0', '2 usage error', '3 cannot run'):
        assert word in proc.stdout, word
    top = subprocess.run([COBALT_BENCH, '--help'], text=True, capture_output=True, timeout=60)
    assert 'inventory' in top.stdout
