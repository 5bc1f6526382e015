'''The pictures of a cb-linktest run: the heat map of every pair's bandwidth with the ranks
grouped by host, the histogram of the bandwidths and the host x host view, and the PNG
files of `cobalt-bench linktest-report`.

The compliance report (cobalt_bench.plots, its linktest_heatmap plotter) and
`cobalt-bench linktest-report` (its PNG files and its PDF report) draw the same heat map
with linktest_heatmap_figure / draw_linktest_heatmap: one picture of a run wherever it is
seen. numpy and matplotlib are imported when something is drawn, so that the command can
say what is missing (or re-run itself with the checkout's .venv) first.
'''

from ..errors import CannotRun
from ..fileio import atomic_file


def pyplot():
    '''matplotlib.pyplot on the Agg backend (files, no display); CannotRun where matplotlib
    is missing.'''
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise CannotRun(f'matplotlib is not importable ({err}); install requirements.txt '
                        'into the Python cobalt-bench runs with (in a checkout: '
                        './bootstrap.sh --no-run)')
    return plt


# A heat map wider than this many pixels shows, per pixel, the slowest link of a block.
HEATMAP_MAX_PIXELS = 2048


def host_order(hosts):
    '''Ranks grouped by host (hosts in order of their first rank), and each host's span
    (host, first position, ranks).'''
    first = {}
    for r, h in enumerate(hosts):
        first.setdefault(h, r)
    order = sorted(range(len(hosts)), key=lambda r: (first[hosts[r]], r))
    spans = []
    for r in order:
        if spans and spans[-1][0] == hosts[r]:
            spans[-1][2] += 1
        else:
            spans.append([hosts[r], len(spans) and spans[-1][1] + spans[-1][2], 1])
    return order, [tuple(s) for s in spans]


def linktest_heatmap_figure(gbits, hosts, title, min_bw=None, flagged=()):
    '''The heat map of every rank pair's bandwidth (an N x N matrix in Gbit/s, NaN: not
    tested), ranks grouped by host, as a matplotlib figure. `min_bw` marks a threshold on
    the colour bar; `flagged` pairs (a, b, ...) get a red frame where ranks are labelled.'''
    plt = pyplot()
    n = gbits.shape[0]
    size = 7 if n <= 64 else 9
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    draw_linktest_heatmap(fig, ax, gbits, hosts, title, min_bw=min_bw, flagged=flagged)
    fig.tight_layout()
    return fig


