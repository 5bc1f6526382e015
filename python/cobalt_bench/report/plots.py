'''Plots of the compliance report, where people look rather than read.

Each plotter takes a store.Run and returns a list of Plot (PNG bytes and a caption); it
returns [] when the run has nothing for it. To add one: write a function of a Run, decorate
it with @plotter, pick its data from the kernel JSON documents of the cases (case.docs,
the kernel contract) or from the job's stdout (case.stdout) for third-party benchmarks,
and name it in its kernel's descriptor (cobalt_bench.kernels: `plots`), or in
THIRD_PARTY for a third-party benchmark's.

Present plotters:
  mem_test_domains   mem-test: desired and measured speed, late share, per NUMA domain
                     (the document's `domains`)
  gpu_copy_per_gpu   gpu-copy: write and read speed per GPU against its PCIe link (the
                     document's `gpus` list)
  linktest_heatmap   cb-linktest: bandwidth of every rank pair as a heat map (the .npz
                     matrix its document names); the same heat map as
                     `cobalt-bench linktest-report` draws (linktest_heatmap_figure);
                     links the run's PDF report (FILE-report.pdf beside FILE.npz)
  osu_curves         OSU latency/bandwidth against message size, one plot per benchmark,
                     with the site's reference curve (the per-size metrics <name>_<size>
                     of the OSU checks; else the table in the job's stdout)
'''

import heapq
import math
import os
import zipfile
import zlib
import re

from .. import kernels
from ..errors import CannotRun
from ..store import confine
from ..store.result import Result
from ..linktest.figures import linktest_heatmap_figure
from ..tools import osu as osu_parser
from .drawing import Plot, Sketch

#: Every plotter, by name.
PLOTTERS = {}

#: The plots of third-party benchmarks' outputs (no descriptor of ours names them).
THIRD_PARTY = ('osu_curves',)


#: Past this many bars (NUMA domains, GPUs) a plot shows the ones that matter most and
#: says how many it left out; past this many plots of one kind, or curves in one plot,
#: the rest are counted, not drawn. A figure's size is bounded whatever the store holds.
MAX_BARS = 24
MAX_GPUS = 12
MAX_PLOTS = 16
MAX_SERIES = 8
#: Names (nodes, partitions, benchmarks) drawn are cut to this many characters.
MAX_NAME = 32

def plotter(fn):
    PLOTTERS[fn.__name__] = fn
    return fn


def _slug(text):
    '''A plot's file stem: letters, digits, `_.-`; a long one cut, with a hash of the
    whole to keep it apart from another.'''
    slug = re.sub(r'[^A-Za-z0-9_.-]+', '-', text).strip('-.') or 'plot'
    if len(slug) > 80:
        slug = f'{slug[:64]}-{zlib.crc32(text.encode("utf-8", "replace")):08x}'
    return slug


def short(text, limit=MAX_NAME):
    '''A name as a plot draws it: control characters shown as `?`, cut to `limit`
    characters (a 5 MB node name is a name, not a figure).'''
    text = re.sub(r'[\x00-\x1f\x7f-\x9f]', '?', str(text)[:limit + 1])
    return text if len(text) <= limit else text[:limit - 1] + '\u2026'


def _case_label(case):
    nodes = ','.join(case.nodes[:3]) + (',...' if len(case.nodes) > 3 else '') \
        if case.nodes else ''
    return short(f'{case.where}' + (f' {nodes}' if nodes else ''), 2 * MAX_NAME)


def plot_names():
    '''The plots of a report, in order: each kernel's (its descriptor's), then the
    third-party benchmarks'.'''
    return [name for k in kernels.KERNELS.values() for name in k.plots] + list(THIRD_PARTY)


#: (run, its documents by kernel) while make_plots goes through the run's plotters.
_INDEXED = [None, None]


def documents_of(run, test):
    '''(case number, case, document, its path or None) of each document of kernel `test`
    in the run, in its order. While make_plots runs, the run's documents are gone through
    once for all its plotters: a 10,000-node sweep holds 100,000.'''
    indexed, index = _INDEXED
    return (index if indexed is run else _by_kernel(run)).get(test, ())


