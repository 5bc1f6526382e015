'''What a node sweep (jobs/node-sweep.slurm) was to produce, held against what it left.

The batch script writes `allocation` (every node of the job, one per line) before the pack
starts; each node's pack writes `<node>/plan` (the tests it is to run) before its first
test. A sweep is read as whole only when every node of the allocation has a plan and every
planned test a result (a document, or the record of its end that `cobalt-bench judge`
writes even for a kernel killed before it wrote one). A batch host the sweep's watchdog
found lost (`batch-host-lost`) is a failure of that node. What is missing becomes a case that
FAILS on its node, naming what is missing: a node that wrote nothing, a test with no
result, a document of another host. Nothing lost is a pass.
'''

import os
import re
from dataclasses import replace

from .. import kernels
from ..tools.slurm_nodes import NODE_NAME
from .model import Case
from .result import Result

ALLOCATION = 'allocation'
PLAN = 'plan'
#: Written by the sweep's watchdog (jobs/lib/batch-watch.sh) when the batch host is lost:
#: 'HOST STATE TIME'.
BATCH_HOST_LOST = 'batch-host-lost'
# The plan's name of the node's inventory (store.inventory): a document, not a case.
INVENTORY = 'inventory'
_TEST = re.compile(r'[a-z][a-z0-9-]{0,40}')
_MAX_LINES = 200000


def _lines(path, pattern):
    '''The valid lines of a small text file (None where it is absent or unreadable).'''
    try:
        with open(path, encoding='utf-8', errors='replace') as fp:
            lines = [line.strip() for _, line in zip(range(_MAX_LINES), fp)]
    except OSError:
        return None
    return [line for line in lines if pattern.fullmatch(line)]


def _node_dir(case, root):
    '''The node directory (DIR/<node>/) a case's files are in, or ''.'''
    files = case.doc_paths[:1] or [d.path for d in case.damaged[:1]] or case.dirs[:1]
    if not files:
        return ''
    rel = os.path.relpath(files[0], root).split(os.sep)
    return rel[0] if len(rel) >= 2 or case.dirs[:1] == files else ''


def _lost(node, test, why):
    return Case(check=test, partition='sweep', nodes=[node], node=node, result=Result.FAIL,
                fail_phase='run', fail_reason=f'{node}: {why}')


def account(run, root):
    '''Hold the cases of a sweep directory `root` against its allocation and the nodes'
    plans: the run gains a failing case for each node or planned test without a result,
    and a document whose host is not its node's fails. No `allocation` file: not a sweep
    (a directory of job documents), nothing is added.'''
    nodes = _lines(os.path.join(root, ALLOCATION), NODE_NAME)
    if nodes is None:
        return
    have = {}
    allocated = set(nodes)
    for case in run.cases:
        node = _node_dir(case, root)
        if not node:
            continue
        have.setdefault(node, set()).add(case.check)
        host = case.docs[0].get('host') if case.docs else None
        host = host.split('.')[0] if isinstance(host, str) else ''
        # Another node of the allocation named: a copied or misplaced result. (A host name
        # that is no node name at all is a site whose NodeName differs from the host's.)
        if host and host != node and host in allocated:
            case.foreign = (f'{node}: its {case.check} document says it ran on host '
                            f'{host!r}, not on {node}: a result of another node')
        if case.foreign or not case.nodes or not any(case.nodes):
            case.nodes = [node]
    for i, inv in enumerate(run.inventories):
        rel = os.path.relpath(inv.path, root).split(os.sep)
        if len(rel) >= 2 and rel[0] in allocated:
            run.inventories[i] = replace(inv, node=rel[0])
            have.setdefault(rel[0], set()).add(INVENTORY)
    lost = _lines(os.path.join(root, BATCH_HOST_LOST), re.compile(r'\S+ \S+ \S+'))
    for host, state, when in (line.split() for line in lost or []):
        if host in allocated:
            run.cases.append(_lost(host, 'node-sweep', (
                f'the batch host of the sweep, lost at {when} (Slurm: {state}): the '
                'sweep was ended by its watchdog')))
    for node in dict.fromkeys(nodes):
        plan = _lines(os.path.join(root, node, PLAN), _TEST)
        if plan is None:
            why = ('wrote nothing: no directory' if not os.path.isdir(os.path.join(root, node))
                   else 'wrote no plan: its pack never started')
            run.cases.append(_lost(node, 'node-pack', f'{why} (a node of the allocation '
                                   'without a result is a failure of that node)'))
            continue
        for test in plan:
            # The pack's name of a capacity run (mem-capacity) is its check's (MemCapacity).
            capacity = kernels.capacity_of_test(test)
            check = capacity.check if capacity else test
            if check not in have.get(node, ()):
                run.cases.append(_lost(node, check, (
                    f'{test} left no result (no document and no record of its end: the '
                    'node lost it, or its pack was killed)')))
