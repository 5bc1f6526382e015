'''The items of a node's inventory: ITEMS, the one table of what each key means, where it is
read from and whether it is compared between peers; and collect(tree), the values, read
through a preflight Tree so that a recorded root gives what the machine gave.

A value is a str, an int or a list of str, as read; an absent or unreadable source gives no
item, never a made-up value (a node lacking an item differs from one that has it).'''

import hashlib
import re
import shlex
import shutil
import subprocess
from typing import NamedTuple

from ..preflight.cpu import numa_layout
from ..preflight.network import NET_SYSCTLS
from ..preflight.system import Tree, cpulist


class ItemSpec(NamedTuple):
    key: str            # <if>, <hca>, <bus>, <name>: a name; <N>: a number
    meaning: str
    source: str
    identity: bool      # True: differs per node by nature, never compared between peers


CONFIGURATION, IDENTITY = False, True


def _family(key, source, identity, names):
    '''The rows of items alike but for a name: `key` and `source` with {} the name, for
    each (name, meaning).'''
    return [ItemSpec(key.format(name), meaning, source.format(name), identity)
            for name, meaning in names]


ITEMS = (
    ItemSpec('host.name', 'the host name', '/proc/sys/kernel/hostname', IDENTITY),
    ItemSpec('host.boot_id', 'this boot\'s random UUID', '/proc/sys/kernel/random/boot_id',
             IDENTITY),
    ItemSpec('host.boot_time', 'when it booted, seconds since 1970-01-01 UTC',
             '/proc/stat (btime)', IDENTITY),
    ItemSpec('cpu.model', 'the CPU model name (aarch64: "implementer I part P variant V '
             'revision R", as the CPU says it)', '/proc/cpuinfo, first processor',
             CONFIGURATION),
    ItemSpec('cpu.microcode', 'the microcode revision (x86)', '/proc/cpuinfo, first processor',
             CONFIGURATION),
    ItemSpec('cpu.flags_digest', 'sha256 of the sorted CPU flags (aarch64: Features), '
             'first 16 hex digits', '/proc/cpuinfo, first processor', CONFIGURATION),
    ItemSpec('cpu.sockets', 'sockets with an online CPU',
             '/sys/devices/system/cpu/cpu<N>/topology/physical_package_id', CONFIGURATION),
    ItemSpec('cpu.cores', 'cores with an online CPU (socket, core id pairs)',
             '/sys/devices/system/cpu/cpu<N>/topology/{physical_package_id,core_id}',
             CONFIGURATION),
    ItemSpec('cpu.threads', 'online CPUs (hardware threads)', '/sys/devices/system/cpu/online',
             CONFIGURATION),
    ItemSpec('cpu.usable', 'CPUs this process (the job) may run on',
             '/proc/self/status (Cpus_allowed_list)', CONFIGURATION),
    ItemSpec('cpu.usable_list', 'the same CPUs, as the kernel lists them ("0-39,80-119")',
             '/proc/self/status (Cpus_allowed_list)', CONFIGURATION),
    ItemSpec('numa.nodes', 'NUMA nodes', '/sys/devices/system/node/node<N>', CONFIGURATION),
    ItemSpec('memory.total', 'memory the kernel manages, bytes', '/proc/meminfo (MemTotal)',
             CONFIGURATION),
    ItemSpec('memory.node<N>', 'memory of NUMA node N, bytes',
             '/sys/devices/system/node/node<N>/meminfo (MemTotal)', CONFIGURATION),
    ItemSpec('memory.usable_nodes', 'NUMA nodes this process may take memory from',
             '/proc/self/status (Mems_allowed_list)', CONFIGURATION),
    ItemSpec('kernel.release', 'the running kernel', '/proc/sys/kernel/osrelease',
             CONFIGURATION),
    ItemSpec('kernel.cmdline', 'the kernel command line, as it is', '/proc/cmdline',
             CONFIGURATION),
    ItemSpec('os.release', 'the distribution', '/etc/os-release (PRETTY_NAME)',
             CONFIGURATION),
    *_family('dmi.{}', '/sys/class/dmi/id/{}', CONFIGURATION, (
        ('bios_vendor', 'the BIOS vendor'), ('bios_version', 'the BIOS version'),
        ('bios_date', 'the BIOS date'), ('board_vendor', 'the mainboard vendor'),
        ('board_name', 'the mainboard'), ('product_name', 'the system model'),
        ('sys_vendor', 'the system vendor'))),
    *_family('dmi.{}', '/sys/class/dmi/id/{}', IDENTITY, (
        ('product_serial', 'the system serial number (readable by root only)'),
        ('board_serial', 'the mainboard serial number (readable by root only)'),
        ('product_uuid', 'the system UUID (readable by root only)'))),
    ItemSpec('dimm.count', 'memory modules installed', '`dmidecode -t memory` (as root)',
             CONFIGURATION),
    ItemSpec('dimm.sizes', 'each installed module\'s size, in dmidecode\'s order',
             '`dmidecode -t memory` (Size)', CONFIGURATION),
    ItemSpec('dimm.speeds', 'each installed module\'s speed as configured (else its rated '
             'speed)', '`dmidecode -t memory` (Configured Memory Speed)', CONFIGURATION),
    ItemSpec('net.<if>.driver', 'the driver of a network interface with a device',
             '/sys/class/net/<if>/device/driver (link)', CONFIGURATION),
    ItemSpec('net.<if>.firmware', 'its firmware version', '`ethtool -i <if>`', CONFIGURATION),
    ItemSpec('net.<if>.speed', 'its link speed, Mbit/s (-1: not known to the driver)',
             '/sys/class/net/<if>/speed', CONFIGURATION),
    ItemSpec('net.<if>.mtu', 'its MTU, bytes', '/sys/class/net/<if>/mtu', CONFIGURATION),
    ItemSpec('net.<if>.operstate', 'its state (up, down, ...)',
             '/sys/class/net/<if>/operstate', CONFIGURATION),
    ItemSpec('net.<if>.mac', 'its hardware address', '/sys/class/net/<if>/address', IDENTITY),
    ItemSpec('ib.<hca>.fw_ver', 'an RDMA adapter\'s firmware version',
             '/sys/class/infiniband/<hca>/fw_ver', CONFIGURATION),
    ItemSpec('ib.<hca>.board_id', 'its board (PSID)', '/sys/class/infiniband/<hca>/board_id',
             CONFIGURATION),
    ItemSpec('ib.<hca>.node_guid', 'its GUID', '/sys/class/infiniband/<hca>/node_guid',
             IDENTITY),
    *_family('ib.<hca>.port<N>.{}', '/sys/class/infiniband/<hca>/ports/<N>/{}', CONFIGURATION,
             (('link_layer', 'a port\'s link layer (InfiniBand, Ethernet)'),
              ('rate', 'its rate ("200 Gb/sec (4X HDR)")'),
              ('state', 'its logical state ("4: ACTIVE")'),
              ('phys_state', 'its physical state ("5: LinkUp")'))),
    ItemSpec('gpu.driver', 'the NVIDIA driver version', '/proc/driver/nvidia/version',
             CONFIGURATION),
    ItemSpec('gpu.count', 'NVIDIA GPUs the driver sees', '/proc/driver/nvidia/gpus/<bus>',
             CONFIGURATION),
    ItemSpec('gpu.<bus>.model', 'the GPU at PCI address <bus>',
             '/proc/driver/nvidia/gpus/<bus>/information (Model)', CONFIGURATION),
    ItemSpec('gpu.<bus>.vbios', 'its video BIOS version',
             '/proc/driver/nvidia/gpus/<bus>/information (Video BIOS)', CONFIGURATION),
    ItemSpec('gpu.<bus>.uuid', 'its UUID', '/proc/driver/nvidia/gpus/<bus>/information '
             '(GPU UUID)', IDENTITY),
    ItemSpec('sysctl.<name>', 'a sysctl of preflight\'s list (data/net-sysctls.tsv), its '
             'fields separated by one space', '/proc/sys/<name with / for .>', CONFIGURATION),
    ItemSpec('packages.count', 'installed packages', '/var/lib/dpkg/status, else `rpm -qa`',
             CONFIGURATION),
    ItemSpec('packages.digest', 'sha256 of the sorted "name=version" lines of the '
             'installed packages, each ending in a newline, first 16 hex digits',
             '/var/lib/dpkg/status, else `rpm -qa`', CONFIGURATION),
)


