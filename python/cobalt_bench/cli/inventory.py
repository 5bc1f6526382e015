'''`cobalt-bench inventory`: what a node is (cobalt_bench.inventory) as a command: what it
prints, writes and its exit status.'''

import textwrap

from .. import __version__
from .terminal import say

DESCRIPTION = textwrap.fill(
    'Record what this node is, as flat items "key: value": CPU model, microcode, flags, '
    'sockets, cores, threads and the CPUs this job may use; NUMA nodes and memory; kernel '
    'release and command line; distribution; BIOS and board (DMI); memory modules; each '
    'network interface\'s driver, firmware, speed, MTU and state; each RDMA adapter\'s '
    'firmware and ports; NVIDIA GPUs; the network sysctls preflight knows; the installed '
    'packages (count and digest). A fleet analysis groups a partition\'s nodes by these '
    'items and names where a node differs from its peers.', 88)

EPILOG = '''\
Read from /proc, /sys and /etc/os-release; from `ethtool -i IFACE` (network firmware) and
`dmidecode -t memory` (memory modules, as root) where they run; the packages from
/var/lib/dpkg/status, else `rpm -qa`. An item whose source is absent or unreadable is left
out, never guessed (a VM has no DMI: no dmi.* items). Identity items (host name, boot id,
serial numbers, UUIDs, MAC addresses, GUIDs) differ per node by nature; the document lists
their keys under "identity", and a fleet analysis does not compare them. Each key, its
meaning and source: cobalt_bench.inventory.items.ITEMS, docs/inventory.md.

--record DIR writes every file read into DIR (sysfs's symbolic links kept), and what is
not a file under DIR/cobalt-bench/: the programs' output and the installed package list
(not dpkg's status file), so `--root DIR` on any machine gives the same items. cpu.usable
is this process's CPU affinity: run it the way a job runs (srun, taskset) to see what a
job gets.

The JSON document (--json FILE, written atomically; - for stdout, then nothing else is
printed): test, version, test_version, host, started, duration_s, config (root), items
{key: value (a string, an integer or a list of strings)}, identity [keys].

exit status: 0 the inventory was taken (and written), 2 usage error (a --root that is not
a directory, --record with --root, a --record DIR that exists and is not empty or cannot
be written, a --json FILE in a directory that is absent or not writable), 3 cannot run
(a root holding neither sys/ nor proc/, a file that could not be recorded, a document that
could not be written).'''


def add_arguments(parser):
    parser.add_argument('--root', default='/', metavar='DIR',
                        help='read a recorded root (DIR/sys, DIR/proc, DIR/etc) instead of '
                             'this machine')
    parser.add_argument('--record', metavar='DIR',
                        help='record everything read into DIR, a new or empty directory '
                             '(for --root elsewhere)')
    parser.add_argument('--json', metavar='FILE',
                        help='write the inventory as a JSON document (- for stdout)')
    parser.add_argument('-q', '--quiet', action='store_true', help='print nothing')


def command(root='/', record=None, json_dest=None, quiet=False):
    '''Takes the inventory and prints it (one "key  value" line an item) or its JSON
    document; returns 0. A UsageError (2) is raised before anything is read when the
    arguments are wrong, a CannotRun (3) where nothing can be read or a file cannot be
    recorded or written (cli.status.exit_status says them).'''
    from .. import inventory, preflight
    from .preflight import put_document
    tree = preflight.open_tree(root, record, json_dest)
    doc = inventory.take(tree)
    put_document(doc, json_dest)
    if not quiet and json_dest != '-':
        say(f'cobalt-bench inventory {__version__} on {doc["host"]}'
            + (f' (recorded root {tree.root})' if not tree.live else ''))
        for line in inventory.format_items(doc['items']).splitlines():
            say(line)
    return 0
