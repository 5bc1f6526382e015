'''cobalt_bench.inventory.items on roots written here: what the recorded roots do not have
(NVIDIA GPUs, an aarch64 CPU), and the one table of keys (ITEMS) that every item and
docs/inventory.md follow.'''

import json

import pytest

from cobalt_bench.inventory import ITEMS, collect, digest, spec_of
from cobalt_bench.preflight import Tree
from plugins.checkout import DATA, REPO_ROOT


def write(root, files):
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text + '\n')


# The driver's own files (NVIDIA driver 550, proc/driver/nvidia/gpus/*/information).
INFORMATION = '''Model: \t\t NVIDIA H100 80GB HBM3
IRQ:   \t\t 2205
GPU UUID: \t GPU-00000000-0000-0000-0000-00000000c057
Video BIOS: \t 96.00.99.00.01
Bus Type: \t PCIe
DMA Size: \t 52 bits
DMA Mask: \t 0xfffffffffffff
Bus Location: \t 0000:{bus}
Device Minor: \t {minor}
GPU Excluded:\t No'''
VERSION = ('NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release '
           'Build  (dvs-builder@U16-I3-B03-4-3)  Fri May 31 09:30:47 UTC 2024\n'
           'GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04)')


def test_gpus(tmp_path):
    write(tmp_path, {f'proc/driver/nvidia/gpus/0000:{bus}/information':
                     INFORMATION.format(bus=bus, minor=n)
                     for n, bus in enumerate(('18:00.0', '2a:00.0'))})
    write(tmp_path, {'proc/driver/nvidia/version': VERSION})
    items = collect(Tree(str(tmp_path)))
    assert items == {
        'gpu.driver': '550.90.07', 'gpu.count': 2,
        'gpu.0000:18:00.0.model': 'NVIDIA H100 80GB HBM3',
        'gpu.0000:18:00.0.vbios': '96.00.99.00.01',
        'gpu.0000:18:00.0.uuid': 'GPU-00000000-0000-0000-0000-00000000c057',
        'gpu.0000:2a:00.0.model': 'NVIDIA H100 80GB HBM3',
        'gpu.0000:2a:00.0.vbios': '96.00.99.00.01',
        'gpu.0000:2a:00.0.uuid': 'GPU-00000000-0000-0000-0000-00000000c057'}
    assert [k for k in items if spec_of(k).identity] == [
        'gpu.0000:18:00.0.uuid', 'gpu.0000:2a:00.0.uuid']


def test_the_proprietary_driver_version_and_no_gpu(tmp_path):
    (tmp_path / 'proc/driver/nvidia/gpus').mkdir(parents=True)
    write(tmp_path, {'proc/driver/nvidia/version': 'NVRM version: NVIDIA UNIX x86_64 '
                     'Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024'})
    assert collect(Tree(str(tmp_path))) == {'gpu.driver': '535.161.08', 'gpu.count': 0}


def test_aarch64_cpu(tmp_path):
    # An aarch64 /proc/cpuinfo (Neoverse N1) says no model name and no microcode.
    block = ('processor\t: {n}\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull '
             'sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs\n'
             'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\n'
             'CPU part\t: 0xd0c\nCPU revision\t: 1')
    write(tmp_path, {'proc/cpuinfo': '\n\n'.join(block.format(n=n) for n in range(2))})
    items = collect(Tree(str(tmp_path)))
    # echo FEATURES | tr ' ' '\n' | LC_ALL=C sort | sha256sum | cut -c1-16
    assert items == {'cpu.model': 'implementer 0x41 part 0xd0c variant 0x3 revision 1',
                     'cpu.flags_digest': 'de6c673e617edb32'}


def test_digest_is_sha256sum_of_the_lines():
    # `printf 'a\nb\n' | sha256sum | cut -c1-16`, and of nothing
    assert digest(['a', 'b']) == '911169ddaaf146af'
    assert digest([]) == 'e3b0c44298fc1c14'


@pytest.mark.parametrize('key, pattern', [
    ('net.eth0.mtu', 'net.<if>.mtu'), ('net.eth0.mac', 'net.<if>.mac'),
    ('memory.node12', 'memory.node<N>'), ('memory.total', 'memory.total'),
    ('ib.mlx5_0.port2.rate', 'ib.<hca>.port<N>.rate'),
    ('gpu.0000:18:00.0.model', 'gpu.<bus>.model'),
    ('sysctl.net.ipv4.udp_mem', 'sysctl.<name>'), ('dmi.product_uuid', 'dmi.product_uuid'),
])
def test_every_key_has_its_row(key, pattern):
    assert spec_of(key).key == pattern


def test_keys_of_no_row():
    assert spec_of('cpu.colour') is None and spec_of('memory.nodeX') is None


def test_the_table():
    keys = [spec.key for spec in ITEMS]
    assert len(keys) == len(set(keys))
    assert all(spec.meaning and spec.source for spec in ITEMS)
    identity = {spec.key for spec in ITEMS if spec.identity}
    assert identity == {'host.name', 'host.boot_id', 'host.boot_time', 'dmi.product_serial',
                        'dmi.board_serial', 'dmi.product_uuid', 'net.<if>.mac',
                        'ib.<hca>.node_guid', 'gpu.<bus>.uuid'}


def test_every_recorded_item_is_in_the_table():
    for expected in DATA.glob('inventory/*/expected.json'):
        items = json.loads(expected.read_text())['items']
        assert [k for k in items if spec_of(k) is None] == [], expected


def test_docs_name_every_key():
    text = (REPO_ROOT / 'docs' / 'inventory.md').read_text()
    assert [spec.key for spec in ITEMS if f'`{spec.key}`' not in text] == []