def _pattern(key):
    parts = re.split(r'(<[^>]+>)', key)
    return re.compile(''.join(r'\d+' if p == '<N>' else '.+' if p.startswith('<') else
                              re.escape(p) for p in parts))


_PATTERNS = [(_pattern(spec.key), spec) for spec in ITEMS]


def spec_of(key):
    '''The ItemSpec of an item key (net.eth0.mtu: net.<if>.mtu), or None.'''
    return next((spec for pattern, spec in _PATTERNS if pattern.fullmatch(key)), None)


def digest(lines):
    '''The first 16 hex digits of sha256 of `lines`, each ending in a newline.'''
    return hashlib.sha256(''.join(f'{line}\n' for line in lines).encode()).hexdigest()[:16]


def _fields(text, sep=':'):
    '''{name: value} of "name: value" lines (the first of a repeated name).'''
    fields = {}
    for line in (text or '').splitlines():
        name, found, value = line.partition(sep)
        if found:
            fields.setdefault(name.strip(), value.strip())
    return fields


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _memtotal(text):
    '''MemTotal of a meminfo file, in bytes.'''
    m = re.search(r'MemTotal:\s+(\d+)\s*kB', text or '')
    return int(m.group(1)) * 1024 if m else None


def program(*argv):
    '''What a program prints on this machine, or None where it is absent or fails.'''
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _host(tree):
    yield 'host.name', tree.read('/proc/sys/kernel/hostname')
    yield 'host.boot_id', tree.read('/proc/sys/kernel/random/boot_id')
    m = re.search(r'^btime\s+(\d+)$', tree.read('/proc/stat') or '', re.M)
    yield 'host.boot_time', int(m.group(1)) if m else None


