'''The nodes of a run against their peers (judging.fleet) in the report: per partition a
table of nodes sorted worst first, a plot of each distribution with its outliers marked,
and bad-nodes.txt (docs/fleet.md).

Bounded whatever the run holds: a table shows every flagged or failed node and at most
MAX_ROWS others per partition; a distribution of more than STRIP_MAX nodes is drawn as a
histogram (its outliers as red ticks) instead of one point per node; at most
plots.MAX_PLOTS distributions are drawn (those with outliers first).

A run read from a results store has its nodes' history read too (store.history, as of
this run, bounded: only this run's nodes, at most their last LAST_RUNS runs each and
HISTORY_MAX_RUNS runs in all): a node that failed in FLAKY_FAILS of its last LAST_RUNS
runs is marked flaky (docs/node-history.md). A flaky node is not a bad node of this run.'''

import heapq
from array import array
import re
import shlex
from dataclasses import dataclass

from ..judging import fleet as fl
from ..judging import scales
from ..store import history as hist
from .format import fmt
from .drawing import Sketch
from .plots import MAX_NAME, MAX_PLOTS, Plot, _left_out, _slug, short

NODE_HEADER = ['node', 'check', 'metric', 'value', 'peers\' median', 'deviation', 'flagged',
               'likely why (the node\'s preflight findings)']
MAX_ROWS = 50           # nodes within their peers shown per partition (the flagged: all)
STRIP_MAX = 300         # more nodes than this: a histogram
MAX_LABELS = 20         # outliers named in a plot
BAD_NODES_FILE = 'bad-nodes.txt'


#: At most this many runs of the store are read for a report's node history.
HISTORY_MAX_RUNS = 50


@dataclass
class Flaky:
    '''A node of the run that failed in `failed` of its last `of` runs (store.history).'''
    node: str
    failed: int
    of: int

    def mark(self):
        return f'flaky ({self.failed} of {self.of} runs)'

    def text(self):
        return f'{self.node} (failed {self.failed} of its last {self.of} runs)'

    def to_json(self):
        return {'node': self.node, 'failed': self.failed, 'of': self.of}


def run_history(run, last=hist.LAST_RUNS, fails=hist.FLAKY_FAILS):
    '''(History or None, note): the store's node history of `run`'s nodes (bounded), and
    why it could not be read ('' : it was, or the run is in no store). A history that cannot
    be read never stops the report.'''
    where = hist.store_of(run)
    nodes = hist.node_cases(run) if where else {}
    if not nodes:
        return None, ''
    try:
        return hist.node_history(where[0], where[1], last, fails, nodes=set(nodes),
                                 current=run, max_runs=HISTORY_MAX_RUNS), ''
    except Exception as err:    # the history of other runs: this run's report goes on
        return None, f'node history not read: {type(err).__name__}: {short(err, 200)}'


def flaky_in(history):
    '''[Flaky]: the flaky nodes of a History (None: none).'''
    if history is None:
        return []
    flaky = [Flaky(n.node, n.failed_runs, len(n.runs)) for n in history.nodes.values()
             if n.flaky]
    return sorted(flaky, key=lambda f: fl.host_key(f.node))


def flaky_nodes(run, last=hist.LAST_RUNS, fails=hist.FLAKY_FAILS):
    '''([Flaky], note): the flaky nodes of `run` by its store's node history (run_history).'''
    history, note = run_history(run, last, fails)
    return flaky_in(history), note


def flaky_of(model):
    return {f.node: f for f in getattr(model, 'flaky', None) or []}


def fleet_of(model):
    j = getattr(model, 'judgement', None)
    return getattr(j, 'fleet', None) or fl.Fleet()


def flag_text(dist, v):
    words = (['outlier'] if v.flagged else []) + (['failed'] if v.failed else [])
    if not dist.judged and not words:
        return f'not judged ({dist.nodes} nodes)'
    return ', '.join(words)


def deviation_text(v):
    pct = f' ({v.percent:+.1f} %)' if v.percent is not None else ''
    return f'{v.deviation:+.1f} \u03c3{pct}'


def node_tables(model):
    '''[(partition, rows, left out)]: the node table of each partition, worst first.'''
    fleet, flaky = fleet_of(model), flaky_of(model)
    by_part = {}        # partition: ([(dist, value) shown whatever], [(dist, value) others])
    for dist in (d for d in fleet.distributions if d.values):
        always, rest = by_part.setdefault(dist.partition, ([], []))
        for v in dist.values:
            (always if v.failed or v.flagged or v.node in flaky else rest).append((dist, v))
    out = []

    def worst_first(dv):
        return (not dv[1].failed, not dv[1].flagged, dv[1].node not in flaky,
                -dv[1].score, dv[1].node, dv[0].check, dv[0].metric)
    for part, (always, rest) in by_part.items():
        # The first MAX_ROWS of the others as sorted() gives them (highest score first),
        # sorted from those at or above the MAX_ROWS-th highest score only: a sweep of
        # 10,000 nodes has 380,000 values within their peers.
        top = rest
        if len(rest) > MAX_ROWS:
            cut = heapq.nlargest(MAX_ROWS, [v.score for _, v in rest])[-1]
            top = [dv for dv in rest if dv[1].score >= cut]
        shown = sorted(always, key=worst_first) + sorted(top, key=worst_first)[:MAX_ROWS]
        rows = [[f'{v.node} {flaky[v.node].mark()}' if v.node in flaky else v.node,
                 d.check, d.metric, f'{fmt(v.value)} {d.unit}'.rstrip(),
                 fmt(d.median), deviation_text(v), flag_text(d, v),
                 ', '.join(fl.finding_text(f) for f in v.findings[:3])]
                for d, v in shown]
        out.append((part, rows, max(0, len(rest) - MAX_ROWS)))
    return out


