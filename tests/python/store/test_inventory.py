'''store.inventory reads the inventory documents a sweep's nodes wrote, once, into typed
Inventory values: a real one of a GPU machine (tests/data/inventory/h200-vm.json, written
live on an H200 machine) and this VM's (from its recorded root); a damaged one is named, and
the reader keeps inventories beside the cases, never as one.'''
import json
import os
import shutil
import subprocess

import pytest

from cobalt_bench.judging import classes
from cobalt_bench.store import inventory, reader
from cobalt_bench.store.documents import Damaged
from plugins.checkout import ROOT

DATA = os.path.join(ROOT, 'tests', 'data', 'inventory')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


def vm_document(where):
    '''The inventory this VM's recorded root gives (the real command on it).'''
    r = subprocess.run([COBALT_BENCH, 'inventory', '--root', os.path.join(DATA, 'vm-x86'),
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