def draw_linktest_heatmap(fig, ax, gbits, hosts, title, min_bw=None, flagged=()):
    '''The heat map of linktest_heatmap_figure drawn into `ax` of `fig` (the PDF report
    puts it on a page of its own).'''
    import numpy as np
    plt = pyplot()
    import matplotlib.colors
    n = gbits.shape[0]
    hosts = list(hosts) if len(hosts) == n else [str(h) for h in hosts] + [''] * (n - len(hosts))
    order, spans = host_order(hosts)
    m = gbits[np.ix_(order, order)]
    block = max(1, -(-n // HEATMAP_MAX_PIXELS))
    note = ''
    if block > 1:  # each pixel: the slowest link of a block x block square
        k = -(-n // block)
        pad = np.full((k * block, k * block), np.nan)
        pad[:n, :n] = m
        with np.errstate(all='ignore'):
            m = np.nanmin(pad.reshape(k, block, k, block), axis=(1, 3))
        note = f' (each pixel: slowest link of {block} x {block} pairs)'
    cmap = plt.get_cmap('viridis').copy()
    cmap.set_bad('#dddddd')
    finite = m[np.isfinite(m)]
    # bandwidths over more than a decade: a log scale keeps the slow ones apart
    norm = None
    if finite.size and finite.min() > 0 and finite.max() / finite.min() > 20:
        norm = matplotlib.colors.LogNorm(vmin=finite.min(), vmax=finite.max())
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, norm=norm, interpolation='nearest',
                   origin='upper', extent=(0, n, n, 0))
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    cb.set_label('bandwidth per pair [Gbit/s]' + (' (log scale)' if norm else ''))
    if min_bw is not None:
        cb.ax.axhline(min_bw, color='red', linewidth=2)
    if len(spans) > 1:
        for _, start, _ in spans[1:]:
            ax.axhline(start, color='white', linewidth=0.8)
            ax.axvline(start, color='white', linewidth=0.8)
    centers = [start + count / 2 for _, start, count in spans]
    host_labels = [f'{_short(h)} ({count})' for h, _, count in spans]
    if n <= 32:  # few ranks: rank numbers on the axes, hosts on top
        ax.set_xticks(np.arange(n) + 0.5, [str(r) for r in order], fontsize=7)
        ax.set_yticks(np.arange(n) + 0.5, [str(r) for r in order], fontsize=7)
        ax.set_xlabel('rank')
        ax.set_ylabel('rank')
        top = ax.secondary_xaxis('top')
        top.set_xticks(centers, host_labels, fontsize=8)
        if len(spans) > 1:  # and down the left, outside the rank numbers
            left = ax.secondary_yaxis(-0.07)
            left.set_yticks(centers, host_labels, fontsize=8, rotation=90, va='center')
            left.tick_params(length=0)
        # links flagged as slow: a red frame (both triangles)
        pos = {r: i for i, r in enumerate(order)}
        for a, b, *_ in flagged:
            for x, y in ((pos[b], pos[a]), (pos[a], pos[b])):
                ax.add_patch(plt.Rectangle((x, y), 1, 1, fill=False, edgecolor='red',
                                           linewidth=2))
    elif len(spans) <= 40:
        ax.set_xticks(centers, host_labels, rotation=60, ha='right', fontsize=8)
        ax.set_yticks(centers, host_labels, fontsize=8)
        ax.set_xlabel('host (ranks)')
        ax.set_ylabel('host (ranks)')
    else:
        ax.set_xlabel(f'rank, grouped by host ({len(spans)} hosts)')
        ax.set_ylabel(f'rank, grouped by host ({len(spans)} hosts)')
    ax.set_title(title + note, fontsize=9)


def _short(name, most=24):
    '''A host name for an axis: long ones keep their start and end (where node numbers
    and domains are), so that the plot keeps its room.'''
    return name if len(name) <= most else name[:most // 2 - 1] + '\u2026' + name[-(most // 2):]


def draw_linktest_histogram(ax, gbits, title, median_bw, min_bw=None, factor_bw=None):
    '''Histogram of the pairs' bandwidths (Gbit/s) with the median and the thresholds of
    `cobalt-bench linktest-report` (--min-bandwidth, --factor) as lines.'''
    ax.hist(gbits, bins=min(60, max(10, len(gbits) // 4)), color='#3b6ea5')
    ax.set_yscale('log' if len(gbits) > 100 else 'linear')
    ax.axvline(median_bw, color='black', linestyle='--', label=f'median {median_bw:.3f} Gbit/s')
    if factor_bw is not None:
        ax.axvline(factor_bw, color='orange',
                   label=f'--factor x median time: < {factor_bw:.3f} Gbit/s')
    if min_bw is not None:
        ax.axvline(min_bw, color='red', label=f'--min-bandwidth {min_bw:g}')
    ax.set_xlabel('bandwidth per pair [Gbit/s]')
    ax.set_ylabel('pairs')
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)


def linktest_host_matrix(gbits, hosts):
    '''(host names, H x H matrix): the slowest tested link between the ranks of each pair
    of hosts in Gbit/s (NaN: none tested), hosts in order of their first rank.'''
    import numpy as np
    number = {}
    idx = np.array([number.setdefault(h, len(number)) for h in hosts])
    names = list(number)
    # ranks sorted by host, then the minimum over each host's block of rows and columns
    # (untested pairs as +inf, a block with none tested back to NaN): O(N^2), not a loop
    # over host pairs
    order = np.argsort(idx, kind='stable')
    m = np.where(np.isfinite(gbits), gbits, np.inf)[np.ix_(order, order)]
    starts = np.searchsorted(idx[order], np.arange(len(names)))
    out = np.minimum.reduceat(np.minimum.reduceat(m, starts, axis=0), starts, axis=1)
    out[np.isinf(out)] = np.nan
    return names, out


def draw_linktest_host_matrix(fig, ax, gbits, hosts, title):
    '''The host x host view of the heat map: each cell the slowest link between two hosts
    (the diagonal: within one host), the figure in each cell where there is room.'''
    import numpy as np
    plt = pyplot()
    names, m = linktest_host_matrix(gbits, hosts)
    h = len(names)
    cmap = plt.get_cmap('viridis').copy()
    cmap.set_bad('#dddddd')
    im = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, interpolation='nearest',
                   origin='upper', extent=(0, h, h, 0))
    cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    cb.set_label('slowest link between the hosts [Gbit/s]')
    if h <= 40:
        short = [_short(x) for x in names]
        ax.set_xticks(np.arange(h) + 0.5, short, rotation=60 if h > 4 else 0,
                      ha='right' if h > 4 else 'center', fontsize=8)
        ax.set_yticks(np.arange(h) + 0.5, short, fontsize=8)
    if h <= 12:
        finite = m[np.isfinite(m)]
        mid = (finite.min() + finite.max()) / 2 if finite.size else 0
        for i in range(h):
            for j in range(h):
                if np.isfinite(m[i, j]):
                    ax.text(j + 0.5, i + 0.5, f'{m[i, j]:.3g}', ha='center', va='center',
                            fontsize=8, color='white' if m[i, j] < mid else 'black')
    ax.set_xlabel('host')
    ax.set_ylabel('host')
    ax.set_title(title, fontsize=9)


# ---- the PNG files of `cobalt-bench linktest-report` --------------------------------------

def _save_atomic(fig, path, fmt, **kwargs):
    '''fig saved to path through a temporary file in its directory and a rename: an earlier
    file stays whole until the new one is complete, and a failed write leaves nothing.'''
    plt = pyplot()
    try:
        with atomic_file(path) as fp:
            fig.savefig(fp, format=fmt, **kwargs)
    finally:
        plt.close(fig)


def heatmap(path, bw, hosts, title, min_bw, flagged):
    '''PATH-heatmap.png: the heat map of linktest_heatmap_figure.'''
    fig = linktest_heatmap_figure(bw, hosts, title, min_bw=min_bw, flagged=flagged)
    _save_atomic(fig, path, 'png', dpi=110)


def histogram(path, values, title, median_bw, min_bw, factor_bw):
    '''PATH-histogram.png: the bandwidths of the pairs with the median and the thresholds.'''
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    draw_linktest_histogram(ax, values, title, median_bw, min_bw, factor_bw)
    fig.tight_layout()
    _save_atomic(fig, path, 'png', dpi=110)
