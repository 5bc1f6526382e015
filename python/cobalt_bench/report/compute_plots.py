'''The report's plots of cpu-test documents (src/cpu-test/README.md): each core's FLOP/s
against the node's median core, and the node's FLOP/s over the run (the burn curve).
Named in the kernel's descriptor (kernels/cpu_test.py) and registered with plots.plotter
when report.model imports this module.

  cpu_test_cores   one bar per core (the document's `cores`: cpu, gflops), the median
                   core drawn as a line, the slowest core in red: a sick or shared core
                   stands out; one plot per case, the cases with the slowest core
                   (against its median) first
  cpu_test_burn    node GFLOP/s per interval (the document's `intervals`: end_s,
                   node_gflops), one line per case: a node that throttles falls away
'''

import statistics

from .drawing import Sketch
from .plots import (MAX_PLOTS, MAX_SERIES, Plot, _case_label, _left_out, _num_or_none,
                    _slug, documents_of, plotter)

#: Past this many cores a node's bars are drawn without a gap (a 288-core node still fits).
DENSE_BARS = 64


def _documents(run):
    '''(case, document) of every cpu-test document of the run.'''
    return [(case, doc) for _, case, doc, _ in documents_of(run, 'cpu-test')]


def _cores(doc):
    '''[(cpu, GFLOP/s)] of a document's cores, those with a number.'''
    out = []
    for core in doc.get('cores') or []:
        if isinstance(core, dict) and _num_or_none(core.get('gflops')) is not None:
            out.append((core.get('cpu', '?'), float(core['gflops'])))
    return out


def _slowest_share(cores):
    '''The slowest core's FLOP/s as a share of the median core's (1.0: all alike).'''
    median = statistics.median(g for _, g in cores)
    return min(g for _, g in cores) / median if median > 0 else 1.0


@plotter
def cpu_test_cores(run):
    nodes = [(case, cores) for case, doc in _documents(run) if (cores := _cores(doc))]
    if not nodes:
        return []
    nodes.sort(key=lambda cc: _slowest_share(cc[1]))
    plots = []
    for case, cores in nodes[:MAX_PLOTS]:
        median = statistics.median(g for _, g in cores)
        slowest = min(g for _, g in cores)
        label = _case_label(case)
        plots.append(Plot(
            _slug(f'cpu-test-cores-{label}'), f'cpu-test per core: {label}',
            f'Each core\'s double-precision FMA rate over the run (GFLOP/s, one bound thread '
            f'per core); the dashed line is the median core, the slowest core '
            f'({slowest:.3g} GFLOP/s, {100 * slowest / median:.1f} % of the median) is red '
            f'where it is below it.', sketch=Sketch(_cores_figure, cores, label)))
    return _left_out(plots, 'nodes', max(0, len(nodes) - MAX_PLOTS))


def _cores_figure(plt, cores, label):
    median = statistics.median(g for _, g in cores)
    slowest = min(g for _, g in cores)
    fig, ax = plt.subplots(figsize=(min(14.0, max(5.0, 0.25 * len(cores) + 2)), 3.4))
    x = range(len(cores))
    colours = ['#d62728' if g == slowest and slowest < median else '#1f77b4'
               for _, g in cores]
    ax.bar(list(x), [g for _, g in cores], 1.0 if len(cores) > DENSE_BARS else 0.8,
           color=colours)
    ax.axhline(median, color='#555555', linestyle='--', linewidth=1,
               label=f'median core {median:.3g} GFLOP/s')
    if len(cores) <= DENSE_BARS:
        ax.set_xticks(list(x))
        ax.set_xticklabels([str(c) for c, _ in cores], fontsize=7)
    ax.set_xlabel('CPU')
    ax.set_ylabel('GFLOP/s')
    ax.set_title(f'cpu-test per core: {label}', fontsize=10)
    ax.legend(loc='lower right', fontsize=8)
    ax.margins(y=0.15)
    return fig


def _curve(doc):
    '''[(end s, node GFLOP/s)] of a document's intervals.'''
    return [(float(i['end_s']), float(i['node_gflops'])) for i in doc.get('intervals') or []
            if isinstance(i, dict) and _num_or_none(i.get('end_s')) is not None
            and _num_or_none(i.get('node_gflops')) is not None]


@plotter
def cpu_test_burn(run):
    # Only runs with a curve to draw: two intervals or more.
    curves = [(case, curve) for case, doc in _documents(run)
              if len(curve := _curve(doc)) >= 2]
    if not curves:
        return []
    # The steepest falls first: the last interval against the first.
    curves.sort(key=lambda cc: cc[1][-1][1] / cc[1][0][1] if cc[1][0][1] > 0 else 1.0)
    shown = curves[:MAX_SERIES]
    more = len(curves) - len(shown)
    return [Plot('cpu-test-burn', 'cpu-test over the run',
                 'The node\'s FMA rate per interval (GFLOP/s, all cores): a node that '
                 'throttles under sustained load falls from its first interval.'
                 + (f' Shown: the {len(shown)} runs that fell most; {more} more are in the '
                    'tables.' if more else ''),
                 sketch=Sketch(_burn_figure, [(_case_label(case), curve) for case, curve in shown]))]


def _burn_figure(plt, curves):
    fig, ax = plt.subplots(figsize=(7.0, 3.6))
    for label, curve in curves:
        ax.plot([t for t, _ in curve], [g for _, g in curve], marker='.', label=label)
    ax.set_xlabel('seconds')
    ax.set_ylabel('node GFLOP/s')
    ax.set_title('cpu-test over the run')
    ax.legend(loc='lower left', fontsize=7)
    ax.set_ylim(bottom=0)       # from zero: a 2 % wobble is not drawn as a cliff
    return fig
