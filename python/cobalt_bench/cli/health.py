'''`cobalt-bench health`: one node's health in a few seconds (judging.health), recorded in
the results store, the node drained with a coded reason when asked (--drain) and it fails:
what Slurm's HealthCheckProgram, a prolog or an epilog runs (docs/health.md).'''

import json
import os
import socket
import subprocess
import tempfile
import time

from .. import inventory as inv_mod
from .. import paths
from .. import preflight
from .. import site as site_mod
from ..errors import CannotRun, UsageError
from ..judging import drain as dr
from ..judging import health as hl
from ..store import inventory as store_inventory
from ..store import node_actions, reader, runs
from ..tools import slurm_nodes
from .argtypes import add_results_option
from .terminal import say

DESCRIPTION = ('Check this node in a few seconds: the preflight settings the site '
               'requires, its inventory against the usual configuration of its partition '
               'in the last node sweep, and a short mem-test that verifies its data. '
               'Exit 0 healthy, 1 not, as Slurm\'s HealthCheckProgram, a prolog or an '
               'epilog expects; each problem one line.')

EPILOG = '''\
The site (--site, else $COBALT_BENCH_SITE) says which settings are required
(compliance.yaml `preflight`); without one, none are checked (said). The peers are the
inventories of the newest node sweep of the results store that has this node
(results/slurm/node-sweep-*/, or --against RUN); with fewer than 3 nodes there, nothing
is compared (said). --root DIR reads a recorded root (cobalt-bench preflight --record)
instead of this machine, as preflight and inventory do.

Each check is recorded: results/health/<node>/health-<time>-<pid>.json, the re-tests
that `cobalt-bench nodes resume` counts. With --drain, a node that fails is drained through
scontrol with the reason cobalt-bench:health:<item>:health-<time>, unless Slurm holds it
for another reason (someone else's drain, down, reserved, rebooting: judging.drain); the
action goes to results/node-actions.jsonl. Slurm runs HealthCheckProgram as root, with
SLURMD_NODENAME set: the node's name.

exit status: 0 healthy, 1 a problem (each printed: "ERROR: cobalt-bench health NODE:
CHECK: ..."), 2 usage error, 3 cannot run (no such site, an unreadable root).'''

#: The short memory check: one station's buffers (152 MiB), unpaced, for this long.
MEMORY_CHECK = ['--max', '--stations', '1', '--duration', '1', '--quiet']
MEMORY_TIMEOUT_S = 60
#: How many of the newest node sweeps are looked in for this node's peers.
SWEEPS_LOOKED_AT = 20


def add_arguments(parser, nonempty_path, run_spec):
    parser.add_argument('--site', metavar='SITE', type=nonempty_path,
                        help='the site whose required settings are checked (default: '
                             '$COBALT_BENCH_SITE)')
    parser.add_argument('--node', metavar='NAME', type=run_spec,
                        help='this node\'s name in Slurm (default: $SLURMD_NODENAME, else '
                             'the short host name)')
    parser.add_argument('--against', metavar='RUN', type=nonempty_path,
                        help='the run whose inventories are the peers (default: the newest '
                             'node sweep of the results store with this node)')
    parser.add_argument('--root', default='/', metavar='DIR',
                        help='read a recorded root instead of this machine')
    parser.add_argument('--no-memory', action='store_true',
                        help='leave out the short mem-test')
    parser.add_argument('--drain', action='store_true',
                        help='drain this node (scontrol) when it fails, with a coded reason')
    add_results_option(parser)
    parser.add_argument('-q', '--quiet', action='store_true',
                        help='print only the problems')


def _peers(base, node, against):
    '''(Inventories of the peers, where they come from) or ([], why none).'''
    if against:
        run = reader.load_run(runs.resolve_run(against, base))
        return run.inventories, against
    sweep = store_inventory.newest_sweep_with(base, node, SWEEPS_LOOKED_AT)
    if sweep is not None:
        return store_inventory.of_sweep(sweep), sweep
    return [], 'no node sweep of the results store has this node'


def _memory(tmp):
    '''(exit code, document or None) of the short mem-test.'''
    tree = paths.root()
    local = os.path.join(tree, 'bin', 'mem-test') if tree else ''
    program = local if local and os.access(local, os.X_OK) else 'mem-test'
    json_path = os.path.join(tmp, 'mem-test.json')
    try:
        proc = subprocess.run([program, *MEMORY_CHECK, '--json', json_path],
                              capture_output=True, timeout=MEMORY_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return 3, None
    except subprocess.TimeoutExpired:
        return 124, None
    try:
        with open(json_path) as fp:
            return proc.returncode, json.load(fp)
    except (OSError, ValueError):
        return proc.returncode, None


def command(site_spec=None, node=None, against=None, root='/', memory=True, drain=False,
            results=None, quiet=False):
    t0 = time.monotonic()
    node = node or os.environ.get('SLURMD_NODENAME') or socket.gethostname().split('.')[0]
    if not slurm_nodes.NODE_NAME.fullmatch(node):
        raise UsageError(f'--node {node!r}: not a node name Slurm reads as one host')
    base = runs.results_base(results)
    site_spec = site_spec or os.environ.get('COBALT_BENCH_SITE')
    site = site_mod.load_site(site_spec) if site_spec else None
    tree = preflight.open_tree(root)
    notes, problems = [], []

    patterns = list(site.compliance.preflight) if site else []
    if not site:
        notes.append('no site named: no required setting checked')
    findings, _ = preflight.inspect(tree, None, probe=tree.live)
    problems += hl.preflight_problems(findings, patterns)

    doc = inv_mod.take(tree)
    mine = store_inventory.parse(doc, 'inventory')
    peers, source = _peers(base, node, against)
    problems += hl.configuration_problems(node, mine, peers)
    if len(peers) < 3:
        notes.append('configuration not compared: ' + (
            f'{len(peers)} nodes in {source}' if peers else source))

    if memory:
        with tempfile.TemporaryDirectory(prefix='cb-health-') as tmp:
            problems += hl.memory_problems(*_memory(tmp))

    record = {'test': 'health', 'node': node, 'host': doc.get('host'),
              'time': node_actions.now(), 'passed': not problems,
              'duration_s': round(time.monotonic() - t0, 3), 'site': site.name if site else None,
              'peers': source, 'problems': [p.__dict__ for p in problems], 'notes': notes}
    try:
        node_actions.write_health(base, node, record)
    except (OSError, ValueError) as err:
        notes.append(f'not recorded in {base}: {err}')

    for p in problems:
        say(f'ERROR: cobalt-bench health {node}: {p.line}')
    if problems and drain:
        _drain(base, node, problems[0], record['time'])
    if not quiet:
        for n in notes:
            say(f'cobalt-bench health {node}: note: {n}')
        if not problems:
            say(f'cobalt-bench health {node}: healthy ({record["duration_s"]:.1f} s)')
    return 1 if problems else 0


def _drain(base, node, problem, when):
    stamp = 'health-' + when.replace('-', '').replace(':', '')
    try:
        states = slurm_nodes.node_states([node])
    except CannotRun as err:
        say(f'cobalt-bench health {node}: not drained: {err}')
        return
    d = dr.drain_decision(node, states.get(node), dr.coded_reason('health', problem.item,
                                                                  stamp))
    error = slurm_nodes.drain(node, d.reason) if d.act is dr.Act.DRAIN else ''
    node_actions.log_decision(base, d, stamp, d.changes and not error, error,
                              'cobalt-bench health --drain')
    say(f'cobalt-bench health {node}: {d.act}: {d.reason or "-"} ({d.why})'
        + (f'; scontrol failed: {error}' if error else ''))