def _by_kernel(run):
    index = {}
    for n, case in enumerate(run.cases):
        paths = case.doc_paths
        for i, doc in enumerate(case.docs):
            test = doc.get('test')
            if test.__class__ is str:
                index.setdefault(test, []).append(
                    (n, case, doc, paths[i] if i < len(paths) else None))
    return index


def make_plots(run):
    '''Every plot of the run, its figure sketched and not yet drawn (Plot). A plot that
    cannot be made or drawn from what the store holds is a Plot without an image whose
    caption says why: the report is written all the same.'''
    _INDEXED[:] = run, _by_kernel(run)
    try:
        return _plots_of(run)
    finally:
        _INDEXED[:] = None, None


def _plots_of(run):
    plots = []
    for name in plot_names():
        try:
            made = PLOTTERS[name](run)
        except CannotRun:
            raise
        except Exception as err:    # the report goes on
            made = [Plot(name, f'{name}: not drawn',
                         f'This plot could not be drawn from the results: '
                         f'{type(err).__name__}: {short(err, 300)}', b'')]
        for p in made:
            p.not_drawn = (f'{name}: not drawn', 'This plot could not be drawn from the results: ')
        plots += made
    return plots


# ---- mem-test ---------------------------------------------------------------------------

def _worst_bars(bars):
    '''At most MAX_BARS of (label, desired, measured, late %): all of them when they fit,
    else those furthest below their desired speed (then the latest), worst first; and a
    note of how many were left out.'''
    if len(bars) <= MAX_BARS:
        return bars, ''

    def shortfall(b):
        desired, measured = b[1] or 0, b[2] or 0
        return (measured / desired if desired else 1.0, -(b[3] or 0))
    shown = heapq.nsmallest(MAX_BARS, bars, key=shortfall)     # as sorted()[:MAX_BARS]
    return shown, (f' Shown: the {len(shown)} of {len(bars)} NUMA domains furthest below '
                   'their desired speed (worst first); every domain is in the tables.')


@plotter
def mem_test_domains(run):
    bars = []   # ((case, NUMA node), desired, measured, late %): labelled once shown
    for _, case, doc, _ in documents_of(run, 'mem-test'):
        for d in doc.get('domains') or []:
            bars.append(((case, d.get('numa_node', '?')), d.get('desired_speed_gbits'),
                         d.get('measured_speed_gbits'), d.get('average_late_percent')))
    if not bars:
        return []
    bars, note = _worst_bars(bars)
    bars = [(f'{_case_label(case)}\nNUMA {short(numa)}', *rest) for (case, numa), *rest in bars]
    return [Plot('mem-test-numa', 'mem-test per NUMA domain',
                 'Desired and measured memory traffic per NUMA domain (Gbit/s, read + '
                 'write), with the share of blocks finished after their deadline.' + note,
                 sketch=Sketch(_mem_test_figure, bars))]


def _mem_test_figure(plt, bars):
    fig, ax = plt.subplots(figsize=(max(5.0, 1.3 * len(bars) + 2), 3.8))
    x = range(len(bars))
    w = 0.38
    ax.bar([i - w / 2 for i in x], [b[1] or 0 for b in bars], w, color='#9e9e9e',
           label='desired')
    ax.bar([i + w / 2 for i in x], [b[2] or 0 for b in bars], w, color='#1f77b4',
           label='measured')
    for i, b in enumerate(bars):
        if b[3] is not None:
            ax.annotate(f'late {b[3]:.2f}%', (i + w / 2, b[2] or 0), ha='center',
                        va='bottom', fontsize=8, xytext=(0, 2), textcoords='offset points')
    ax.set_xticks(list(x))
    ax.set_xticklabels([b[0] for b in bars], fontsize=8)
    ax.set_ylabel('Gbit/s')
    ax.set_title('mem-test per NUMA domain')
    ax.legend(loc='upper right', fontsize=8, ncol=2)
    ax.margins(y=0.25)
    return fig


def _left_out(plots, kind, more):
    '''The last of `plots` says how many more of `kind` were not drawn.'''
    if more and plots:
        plots[-1].add_to_caption(f' ({more} more {kind} not plotted: the first {MAX_PLOTS} '
                              'are; the numbers of all of them are in the tables.)')
    return plots


