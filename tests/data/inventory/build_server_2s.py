#!/usr/bin/env python3
'''Writes tests/data/inventory/server-2s/: a root CONSTRUCTED here, not recorded, for
`cobalt-bench inventory --root` (tests/python/inventory/). No two-socket server was at
hand; this one is a Dell PowerEdge R640 class node as such nodes are sold and installed:
2 x Intel Xeon Gold 6248 (Cascade Lake, 20 cores and 40 threads each), 12 x 32 GB DDR4-2933
(one per channel, 12 of 24 slots), so 2 NUMA nodes of 192 GiB; an Intel E810 25GbE NIC (ice,
one port up at 9000, one down), a ConnectX-6 HDR100 HCA (mlx5) with its IPoIB interface;
Rocky Linux 9.3. The layout is the one `--record` writes (tests/data/inventory/vm-x86:
relative links from /sys/class into /sys/devices, /proc/self a plain directory, programs'
output under cobalt-bench/); the formats are the kernel's and the programs' own.

Serial numbers, UUIDs, GUIDs and MAC addresses are made up (CNSTRCT...). Left short on
purpose: proc/cpuinfo holds processor 0 only (inventory reads the first processor), the
package list a dozen packages.

    python3 tests/data/inventory/build_server_2s.py      # rewrites server-2s/ but its
                                                          # expected.json
'''

import os
import shutil

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'server-2s')

CORE_IDS = (0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 16, 17, 18, 19, 20, 24, 25, 26, 27, 28)
NODE_KB = (197426100, 198177724)     # MemTotal per node: 192 GiB of DIMMs less the kernel's

FLAGS = ('fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush '
         'dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc '
         'art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni '
         'pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid '
         'dca sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand '
         'lahf_lm abm 3dnowprefetch cpuid_fault epb cat_l3 cdp_l3 invpcid_single intel_ppin '
         'ssbd mba ibrs ibpb stibp ibrs_enhanced tpr_shadow vnmi flexpriority ept vpid ept_ad '
         'fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm cqm mpx rdt_a avx512f '
         'avx512dq rdseed adx smap clflushopt clwb intel_pt avx512cd avx512bw avx512vl '
         'xsaveopt xsavec xgetbv1 xsaves cqm_llc cqm_occup_llc cqm_mbm_total cqm_mbm_local '
         'dtherm ida arat pln pts pku ospke avx512_vnni md_clear flush_l1d arch_capabilities')

CPUINFO = f'''processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
stepping\t: 7
microcode\t: 0x5003604
cpu MHz\t\t: 2500.000
cache size\t: 28160 KB
physical id\t: 0
siblings\t: 40
core id\t\t: 0
cpu cores\t: 20
apicid\t\t: 0
initial apicid\t: 0
fpu\t\t: yes
fpu_exception\t: yes
cpuid level\t: 22
wp\t\t: yes
flags\t\t: {FLAGS}
bugs\t\t: spectre_v1 spectre_v2 spec_store_bypass swapgs taa itlb_multihit mmio_stale_data retbleed eibrs_pbrsb gds
bogomips\t: 5000.00
clflush size\t: 64
cache_alignment\t: 64
address sizes\t: 46 bits physical, 48 bits virtual
power management:
'''

PACKAGES = '''bash=0:5.1.8-6.el9_1
glibc=0:2.34-83.el9.7
infiniband-diags=0:46.0-1.el9
kernel=0:5.14.0-362.8.1.el9_3
libibverbs=0:46.0-1.el9
linux-firmware=0:20230814-140.el9
numactl=0:2.0.16-1.el9
openssh-server=0:8.7p1-34.el9
python3=0:3.9.18-1.el9_3
rdma-core=0:46.0-1.el9
rocky-release=0:9.3-1.2.el9
slurm-slurmd=0:23.02.7-1.el9
ucx=0:1.14.1-1.el9'''


