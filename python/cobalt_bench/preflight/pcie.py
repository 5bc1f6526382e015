'''The GPU and NIC PCIe links (required: the document's "absence of avoidable performance
bottlenecks ... performance-degrading riser cards and inefficient PCIe").

They are judged by cb-pcie-links (src/gpu-copy/pcie-links.c), which applies the one PCIe
link rule of cobalt-bench, the one gpu-copy applies to its GPUs: a link is degraded when it
runs with fewer lanes or a lower rate than the device supports (on the device's own link or
an uplink above it), whether the port above limits it or the link trained low; only a GPU's
own link read idle is excused a low rate (it rests its link). Without that tool a link is
unknown, never judged by a second rule here.'''

import json
import os
import re
import shutil
import subprocess

from .. import paths
from .finding import FAIL, PASS, REQUIRED, SKIP, UNKNOWN, WARN, Finding

# PCI ids: GPUs are display (0x0300) or 3D/other display controllers (0x0302, 0x0380) of
# these vendors; NICs are network controllers (class 0x02xxxx: Ethernet, InfiniBand, ...).
GPU_VENDORS = {'0x10de': 'NVIDIA', '0x1002': 'AMD'}
GPU_CLASSES = ('0x0300', '0x0302', '0x0380')
NIC_CLASS = '0x02'

PCIE_LINKS_TOOL = 'cb-pcie-links'
# cb-pcie-links' words for a link (gc_link_status_names in src/gpu-copy/pcie.c) as a
# setting's status; its fourth word, and any it may add, is unknown (link_status).
PCIE_STATUS = {'ok': PASS, 'idle-low': WARN, 'degraded': FAIL}
LINK_ATTRS = ('current_link_width', 'max_link_width', 'current_link_speed', 'max_link_speed')


def link_status(device):
    '''The status of a device as cb-pcie-links judged it (an entry of its "devices").'''
    return PCIE_STATUS.get(device['status'], UNKNOWN)


def pcie_links_tool():
    '''The cb-pcie-links to run: $COBALT_BENCH_PCIE_LINKS if set (empty: none), else the
    one in this tree's bin/ (the same version as this package), else the one on PATH;
    None when there is none.'''
    env = os.environ.get('COBALT_BENCH_PCIE_LINKS')
    if env is not None:
        return env if env and os.access(env, os.X_OK) else None
    root = paths.root()
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
        proc = subprocess.run([tool, '--sysfs-root', tree.path('/sys'), '--quiet', '--json', '-'],
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
                                                   link_status(device) == UNKNOWN):
        return Finding(status=UNKNOWN, value=f'{what}: no PCIe link attributes{where}',
                       fix='', note='not a PCIe device (virtual or legacy PCI), or the '
                                    'kernel does not expose its link', **common)
    value = (f'{what}: x{attrs["current_link_width"]} {attrs["current_link_speed"]} '
             f'(max x{attrs["max_link_width"]} {attrs["max_link_speed"]}){where}')
    if device is None:
        return Finding(status=UNKNOWN, value=value, fix='',
                       note=f'not listed by {PCIE_LINKS_TOOL}', **common)
    status = link_status(device)
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
