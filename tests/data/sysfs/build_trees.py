#!/usr/bin/env python3
'''Writes the sysfs/procfs trees `compliant/` and `noncompliant/` that
tests/python/preflight/test_preflight.py judges with `cobalt-bench preflight --root`.

No machine with GPUs, 10GbE NICs, InfiniBand and a cpufreq driver was at hand, so these two
trees are written here rather than recorded: with the layout that `cobalt-bench preflight
--record` produced on a real machine (tests/data/sysfs/vm/, this project's VM: relative
symbolic links from /sys/class and /sys/bus into /sys/devices, /proc/self as a plain
directory) and the file formats of the Linux sysfs ABI (Documentation/ABI/testing/
sysfs-bus-pci, sysfs-class-net, sysfs-devices-system-cpu; current_link_speed reads like
"8.0 GT/s PCIe"). Both describe a two-socket node with two NVIDIA GPUs, a dual-port 10GbE
NIC and an InfiniBand HCA, as the COBALT2 compliance document assumes.

    python3 tests/data/sysfs/build_trees.py      # rewrites both trees
'''

import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

KB_64G = 63 * 1024 * 1024     # MemTotal (kB) of a node with 64 GiB of DIMMs (less what the kernel keeps)


def write(root, path, text):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as fp:
        fp.write(f'{text}\n')


def link(root, path, target):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def meminfo(node, kb):
    return (f'Node {node} MemTotal:       {kb} kB\n'
            f'Node {node} MemFree:        {kb * 9 // 10} kB\n'
            f'Node {node} MemUsed:        {kb // 10} kB')


def limits(rtprio):
    return '\n'.join([
        'Limit                     Soft Limit           Hard Limit           Units     ',
        'Max cpu time              unlimited            unlimited            seconds   ',
        'Max open files            1048576              1048576              files     ',
        f'Max realtime priority     {rtprio:<20} {rtprio:<20} ',
        'Max realtime timeout      unlimited            unlimited            us        ',
    ])


def status(cap_eff, uid):
    return '\n'.join([
        'Name:\tpython3', 'State:\tR (running)', f'Uid:\t{uid}\t{uid}\t{uid}\t{uid}',
        'CapInh:\t0000000000000000', f'CapPrm:\t{cap_eff}', f'CapEff:\t{cap_eff}',
        'CapBnd:\t000001ffffffffff', 'CapAmb:\t0000000000000000',
    ])


def pci_function(root, addr, vendor, device_class, numa, link_now, link_max, extra=None):
    '''A PCI function under its host bridge, linked from /sys/bus/pci/devices.'''
    bridge = f'pci{addr[:7]}'
    real = f'/sys/devices/{bridge}/{addr}'
    write(root, f'{real}/vendor', vendor)
    write(root, f'{real}/class', device_class)
    write(root, f'{real}/numa_node', numa)
    if link_now:
        write(root, f'{real}/current_link_width', link_now[0])
        write(root, f'{real}/current_link_speed', link_now[1])
        write(root, f'{real}/max_link_width', link_max[0])
        write(root, f'{real}/max_link_speed', link_max[1])
    link(root, f'/sys/bus/pci/devices/{addr}', f'../../../devices/{bridge}/{addr}')
    for path, text in (extra or {}).items():
        write(root, f'{real}/{path}', text)
    return real


def netdev(root, pci_real, name, mtu, speed):
    '''An Ethernet interface of a PCI function (class link, `device` link back).'''
    real = f'{pci_real}/net/{name}'
    write(root, f'{real}/type', '1')
    write(root, f'{real}/mtu', mtu)
    write(root, f'{real}/speed', speed)
    write(root, f'{real}/operstate', 'up')
    link(root, f'{real}/device', '../../../' + os.path.basename(pci_real))
    link(root, f'/sys/class/net/{name}', '../..' + real[len('/sys'):])


