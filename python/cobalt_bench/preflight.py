'''Preflight: the system settings the COBALT2 compliance document requires or recommends,
read from sysfs/procfs, each with its value, what is expected and the command that fixes it.

Required (the document: "all tests must show compliance under the following system
settings", "Jumbo frames must be enabled for the participating NICs", and its purpose, "the
absence of avoidable performance bottlenecks ... performance-degrading riser cards and
inefficient PCIe"):
  - CPU frequency governor `performance` on every online CPU
  - turbo disabled (intel_pstate/no_turbo = 1, or cpufreq boost = 0 for acpi-cpufreq/AMD)
  - jumbo frames (MTU >= 9000) on the tested Ethernet interfaces
  - GPU and NIC PCIe links at their maximum width and speed (judged by cb-pcie-links,
    the rule gpu-copy applies too; "unknown" where that tool is not installed)
Recommended (the document's tips):
  - the network sysctls of data/net-sysctls.tsv (net.core.{r,w}mem_{max,default},
    net.core.netdev_max_backlog, net.ipv4.udp_mem) at least at their tips' values; the
    same file is eth-test-send/receive's preflight list
  - real-time priority available (`chrt -f 1 <command>`)
  - a NUMA layout where every node with CPUs has memory, balanced across nodes
    (stations, NICs and GPUs are spread over NUMA domains)

A file that is absent (no cpufreq in a VM, no PCIe link attributes for a virtual device)
makes the finding `unknown`, never `pass`. Statuses: pass, fail, warn (probably fine, look
again: an idle GPU lowers its link speed), unknown, skip (nothing to check: no GPU).

Everything is read through a Tree, so `--root DIR` judges a recorded tree (DIR/sys/...,
DIR/proc/...) and `--record DIR` writes such a tree: every file this module read, with
sysfs's relative symbolic links, so it can be judged elsewhere.
'''

import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field

from . import UsageError, CannotRun, __version__
from .atomic import atomic_file

TEST_VERSION = '1.0'

PASS, FAIL, WARN, UNKNOWN, SKIP = 'pass', 'fail', 'warn', 'unknown', 'skip'
REQUIRED, RECOMMENDED = 'required', 'recommended'

# Which checks a setting can spoil (matched against check names, kernel names and ReFrame
# tags by the report, to put findings next to the failures they may explain).
CPU_BOUND = ['memory', 'gpu', 'ethernet', 'interconnect']


def load_net_sysctls(path=None):
    '''The compliance document's network tips, from their one list (data/net-sysctls.tsv,
    also compiled into eth-test): [(name, minimums (a tuple of ints), note)]. Minimums:
    larger values are fine; a sysctl of several numbers is compared field by field.'''
    if path is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data',
                            'net-sysctls.tsv')
    rows = []
    with open(path) as fp:
        for line in fp:
            if not line.strip() or line.startswith('#'):
                continue
            name, value, note = (line.rstrip('\n').split('\t') + ['', ''])[:3]
            rows.append((name, tuple(int(v) for v in value.split()), note))
    return rows


NET_SYSCTLS = load_net_sysctls()

JUMBO_MTU = 9000

# PCI ids: GPUs are display (0x0300) or 3D/other display controllers (0x0302, 0x0380) of
# these vendors; NICs are network controllers (class 0x02xxxx: Ethernet, InfiniBand, ...).
GPU_VENDORS = {'0x10de': 'NVIDIA', '0x1002': 'AMD'}
GPU_CLASSES = ('0x0300', '0x0302', '0x0380')
NIC_CLASS = '0x02'

CAP_SYS_NICE = 23


@dataclass
class Finding:
    setting: str        # e.g. 'cpu.governor', 'net.eth0.mtu', 'pcie.0000:17:00.0'
    status: str         # pass, fail, warn, unknown, skip
    value: str          # what was found
    expected: str       # what the compliance document wants
    fix: str            # the command (or action) that fixes it
    level: str          # required or recommended
    affects: list = field(default_factory=list)   # check families it can spoil
    source: str = ''    # where it was read
    note: str = ''      # why unknown, or what to look at


# ---- reading sysfs/procfs, live or from a recorded tree -------------------------------