# ---- gpu-copy ---------------------------------------------------------------------------
# The gpu-copy document (src/gpu-copy/report.c) has a `gpus` list, one object per GPU:
# cuda_device, name, pci_bus_id, numa_node, write_speed_gbits / read_speed_gbits (all GPUs
# at once), alone_* (each GPU alone), bidir_*, link_theoretical_gbits (what its PCIe path
# carries as it is now), link_max_gbits; config.threshold_per_gpu_gbits (optional).

GPU_BARS = [('write_speed_gbits', 'write (H2D), all GPUs', '#1f77b4'),
            ('read_speed_gbits', 'read (D2H), all GPUs', '#ff7f0e'),
            ('alone_write_speed_gbits', 'write, GPU alone', '#aec7e8'),
            ('alone_read_speed_gbits', 'read, GPU alone', '#ffbb78')]


def _num_or_none(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and \
        not math.isnan(v) else None


@plotter
def gpu_copy_per_gpu(run):
    plots, more = [], 0
    for n, case, doc, _ in documents_of(run, 'gpu-copy'):
        gpus = doc.get('gpus')
        if not (isinstance(gpus, list) and gpus and all(isinstance(g, dict) for g in gpus)):
            continue
        bars = [b for b in GPU_BARS if any(_num_or_none(g.get(b[0])) is not None
                                            for g in gpus)]
        if not bars:
            continue
        if len(plots) >= MAX_PLOTS:
            more += 1
            continue
        left = len(gpus) - MAX_GPUS
        gpus = gpus[:MAX_GPUS]
        per_gpu = _num_or_none((doc.get('config') or {}).get('threshold_per_gpu_gbits'))
        title = f'gpu-copy per GPU, {_case_label(case)}'
        thr = (doc.get('compliance') or {}).get('threshold')
        plots.append(Plot(_slug(f'gpu-copy-{case.where}-{n}'), title,
                          'Host-to-device (write) and device-to-host (read) speed of each '
                          'GPU while all GPUs copy at once (and alone, where measured), '
                          'against what its PCIe link carries (dashed).'
                          + (f' Compliance: the sum over GPUs >= {thr:g} Gbit/s.'
                             if _num_or_none(thr) else '')
                          + (f' The first {MAX_GPUS} GPUs of {MAX_GPUS + left} shown.'
                             if left > 0 else ''),
                          sketch=Sketch(_gpu_copy_figure, gpus, bars, per_gpu, title)))
    return _left_out(plots, 'gpu-copy documents', more)


def _gpu_copy_figure(plt, gpus, bars, per_gpu, title):
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(gpus) * len(bars) / 2 + 2.5),
                                    3.8))
    w = 0.8 / len(bars)
    for j, (key, label, color) in enumerate(bars):
        ax.bar([i - 0.4 + w * (j + 0.5) for i in range(len(gpus))],
               [_num_or_none(g.get(key)) or 0 for g in gpus], w, label=label,
               color=color)
    # What each GPU's PCIe path carries: the ceiling a bar is judged against.
    for i, g in enumerate(gpus):
        link = _num_or_none(g.get('link_theoretical_gbits'))
        if link:
            ax.hlines(link, i - 0.45, i + 0.45, colors='#333333', linestyles='--',
                      label='PCIe link (theoretical)' if i == 0 else None)
    if per_gpu:
        ax.axhline(per_gpu, color='#d62728', lw=1, label='threshold per GPU')
    ax.set_xticks(range(len(gpus)))
    ax.set_xticklabels([f'GPU {short(g.get("cuda_device", i))}\n'
                        f'{short(g.get("pci_bus_id", ""))}'
                        for i, g in enumerate(gpus)], fontsize=8)
    ax.set_ylabel('Gbit/s')
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc='upper left', bbox_to_anchor=(1.01, 1.0))
    return fig


# ---- cb-linktest ------------------------------------------------------------------------
# cb-linktest writes the N x N matrix of one-way message times to a NumPy .npz file (arrays
# `time` in seconds, NaN where untested, and `hosts`); its JSON document names the file
# (config.output, relative to where it ran) and the message size (config.size_messages).

