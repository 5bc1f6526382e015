'''Configuration classes: the nodes of a partition grouped by what their inventories say
they are (store.inventory), the majority named, and each node's differences from it.

Per partition of n nodes (MIN_NODES or more; fewer say nothing of which node is off: they
are only put apart, nodes of the same configuration one class, and every item they differ on
is split):
  usual     for each configuration item, the value more than half of the nodes hold: an
            item without one (a partition split in two halves) is named as split, and no
            node differs on it; an item a node lacks is the value None (absent);
  differs   a node's value is not the usual one; for the sizes of memory (memory.*) a value
            within MEMORY_TOLERANCE of the usual one is the same (the firmware reserves a
            few MB more on one board than on the next);
  classes   the nodes that differ on the same items with the same values are one class;
            the nodes that differ on nothing are the majority class. Every other class is
            a minority: its nodes are named with what differs ("cpu.usable 1, peers 2").

The differences are also the likely why of a node whose measurements stand out (judging
.fleet): what it is that its peers are not, never what every node shares.
'''

from collections import Counter
from dataclasses import dataclass, field

MIN_NODES = 3
MEMORY_TOLERANCE = 0.02     # 2 %: a node short of a DIMM (1/8 to 1/2 of it) is far beyond
#: What an admin calls the items that most often tell a slow node (the key stays beside).
LABELS = {'cpu.usable': 'CPUs usable', 'cpu.threads': 'CPUs online', 'cpu.cores': 'cores',
          'cpu.sockets': 'sockets', 'cpu.model': 'CPU model', 'cpu.microcode': 'microcode',
          'memory.total': 'memory', 'numa.nodes': 'NUMA nodes',
          'kernel.release': 'kernel release', 'kernel.cmdline': 'kernel command line',
          'dmi.bios_version': 'BIOS version', 'packages.digest': 'installed packages'}


@dataclass(frozen=True)
class Difference:
    key: str
    value: object               # the node's (None: it lacks the item)
    usual: object               # what the majority of the partition's nodes hold
    holders: int                # how many of the partition's nodes hold the usual value

    @property
    def text(self):
        label = f'{LABELS[self.key]} ({self.key})' if self.key in LABELS else self.key
        return f'{label} {_show(self.key, self.value)}, usual {_show(self.key, self.usual)} ' \
               f'({self.holders} nodes)'


@dataclass
class ConfigClass:
    nodes: list                 # node names
    differences: tuple = ()     # (Difference, ...) from the usual values; () : the majority

    @property
    def majority(self):
        return not self.differences

    @property
    def text(self):
        return ', '.join(d.text for d in self.differences) or 'the usual configuration'


@dataclass
class PartitionClasses:
    partition: str
    nodes: int
    classes: list = field(default_factory=list)     # [ConfigClass], the majority first
    split: tuple = ()           # items no value of which more than half the nodes hold
    judged: bool = True         # False: under MIN_NODES nodes, every item they differ on split

    @property
    def minorities(self):
        return [c for c in self.classes if not c.majority]

    def differences(self, node):
        '''The Differences of `node` from its peers' usual configuration (() : none).'''
        return next((c.differences for c in self.classes if node in c.nodes), ())


def _show(key, value):
    if value is None:
        return 'absent'
    if _tolerant(key, value):
        return f'{value / 2**30:.1f} GiB'
    if isinstance(value, tuple):
        return ','.join(map(str, value))
    return str(value)


def _tolerant(key, value):
    return key.startswith('memory.') and isinstance(value, (int, float))


def _same(key, a, b):
    if _tolerant(key, a) and _tolerant(key, b):
        return abs(a - b) <= MEMORY_TOLERANCE * max(abs(a), abs(b))
    return a == b


def _usual(key, values):
    '''The value more than half of `values` hold (None where none does), and how many.'''
    counts = Counter(values)
    if _tolerant(key, next((v for v in values if v is not None), None)):
        # sizes: the most common value counting those within the tolerance as equal
        counts = Counter({v: sum(_same(key, v, w) for w in values) for v in set(values)})
    value, held = counts.most_common(1)[0]
    return (value, held) if 2 * held > len(values) else (None, 0)


def classify_partition(partition, inventories):
    '''The PartitionClasses of one partition's Inventories (one per node).'''
    configs = {inv.name: inv.configuration for inv in inventories}
    nodes = sorted(configs)
    result = PartitionClasses(partition, len(nodes))
    keys = sorted({k for c in configs.values() for k in c})
    differing = [key for key in keys if not all(
        _same(key, configs[n].get(key), configs[nodes[0]].get(key)) for n in nodes)]
    if len(nodes) < MIN_NODES:
        # Too few to say which value is usual: the nodes are only put apart by what they
        # differ on (every such item split), and none is a minority.
        result.judged = False
        groups = {}
        for node in nodes:
            shape = tuple(configs[node].get(key) for key in differing)
            groups.setdefault(shape, ConfigClass([])).nodes.append(node)
        result.classes = list(groups.values())
        result.split = tuple(differing)
        return result
    split, diffs = [], {n: [] for n in nodes}
    for key in differing:
        values = [configs[n].get(key) for n in nodes]
        usual, held = _usual(key, values)
        if not held:
            split.append(key)
            continue
        for node, value in zip(nodes, values):
            if not _same(key, value, usual):
                diffs[node].append(Difference(key, value, usual, held))
    groups = {}
    for node in nodes:
        shape = tuple((d.key, d.value) for d in diffs[node])
        groups.setdefault(shape, ConfigClass([], tuple(diffs[node]))).nodes.append(node)
    result.classes = sorted(groups.values(), key=lambda c: (not c.majority, -len(c.nodes),
                                                            c.nodes))
    result.split = tuple(split)
    return result


def classify(inventories, partition_of):
    '''[PartitionClasses] of a run's Inventories, grouped by `partition_of(node name)`.'''
    by_partition = {}
    for inv in inventories:
        by_partition.setdefault(partition_of(inv.name), {})[inv.name] = inv    # last wins
    return [classify_partition(p, list(invs.values()))
            for p, invs in sorted(by_partition.items())]