class Tree:
    '''sysfs/procfs under `root` ('/' for this machine). Every read is tolerant: an absent
    or unreadable file is None, which the checks turn into `unknown`.'''

    def __init__(self, root='/'):
        self.root = os.path.abspath(root)
        self.live = self.root == '/'

    def _p(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def read(self, path):
        try:
            with open(self._p(path)) as fp:
                return fp.read().strip()
        except (OSError, UnicodeDecodeError):
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(self._p(path)))
        except OSError:
            return None

    def exists(self, path):
        return os.path.lexists(self._p(path))

    def realpath(self, path):
        '''The path with symbolic links resolved, inside the tree.'''
        real = os.path.realpath(self._p(path))
        if self.root == '/':
            return real
        if real == self.root or real.startswith(self.root + os.sep):
            return '/' + os.path.relpath(real, self.root)
        return None   # a link leading out of the recorded tree


class RecordingTree(Tree):
    '''This machine's tree that copies everything it reads into `dest`, with the symbolic
    links on the way (sysfs uses relative links), so `Tree(dest)` reads the same.'''

    def __init__(self, dest):
        super().__init__('/')
        self.dest = os.path.abspath(dest)

    def _mirror(self, path):
        '''Recreate the symbolic links along `path` under dest; return the real path.'''
        cur = '/'
        for comp in [c for c in path.split('/') if c]:
            nxt = os.path.join(cur, comp)
            # /proc/self names the reading process: record it as a plain directory.
            if os.path.islink(nxt) and nxt != '/proc/self':
                link = self.dest + nxt
                if not os.path.lexists(link):
                    os.makedirs(os.path.dirname(link), exist_ok=True)
                    os.symlink(os.readlink(nxt), link)
                cur = os.path.realpath(nxt)
            else:
                cur = nxt
        return cur

    def _failed(self, path, err):
        # Not an OSError: the checks treat an OSError as an unreadable setting, and a
        # copy that could not be written must stop the recording, not pass for one.
        return CannotRun(f'--record {self.dest}: cannot record {path}: '
                         f'{err.strerror or err}')

    def read(self, path):
        value = super().read(path)
        if value is not None:
            try:
                real = self._mirror(path)
                target = self.dest + (path if path.startswith('/proc/self/') else real)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, 'w') as fp:
                    fp.write(value + '\n')
            except OSError as err:
                raise self._failed(path, err)
        return value

    def listdir(self, path):
        entries = super().listdir(path)
        if entries is not None:
            try:
                real = self._mirror(path)
                os.makedirs(self.dest + real, exist_ok=True)
            except OSError as err:
                raise self._failed(path, err)
        return entries

    def exists(self, path):
        found = super().exists(path)
        if found:
            try:
                real = self._mirror(path)
                if os.path.isdir(real):
                    os.makedirs(self.dest + real, exist_ok=True)
                    return found
                recorded = os.path.lexists(self.dest + real)
            except OSError as err:
                raise self._failed(path, err)
            if not recorded:
                self.read(path)
        return found


# ---- the checks ------------------------------------------------------------------------

def _online_cpus(tree):
    cpus = [c for c in (tree.listdir('/sys/devices/system/cpu') or [])
            if re.fullmatch(r'cpu\d+', c)]
    # cpuN/online is absent for CPUs that cannot go offline (cpu0): those are online.
    return sorted((c for c in cpus
                   if tree.read(f'/sys/devices/system/cpu/{c}/online') != '0'),
                  key=lambda c: int(c[3:]))


def check_governor(tree):
    cpus = _online_cpus(tree)
    source = '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor'
    common = dict(setting='cpu.governor', expected='performance on every online CPU',
                  fix='cpupower frequency-set -g performance', level=REQUIRED,
                  affects=CPU_BOUND, source=source)
    if not cpus:
        return Finding(status=UNKNOWN, value='no CPUs listed in /sys/devices/system/cpu',
                       **common)
    governors = {c: tree.read(f'/sys/devices/system/cpu/{c}/cpufreq/scaling_governor')
                 for c in cpus}
    known = {c: g for c, g in governors.items() if g}
    if not known:
        return Finding(status=UNKNOWN, value='not readable (no cpufreq in sysfs)',
                       note='no frequency-scaling driver: typical of a VM, or the '
                            'firmware controls the frequency (check the BIOS power profile)',
                       **common)
    counts = {}
    for g in known.values():
        counts[g] = counts.get(g, 0) + 1
    value = ', '.join(f'{g} on {n} of {len(cpus)} CPUs' for g, n in sorted(counts.items()))
    if len(known) < len(cpus):
        value += f', unreadable on {len(cpus) - len(known)}'
        status = FAIL if set(known.values()) - {'performance'} else UNKNOWN
    else:
        status = PASS if set(known.values()) == {'performance'} else FAIL
    return Finding(status=status, value=value, **common)