def _linktest_matrix(doc, doc_path, dirs, root):
    '''(Gbit/s matrix, hosts, .npz path) of a cb-linktest document, or None. The file it
    names is looked for beside it and in its test's directories, and only in the run
    (`root`, store.confine): a name that leads out of the run is not read.'''
    cfg = doc.get('config') or {}
    out = cfg.get('output')
    candidates = []
    if out:
        candidates += [out] if os.path.isabs(out) else \
            [os.path.join(os.path.dirname(doc_path), out)] + [os.path.join(d, out) for d in dirs]
    for path in candidates:
        if os.path.isfile(path) and not confine.file_problem(path, root):
            break
    else:
        return None
    try:
        import numpy as np
        with np.load(path, allow_pickle=False) as z:
            time = np.array(z['time'], dtype=float)
            hosts = [str(h) for h in z['hosts']] if 'hosts' in z.files else []
    except (ImportError, OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile,
            zlib.error):
        # a cut-short or damaged .npz: no heat map (the loader reports the damage)
        return None
    size = cfg.get('size_messages') or (cfg.get('options') or {}).get('size_messages')
    if not size or time.ndim != 2:
        return None
    with np.errstate(divide='ignore', invalid='ignore'):
        gbits = size * 8 / time / 1e9
    return gbits, [short(h) for h in hosts], path


def linktest_pdf_path(npz):
    '''Where `cobalt-bench linktest-report` writes the PDF report of a results file by
    default: beside it, FILE-report.pdf for FILE.npz.'''
    return (npz[:-4] if npz.endswith('.npz') else npz) + '-report.pdf'


# The heat map of a cb-linktest matrix: `cobalt-bench report` (the plotter below) and
# `cobalt-bench linktest-report` both draw it with linktest.figures.linktest_heatmap_figure.


@plotter
def linktest_heatmap(run):
    plots, more = [], 0
    root = confine.run_root(run.path)
    for n, case, doc, path in documents_of(run, 'cb-linktest'):
        if path is None:
            continue
        if len(plots) >= MAX_PLOTS:
            more += 1
            continue
        found = _linktest_matrix(doc, path, case.dirs, root)
        if not found:
            continue
        gbits, hosts, npz = found
        title = f'cb-linktest pair bandwidth, {_case_label(case)}'
        size_b = (doc.get('config') or {}).get('size_messages')
        # The PDF report `cobalt-bench linktest-report` wrote beside the matrix file
        # (its default name): the report links it.
        pdf = linktest_pdf_path(npz)
        plots.append(Plot(_slug(f'linktest-{case.where}-{n}'), title,
                          f'Bandwidth of every rank pair ({size_b} B messages; grey: '
                          'not tested), ranks grouped by host; a bad link or node shows '
                          'as an off-colour cell or a line of them. From '
                          f'{short(os.path.basename(npz), 2 * MAX_NAME)}.',
                          sketch=Sketch(_linktest_figure, gbits, hosts, title),
                          links=(('cb-linktest report (PDF): settings, heat map, '
                                  'histogram, slowest pairs and their retest',
                                  os.path.abspath(pdf)),)
                          if os.path.isfile(pdf) and not confine.file_problem(pdf, root)
                          else ()))
    return _left_out(plots, 'cb-linktest documents', more)


def _linktest_figure(plt, gbits, hosts, title):
    return linktest_heatmap_figure(gbits, hosts, title)


# ---- OSU --------------------------------------------------------------------------------
# The OSU checks (reframe_checks/osu.py) make one performance variable per message size,
# <metric>_<size> (latency_8, bandwidth_4194304, message_rate_1), judged by per-size
# references: the curve and the site's reference curve come from the case's metrics. A
# case without them (e.g. a failed sanity check) falls back to the table in its stdout.

OSU_PRIMARY = ('latency', 'bandwidth')


def osu_table(text):
    '''The first value column of the OSU table in `text`, read by the checks' own parser
    (cobalt_bench.tools.osu): (column name, [(size, value)]), or None.'''
    try:
        table = osu_parser.parse(text)
    except osu_parser.OsuParseError:
        return None
    return table.columns[0].name, [(size, row[0]) for size, row in sorted(table.rows.items())]


def _size_metrics(case):
    '''{metric: [(size, Metric)]} of the per-size metrics of a case.'''
    out = {}
    for m in case.metrics:
        mm = re.fullmatch(r'(.+?)_(\d+)', m.name)
        if mm and isinstance(m.value, (int, float)):
            out.setdefault(mm.group(1), []).append((int(mm.group(2)), m))
    return {k: sorted(v, key=lambda p: p[0]) for k, v in out.items()}


