'''`cobalt-bench nodes`: each node's last runs across the results store, flaky ones marked
(store.history).'''

import os
import sys
import textwrap

from ..errors import CannotRun, UsageError
from ..store import history as hist
from ..store import listing
from .argtypes import add_results_option
from .terminal import say, shown

DESCRIPTION = textwrap.fill(
    'List the nodes of the results store with their last runs, newest first: '
    'for each run its date, and for each case that ran on that node alone the '
    'check, partition, result and key metric values. A node that failed in K '
    'of its last N runs is marked FLAKY, also when a retry in the same run or '
    'a later run passed.', 88)

EPILOG = f'''\
A case belongs to a node when it ran on exactly one node: a single-node check, a check
run once per node with ReFrame's --distribute (its name's `%.part=... %.nid=NODE` suffix
is stripped, so the check is the same in every run), or a job's kernel document (its
host). A node failed in a run when one of its cases failed (a reference not met, a sanity
failure, an unexpected pass), or failed in an earlier try that ReFrame's --max-retries
retried. Runs still running are left out; runs that cannot be read are named on stderr.

The key metric values shown are the metrics judged by a reference (else those of the
kernel's contract), at most {hist.KEY_METRICS} per case.

The runs are read one at a time, newest first; each node keeps its last N. With --node,
reading stops once that node has N runs. A finished run read once is kept in the store's
index, STORE/.cobalt-bench-history.sqlite, and taken from there while its report.json is
unchanged (deleting it costs one slower listing).

exit status: 0 listed, no node listed is flaky; 1 a node listed is flaky (named);
2 usage error; 3 the results store does not exist or cannot be read.'''


def add_arguments(parser, nonempty_path, run_spec, positive):
    parser.add_argument('--site', metavar='SITE', type=run_spec,
                        help='only the runs of this site (results/SITE/)')
    parser.add_argument('--last', metavar='N', type=positive, default=hist.LAST_RUNS,
                        help=f'the runs kept per node, and the window of the flaky rule '
                             f'(default: {hist.LAST_RUNS})')
    parser.add_argument('--fails', metavar='K', type=positive, default=hist.FLAKY_FAILS,
                        help=f'a node that failed in K of its last N runs is flaky '
                             f'(default: {hist.FLAKY_FAILS})')
    parser.add_argument('--node', metavar='NAME', type=run_spec,
                        help='only this node')
    parser.add_argument('--flaky', action='store_true',
                        help='list only the flaky nodes')
    add_results_option(parser)


def _metrics(entry):
    return ', '.join(f'{n}={v:g} {u}'.rstrip() if isinstance(v, (int, float)) else f'{n}={v}'
                     for n, v, u in entry.metrics)


def command(base, site=None, last=hist.LAST_RUNS, fails=hist.FLAKY_FAILS, node=None,
            flaky_only=False):
    '''Exit status 0, or 1 when a node listed is flaky.'''
    base = listing.store_to_list(base)
    if not os.path.isdir(base):
        raise CannotRun(f'no results store at {base} (no run made yet, or say --results)')
    if fails > last:
        raise UsageError(f'--fails {fails} is more than --last {last}: no node could be '
                         'flaky')
    h = hist.node_history(base, site, last, fails, node)
    nodes = [n for n in h.sorted_nodes() if n.flaky or not flaky_only]
    for label, why in h.unreadable:
        say(f'cannot read {label}: {why}', sys.stderr)
    where = f' of site {site}' if site else ''
    if not nodes:
        what = 'no flaky node' if flaky_only and h.nodes else 'no node'
        say(f'{what}{where} in {base}' + (f' named {node}' if node else '')
            + f' ({h.runs_read} run(s) read)')
        return 0
    say(f'results store: {base}{where} ({h.runs_read} run(s) read); flaky: failed in '
        f'{fails} of the last {last} runs')
    for n in nodes:
        mark = (f'FLAKY: failed in {n.failed_runs} of its last {len(n.runs)} runs'
                if n.flaky else f'failed in {n.failed_runs} of its last {len(n.runs)} runs')
        say(f'{shown(n.node)}  {mark}')
        for r in n.runs:
            say(f'  {shown(r.date or "-"):<19}  {shown(r.label)}'
                + ('  (failed)' if r.failed else ''))
            for e in r.entries:
                tries = e.failed_tries
                retried = (f' (failed {tries} tr{"y" if tries == 1 else "ies"} before)'
                           if tries else '')
                say(f'    {shown(e.check):<20} {shown(e.partition):<20} {e.result:<8}'
                    f'{retried}  {shown(_metrics(e))}'.rstrip())
    flaky = [n.node for n in nodes if n.flaky]
    if flaky:
        say(f'{len(flaky)} flaky node(s): ' + ', '.join(flaky), sys.stderr)
    return 1 if flaky else 0