def check_turbo(tree):
    common = dict(setting='cpu.turbo', expected='disabled', level=REQUIRED,
                  affects=CPU_BOUND)
    no_turbo = tree.read('/sys/devices/system/cpu/intel_pstate/no_turbo')
    if no_turbo is not None:
        return Finding(status=PASS if no_turbo == '1' else FAIL,
                       value=f'intel_pstate no_turbo={no_turbo}',
                       fix='echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo',
                       source='/sys/devices/system/cpu/intel_pstate/no_turbo', **common)
    boost = tree.read('/sys/devices/system/cpu/cpufreq/boost')
    if boost is not None:
        return Finding(status=PASS if boost == '0' else FAIL,
                       value=f'cpufreq boost={boost}',
                       fix='echo 0 > /sys/devices/system/cpu/cpufreq/boost',
                       source='/sys/devices/system/cpu/cpufreq/boost', **common)
    # amd-pstate (and newer kernels) switch boost per cpufreq policy.
    policies = [p for p in (tree.listdir('/sys/devices/system/cpu/cpufreq') or [])
                if re.fullmatch(r'policy\d+', p)]
    boosts = {p: tree.read(f'/sys/devices/system/cpu/cpufreq/{p}/boost') for p in policies}
    boosts = {p: b for p, b in boosts.items() if b is not None}
    fix = 'for f in /sys/devices/system/cpu/cpufreq/policy*/boost; do echo 0 > $f; done'
    if boosts:
        on = sorted((p for p, b in boosts.items() if b != '0'), key=lambda p: int(p[6:]))
        value = (f'boost on in {len(on)} of {len(boosts)} cpufreq policies' if on
                 else f'boost off in all {len(boosts)} cpufreq policies')
        return Finding(status=FAIL if on else PASS, value=value, fix=fix,
                       source='/sys/devices/system/cpu/cpufreq/policy*/boost', **common)
    return Finding(status=UNKNOWN, value='not readable (no intel_pstate or cpufreq boost)',
                   fix='echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (Intel); '
                       'echo 0 > /sys/devices/system/cpu/cpufreq/boost (AMD, acpi-cpufreq)',
                   note='no frequency-scaling driver exposes turbo: typical of a VM; '
                        'check the BIOS (Turbo Boost / Core Performance Boost)',
                   source='/sys/devices/system/cpu/intel_pstate/no_turbo, '
                          '/sys/devices/system/cpu/cpufreq/boost', **common)


def physical_ethernet(tree):
    '''Ethernet interfaces backed by a device (not lo, bridges, bonds, tunnels, ifb).'''
    names = []
    for name in tree.listdir('/sys/class/net') or []:
        if tree.read(f'/sys/class/net/{name}/type') != '1':   # ARPHRD_ETHER
            continue
        if not tree.exists(f'/sys/class/net/{name}/device'):
            continue
        if tree.exists(f'/sys/class/net/{name}/wireless'):
            continue
        names.append(name)
    return names


def check_mtu(tree, interfaces):
    if interfaces is None:
        if tree.listdir('/sys/class/net') is None:
            return [Finding(setting='net.mtu', status=UNKNOWN, value='no /sys/class/net',
                            expected=f'MTU >= {JUMBO_MTU} on tested interfaces',
                            fix='ip link set IFACE mtu 9000', level=REQUIRED,
                            affects=['ethernet'], source='/sys/class/net')]
        interfaces = physical_ethernet(tree)
        if not interfaces:
            return [Finding(setting='net.mtu', status=SKIP,
                            value='no physical Ethernet interface',
                            expected=f'MTU >= {JUMBO_MTU} on tested interfaces',
                            fix='', level=REQUIRED, affects=['ethernet'],
                            source='/sys/class/net/*/{type,device}')]
    findings = []
    for name in interfaces:
        mtu = tree.read(f'/sys/class/net/{name}/mtu')
        speed = tree.read(f'/sys/class/net/{name}/speed')
        state = tree.read(f'/sys/class/net/{name}/operstate')
        extra = ', '.join(x for x in (
            f'{speed} Mbit/s' if speed and speed.lstrip('-').isdigit() and int(speed) > 0
            else '', state or '') if x)
        if mtu is None:
            status, value = UNKNOWN, 'no such interface' if not tree.exists(
                f'/sys/class/net/{name}') else 'not readable'
        else:
            status = PASS if int(mtu) >= JUMBO_MTU else FAIL
            value = mtu + (f' ({extra})' if extra else '')
        findings.append(Finding(
            setting=f'net.{name}.mtu', status=status, value=value,
            expected=f'>= {JUMBO_MTU} (jumbo frames)', fix=f'ip link set {name} mtu 9000',
            level=REQUIRED, affects=['ethernet'], source=f'/sys/class/net/{name}/mtu'))
    return findings


