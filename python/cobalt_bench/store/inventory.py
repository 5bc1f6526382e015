'''A node's inventory document (`cobalt-bench inventory --json FILE`, written on every node
by the node pack): what the node is (CPU, memory, kernel, firmware, drivers, settings) as
flat items, parsed once into an Inventory. The fleet analysis (judging.classes) groups a
partition's nodes by these items and names where a node differs from its peers.

An inventory is no kernel result: it has no metrics and nothing judges it by a reference,
so the reader keeps it beside the cases (Run.inventories), never as one.'''

import glob
import os
from dataclasses import dataclass, replace

from .documents import Damaged, read_json

TEST = 'inventory'


@dataclass(frozen=True)
class Inventory:
    host: str                   # the host it was taken on (short name)
    items: dict                 # {key: value}: str, int, float or a list of them
    identity: frozenset         # the keys that differ per node by nature (serials, MACs)
    path: str = ''
    node: str = ''              # the sweep's node directory it was found in ('' : none)

    @property
    def name(self):
        '''The node it describes: its sweep directory, else its host.'''
        return self.node or self.host

    @property
    def configuration(self):
        '''{key: value} of the items compared between peers (identity items left out).'''
        return {k: v for k, v in self.items.items() if k not in self.identity}


def is_inventory(doc):
    return isinstance(doc, dict) and doc.get('test') == TEST


def _scalar(v):
    return isinstance(v, (str, int, float)) and not isinstance(v, bool)


def parse(doc, path):
    '''The Inventory of a parsed inventory document; Damaged where its shape is wrong.'''
    host, items, identity = doc.get('host'), doc.get('items'), doc.get('identity', [])
    if not isinstance(host, str) or not host:
        raise Damaged(path, 'inventory document without a "host"')
    if not isinstance(items, dict):
        raise Damaged(path, 'inventory document: "items" is not an object')
    bad = [k for k, v in items.items() if not (_scalar(v) or (
        isinstance(v, list) and all(_scalar(x) for x in v)))]
    if bad:
        raise Damaged(path, f'inventory item {bad[0]!r} is not a string, number or list')
    if not isinstance(identity, list) or not all(isinstance(k, str) for k in identity):
        raise Damaged(path, 'inventory document: "identity" is not a list of item keys')
    items = {k: tuple(v) if isinstance(v, list) else v for k, v in items.items()}
    return Inventory(host.split('.')[0], items, frozenset(identity), path)


def of_sweep(sweep):
    '''The readable Inventories of a node sweep's directory (DIR/<node>/inventory-*.json),
    each of the node whose directory holds it; only those files are read (a health check
    needs the peers, not their results).'''
    found = []
    for path in glob.glob(os.path.join(sweep, '*', f'{TEST}-*.json')):
        try:
            inv = parse(read_json(path), path)
        except (Damaged, OSError):
            continue
        found.append(replace(inv, node=os.path.basename(os.path.dirname(path))))
    return found


def newest_sweep_with(base, node, limit):
    '''The newest of the `limit` newest node sweeps of the store `base` (its slurm/
    directory) that has an inventory of `node`, or None.'''
    sweeps = sorted(glob.glob(os.path.join(base, 'slurm', 'node-sweep-*')),
                    key=os.path.getmtime, reverse=True)[:limit]
    return next((s for s in sweeps if glob.glob(os.path.join(s, node, f'{TEST}-*.json'))),
                None)