BAD_HEADER = ['node', 'what failed or stands out', 'value against its peers\' median',
              'likely why (what sets it apart from its peers)', 'drain it']
CLASS_HEADER = ['partition', 'nodes', 'configuration']
#: Slurm keeps a reason of this many characters; ours is cut to fit.
DRAIN_REASON_MAX = 60


def drain_command(node, why):
    reason = f'cobalt-bench: {why}'[:DRAIN_REASON_MAX]
    return f'scontrol update NodeName={node} State=DRAIN Reason={shlex.quote(reason)}'


def _against_peers(bad):
    c = next((c for c in bad.causes if c.metric), None)
    if c is None:
        return '-'
    pct = f', {c.percent:+.0f} %' if c.percent is not None else ''
    return f'{fmt(c.value)} {c.unit} against {fmt(c.median)}{pct}'.replace('  ', ' ')


def bad_node_rows(model):
    '''The first screen's table: each bad node, what made it bad, its value against its
    peers' median, the likely why by difference, and the line that drains it.'''
    return [[b.node, b.summary, _against_peers(b), b.likely or '-',
             drain_command(b.node, b.summary) if fl.HOSTNAME.fullmatch(b.node) else
             'not a Slurm host name']
            for b in fleet_of(model).bad_nodes]


def class_rows(model):
    '''The configuration classes of each partition of 3 nodes or more (judging.classes),
    the majority first: [partition, nodes (a hostlist, and how many), what differs].'''
    rows = []
    for pc in fleet_of(model).classes:
        if not pc.judged:       # a node or two: nothing to compare (no section of its own)
            continue
        for c in pc.classes:
            rows.append([pc.partition, f'{fl.hostlist(c.nodes)} ({len(c.nodes)})', c.text])
        if pc.split:
            rows.append([pc.partition, '-', 'split, no majority: ' + ', '.join(pc.split)])
    return rows


def shared_finding_lines(model):
    '''The preflight findings most nodes share, one line each, said once.'''
    return [f'{text}: {n} nodes' for text, n in fleet_of(model).shared_findings]


def node_table_intro(model):
    fleet = fleet_of(model)
    return (f'Each value of a check run on one node, against its peers (the same check and '
            f'metric on the same partition): the peers\' median, the deviation in robust '
            f'sigmas (the metric\'s noise, measured from repeats or history, else a default '
            f'of {100 * scales.DEFAULT_NOISE:g} %, widened by a wider spread of the peers) and in '
            f'percent; a node more than {fleet.threshold:g} sigmas and '
            f'{100 * scales.MIN_EFFECT:g} % out in the metric\'s bad direction is an outlier '
            f'(the site\'s threshold), a failed case is a bad node whatever its peers; fewer '
            f'than {fl.MIN_NODES} nodes: no judgement. Worst first.')


def left_out_text(n):
    return (f'{n} more values of nodes within their peers are left out here (every value is '
            'in the measurements\' tables).')


def bad_nodes_text(model):
    '''bad-nodes.txt: a comment that says what it is, then the bad nodes as one Slurm
    hostlist line (none: the comment only, so that no earlier list is left behind).'''
    fleet, run = fleet_of(model), model.run
    label = _comment(run.label)
    lines = [f'# cobalt-bench: bad nodes of run {label} (failed, or outliers against their '
             f'peers at {fleet.threshold:g} robust sigmas); drain them with: scontrol '
             f'update nodename=$(grep -v "^#" {BAD_NODES_FILE}) state=drain '
             'reason="cobalt-bench"']
    if fleet.unlisted:
        lines.append('# not Slurm host names, left out of the list: '
                     + _comment(', '.join(repr(n) for n in fleet.unlisted)))
    if not fleet.bad_nodes:
        lines.append('# no bad node in this run')
    if fleet.hostlist:
        lines.append(fleet.hostlist)
    return '\n'.join(lines) + '\n'


def _comment(text):
    return re.sub(r'[\x00-\x1f\x7f-\x9f\u2028\u2029]', '?', str(text))[:500]


# ---- plots ------------------------------------------------------------------------------