def check_net_sysctls(tree):
    findings = []
    for name, minimums, note in NET_SYSCTLS:
        path = '/proc/sys/' + name.replace('.', '/')
        raw = tree.read(path)
        want = ' '.join(map(str, minimums))
        common = dict(setting=name, expected=f'>= {want}' + (f' ({note})' if note else ''),
                      fix=f"sysctl -w {name}='{want}'" if len(minimums) > 1 else
                      f'sysctl -w {name}={want}',
                      level=RECOMMENDED, affects=['ethernet'], source=path)
        values = raw.split() if raw else []
        if len(values) != len(minimums) or not all(v.isdigit() for v in values):
            findings.append(Finding(status=UNKNOWN, value='not readable', **common))
        else:
            ok = all(int(v) >= w for v, w in zip(values, minimums))
            findings.append(Finding(status=PASS if ok else FAIL, value=' '.join(values),
                                    **common))
    return findings


def _cpulist_count(text):
    n = 0
    for part in (text or '').split(','):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition('-')
        n += int(hi or lo) - int(lo) + 1
    return n


def numa_layout(tree):
    '''{node: (cpulist text, number of CPUs, MemTotal kB or None)}, or None.'''
    names = [n for n in (tree.listdir('/sys/devices/system/node') or [])
             if re.fullmatch(r'node\d+', n)]
    if not names:
        return None
    layout = {}
    for n in sorted(names, key=lambda n: int(n[4:])):
        cpulist = tree.read(f'/sys/devices/system/node/{n}/cpulist')
        meminfo = tree.read(f'/sys/devices/system/node/{n}/meminfo') or ''
        m = re.search(r'MemTotal:\s+(\d+)\s*kB', meminfo)
        layout[int(n[4:])] = (cpulist or '', _cpulist_count(cpulist),
                              int(m.group(1)) if m else None)
    return layout


def check_numa(tree):
    common = dict(setting='numa.layout',
                  expected='every node with CPUs has memory; memory within 10% across '
                           'those nodes',
                  fix='populate the memory channels of every socket alike; in the BIOS, '
                      'NUMA on (no node interleaving), and the same sub-NUMA clustering '
                      'on every node',
                  level=RECOMMENDED, affects=['memory', 'gpu', 'ethernet'],
                  source='/sys/devices/system/node/node*/{cpulist,meminfo}')
    layout = numa_layout(tree)
    if layout is None:
        return Finding(status=UNKNOWN, value='no /sys/devices/system/node', **common)
    parts = []
    for node, (cpulist, ncpu, mem) in layout.items():
        mem_txt = f'{mem / 1048576:.1f} GiB' if mem is not None else 'memory unknown'
        parts.append(f'node{node}: {ncpu} CPUs ({cpulist or "-"}), {mem_txt}')
    value = f'{len(layout)} node(s): ' + '; '.join(parts)
    cpu_nodes = {n: v for n, v in layout.items() if v[1] > 0}
    if any(v[2] is None for v in cpu_nodes.values()):
        return Finding(status=UNKNOWN, value=value, note='MemTotal not readable', **common)
    memoryless = [n for n, v in cpu_nodes.items() if v[2] == 0]
    if memoryless:
        return Finding(status=FAIL, value=value,
                       note=f'node(s) {memoryless} have CPUs but no memory: their CPUs '
                            'work on remote memory', **common)
    mems = [v[2] for v in cpu_nodes.values()]
    if mems and max(mems) > 1.10 * min(mems):
        return Finding(status=FAIL, value=value,
                       note='memory differs by more than 10% between nodes: unequal '
                            'DIMM population', **common)
    return Finding(status=PASS, value=value, **common)


# PCIe links are judged by cb-pcie-links (src/gpu-copy/pcie-links.c), which applies the
# one PCIe link rule of cobalt-bench, the one gpu-copy applies to its GPUs: a link is
# degraded when it runs with fewer lanes or a lower rate than the device supports (on the
# device's own link or an uplink above it), whether the port above limits it or the link
# trained low; only a GPU's own link read idle is excused a low rate (it rests its link).
PCIE_LINKS_TOOL = 'cb-pcie-links'
PCIE_STATUS = {'ok': PASS, 'idle-low': WARN, 'degraded': FAIL, 'unknown': UNKNOWN}
LINK_ATTRS = ('current_link_width', 'max_link_width', 'current_link_speed', 'max_link_speed')


