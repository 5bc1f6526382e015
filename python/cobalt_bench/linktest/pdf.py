'''The PDF report of a cb-linktest run, for the acceptance file: one A4 document in the
spirit of LinkTest 2.x's report: a first page with the summary and the settings, the heat
map grouped by host, the host-to-host view, the histograms, and the slowest pairs with
their serial retest (then the flagged links and payload errors); whatever else a newer
cb-linktest wrote into the file (all-to-all timings, memory per task) is shown as it is.
'''

import os
import textwrap

from .. import paths
from ..fileio import atomic_file
from .analysis import _flatten, _fmt_value, _meta_number, fmt_time
from .figures import (draw_linktest_heatmap, draw_linktest_histogram,
                      draw_linktest_host_matrix, pyplot)
from .pages import A4, MARGIN, _Pages
from .results_file import MEMORY_COLUMNS

# The settings block: meta.options keys under the option that sets them, in the order of
# LinkTest's usage text (what its users type); options not listed here follow as
# --<key>. A unit where the option's value has one.
OPTION_LABELS = [
    ('mode', '--mode', ''),
    ('num_warmup_messages', '--num-warmup-messages', ''),
    ('num_messages', '--num-messages', ''),
    ('size_messages', '--size-messages', ' B'),
    ('no_sion_file', '--no-sion-file', ''),
    ('parallel_sion_file', '--parallel-sion-file', ''),
    ('num_slowest', '--num-slowest', ''),
    ('min_iterations', '--min-iterations', ''),
    ('min_runtime', '--min-runtime', ' s'),
    ('memory_buffer_allocator', '--memory-buffer-allocator', ''),
    ('huge_pages', 'huge pages (--no-huge-pages)', ''),
    ('all_to_all', '--all-to-all', ''),
    ('pattern', 'pattern (--uni/--bidirectional)', ''),
    ('bisection', '--bisection', ''),
    ('serial_tests', '--serial-tests', ''),
    ('randomize_steps', '--randomize-steps', ''),
    ('seed_randomize_steps', '--seed-randomize-steps', ''),
    ('use_gpu_memory', '--use-gpu-memory', ''),
    ('multi_buffer', '--multi-buffer', ''),
    ('num_multi_buffer', '--num-multi-buffer', ''),
    ('randomize_buffers', '--randomize-buffers', ''),
    ('seed_randomize_buffers', '--seed-randomize-buffers', ''),
    ('check_buffers', '--check-buffers', ''),
    ('num_randomize_tasks', '--num-randomize-tasks', ''),
    ('seed_randomize_tasks', '--seed-randomize-tasks', ''),
    ('group_processes_by_hostname', '--group-processes-by-hostname', ''),
    ('min_bandwidth_gbits', '--min-bandwidth', ' Gbit/s'),
    ('max_time_us', '--max-time', ' us'),
]
# What the run made of the settings (meta keys beside the options).
META_LABELS = [
    ('allocator', 'Buffers as allocated'),
    ('buffers_per_ring', 'Buffers per pair and direction'),
    ('gpu_transfer', 'GPU buffer transfer'),
]


def _settings_section(pages, s):
    '''The options of the run in two columns, under the option that sets them, then what
    the run made of them.'''
    pages.section('Settings')
    items, shown = [], set()
    for key, label, unit in OPTION_LABELS:
        if key in s.opts:
            items.append((label, _fmt_value(s.opts[key]) + unit))
            shown.add(key)
    for key, value in s.opts.items():
        if key not in shown:
            items += [('--' + label.replace('_', '-'), text) for label, text in
                      _flatten(key, value)]
    pages.grid(items)
    for key, label in META_LABELS:
        if key in s.meta:
            pages.kv(label, _fmt_value(s.meta[key]))
    if s.task_orders is not None:
        pages.kv('Task orders tested', f'{len(s.task_orders)} random permutation(s) besides '
                 'the ranks\' own order (array task_order)')