def write(path, text):
    full = os.path.join(ROOT, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as fp:
        fp.write(text if text.endswith('\n') else text + '\n')


def link(path, target):
    full = os.path.join(ROOT, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def dmidecode_memory():
    '''`dmidecode -t memory` (3.5): the array, then 24 slots A1..A12, B1..B12; the first
    slot of each channel (A1-A6, B1-B6) holds a 32 GB module.'''
    out = ['# dmidecode 3.5', 'Getting SMBIOS data from sysfs.', 'SMBIOS 3.2 present.', '',
           'Handle 0x1000, DMI type 16, 23 bytes', 'Physical Memory Array',
           '\tLocation: System Board Or Motherboard', '\tUse: System Memory',
           '\tError Correction Type: Multi-bit ECC', '\tMaximum Capacity: 3 TB',
           '\tNumber Of Devices: 24', '']
    for n, slot in enumerate([f'{s}{i}' for s in 'AB' for i in range(1, 13)]):
        installed = int(slot[1:]) <= 6
        out += [f'Handle 0x{0x1100 + n:04X}, DMI type 17, 84 bytes', 'Memory Device',
                '\tArray Handle: 0x1000', '\tTotal Width: 72 bits', '\tData Width: 64 bits',
                '\tSize: ' + ('32 GB' if installed else 'No Module Installed'),
                '\tForm Factor: DIMM', '\tSet: 1', f'\tLocator: {slot}',
                '\tType: DDR4' if installed else '\tType: Unknown',
                '\tSpeed: ' + ('2933 MT/s' if installed else 'Unknown'),
                '\tManufacturer: ' + ('00AD063200AD' if installed else 'Not Specified'),
                '\tSerial Number: ' + (f'CNSTRCT{n:02d}' if installed else 'Not Specified'),
                '\tPart Number: ' + ('HMA84GR7CJR4N-WM' if installed else 'Not Specified'),
                '\tRank: ' + ('2' if installed else 'Unknown'),
                '\tConfigured Memory Speed: ' + ('2933 MT/s' if installed else 'Unknown'), '']
    return '\n'.join(out)


def netdev(pci, name, mac, mtu, state, speed):
    '''A network interface of the PCI function `pci` (/sys/devices/...), linked from
    /sys/class/net; `speed` None: the file cannot be read (an interface that is down).'''
    real = f'{pci}/net/{name}'
    for attr, value in (('address', mac), ('mtu', mtu), ('operstate', state),
                        ('speed', speed)):
        if value is not None:
            write(f'{real}/{attr}', value)
    link(f'{real}/device', '../../../' + os.path.basename(pci))
    link(f'/sys/class/net/{name}', '../..' + real[len('/sys'):])


def pci_driver(pci, driver):
    link(f'{pci}/driver', '../' * (pci.count('/') - 1) + f'bus/pci/drivers/{driver}')


def build():
    for top in ('cobalt-bench', 'etc', 'proc', 'sys', 'usr'):      # not expected.json
        shutil.rmtree(os.path.join(ROOT, top), ignore_errors=True)
    write('/proc/sys/kernel/hostname', 'cn042')
    write('/proc/sys/kernel/random/boot_id', '8a3c2f51-6d0e-4b7a-9c1e-5f2d7b40c8e3')
    write('/proc/stat', 'cpu  81726354 1123 9182736 7261534987 18273 0 91827 0 0 0\n'
          'ctxt 91827364512\nbtime 1764230400\nprocesses 1827364\nprocs_running 2\n'
          'procs_blocked 0')
    write('/proc/cpuinfo', CPUINFO)
    write('/sys/devices/system/cpu/online', '0-79')
    for cpu in range(80):
        socket, core = cpu // 20 % 2, CORE_IDS[cpu % 20]
        write(f'/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id', str(socket))
        write(f'/sys/devices/system/cpu/cpu{cpu}/topology/core_id', str(core))
    write('/proc/self/status', 'Name:\tcobalt-bench\nUmask:\t0022\nState:\tR (running)\n'
          'Pid:\t48213\nCpus_allowed:\tffff,ffffffff,ffffffff\nCpus_allowed_list:\t0-79\n'
          'Mems_allowed:\t00000000,00000003\nMems_allowed_list:\t0-1')
    write('/proc/meminfo', f'MemTotal:       {sum(NODE_KB)} kB\n'
          'MemFree:        381726452 kB\nMemAvailable:   385172636 kB')
    for node, kb in enumerate(NODE_KB):
        write(f'/sys/devices/system/node/node{node}/cpulist',
              f'{node * 20}-{node * 20 + 19},{node * 20 + 40}-{node * 20 + 59}')
        write(f'/sys/devices/system/node/node{node}/meminfo',
              f'Node {node} MemTotal:       {kb} kB\nNode {node} MemFree:        '
              f'{kb * 96 // 100} kB\nNode {node} MemUsed:        {kb * 4 // 100} kB')
    write('/proc/sys/kernel/osrelease', '5.14.0-362.8.1.el9_3.x86_64')
    write('/proc/cmdline', 'BOOT_IMAGE=(hd0,gpt2)/vmlinuz-5.14.0-362.8.1.el9_3.x86_64 '
          'root=/dev/mapper/rl-root ro crashkernel=1G-4G:192M,4G-64G:256M,64G-:512M '
          'resume=/dev/mapper/rl-swap rd.lvm.lv=rl/root rd.lvm.lv=rl/swap intel_iommu=on '
          'iommu=pt')
    write('/usr/lib/os-release', 'NAME="Rocky Linux"\nVERSION="9.3 (Blue Onyx)"\nID="rocky"\n'
          'VERSION_ID="9.3"\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"\n'
          'HOME_URL="https://rockylinux.org/"')
    link('/etc/os-release', '../usr/lib/os-release')
    dmi = '/sys/devices/virtual/dmi/id'
    link('/sys/class/dmi/id', '../../devices/virtual/dmi/id')
    for name, value in (('bios_vendor', 'Dell Inc.'), ('bios_version', '2.19.1'),
                        ('bios_date', '06/12/2023'), ('board_vendor', 'Dell Inc.'),
                        ('board_name', '0H28RR'), ('product_name', 'PowerEdge R640'),
                        ('sys_vendor', 'Dell Inc.'), ('product_serial', 'CNSTRCT'),
                        ('board_serial', '.CNSTRCT.CN000000000001.'),
                        ('product_uuid', '4c4c4544-0000-1000-8000-00000c057c7d')):
        write(f'{dmi}/{name}', value)
    write('/cobalt-bench/dmidecode-t-memory', dmidecode_memory())
    write('/sys/devices/virtual/net/lo/mtu', '65536')
    link('/sys/class/net/lo', '../../devices/virtual/net/lo')
    for port, (name, mac, mtu, state, speed) in enumerate((
            ('ens2f0', '00:00:5e:00:53:01', '9000', 'up', '25000'),
            ('ens2f1', '00:00:5e:00:53:02', '1500', 'down', None))):
        pci = f'/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.{port}'
        pci_driver(pci, 'ice')
        netdev(pci, name, mac, mtu, state, speed)
        write(f'/cobalt-bench/ethtool-i-{name}',
              'driver: ice\nversion: 5.14.0-362.8.1.el9_3.x86_64\n'
              'firmware-version: 4.20 0x80017785 1.3346.0\nexpansion-rom-version: \n'
              f'bus-info: 0000:3b:00.{port}\nsupports-statistics: yes\nsupports-test: yes\n'
              'supports-eeprom-access: yes\nsupports-register-dump: yes\n'
              'supports-priv-flags: yes')
    hca = '/sys/devices/pci0000:d7/0000:d7:00.0/0000:d8:00.0'
    pci_driver(hca, 'mlx5_core')
    netdev(hca, 'ib0', '00:00:10:29:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:c0:57:c7',
           '4092', 'up', '100000')
    write('/cobalt-bench/ethtool-i-ib0',
          'driver: mlx5_core[ib_ipoib]\nversion: 5.14.0-362.8.1.el9_3.x86_64\n'
          'firmware-version: 20.38.1002 (DEL0000000027)\nexpansion-rom-version: \n'
          'bus-info: 0000:d8:00.0\nsupports-statistics: yes\nsupports-test: no\n'
          'supports-eeprom-access: no\nsupports-register-dump: no\nsupports-priv-flags: yes')
    ib = f'{hca}/infiniband/mlx5_0'
    link('/sys/class/infiniband/mlx5_0', '../../devices/pci0000:d7/0000:d7:00.0/'
                                          '0000:d8:00.0/infiniband/mlx5_0')
    for name, value in (('fw_ver', '20.38.1002'), ('board_id', 'DEL0000000027'),
                        ('node_guid', '0c42:a103:00c0:57c7'),
                        ('ports/1/link_layer', 'InfiniBand'),
                        ('ports/1/rate', '100 Gb/sec (2X HDR)'),
                        ('ports/1/state', '4: ACTIVE'), ('ports/1/phys_state', '5: LinkUp')):
        write(f'{ib}/{name}', value)
    for name, value in (('net/core/rmem_max', '16777216'),
                        ('net/core/rmem_default', '16777216'),
                        ('net/core/wmem_max', '16777216'),
                        ('net/core/wmem_default', '16777216'),
                        ('net/core/netdev_max_backlog', '250000'),
                        ('net/ipv4/udp_mem', '9270432\t12360576\t18540864')):
        write(f'/proc/sys/{name}', value)
    write('/cobalt-bench/packages', PACKAGES)


if __name__ == '__main__':
    build()
