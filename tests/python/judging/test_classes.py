'''judging.classes: a partition's nodes grouped by their inventories, the majority named,
each other node's differences said; and judging.fleet naming a minority node a bad node
with those differences as its why, and the findings most nodes share said once.'''
from cobalt_bench import preflight as pf
from cobalt_bench.judging import classes, fleet
from cobalt_bench.store.inventory import Inventory

GIB = 2**30
BASE = {'cpu.model': 'AMD EPYC 9454', 'cpu.usable': 2, 'cpu.threads': 2,
        'memory.total': 24 * GIB, 'kernel.release': '6.1.0-26-amd64',
        'net.eth0.mtu': 1500, 'host.boot_id': 'x'}


def fleet_of(n, **changed):
    '''n nodes n1..nN of BASE; changed={'n3': {'cpu.usable': 1}} plants differences.'''
    out = []
    for i in range(1, n + 1):
        items = dict(BASE, **changed.get(f'n{i}', {}))
        items['host.boot_id'] = f'boot-{i}'        # an identity item: differs by nature
        out.append(Inventory(f'n{i}', items, frozenset({'host.boot_id'})))
    return out


def test_identical_nodes_are_one_class():
    (pc,) = classes.classify(fleet_of(8), lambda n: 'x86')
    assert [c.nodes for c in pc.classes] == [[f'n{i}' for i in range(1, 9)]]
    assert not pc.minorities and pc.classes[0].majority


def test_a_node_with_half_its_cpus_is_a_minority_named_by_what_differs():
    (pc,) = classes.classify(fleet_of(8, n3={'cpu.usable': 1}), lambda n: 'x86')
    (minority,) = pc.minorities
    assert minority.nodes == ['n3']
    (d,) = minority.differences
    assert (d.key, d.value, d.usual, d.holders) == ('cpu.usable', 1, 2, 7)
    assert d.text == 'CPUs usable (cpu.usable) 1, usual 2 (7 nodes)'
    assert pc.differences('n3') == minority.differences and pc.differences('n1') == ()


def test_memory_within_the_tolerance_is_the_same_and_half_of_it_is_not():
    planted = fleet_of(8, n2={'memory.total': 24 * GIB - 40 * 2**20},    # firmware's MB
                       n5={'memory.total': 12 * GIB})
    (pc,) = classes.classify(planted, lambda n: 'x86')
    assert [c.nodes for c in pc.minorities] == [['n5']]
    assert '12.0 GiB, usual 24.0 GiB' in pc.minorities[0].text


def test_nodes_that_differ_alike_are_one_class_and_a_split_names_no_node():
    planted = fleet_of(8, n7={'kernel.release': '6.9'}, n8={'kernel.release': '6.9'})
    (pc,) = classes.classify(planted, lambda n: 'x86')
    assert [c.nodes for c in pc.minorities] == [['n7', 'n8']]
    half = fleet_of(4, n3={'kernel.release': '6.9'}, n4={'kernel.release': '6.9'})
    (pc,) = classes.classify(half, lambda n: 'x86')
    assert pc.split == ('kernel.release',) and not pc.minorities


def test_an_item_a_node_lacks_is_a_difference():
    planted = fleet_of(4)
    del planted[1].items['net.eth0.mtu']
    (pc,) = classes.classify(planted, lambda n: 'x86')
    assert pc.minorities[0].text == 'net.eth0.mtu absent, usual 1500 (3 nodes)'


def test_too_few_nodes_say_nothing_and_partitions_are_apart():
    (pc,) = classes.classify(fleet_of(2, n2={'cpu.usable': 1}), lambda n: 'x86')
    assert not pc.judged and not pc.minorities and pc.differences('n2') == ()
    # put apart all the same, by what they differ on (the identity item not among it)
    assert [c.nodes for c in pc.classes] == [['n1'], ['n2']] and pc.split == ('cpu.usable',)
    (pc,) = classes.classify(fleet_of(2), lambda n: 'x86')
    assert [c.nodes for c in pc.classes] == [['n1', 'n2']] and pc.split == ()
    parts = classes.classify(fleet_of(6, n6={'cpu.model': 'Neoverse-V2'}),
                             lambda n: 'arm' if n in ('n5', 'n6') else 'x86')
    assert [p.partition for p in parts] == ['arm', 'x86']
    assert not any(p.minorities for p in parts)      # 2 arm nodes: not compared


def finding(setting, value):
    return pf.Finding(setting=setting, status=pf.FAIL, value=value, expected='>= 9000',
                      fix='', level=pf.REQUIRED)


def test_fleet_names_the_minority_node_and_says_shared_findings_once(monkeypatch):
    invs = fleet_of(8, n3={'cpu.usable': 1})
    docs = [(f'n{i}', {'test': 'preflight', 'host': f'n{i}'}) for i in range(1, 9)]
    mine = {f'n{i}': [finding('net.eth0.mtu', '1500')] for i in range(1, 9)}
    mine['n3'].append(finding('cpu.governor', 'powersave'))
    monkeypatch.setattr(pf, 'findings_of', lambda doc: mine[doc['host']])
    f = fleet.analyse([], 'jobs', docs, inventories=invs)
    assert [b.node for b in f.bad_nodes] == ['n3']
    (b,) = f.bad_nodes
    assert 'CPUs usable (cpu.usable) 1, usual 2' in b.why
    # the MTU finding all eight share is the fleet's, said once, not n3's why
    assert f.shared_findings == [('net.eth0.mtu fail: 1500 (expected >= 9000)', 8)]
    assert 'net.eth0.mtu' not in b.why and 'cpu.governor fail: powersave' in b.likely
    assert f.hostlist == 'n3'


def test_the_report_shows_classes_only_where_nodes_were_compared():
    '''A run of one node (README's local suite) gets no configuration-class section; a
    partition of eight gets one row per class, the majority first.'''
    from types import SimpleNamespace

    from cobalt_bench.report import fleet as rp_fleet

    def rows(invs):
        f = fleet.analyse([], 'jobs', inventories=invs)
        return rp_fleet.class_rows(SimpleNamespace(judgement=SimpleNamespace(fleet=f)))
    assert rows(fleet_of(1)) == []
    assert rows(fleet_of(8, n3={'cpu.usable': 1})) == [
        ['jobs', 'n[1-2,4-8] (7)', 'the usual configuration'],
        ['jobs', 'n3 (1)', 'CPUs usable (cpu.usable) 1, usual 2 (7 nodes)']]