def fleet_plots(fleet):
    '''One plot per distribution of two nodes or more, those with outliers first.'''
    dists = sorted(fleet.distributions,
                   key=lambda d: (not any(v.flagged or v.failed for v in d.values),
                                  d.partition, d.check, d.metric))
    plots = []
    for n, d in enumerate(dists[:MAX_PLOTS]):
        failed = (f'{short(d.check)}: not drawn', 'This plot could not be drawn: ')
        try:
            plot = _plot(d, n)
            plot.not_drawn = failed
        except Exception as err:    # the report goes on
            plot = Plot(_slug(f'nodes-{n}'), failed[0],
                        f'{failed[1]}{type(err).__name__}: {short(err, 300)}', b'')
        plots.append(plot)
    return _left_out(plots, 'node distributions', max(0, len(dists) - MAX_PLOTS))


def _plot(dist, n):
    # Each of a distribution's values (90,000 in a 10,000-node sweep) gone through once,
    # the bad ones (outliers, failed: a few) counted from them.
    nodes = dist.nodes
    title = short(f'{dist.check} {dist.metric} over {nodes} nodes, {dist.partition}',
                  3 * MAX_NAME)
    bad = [v for v in dist.values if v.flagged or v.failed]
    lines = [(dist.median, '#333333', '-', 'median')]
    if dist.judged:
        sides = {fl.Direction.LOWER: (-1,), fl.Direction.HIGHER: (1,)}.get(dist.direction,
                                                                            (-1, 1))
        lines += [(dist.median + s * dist.threshold * dist.sigma, '#d62728', '--',
                   f'{dist.threshold:g} robust sigmas' if i == 0 else None)
                  for i, s in enumerate(sides)]
    if len(dist.values) <= STRIP_MAX:
        order = sorted(dist.values, key=lambda v: fl.host_key(v.node))
        x = {id(v): i for i, v in enumerate(order)}
        good = [(x[id(v)], v.value) for v in dist.values if not (v.flagged or v.failed)]
        named = [(x[id(v)], v.value, short(v.node, 16)) for v in bad]
        sketch = Sketch(_strip_figure, title, good, named,
                        short(dist.unit or dist.metric, 16), lines)
    else:
        # A node that ran the check several times (a sweep's repeated jobs) is counted
        # once a run: the bars count values, which are nodes only where each ran once.
        sketch = Sketch(_histogram_figure, title, array('d', (v.value for v in dist.values)),
                        [v.value for v in bad], short(dist.unit or dist.metric, 16),
                        'nodes' if len(dist.values) == nodes else 'runs', lines)
    flagged, failed = sum(v.flagged for v in bad), sum(v.failed for v in bad)
    caption = (f'{dist.check} {dist.metric} of each of {nodes} nodes of {dist.partition} '
               f'({dist.direction}): median {fmt(dist.median)} {dist.unit}, '
               f'{flagged} outlier(s), {failed} failed.'
               + (f' {dist.note}.' if dist.note else
                  f' Dashed: {dist.threshold:g} robust sigmas from the median.')
               + (' A histogram: too many nodes for one point each; red ticks mark the '
                  'outliers.' if len(dist.values) > STRIP_MAX else ''))
    return Plot(_slug(f'nodes-{dist.partition}-{dist.check}-{dist.metric}-{n}'), title,
                caption, sketch=sketch)


def _strip_figure(plt, title, good, bad, ylabel, lines):
    '''One point per node, in the order of their names; the bad ones (x, value, name) red
    and named.'''
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    ax.scatter([x for x, _ in good], [y for _, y in good], s=14, color='#1f77b4',
               label='node')
    ax.scatter([x for x, _, _ in bad], [y for _, y, _ in bad], s=36, color='#d62728',
               marker='x', label='outlier or failed')
    for x, y, name in bad[:MAX_LABELS]:
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords='offset points',
                    color='#d62728')
    ax.set_xlabel('nodes (by name)')
    ax.set_xticks([])
    ax.set_ylabel(ylabel)
    return _finished(ax, fig, title, ax.axhline, lines)


def _histogram_figure(plt, title, values, bad, xlabel, ylabel, lines):
    '''A histogram of the values; the bad ones red ticks.'''
    import numpy as np      # matplotlib's own: loaded with it, only when a plot is drawn
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    # An array, not a list: matplotlib checks a list's 10,000 values one by one.
    ax.hist(np.frombuffer(values, dtype=float), bins=60, color='#1f77b4')
    if bad:     # one artist for all the ticks (a line each: 0.5 s for 900 of them)
        ax.vlines(bad, 0, 0.06, transform=ax.get_xaxis_transform(), colors='#d62728', lw=1,
                  label='outlier or failed')
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _finished(ax, fig, title, ax.axvline, lines)


def _finished(ax, fig, title, axis_line, lines):
    '''The median and the outlier thresholds (value, colour, style, label) drawn across,
    the title and the legend.'''
    for value, color, style, label in lines:
        axis_line(value, color=color, lw=1, ls=style, label=label)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0))
    return fig
