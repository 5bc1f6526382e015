'''Inventory: what a node is (CPU, memory, firmware, kernel, drivers, network and RDMA
adapters, GPUs, settings, packages) as a flat, ordered set of items {key: value}, so that
a fleet analysis can group a partition's nodes into configuration classes and say where a
node differs from its peers. Each key is in one table, items.ITEMS, with its meaning, its
source and whether it is a configuration item (compared between peers) or an identity
item (a host name, a serial number, a MAC address: differs per node by nature).

Everything is read through preflight's Tree (preflight/system.py): `--root DIR` reads a
recorded root as this machine is read, and `--record DIR` records what was read,
programs' output (ethtool, dmidecode) and the installed package list included
(Tree.derived), so a root recorded on one node gives the same items elsewhere. An absent
source gives no item. The command, `cobalt-bench inventory`, is cobalt_bench.cli.inventory.
'''

from .document import TEST, TEST_VERSION, format_items, take
from .items import CONFIGURATION, IDENTITY, ITEMS, ItemSpec, collect, digest, spec_of

__all__ = ['ITEMS', 'ItemSpec', 'CONFIGURATION', 'IDENTITY', 'spec_of', 'collect', 'digest',
           'TEST', 'TEST_VERSION', 'take', 'format_items']