def pcie_links_tool():
    '''The cb-pcie-links to run: $COBALT_BENCH_PCIE_LINKS if set (empty: none), else the
    one in this tree's bin/ (the same version as this package), else the one on PATH;
    None when there is none.'''
    env = os.environ.get('COBALT_BENCH_PCIE_LINKS')
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    try:
        from . import paths
        root = paths.root()
    except ImportError:
        root = None
    if root:
        candidate = os.path.join(root, 'bin', PCIE_LINKS_TOOL)
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which(PCIE_LINKS_TOOL)


def pcie_links(tree):
    '''({address: device} as cb-pcie-links judges the tree's PCI devices, '') or
    (None, why not).'''
    tool = pcie_links_tool()
    if tool is None:
        return None, f'{PCIE_LINKS_TOOL} not installed'
    try:
        proc = subprocess.run([tool, '--sysfs-root', tree._p('/sys'), '--quiet', '--json', '-'],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode not in (0, 1):
            msg = (proc.stderr or proc.stdout).strip().splitlines()
            return None, f'{PCIE_LINKS_TOOL} failed: {msg[-1] if msg else proc.returncode}'
        doc = json.loads(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as err:
        return None, f'{PCIE_LINKS_TOOL} failed: {err}'
    return {d['address']: d for d in doc.get('devices', [])}, ''


def _read_chain(tree, device):
    '''Reads, through the tree, the link attributes of every link cb-pcie-links judged for
    `device` (the ports above it too), so that --record keeps what the verdict rests on.'''
    for link in (device or {}).get('links', []):
        for addr in (link.get('down'), link.get('up')):
            if addr:
                for a in LINK_ATTRS:
                    tree.read(f'/sys/bus/pci/devices/{addr}/{a}')


def _pci_device_of(tree, path):
    '''The PCI function directory at or above `path` (a net or infiniband class device's
    `device`): the nearest directory named like 0000:17:00.0.'''
    real = tree.realpath(path)
    while real and real != '/':
        if re.fullmatch(r'[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]', os.path.basename(real)):
            return real
        real = os.path.dirname(real)
    return None


def pci_devices(tree):
    '''[(address, sysfs path, vendor, class)] of every PCI function, or None.'''
    names = tree.listdir('/sys/bus/pci/devices')
    if names is None:
        return None
    devices = []
    for addr in names:
        path = f'/sys/bus/pci/devices/{addr}'
        devices.append((addr, path, tree.read(f'{path}/vendor'), tree.read(f'{path}/class')))
    return devices


def _link_finding(tree, path, setting, what, affects, links):
    '''The verdict of cb-pcie-links (`links`: pcie_links()) on the PCI device at `path`,
    with the link state sysfs shows for it.'''
    attrs = {a: tree.read(f'{path}/{a}') for a in LINK_ATTRS}
    numa = tree.read(f'{path}/numa_node')
    where = f', NUMA node {numa}' if numa not in (None, '-1') else ''
    common = dict(setting=setting, expected='link width and speed at their maximum',
                  level=REQUIRED, affects=affects, source=f'{path}/{{current,max}}_link_*')
    table, why_not = links
    if table is None:
        return Finding(status=UNKNOWN, value=f'{what}: unknown: {why_not}{where}', fix=
                       f'install cobalt-bench\'s {PCIE_LINKS_TOOL} (make; module load '
                       'cobalt-bench)', note=why_not, **common)
    device = table.get(os.path.basename(path))
    _read_chain(tree, device)
    if any(v is None for v in attrs.values()) and (device is None or
                                                   device['status'] == 'unknown'):
        return Finding(status=UNKNOWN, value=f'{what}: no PCIe link attributes{where}',
                       fix='', note='not a PCIe device (virtual or legacy PCI), or the '
                                    'kernel does not expose its link', **common)
    value = (f'{what}: x{attrs["current_link_width"]} {attrs["current_link_speed"]} '
             f'(max x{attrs["max_link_width"]} {attrs["max_link_speed"]}){where}')
    if device is None:
        return Finding(status=UNKNOWN, value=value, fix='',
                       note=f'not listed by {PCIE_LINKS_TOOL}', **common)
    status = PCIE_STATUS.get(device['status'], UNKNOWN)
    fix = ('reseat the card in a slot (and riser) wired for its full width and '
           'generation; check the BIOS PCIe link settings; `lspci -vv -s '
           f'{os.path.basename(path)}` shows LnkCap/LnkSta')
    note = device.get('diagnosis', '')
    k = device.get('deciding_link', 0)
    if k and k > 0 and status == FAIL:
        uplink = device['links'][k]
        note = f'uplink {uplink["up"]} -> {uplink["down"]}: {note}'
        fix = (f'the PCIe switch uplink {uplink["up"]} -> {uplink["down"]} is degraded: '
               'reseat the switch (riser, carrier board); check the BIOS PCIe link settings')
    if status == WARN:
        return Finding(status=WARN, value=value,
                       fix='re-check under load (nvidia-smi -q -d PCIE); ' + fix,
                       note='an idle GPU lowers its link speed to save power', **common)
    if status == UNKNOWN:
        return Finding(status=UNKNOWN, value=value, fix='', note='link state unknown',
                       **common)
    return Finding(status=status, value=value, fix=fix if status == FAIL else '',
                   note=note if status == FAIL else '', **common)


def check_pcie(tree):
    devices = pci_devices(tree)
    if devices is None:
        return [Finding(setting='pcie', status=UNKNOWN, value='no /sys/bus/pci/devices',
                        expected='GPU and NIC links at their maximum width and speed',
                        fix='', level=REQUIRED, affects=['gpu', 'ethernet', 'interconnect'],
                        source='/sys/bus/pci/devices')]
    findings = []
    links = pcie_links(tree)
    gpus = [(a, p, v) for a, p, v, c in devices
            if v in GPU_VENDORS and c and c[:6] in GPU_CLASSES]
    for addr, path, vendor in gpus:
        findings.append(_link_finding(tree, path, f'pcie.gpu.{addr}',
                                      f'{GPU_VENDORS[vendor]} GPU {addr}', ['gpu'], links))
    if not gpus:
        findings.append(Finding(setting='pcie.gpu', status=SKIP, value='no GPU found',
                                expected='GPU links at their maximum width and speed',
                                fix='', level=REQUIRED, affects=['gpu'],
                                source='/sys/bus/pci/devices/*/{vendor,class}'))
    # NICs: network controllers, physical functions only (SR-IOV virtual functions have
    # no link of their own). Name them by their interfaces where they have some.
    names = {}
    for cls, base in (('net', '/sys/class/net'), ('infiniband', '/sys/class/infiniband')):
        for name in tree.listdir(base) or []:
            dev = _pci_device_of(tree, f'{base}/{name}/device')
            if dev:
                names.setdefault(os.path.basename(dev), []).append(name)
    nics = [(a, p) for a, p, v, c in devices
            if c and c.startswith(NIC_CLASS) and not tree.exists(f'{p}/physfn')]
    for addr, path in nics:
        label = f'NIC {addr}' + (f' ({", ".join(sorted(names[addr]))})' if addr in names
                                 else '')
        findings.append(_link_finding(tree, path, f'pcie.nic.{addr}', label,
                                      ['ethernet', 'interconnect'], links))
    if not nics:
        findings.append(Finding(setting='pcie.nic', status=SKIP, value='no NIC found',
                                expected='NIC links at their maximum width and speed',
                                fix='', level=REQUIRED, affects=['ethernet', 'interconnect'],
                                source='/sys/bus/pci/devices/*/class'))
    return findings


def _rt_from_files(tree):
    '''(status, value, note) of real-time priority from procfs alone.'''
    runtime = tree.read('/proc/sys/kernel/sched_rt_runtime_us')
    limits = tree.read('/proc/self/limits') or ''
    status_txt = tree.read('/proc/self/status') or ''
    m = re.search(r'^Max realtime priority\s+(\S+)', limits, re.M)
    rlimit = m.group(1) if m else None
    m = re.search(r'^CapEff:\s+([0-9a-f]+)', status_txt, re.M)
    sys_nice = bool(int(m.group(1), 16) >> CAP_SYS_NICE & 1) if m else None
    value = (f'sched_rt_runtime_us={runtime}, RLIMIT_RTPRIO={rlimit}, '
             f'CAP_SYS_NICE={"yes" if sys_nice else "no" if sys_nice is not None else "?"}')
    if runtime is None or (rlimit is None and sys_nice is None):
        return UNKNOWN, value, 'not readable'
    if runtime == '0':
        return FAIL, value, 'real-time tasks get no CPU time (sched_rt_runtime_us=0)'
    allowed = sys_nice or (rlimit not in (None, '0'))
    if not allowed:
        return FAIL, value, 'neither CAP_SYS_NICE nor a real-time priority limit above 0'
    return PASS, value, ''


def check_realtime(tree, probe):
    status, value, note = _rt_from_files(tree)
    common = dict(setting='sched.realtime', expected='chrt -f 1 works',
                  fix='run as root, or allow it (limits.conf: `@users - rtprio 1`, then '
                      'a new login); sysctl -w kernel.sched_rt_runtime_us=950000',
                  level=RECOMMENDED, affects=['memory', 'ethernet'],
                  source='/proc/sys/kernel/sched_rt_runtime_us, /proc/self/{limits,status}')
    if probe and tree.live:
        # The files say whether it should work; the kernel (cgroups, containers) decides.
        chrt = shutil.which('chrt')
        if chrt is None:
            return Finding(status=UNKNOWN, value=value + '; chrt not installed',
                           note='install util-linux', **common)
        try:
            proc = subprocess.run([chrt, '-f', '1', 'true'], capture_output=True, text=True,
                                  timeout=10)
        except (OSError, subprocess.TimeoutExpired) as err:
            return Finding(status=UNKNOWN, value=f'{value}; chrt: {err}', **common)
        if proc.returncode == 0:
            return Finding(status=PASS, value=value + '; `chrt -f 1 true` ran', **common)
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        return Finding(status=FAIL,
                       value=f'{value}; `chrt -f 1 true`: {msg[-1] if msg else proc.returncode}',
                       note=note, **common)
    return Finding(status=status, value=value, note=note, **common)


def run_checks(tree, interfaces=None, probe=True):
    findings = [check_governor(tree), check_turbo(tree)]
    findings += check_mtu(tree, interfaces)
    findings += check_net_sysctls(tree)
    findings.append(check_numa(tree))
    findings += check_pcie(tree)
    findings.append(check_realtime(tree, probe))
    return findings


# ---- the result -----------------------------------------------------------------------

def summary(findings):
    count = {s: sum(f.status == s for f in findings) for s in (PASS, FAIL, WARN, UNKNOWN, SKIP)}
    req = [f for f in findings if f.level == REQUIRED]
    count['required_failed'] = sum(f.status == FAIL for f in req)
    count['required_unknown'] = sum(f.status == UNKNOWN for f in req)
    if count[FAIL]:
        verdict = 'NOT COMPLIANT'
    elif count[UNKNOWN]:
        verdict = 'UNDETERMINED'
    else:
        verdict = 'COMPLIANT'
    count['verdict'] = verdict
    return count


def document(findings, host, started, duration, config):
    s = summary(findings)
    metrics = {
        'settings_passed': s[PASS], 'settings_failed': s[FAIL], 'settings_warned': s[WARN],
        'settings_unknown': s[UNKNOWN], 'settings_skipped': s[SKIP],
        'required_failed': s['required_failed'], 'required_unknown': s['required_unknown'],
    }
    return {
        'test': 'preflight',
        'version': __version__,
        'test_version': TEST_VERSION,
        'host': host,
        'started': started,
        'duration_s': duration,
        'config': config,
        'metrics': {k: {'value': v, 'unit': 'settings'} for k, v in metrics.items()},
        'findings': [asdict(f) for f in findings],
        'verdict': s['verdict'],
        # Compliant: no setting failed and none unknown (unknown is not a pass).
        'compliance': {'threshold': 0, 'passed': s['verdict'] == 'COMPLIANT'},
    }


def check_json_dest(dest):
    '''--json FILE before anything is checked (as the kernels' --json): a FILE that is a
    directory, or whose directory is absent or not writable, is a usage error.'''
    if dest == '-':
        return
    if not dest.strip():
        raise UsageError('--json: empty file name')
    directory = os.path.dirname(os.path.abspath(dest))
    if os.path.isdir(dest):
        raise UsageError(f'--json {dest}: is a directory')
    if not os.path.isdir(directory):
        raise UsageError(f'--json {dest}: no such directory {directory}')
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f'--json {dest}: directory {directory} is not writable')


def write_json(doc, dest):
    text = json.dumps(doc, indent=2) + '\n'
    if dest == '-':
        print(text, end='')
        return
    # Flushed to disk before the rename (cobalt_bench.atomic): a reader never sees half a
    # document, and a failure leaves an earlier one whole and no temporary file behind.
    try:
        with atomic_file(dest, 'w', prefix='.preflight-', sync=True) as fp:
            fp.write(text)
    except OSError as err:
        raise CannotRun(f'cannot write {dest}: {err.strerror or err}')


def format_findings(findings):
    '''The findings as an aligned text table, each non-pass one with its fix below.'''
    rows = [(f.status.upper(), f.setting, f.value, f.expected) for f in findings]
    widths = [max(len(r[i]) for r in rows + [('STATUS', 'SETTING', '', '')])
              for i in range(2)]
    lines = [f'{"STATUS":<{widths[0]}}  {"SETTING":<{widths[1]}}  VALUE  [EXPECTED]']
    for f, (st, setting, value, expected) in zip(findings, rows):
        lines.append(f'{st:<{widths[0]}}  {setting:<{widths[1]}}  {value}  [{expected}]')
        pad = ' ' * (widths[0] + widths[1] + 4)
        if f.note and f.status != PASS:
            lines.append(f'{pad}why: {f.note}')
        if f.fix and f.status in (FAIL, WARN, UNKNOWN):
            lines.append(f'{pad}fix: {f.fix}')
    return '\n'.join(lines)


def results_block(findings):
    s = summary(findings)
    return '\n'.join([
        '----- Test results -----',
        f'Test version:      {TEST_VERSION}',
        f'Settings checked:  {len(findings) - s[SKIP]}',
        f'Passed:            {s[PASS]}',
        f'Failed:            {s[FAIL]} ({s["required_failed"]} required)',
        f'Warnings:          {s[WARN]}',
        f'Unknown:           {s[UNKNOWN]} ({s["required_unknown"]} required)',
        f'Verdict:           {s["verdict"]}',
    ])


def run(root='/', interfaces=None, json_dest=None, record=None, probe=True, quiet=False):
    '''`cobalt-bench preflight`: returns the exit status (0 compliant, 1 not compliant or
    undetermined).'''
    if root != '/' and not os.path.isdir(root):
        raise UsageError(f'--root {root}: no such directory')
    if record is not None and root != '/':
        raise UsageError('--record reads this machine; it cannot be combined with --root')
    if json_dest is not None:
        check_json_dest(json_dest)
    if record is not None:
        if not record.strip():
            raise UsageError('--record: empty directory name')
        if os.path.lexists(record) and not os.path.isdir(record):
            raise UsageError(f'--record {record}: exists and is not a directory')
        try:
            if os.listdir(record) if os.path.isdir(record) else False:
                raise UsageError(f'--record {record}: directory exists and is not empty')
            os.makedirs(record, exist_ok=True)
            # Writable now, not after every check ran: a file and its removal.
            probe_fd, probe_path = tempfile.mkstemp(dir=record, prefix='.record-')
            os.close(probe_fd)
            os.unlink(probe_path)
        except OSError as err:
            raise UsageError(f'--record {record}: cannot write there: {err.strerror or err}')
        tree = RecordingTree(record)
    else:
        tree = Tree(root)
    if not tree.exists('/sys') and not tree.exists('/proc'):
        raise CannotRun(f'{tree.root}: holds neither sys/ nor proc/')

    started = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    t0 = time.monotonic()
    findings = run_checks(tree, interfaces, probe)
    duration = time.monotonic() - t0
    host = tree.read('/proc/sys/kernel/hostname') or (
        socket.gethostname() if tree.live else os.path.basename(tree.root))
    doc = document(findings, host, started, duration,
                   {'root': tree.root, 'interfaces': interfaces, 'probe': probe and tree.live})
    if json_dest is not None:
        write_json(doc, json_dest)
    if not quiet and json_dest != '-':
        print(f'cobalt-bench preflight {__version__} on {host}'
              + (f' (recorded tree {tree.root})' if not tree.live else ''))
        print(format_findings(findings))
        print()
        print(results_block(findings))
    return 0 if doc['compliance']['passed'] else 1


def load(path):
    '''A preflight JSON document (as written by --json), or None if `path` is not one.'''
    try:
        with open(path) as fp:
            doc = json.load(fp)
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and doc.get('test') == 'preflight' and 'findings' in doc:
        return doc
    return None


def findings_of(doc):
    return [Finding(**{k: v for k, v in f.items() if k in Finding.__dataclass_fields__})
            for f in doc.get('findings', [])]