def build(root, m):
    if os.path.exists(root):
        shutil.rmtree(root)
    write(root, '/proc/sys/kernel/hostname', m['hostname'])
    ncpu = m['cpus']
    half = ncpu // 2
    for c in range(ncpu):
        cpu = f'/sys/devices/system/cpu/cpu{c}'
        if c:
            write(root, f'{cpu}/online', '1')
        # cpuN/cpufreq is a link to the CPU's cpufreq policy.
        link(root, f'{cpu}/cpufreq', f'../cpufreq/policy{c}')
        write(root, f'/sys/devices/system/cpu/cpufreq/policy{c}/scaling_governor',
              m['governor'](c))
        write(root, f'/sys/devices/system/cpu/cpufreq/policy{c}/scaling_driver', m['driver'])
    for path, text in m['turbo'].items():
        write(root, path, text)
    for node, kb in enumerate(m['node_mem_kb']):
        cpus = f'{node * half}-{node * half + half - 1}'
        write(root, f'/sys/devices/system/node/node{node}/cpulist', cpus)
        write(root, f'/sys/devices/system/node/node{node}/meminfo', meminfo(node, kb))
    write(root, '/sys/devices/system/node/online', f'0-{len(m["node_mem_kb"]) - 1}')
    # loopback: not a physical interface
    write(root, '/sys/devices/virtual/net/lo/type', '772')
    write(root, '/sys/devices/virtual/net/lo/mtu', '65536')
    link(root, '/sys/class/net/lo', '../../devices/virtual/net/lo')
    # PCI: host bridge functions that are neither GPU nor NIC, GPUs, NICs, an HCA.
    pci_function(root, '0000:00:00.0', '0x8086', '0x060000', '0', None, None)
    for addr, numa, now, mx in m['gpus']:
        pci_function(root, addr, '0x10de', '0x030200', numa, now, mx)
    for addr, numa, now, mx, ifname, mtu in m['nics']:
        real = pci_function(root, addr, '0x8086', '0x020000', numa, now, mx)
        netdev(root, real, ifname, mtu, '10000')
    hca = pci_function(root, '0000:5e:00.0', '0x15b3', '0x020700', '0', ('8', '8.0 GT/s PCIe'),
                       ('8', '8.0 GT/s PCIe'))
    link(root, f'{hca}/infiniband/mlx4_0/device', '../../../0000:5e:00.0')
    link(root, '/sys/class/infiniband/mlx4_0',
         '../../devices/pci0000:5e/0000:5e:00.0/infiniband/mlx4_0')
    if m.get('vf'):
        # An SR-IOV virtual function: no link of its own, to be skipped.
        vf = pci_function(root, '0000:17:02.0', '0x8086', '0x020000', '0', None, None)
        link(root, f'{vf}/physfn', '../0000:17:00.0')
    for name, value in m['sysctl'].items():
        write(root, '/proc/sys/' + name.replace('.', '/'), value)
    write(root, '/proc/sys/kernel/sched_rt_runtime_us', m['rt_runtime'])
    write(root, '/proc/self/limits', limits(m['rtprio']))
    write(root, '/proc/self/status', status(m['cap_eff'], m['uid']))


GOOD_SYSCTL = {
    'net.core.rmem_max': '16777216', 'net.core.rmem_default': '16777216',
    'net.core.wmem_max': '16777216', 'net.core.wmem_default': '16777216',
    'net.core.netdev_max_backlog': '250000', 'net.ipv4.udp_mem': '262144\t327680\t393216',
}
GEN3_X16 = ('16', '8.0 GT/s PCIe')
GEN3_X8 = ('8', '8.0 GT/s PCIe')

COMPLIANT = {
    'hostname': 'cobalt-ok',
    'cpus': 16,
    'driver': 'intel_pstate',
    'governor': lambda c: 'performance',
    'turbo': {'/sys/devices/system/cpu/intel_pstate/no_turbo': '1',
              '/sys/devices/system/cpu/intel_pstate/status': 'active'},
    'node_mem_kb': [KB_64G, KB_64G],
    'gpus': [('0000:3b:00.0', '0', GEN3_X16, GEN3_X16),
             ('0000:d8:00.0', '1', GEN3_X16, GEN3_X16)],
    'nics': [('0000:17:00.0', '0', GEN3_X8, GEN3_X8, 'ens1f0', '9000'),
             ('0000:17:00.1', '0', GEN3_X8, GEN3_X8, 'ens1f1', '9000')],
    'sysctl': GOOD_SYSCTL,
    'rt_runtime': '950000', 'rtprio': '0', 'cap_eff': '000001ffffffffff', 'uid': '0',
    'vf': True,
}

NONCOMPLIANT = {
    'hostname': 'cobalt-bad',
    'cpus': 16,
    # AMD with acpi-cpufreq: schedutil on most CPUs, boost on
    'driver': 'acpi-cpufreq',
    'governor': lambda c: 'performance' if c < 4 else 'schedutil',
    'turbo': {'/sys/devices/system/cpu/cpufreq/boost': '1'},
    # a half-populated second socket
    'node_mem_kb': [KB_64G, KB_64G // 2],
    # GPU 0 idle at a lower link speed (a warning); GPU 1 behind a x8 riser (a failure)
    'gpus': [('0000:3b:00.0', '0', ('16', '2.5 GT/s PCIe'), GEN3_X16),
             ('0000:d8:00.0', '1', ('8', '8.0 GT/s PCIe'), GEN3_X16)],
    # ens1f0 without jumbo frames; ens1f1's port trained at Gen2
    'nics': [('0000:17:00.0', '0', GEN3_X8, GEN3_X8, 'ens1f0', '1500'),
             ('0000:17:00.1', '0', ('8', '5.0 GT/s PCIe'), GEN3_X8, 'ens1f1', '9000')],
    'sysctl': dict(GOOD_SYSCTL, **{'net.core.rmem_max': '212992',
                                   'net.core.rmem_default': '212992',
                                   'net.ipv4.udp_mem': '188049\t250733\t376098'}),
    # an unprivileged user without an rtprio limit
    'rt_runtime': '950000', 'rtprio': '0', 'cap_eff': '0000000000000000', 'uid': '1000',
}

if __name__ == '__main__':
    build(os.path.join(HERE, 'compliant'), COMPLIANT)
    build(os.path.join(HERE, 'noncompliant'), NONCOMPLIANT)
    print('wrote', os.path.join(HERE, 'compliant'), os.path.join(HERE, 'noncompliant'))