def _summary_pages(np, pages, s):
    '''The first page: the summary (bandwidths, the slowest pairs), the run and its
    settings; then all-to-all, memory per task and whatever else the file holds.'''
    pages.title('cb-linktest report', f'{os.path.abspath(s.path)}')
    pages.section('Summary')
    if s.meta.get('interrupted'):
        pages.kv('Interrupted', 'yes: the results are those of the pairs tested before the '
                 'stop', color='#c62828')
    if not s.pairs_tested:
        pages.kv('Pairs tested', f'none of {s.pairs_all}', color='#c62828')
    else:
        b = s.bw_pairs
        t = s.t_pairs[np.isfinite(s.t_pairs)]
        pages.kv('Pairs tested', f'{s.pairs_tested} of {s.pairs_all}',
                 color=None if s.pairs_tested == s.pairs_all else '#c62828')
        pages.kv('Bandwidth per pair [Gbit/s]', f'min {b.min():.3f}, avg {b.mean():.3f}, '
                 f'median {np.median(b):.3f}, max {b.max():.3f}')
        pages.kv('Time per message', f'min {fmt_time(t.min())}, avg {fmt_time(t.mean())}, '
                 f'median {fmt_time(s.median)}, max {fmt_time(t.max())}')
        t_after, a, b_, retested = s.after
        pages.kv('Slowest pair after the retest', f'{a} <-> {b_} ({s.hosts[a]} <-> '
                 f'{s.hosts[b_]}): {fmt_time(t_after)} ({s.gbits(t_after):.3f} Gbit/s), '
                 + ('retested alone' if retested else 'not retested'))
        rules = s.rules()
        if rules:
            pages.kv('Flagged links', f'{len(s.flagged)} ({" or ".join(rules)})',
                     color='#c62828' if s.flagged else '#2e7d32')
        if s.opts.get('check_buffers') or s.errors:
            pages.kv('Payload errors (--check-buffers)',
                     f'{len(s.errors)} pair test(s)' if s.errors else 'none',
                     color='#c62828' if s.errors else '#2e7d32')
        for label, text in s.a2a_lines():
            pages.kv(label, text)
    if s.retests:
        pages.section('Slowest pairs (parallel test, then retested alone)', need=1.2)
        _retest_table(pages, s, s.retests[:5])
        if len(s.retests) > 5:
            pages.para(f'All {len(s.retests)} retested pairs: page "Slowest pairs".')

    pages.section('Run')
    pages.kv('Started, duration', f'{s.meta.get("started", "?")}, '
             f'{_meta_number(s.meta, "duration_s", float("nan")):.2f} s')
    pages.kv('Ranks, hosts, steps', f'{s.n} ranks on {s.nhosts} host'
             f'{"" if s.nhosts == 1 else "s"}, {s.meta.get("steps", "?")} steps, '
             f'{s.meta.get("iterations", 1)} iteration(s)')
    counts = {}
    for h in s.hosts:
        counts[h] = counts.get(h, 0) + 1
    names = [f'{h} ({c})' for h, c in counts.items()]
    pages.kv('Hosts (ranks)', ', '.join(names[:6])
             + (f', ... ({len(names)} hosts)' if len(names) > 6 else ''))
    pages.kv('cb-linktest version', f'{s.meta.get("version", "?")} (test version '
             f'{s.meta.get("test_version", "?")})')
    pages.kv('Command', '')
    pages.mono(str(s.meta.get('command', '?')))
    _settings_section(pages, s)


def _monitoring_sections(np, pages, s):
    '''After the slowest pairs: further all-to-all results, memory per task, and whatever
    else the file holds.'''
    if s.all_to_all:
        pages.section('All-to-all: further results')
        for label, text in s.all_to_all:
            pages.kv(label, text)
    if s.memory is not None:
        _memory_section(np, pages, s)
    if s.extra:
        pages.section('Other results in the file')
        for label, text in s.extra:
            pages.kv(label, text)


def _memory_section(np, pages, s):
    '''Memory per task (kiB), as cb-linktest measured it after setting up its buffers.'''
    pages.section('Memory per task [kiB]', need=1.2)
    m = s.memory
    if s.n <= 24:
        pages.table(['rank', 'host'] + MEMORY_COLUMNS,
                    [[r, s.hosts[r]] + [f'{v:,.0f}' if np.isfinite(v) else '-' for v in m[r]]
                     for r in range(s.n)],
                    [0.5, 2.3, 1.0, 1.0, 1.0, 1.0], aligns='rlrrrr')
        return
    rows = []
    for name, col in zip(MEMORY_COLUMNS, m.T):
        ok = np.isfinite(col)
        if ok.any():
            r = int(np.argmax(np.where(ok, col, -np.inf)))
            rows.append([name, f'{col[ok].min():,.0f}', f'{col[ok].mean():,.0f}',
                         f'{col[r]:,.0f}', f'{r} ({s.hosts[r]})'])
    pages.table(['', 'min', 'mean', 'max', 'rank with the max'], rows,
                [1.0, 1.0, 1.0, 1.0, 2.6], aligns='lrrrl')