def _benchmark(case):
    m = re.search(r'%benchmark=(\S+)', case.check)
    return m.group(1) if m else case.check


@plotter
def osu_curves(run):
    groups = {}     # benchmark -> [(case, metric, unit, [(size, value, Metric|None)])]
    for case in run.cases:
        if 'osu' not in case.check.lower() and 'osu' not in case.kernel.lower():
            continue
        by_metric = _size_metrics(case)
        metric = next((p for p in OSU_PRIMARY if p in by_metric), None)
        if metric:
            pts = [(s, m.value, m) for s, m in by_metric[metric]]
            unit = pts[0][2].unit
        elif case.stdout:
            try:
                with open(case.stdout, errors='replace') as fp:
                    table = osu_table(fp.read(1 << 24))     # an OSU table is a few KiB
            except OSError:
                table = None
            if not table:
                continue
            metric, unit = table[0], ''
            pts = [(s, v, None) for s, v in table[1]]
        else:
            continue
        groups.setdefault(_benchmark(case), []).append((case, metric, unit, pts))
    plots = []
    for bench, series in sorted(groups.items())[:MAX_PLOTS]:
        left = len(series) - MAX_SERIES
        series = series[:MAX_SERIES]
        metric, unit = short(series[0][1]), short(series[0][2])
        plots.append(Plot(_slug(f'osu-{bench}'), f'{short(bench, 2 * MAX_NAME)} against '
                          'message size',
                          f'{metric} against message size per partition (size 0 '
                          'left out), with the site\'s reference curve (dashed) and its '
                          'bounds (band) where the site has per-size references; a cross '
                          'marks a size outside its bounds.'
                          + (f' The first {MAX_SERIES} of {MAX_SERIES + left} cases shown.'
                             if left > 0 else ''),
                          sketch=Sketch(_osu_figure, [_osu_curve(*c) for c in series],
                                        metric, unit, short(bench, 2 * MAX_NAME))))
    return _left_out(plots, 'OSU benchmarks', max(0, len(groups) - MAX_PLOTS))


def _osu_curve(case, metric, unit, pts):
    '''What a figure draws of one case's curve: (label, partition, [(size, value)],
    [(size, reference, lower, upper)] of its judged sizes, [(size, value)] of those outside
    their bounds); size 0 left out (it has no place on a log axis).'''
    pts = [p for p in pts if p[0] > 0]
    refs = [(s, m) for s, _, m in pts if m is not None and m.judged]
    bounds = [(s, m.ref,
               m.lower if m.lower is not None and not math.isinf(m.lower) else m.ref,
               m.upper if m.upper is not None and not math.isinf(m.upper) else m.ref)
              for s, m in refs]
    bad = [(s, v) for s, v, m in pts if refs and m is not None and m.verdict is Result.FAIL]
    return (_case_label(case), short(case.where), [(s, v) for s, v, _ in pts], bounds, bad)


def _osu_figure(plt, curves, metric, unit, title):
    colors = ['#1f77b4', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf']
    fig, ax = plt.subplots(figsize=(6.8, 4.0))
    for k, (label, where, values, bounds, bad) in enumerate(curves):
        color = colors[k % len(colors)]
        ax.plot([s for s, _ in values], [v for _, v in values], marker='o', ms=3,
                color=color, label=label)
        if bounds:
            xs = [s for s, _, _, _ in bounds]
            ax.plot(xs, [r for _, r, _, _ in bounds], ls='--', color=color, alpha=0.8,
                    label=f'reference, {where}')
            ax.fill_between(xs, [lo for _, _, lo, _ in bounds], [hi for _, _, _, hi in bounds],
                            color=color, alpha=0.12)
            if bad:
                ax.plot([x for x, _ in bad], [v for _, v in bad], 'x', color='#d62728',
                        ms=8, mew=2, label='outside bounds' if k == 0 else None)
    ax.set_xscale('log', base=2)
    ax.set_yscale('log')
    ax.set_xlabel('message size (bytes)')
    ax.set_ylabel(f'{metric} ({unit})' if unit else metric)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which='major', alpha=0.3)
    ax.legend(fontsize=7)
    return fig