def _cpu(tree):
    # The first processor's block: the model is the node's (a mixed-model node is not one
    # the compliance document knows).
    first = _fields((tree.read('/proc/cpuinfo') or '').split('\n\n')[0])
    model = first.get('model name')
    if model is None and 'CPU implementer' in first:
        model = ' '.join(f'{word} {first[f"CPU {word}"]}' for word in
                         ('implementer', 'part', 'variant', 'revision')
                         if f'CPU {word}' in first)
    yield 'cpu.model', model
    yield 'cpu.microcode', first.get('microcode')
    flags = first.get('flags', first.get('Features'))
    yield 'cpu.flags_digest', digest(sorted(flags.split())) if flags is not None else None
    online = cpulist(tree.read('/sys/devices/system/cpu/online'))
    if online:
        topology = [tuple(tree.read(f'/sys/devices/system/cpu/cpu{n}/topology/{name}')
                          for name in ('physical_package_id', 'core_id')) for n in online]
        # Counted only where every online CPU says where it is: a part is not a count.
        if all(None not in t for t in topology):
            yield 'cpu.sockets', len({package for package, _ in topology})
            yield 'cpu.cores', len(set(topology))
        yield 'cpu.threads', len(online)
    usable = _fields(tree.read('/proc/self/status')).get('Cpus_allowed_list')
    if cpulist(usable):
        yield 'cpu.usable', len(cpulist(usable))
        yield 'cpu.usable_list', usable


def _memory(tree):
    layout = numa_layout(tree) or {}
    yield 'numa.nodes', len(layout) if layout else None
    yield 'memory.total', _memtotal(tree.read('/proc/meminfo'))
    for node, (_, _, kb) in layout.items():
        yield f'memory.node{node}', kb * 1024 if kb is not None else None
    yield 'memory.usable_nodes', _fields(tree.read('/proc/self/status')).get(
        'Mems_allowed_list')


def _os_release(text):
    value = _fields(text, '=').get('PRETTY_NAME')
    try:
        return shlex.split(value)[0] if value else None
    except (ValueError, IndexError):
        return value


def _system(tree):
    yield 'kernel.release', tree.read('/proc/sys/kernel/osrelease')
    yield 'kernel.cmdline', tree.read('/proc/cmdline')
    yield 'os.release', _os_release(tree.read('/etc/os-release'))
    for spec in ITEMS:
        if spec.key.startswith('dmi.'):
            yield spec.key, tree.read(f'/sys/class/dmi/id/{spec.key[4:]}')


