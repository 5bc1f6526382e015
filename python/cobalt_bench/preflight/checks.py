'''All the checks over one tree, and the tree that `--root` and `--record` name: what
`cobalt-bench preflight` does before it prints (cobalt_bench.cli.preflight).'''

import datetime
import os
import tempfile
import time

from ..errors import CannotRun, UsageError
from .cpu import check_governor, check_numa, check_realtime, check_turbo
from .document import check_json_dest, document
from .network import check_mtu, check_net_sysctls
from .pcie import check_pcie
from .system import RecordingTree, Tree


def run_checks(tree, interfaces=None, probe=True):
    findings = [check_governor(tree), check_turbo(tree)]
    findings += check_mtu(tree, interfaces)
    findings += check_net_sysctls(tree)
    findings.append(check_numa(tree))
    findings += check_pcie(tree)
    findings.append(check_realtime(tree, probe))
    return findings


def open_tree(root='/', record=None, json_dest=None):
    '''The Tree to judge: the recorded one at `root`, this machine's, or this machine's
    recorded into `record`. Every argument is checked here, `json_dest` (--json) too,
    before any setting is read: a usage error never comes after the checks ran.'''
    if root != '/' and not os.path.isdir(root):
        raise UsageError(f'--root {root}: no such directory')
    if record is not None and root != '/':
        raise UsageError('--record reads this machine; it cannot be combined with --root')
    if json_dest is not None:
        check_json_dest(json_dest)
    if record is not None:
        if not record.strip():
            raise UsageError('--record: empty directory name')
        if os.path.lexists(record) and not os.path.isdir(record):
            raise UsageError(f'--record {record}: exists and is not a directory')
        try:
            if os.listdir(record) if os.path.isdir(record) else False:
                raise UsageError(f'--record {record}: directory exists and is not empty')
            os.makedirs(record, exist_ok=True)
            # Writable now, not after every check ran: a file and its removal.
            probe_fd, probe_path = tempfile.mkstemp(dir=record, prefix='.record-')
            os.close(probe_fd)
            os.unlink(probe_path)
        except OSError as err:
            raise UsageError(f'--record {record}: cannot write there: {err.strerror or err}')
        tree = RecordingTree(record)
    else:
        tree = Tree(root)
    if not tree.exists('/sys') and not tree.exists('/proc'):
        raise CannotRun(f'{tree.root}: holds neither sys/ nor proc/')
    return tree


def inspect(tree, interfaces=None, probe=True):
    '''(findings, document) of every check on `tree`; `probe`: also try `chrt` (on this
    machine only: a recorded tree is judged from its files).'''
    started = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    t0 = time.monotonic()
    findings = run_checks(tree, interfaces, probe)
    duration = time.monotonic() - t0
    doc = document(findings, tree.host(), started, duration,
                   {'root': tree.root, 'interfaces': interfaces, 'probe': probe and tree.live})
    return findings, doc