def _retest_table(pages, s, rows):
    pages.table(['#', 'ranks', 'hosts', 'parallel', 'Gbit/s', 'alone', 'Gbit/s',
                 'alone/par.'],
                [[i + 1, f'{a} <-> {b}', f'{s.hosts[a]} <-> {s.hosts[b]}', fmt_time(first),
                  f'{s.gbits(first):.3f}', fmt_time(again) if again > 0 else 'n/a',
                  f'{s.gbits(again):.3f}' if again > 0 else 'n/a',
                  f'{again / first:.2f}' if again > 0 else 'n/a']
                 for i, (a, b, first, again) in enumerate(rows)],
                [0.3, 0.8, 2.25, 0.8, 0.6, 0.8, 0.6, 0.75], aligns='rllrrrrr')


def _slowest_pages(np, pages, s, top):
    '''The slowest pairs and their retest (a bar chart, then the table), the flagged
    links and the payload errors.'''
    if s.retests:
        shown = s.retests[:30]

        def bars(fig, rect):
            ax = fig.add_axes(rect)
            y = np.arange(len(shown))
            ax.barh(y - 0.2, [s.gbits(f) for _, _, f, _ in shown], 0.4, color='#3b6ea5',
                    label='1st: parallel test')
            ax.barh(y + 0.2, [s.gbits(r) if r > 0 else 0 for _, _, _, r in shown], 0.4,
                    color='#f28e2b', label='retest: alone')
            ax.set_yticks(y, [f'{a} <-> {b}' for a, b, _, _ in shown],
                          fontsize=8 if len(shown) <= 15 else 6)
            ax.invert_yaxis()
            median = float(np.median(s.bw_pairs))
            ax.axvline(median, color='black', linestyle='--', linewidth=1,
                       label=f'median of all pairs {median:.3f} Gbit/s')
            if s.min_bw is not None:
                ax.axvline(s.min_bw, color='red', label=f'--min-bandwidth {s.min_bw:g}')
            ax.set_xlabel('bandwidth [Gbit/s]', fontsize=9)
            ax.legend(fontsize=8, loc='lower left', bbox_to_anchor=(0, 1.0), ncol=3,
                      frameon=False)
        pages.section('Slowest pairs and their retest', need=4.8)
        pages.para('Each pair: its bandwidth in the parallel test (all pairs of a step at '
                   'once) and when retested alone. Slow in both: its link, adapters or hosts; '
                   'slow only in the parallel test: load elsewhere in the network '
                   '(contention).')
        pages.chart(min(4.2, 1.6 + 0.22 * len(shown)), bars)
        _retest_table(pages, s, s.retests)
    rules = s.rules()
    if rules:
        pages.section(f'Flagged links: {len(s.flagged)}')
        pages.para(f'Links {" or ".join(rules)}, slowest first.')
        if s.flagged:
            retest = {(a, b): again for a, b, _, again in s.retests}
            pages.table(['ranks', 'hosts', 'time', 'Gbit/s', 'x median', 'retest'],
                        [[f'{a} <-> {b}', f'{s.hosts[a]} <-> {s.hosts[b]}', fmt_time(t),
                          f'{g:.3f}', f'{r:.1f}',
                          fmt_time(retest[(a, b)]) if (a, b) in retest else '-']
                         for a, b, t, g, r in s.flagged[:top]],
                        [0.9, 2.6, 0.95, 0.8, 0.75, 0.9], aligns='llrrrr')
            if len(s.flagged) > top:
                pages.para(f'... and {len(s.flagged) - top} more (--top {top}).')
        else:
            pages.para('No link flagged.')
    if s.errors:
        pages.section(f'Payload errors (--check-buffers) in {len(s.errors)} pair test(s)')
        pages.table(['ranks', 'hosts'], [[f'{a} <-> {b}', f'{s.hosts[a]} <-> {s.hosts[b]}']
                                          for a, b in s.errors[:top]], [1.2, 4.0])


def write_pdf(path, np, s, top):
    '''The PDF report of the analysis s at path (atomically).'''
    plt = pyplot()
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages
    version = paths.version()
    footer = (f'cb-linktest report of {os.path.basename(s.path)}, cobalt-bench {version}')
    # TrueType fonts (not Type 3): the text stays searchable and copyable (pdftotext).
    with matplotlib.rc_context({'pdf.fonttype': 42}):
        with atomic_file(path) as fp, PdfPages(fp, metadata={
                'Title': f'cb-linktest report: {os.path.basename(s.path)}',
                'Creator': f'cobalt-bench {version} linktest-report'}) as pdf:
            pages = _Pages(pdf, plt, footer)
            _summary_pages(np, pages, s)
            pages.close()
            if s.pairs_tested:
                _plot_pages(np, pages, s, plt)
                _slowest_pages(np, pages, s, top)
            _monitoring_sections(np, pages, s)
            pages.close()
    return pages.count