def _dimms(tree):
    text = tree.derived('dmidecode-t-memory', lambda: program('dmidecode', '-t', 'memory'))
    if text is None:
        return
    sizes, speeds = [], []
    for block in re.split(r'\n(?=Handle )', text):
        if '\nMemory Device' not in block:
            continue
        dimm = _fields(block)
        size = dimm.get('Size', '')
        if not size or size.startswith(('No Module', 'Not Installed')):
            continue
        sizes.append(size)
        speeds.append(dimm.get('Configured Memory Speed') or dimm.get(
            'Configured Clock Speed') or dimm.get('Speed') or 'Unknown')
    yield 'dimm.count', len(sizes)
    yield 'dimm.sizes', sizes
    yield 'dimm.speeds', speeds


def _link_name(tree, path):
    '''The name a symbolic link leads to (a driver's): the last part of its target.'''
    real = tree.realpath(path) if tree.exists(path) else None
    return real.rsplit('/', 1)[-1] if real else None


def _network(tree):
    for name in tree.listdir('/sys/class/net') or []:
        base = f'/sys/class/net/{name}'
        if not tree.exists(f'{base}/device'):
            continue          # lo, bridges, bonds, tunnels: no hardware of their own
        yield f'net.{name}.driver', _link_name(tree, f'{base}/device/driver')
        ethtool = tree.derived(f'ethtool-i-{name}', lambda: program('ethtool', '-i', name))
        yield f'net.{name}.firmware', _fields(ethtool).get('firmware-version') or None
        yield f'net.{name}.speed', _int(tree.read(f'{base}/speed'))
        yield f'net.{name}.mtu', _int(tree.read(f'{base}/mtu'))
        yield f'net.{name}.operstate', tree.read(f'{base}/operstate')
        yield f'net.{name}.mac', tree.read(f'{base}/address')
    for hca in tree.listdir('/sys/class/infiniband') or []:
        base = f'/sys/class/infiniband/{hca}'
        for name in ('fw_ver', 'board_id', 'node_guid'):
            yield f'ib.{hca}.{name}', tree.read(f'{base}/{name}')
        for port in sorted(tree.listdir(f'{base}/ports') or [], key=lambda p: _int(p) or 0):
            for name in ('link_layer', 'rate', 'state', 'phys_state'):
                yield f'ib.{hca}.port{port}.{name}', tree.read(f'{base}/ports/{port}/{name}')


def _gpus(tree):
    m = re.search(r'Kernel Module(?: for \S+)?\s+(\d[\w.-]*)',
                  tree.read('/proc/driver/nvidia/version') or '')
    yield 'gpu.driver', m.group(1) if m else None
    buses = tree.listdir('/proc/driver/nvidia/gpus')
    if buses is None:
        return
    yield 'gpu.count', len(buses)
    for bus in buses:
        info = _fields(tree.read(f'/proc/driver/nvidia/gpus/{bus}/information'))
        yield f'gpu.{bus}.model', info.get('Model')
        yield f'gpu.{bus}.vbios', info.get('Video BIOS')
        yield f'gpu.{bus}.uuid', info.get('GPU UUID')


def _sysctls(tree):
    for name, _, _ in NET_SYSCTLS:
        value = tree.read('/proc/sys/' + name.replace('.', '/'))
        yield f'sysctl.{name}', ' '.join(value.split()) if value is not None else None


def installed_packages():
    '''The sorted "name=version" lines of this machine's installed packages (dpkg's status
    file, else rpm's database), or None. Read past any recording (Tree.derived records the
    list): the status file is megabytes, the list a few tens of kB.'''
    status = Tree().read('/var/lib/dpkg/status')
    if status is not None:
        lines = []
        for block in status.split('\n\n'):
            pkg = _fields(block)
            if pkg.get('Status', '').endswith(' installed'):
                lines.append(f'{pkg.get("Package")}={pkg.get("Version")}')
        return '\n'.join(sorted(lines)) or None
    rpm = program('rpm', '-qa', '--qf', '%{NAME}=%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\n')
    return '\n'.join(sorted(rpm.splitlines())) if rpm else None


def _packages(tree):
    listed = tree.derived('packages', installed_packages)
    if listed is not None:
        lines = listed.splitlines()
        yield 'packages.count', len(lines)
        yield 'packages.digest', digest(lines)


def collect(tree):
    '''{key: value} of every item `tree` has, in the order of ITEMS.'''
    readers = (_host(tree), _cpu(tree), _memory(tree), _system(tree), _dimms(tree),
               _network(tree), _gpus(tree), _sysctls(tree), _packages(tree))
    return {key: value for reader in readers for key, value in reader if value is not None}
