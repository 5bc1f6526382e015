'''store.inventory reads the inventory documents a sweep's nodes wrote, once, into typed
Inventory values: a real one of a GPU machine (tests/data/inventory/h200-vm.json, written
live on an H200 machine) and this VM's (from its recorded root); a damaged one is named, and
the reader keeps inventories beside the cases, never as one.'''
import json
import os
import shutil
import subprocess
from dataclasses import replace

import pytest

from cobalt_bench.judging import classes
from cobalt_bench.store import inventory, reader
from cobalt_bench.store.documents import Damaged
from plugins.checkout import ROOT

DATA = os.path.join(ROOT, 'tests', 'data', 'inventory')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


def vm_document(where, root='vm-x86'):
    '''The inventory a recorded root gives (the real command on it): this VM's by default.'''
    r = subprocess.run([COBALT_BENCH, 'inventory', '--root', os.path.join(DATA, root),
                        '--quiet', '--json', str(where)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(where.read_text())


def test_a_real_gpu_machines_inventory_is_read():
    path = os.path.join(DATA, 'h200-vm.json')
    with open(path) as fp:
        inv = inventory.parse(json.load(fp), path)
    assert inv.host == 'vm' and inv.items['gpu.0000:00:06.0.model'] == 'NVIDIA H200'
    assert inv.items['cpu.usable'] == 16 and inv.items['memory.total'] > 120 * 2**30
    # identity items (serials, UUIDs, MACs, the boot) are not compared between peers
    config = inv.configuration
    assert 'gpu.0000:00:06.0.uuid' not in config and 'net.eth0.mac' not in config
    assert 'host.boot_id' not in config and config['kernel.release'] == '6.18.44-fc-v657-gpu'


def test_three_vms_and_the_gpu_machine_make_two_classes(tmp_path):
    vm = inventory.parse(vm_document(tmp_path / 'vm.json'), 'vm.json')
    with open(os.path.join(DATA, 'h200-vm.json')) as fp:
        gpu = inventory.parse(json.load(fp), 'h200-vm.json')
    nodes = [vm.__class__(**{**vm.__dict__, 'node': f'n{i}'}) for i in (1, 2, 3)]
    nodes.append(gpu.__class__(**{**gpu.__dict__, 'node': 'g1'}))
    (pc,) = classes.classify(nodes, lambda n: 'mixed')
    assert [c.nodes for c in pc.classes] == [['n1', 'n2', 'n3'], ['g1']]
    said = pc.minorities[0].text
    assert 'CPUs usable (cpu.usable) 16, usual 2 (3 nodes)' in said
    assert 'gpu.count 1, usual absent' in said


# Where the two real machines' roots differ (tests/data/inventory/README.md): their CPUs
# (AMD EPYC, Intel Xeon), NUMA node 0's memory, kernels, boot arguments, the UDP memory the
# kernel sized from memory, and packages. memory.total differs by 292 KiB of 23.5 GiB:
# within the tolerance, the same.
TWO_MACHINES_DIFFER = ['cpu.flags_digest', 'cpu.microcode', 'cpu.model', 'kernel.cmdline',
                       'kernel.release', 'memory.node0', 'packages.count', 'packages.digest',
                       'sysctl.net.ipv4.udp_mem']


def two_machines(tmp_path):
    '''The Inventories of the two recorded real machines, from the real command.'''
    return [inventory.parse(vm_document(tmp_path / f'{root}.json', root), root)
            for root in ('vm-x86', 'xeon-vm')]


def test_the_worked_out_items_of_the_two_machines_differ_where_said():
    # From the expected.json files (worked out with shell tools), not from the program.
    epyc, xeon = (json.load(open(os.path.join(DATA, root, 'expected.json')))
                  for root in ('vm-x86', 'xeon-vm'))
    identity = set(epyc['identity']) | set(xeon['identity'])
    keys = (set(epyc['items']) | set(xeon['items'])) - identity
    differ = sorted(k for k in keys if epyc['items'].get(k) != xeon['items'].get(k))
    assert differ == sorted(TWO_MACHINES_DIFFER + ['memory.total'])
    total = epyc['items']['memory.total'], xeon['items']['memory.total']
    assert abs(total[0] - total[1]) <= classes.MEMORY_TOLERANCE * max(total)


def test_the_two_real_machines_as_one_partition_are_apart_by_what_differs(tmp_path):
    epyc, xeon = two_machines(tmp_path)
    (pc,) = classes.classify([epyc, xeon], lambda n: 'x86')
    # Two nodes: too few to say which is usual, so neither is named; but they are two
    # classes, and what they differ on is every configuration item they differ on.
    assert not pc.judged and not pc.minorities
    assert sorted(c.nodes for c in pc.classes) == [['vm'], ['xeon-vm']]     # host names
    assert sorted(pc.split) == TWO_MACHINES_DIFFER
    assert not set(pc.split) & (epyc.identity | xeon.identity)


@pytest.mark.parametrize('many, one', [(0, 1), (1, 0)])
def test_either_real_machine_among_peers_of_the_other_is_named_by_exactly_what_differs(
        tmp_path, many, one):
    machines = two_machines(tmp_path)
    peers = [replace(machines[many], node=f'n{i}') for i in (1, 2, 3)]
    odd = replace(machines[one], node='n4')
    (pc,) = classes.classify([*peers, odd], lambda n: 'x86')
    assert pc.judged and [c.nodes for c in pc.classes] == [['n1', 'n2', 'n3'], ['n4']]
    (minority,) = pc.minorities
    assert sorted(d.key for d in minority.differences) == TWO_MACHINES_DIFFER
    said = {d.key: (d.value, d.usual, d.holders) for d in minority.differences}
    for key in TWO_MACHINES_DIFFER:
        assert said[key] == (machines[one].items[key], machines[many].items[key], 3)
    assert 'CPU model (cpu.model) ' + str(machines[one].items['cpu.model']) in minority.text
    identity = machines[0].identity | machines[1].identity
    assert identity >= {'host.name', 'host.boot_id', 'net.eth0.mac'}
    assert not [d for d in minority.differences if d.key in identity]


@pytest.mark.parametrize('doc, problem', [
    ({'test': 'inventory', 'items': {}}, 'without a "host"'),
    ({'test': 'inventory', 'host': 'n1', 'items': []}, '"items" is not an object'),
    ({'test': 'inventory', 'host': 'n1', 'items': {'cpu.usable': {'x': 1}}},
     "'cpu.usable' is not a string, number or list"),
    ({'test': 'inventory', 'host': 'n1', 'items': {}, 'identity': 'host.name'},
     '"identity" is not a list')])
def test_a_damaged_inventory_is_named(doc, problem):
    with pytest.raises(Damaged) as err:
        inventory.parse(doc, 'n1/inventory-7.json')
    assert problem in err.value.problem


def test_the_reader_keeps_inventories_beside_the_cases(tmp_path):
    node = tmp_path / 'n1'
    node.mkdir()
    vm_document(node / 'inventory-7.json')
    shutil.copy(os.path.join(ROOT, 'tests', 'data', 'store', 'mem-test.json'),
                node / 'mem-test-7.json')
    run = reader.load_run(str(tmp_path))
    assert [c.check for c in run.cases] == ['mem-test']
    assert [i.host for i in run.inventories] == ['vm']
    (node / 'inventory-7.json').write_text('{"test": "inventory", "host": 5}')
    run = reader.load_run(str(tmp_path))
    assert not run.inventories and any('without a "host"' in d.problem for d in run.damaged)