def _fit(fig, rect):
    '''The plot, its labels and colour bar within rect (figure fractions), whatever the
    length of the host names: a second pass of tight_layout, as the first places the axes
    before their rotated tick labels have their final size.'''
    for _ in range(2):
        fig.tight_layout(rect=rect)


def _plot_pages(np, pages, s, plt):
    '''The pages of pictures: the heat map, the host x host view (several hosts) and the
    histograms of bandwidth and time per message.'''
    note = ('Each cell: the bandwidth of one pair of ranks (message size x 8 / time per '
            'message), ranks grouped by host in order of their first rank; white lines mark '
            'the host boundaries, host names and their rank counts on top (or on the axes '
            'for many ranks). Grey: not tested. A bad link shows as an off-colour cell, a bad '
            'host or adapter as an off-colour row and column.')

    def heat(fig):
        ax = fig.add_subplot()
        draw_linktest_heatmap(fig, ax, s.bw, s.hosts, 'Bandwidth of every pair: '
                                    + s.title(), min_bw=s.min_bw, flagged=s.flagged)
        _fit(fig, (0.03, 0.26, 0.97, 0.94))
        fig.text(0.5, 0.955, 'Heat map, ranks grouped by host', ha='center', fontsize=13,
                 weight='bold')
        extra = (' Red frames: the flagged links.' if s.flagged and s.n <= 32 else '') + \
                (' Red line on the colour bar: --min-bandwidth.' if s.min_bw is not None
                 else '')
        for i, line in enumerate(textwrap.wrap(note + extra, 105)):
            fig.text(MARGIN / A4[0], 0.24 - i * 0.017, line, fontsize=8.5, color='#333333')
    pages.figure_page(heat)

    if s.nhosts > 1:
        def hosts(fig):
            ax = fig.add_subplot()
            draw_linktest_host_matrix(fig, ax, s.bw, s.hosts,
                                            'Slowest link between each pair of hosts '
                                            '[Gbit/s]')
            _fit(fig, (0.03, 0.45, 0.97, 0.94))
            fig.text(0.5, 0.955, 'Hosts', ha='center', fontsize=13, weight='bold')
            fig.text(MARGIN / A4[0], 0.39, 'Per host: its links to the other hosts',
                     fontsize=10, weight='bold')
            rows = s.per_host[:24]      # what fits below the matrix
            y = 0.37
            for i, (h, ranks, worst, median) in enumerate(
                    [('host', 'ranks', 'worst [Gbit/s]', 'median [Gbit/s]')] + rows):
                fmt = (lambda v: v) if i == 0 else (lambda v: f'{v:.3f}')
                for x, text, ha in ((0.085, h, 'left'), (0.55, str(ranks), 'right'),
                                    (0.72, fmt(worst), 'right'), (0.9, fmt(median), 'right')):
                    fig.text(x, y, text, fontsize=8, ha=ha,
                             weight='bold' if i == 0 else 'normal')
                y -= 0.0125
            if len(s.per_host) > len(rows):
                fig.text(0.085, y, f'... and {len(s.per_host) - len(rows)} more hosts '
                         '(the text report lists all)', fontsize=8)
        pages.figure_page(hosts)

    def hist(fig):
        ax = fig.add_axes([0.12, 0.55, 0.8, 0.35])
        draw_linktest_histogram(ax, s.bw_pairs, 'Bandwidth of the pairs: ' + s.title(),
                                      s.median_bw, s.min_bw,
                                      s.median_bw / s.factor if s.factor else None)
        fig.text(0.5, 0.955, 'Histogram', ha='center', fontsize=13, weight='bold')
        ax2 = fig.add_axes([0.12, 0.1, 0.8, 0.33])
        t = s.t_pairs[np.isfinite(s.t_pairs)] * 1e6
        ax2.hist(t, bins=min(60, max(10, len(t) // 4)), color='#8c6bb1')
        ax2.set_yscale('log' if len(t) > 100 else 'linear')
        ax2.axvline(s.median * 1e6, color='black', linestyle='--',
                    label=f'median {fmt_time(s.median)}')
        ax2.set_xlabel('time per message [us]')
        ax2.set_ylabel('pairs')
        ax2.set_title('Time per message of the pairs', fontsize=9)
        ax2.legend(fontsize=8)
    pages.figure_page(hist)
