'''`cobalt-bench linktest-report` (also installed as `cb-linktest-report`): read a
cb-linktest results file (.npz) and show which links are slow.

Text for terminals: the run, the bandwidth distribution, the slowest pairs with their serial
retest, and the links below --min-bandwidth or slower than --factor times the median time.
PNG for people: the heat map of every pair's bandwidth with the ranks grouped by host (the
report's heat map, plots.linktest_heatmap_figure), and a histogram of the bandwidths.
PDF for the acceptance file (as LinkTest 2.x users get one): one A4 document with the run,
its settings and summary, the heat map, the host-to-host view, the histograms and the
slowest pairs with their retest; whatever else a newer cb-linktest wrote into the file
(all-to-all timings) is shown as it is. `cobalt-bench report` links it (PREFIX-report.pdf
beside the results file).

Exit status: 0 no link flagged, 1 links flagged (or payload errors in the run), 2 usage
error, 3 cannot run (file unreadable, output not writable, numpy or matplotlib missing).
'''

import argparse
import json
import math
import os
import sys
import textwrap
import zipfile
import zlib

from . import CannotRun, UsageError, __version__, exit_status, paths
from .atomic import atomic_file

PROG = 'cb-linktest-report'
DESCRIPTION = ('Report on a cb-linktest results file: slow links as text, heat map and '
               'histogram as PNG, and all of it in one PDF report.')
EPILOG = ('Exit status: 0 no link flagged, 1 links flagged or payload errors, 2 usage '
          'error, 3 cannot read the file, cannot write the PNG or PDF files, or '
          'numpy/matplotlib missing.')

# Set in the environment of a re-run with the checkout's .venv Python (see _numpy): a
# second attempt never re-runs again.
REEXEC_VAR = 'CB_LINKTEST_REPORT_REEXEC'


def _finite(text):
    # float() takes 'nan' and 'inf': a threshold no link can cross (or every link does)
    # would flag nothing and read as a clean network.
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'not a number: {text!r}')
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'not a finite number: {text!r}')
    return value


def nonempty_path(text):
    '''argparse type: a path that is not empty (an empty one would silently mean "here").'''
    if not text.strip():
        raise argparse.ArgumentTypeError('empty path')
    return text


def add_arguments(ap):
    '''The options, for `cb-linktest-report` and `cobalt-bench linktest-report` alike.'''
    ap.add_argument('file', type=nonempty_path,
                    help='results file written by cb-linktest --output (.npz)')
    ap.add_argument('--min-bandwidth', type=_finite, metavar='GBITS',
                    help='flag links below GBITS Gbit/s')
    ap.add_argument('--factor', type=_finite, default=2.0, metavar='F',
                    help='flag links slower than F times the median time (default 2; 0: off)')
    ap.add_argument('--prefix', metavar='PATH', type=nonempty_path,
                    help='PNG files PATH-heatmap.png and PATH-histogram.png, PDF report '
                         'PATH-report.pdf (default: the results file without .npz)')
    ap.add_argument('--no-png', action='store_true',
                    help='text only: no PNG files and no PDF report (unless --pdf names one)')
    ap.add_argument('--pdf', metavar='PATH', type=nonempty_path,
                    help='the PDF report (settings, heat map grouped by host, histogram, '
                         'slowest pairs and their retest) at PATH (default: '
                         'PREFIX-report.pdf, written with the PNG files)')
    ap.add_argument('--no-pdf', action='store_true', help='no PDF report')
    ap.add_argument('--top', type=int, default=20, metavar='N',
                    help='list at most N flagged links (default 20)')


def _numpy(reexec_module):
    '''numpy, or re-run this command with the checkout's .venv Python when this Python
    lacks numpy or matplotlib (as `/usr/bin/python3 -m cobalt_bench ...` does); else
    CannotRun naming what is missing.'''
    try:
        import numpy
        import matplotlib  # noqa: F401  (plots imports pyplot when it draws)
        return numpy
    except ImportError as err:
        python = paths.venv_python()
        if python and reexec_module and not os.environ.get(REEXEC_VAR):
            os.environ[REEXEC_VAR] = '1'
            os.execv(python, [python, '-m', reexec_module, *sys.argv[1:]])
        raise CannotRun(
            f'{err.name or err} is missing: it needs numpy and matplotlib.\n'
            '  In a cobalt-bench checkout: ./bootstrap.sh --no-run (or .venv/bin/pip install '
            '-r requirements.txt)\n  Elsewhere: pip install numpy matplotlib, then run it '
            'with that python.')


# What reading a damaged .npz raises: the ZIP container (cut short, bad CRC, bad
# compressed data) and the .npy members in it (bad header, short data, object arrays).
_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError,
                UnicodeDecodeError, NotImplementedError, RecursionError, MemoryError)


def _pairs(np, data, key, n):
    '''An optional k x 2 array of rank pairs, each rank < n; None if absent.'''
    if key not in data:
        return None
    a = data[key]
    if a.size == 0:
        return np.zeros((0, 2), dtype=int)
    if a.ndim != 2 or a.shape[1] != 2 or a.dtype.kind not in 'iu' or \
            (a < 0).any() or (a >= n).any():
        raise ValueError(f'"{key}" must be pairs of ranks 0..{n - 1}; it is {a.dtype} '
                         f'{a.shape}')
    return a


def load(np, path):
    '''The results file as a dict: time (N x N seconds, NaN: not tested), hosts, meta, ...
    CannotRun naming the file and what is wrong with it for anything else.'''
    try:
        with open(path, 'rb') as fp:
            head = fp.read(4)
        if head != b'PK\x03\x04':
            # numpy would take anything else for a pickle, and say so: misleading.
            raise CannotRun(f'{path} is not a cb-linktest results file (.npz, a ZIP '
                            'archive): ' + ('it is empty' if not head else
                                            'it is cut short or something else'))
        with np.load(path, allow_pickle=False) as z:
            data = {name: z[name] for name in z.files}
    except zipfile.BadZipFile as err:
        raise CannotRun(f'cannot read {path}: it is cut short or damaged '
                        f'(BadZipFile: {err})')
    except _READ_ERRORS as err:
        raise CannotRun(f'cannot read {path}: {err.__class__.__name__}: {err}'
                        if not isinstance(err, OSError) else f'cannot read {path}: {err}')
    for key in ('time', 'hosts', 'meta'):
        if key not in data:
            raise CannotRun(f'{path} is not a cb-linktest results file (no "{key}" array)')
    try:
        if data['meta'].size != 1:
            raise ValueError(f'"meta" is {data["meta"].shape}, not one JSON text')
        meta = json.loads(str(data['meta'].item()))
        if not isinstance(meta, dict) or not isinstance(meta.get('options', {}), dict):
            raise ValueError('"meta" is not a JSON object with an "options" object')
        data['meta'] = meta
        t = data['time']
        if t.dtype.kind not in 'fiu':
            raise ValueError(f'"time" is {t.dtype}, not numbers')
        if t.ndim != 2 or t.shape[0] != t.shape[1] or data['hosts'].ndim != 1 or \
                len(data['hosts']) != t.shape[0]:
            raise ValueError(f'time must be N x N with N hosts; it is {t.shape} with '
                             f'{data["hosts"].shape} hosts')
        data['time'] = t.astype(float)
        if (data['time'] <= 0).any() or np.isinf(data['time']).any():
            raise ValueError('"time" holds zero, negative or infinite times')
        # below a femtosecond or above a day per message: no measurement, and bandwidths
        # from them overflow
        if (data['time'] < 1e-15).any() or (data['time'] > 86400).any():
            raise ValueError('"time" holds times below 1e-15 s or above a day per message')
        n = t.shape[0]
        for key in ('slowest_pairs', 'error_pairs'):
            pairs = _pairs(np, data, key, n)
            if pairs is not None:
                data[key] = pairs
        if 'slowest_pairs' in data:
            k = len(data['slowest_pairs'])
            for key in ('slowest_time', 'retest_time'):
                a = data.get(key)
                if a is None or a.ndim != 1 or len(a) != k or a.dtype.kind not in 'fiu':
                    raise ValueError(f'"{key}" must be {k} times, one per slowest pair')
        size = meta.get('options', {}).get('size_messages')
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float))
                                 or not math.isfinite(size) or size <= 0):
            raise ValueError(f'meta.options.size_messages is {size!r}, not a positive size')
    except (ValueError, TypeError, RecursionError) as err:
        raise CannotRun(f'{path}: not a usable cb-linktest results file: {err}')
    return data


def _meta_number(meta, key, default):
    value = meta.get(key, default)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else default


def fmt_time(s):
    import math
    if not math.isfinite(s):
        return 'n/a'
    for unit, scale in (('ns', 1e9), ('us', 1e6), ('ms', 1e3)):
        if s * scale < 1000:
            return f'{s * scale:.2f} {unit}'
    return f'{s:.3f} s'


def flagged_links(np, time, bw, min_bw, factor):
    '''(a, b, time, bw, times the median) of every flagged pair a < b, slowest first.'''
    iu = np.triu_indices(time.shape[0], 1)
    t = time[iu]
    tested = np.isfinite(t)
    median = float(np.median(t[tested])) if tested.any() else float('nan')
    slow = np.zeros_like(tested)
    if min_bw is not None:
        slow |= tested & (bw[iu] < min_bw)
    if factor:
        slow |= tested & (t > factor * median)
    idx = np.nonzero(slow)[0]
    idx = idx[np.argsort(-t[idx], kind='stable')]
    return [(int(iu[0][i]), int(iu[1][i]), float(t[i]), float(bw[iu][i]), float(t[i] / median))
            for i in idx], median


def _save_atomic(fig, path, fmt, **kwargs):
    '''fig saved to path through a temporary file in its directory and a rename: an earlier
    file stays whole until the new one is complete, and a failed write leaves nothing.'''
    from . import plots
    plt = plots._pyplot()
    try:
        with atomic_file(path) as fp:
            fig.savefig(fp, format=fmt, **kwargs)
    finally:
        plt.close(fig)


def heatmap(path, bw, hosts, title, min_bw, flagged):
    from . import plots
    fig = plots.linktest_heatmap_figure(bw, hosts, title, min_bw=min_bw, flagged=flagged)
    _save_atomic(fig, path, 'png', dpi=110)


def histogram(path, values, title, median_bw, min_bw, factor_bw):
    from . import plots
    plt = plots._pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    plots.draw_linktest_histogram(ax, values, title, median_bw, min_bw, factor_bw)
    fig.tight_layout()
    _save_atomic(fig, path, 'png', dpi=110)


# ---- what the text and the PDF report show ------------------------------------------------

# Arrays and meta keys of the results file this report knows; anything else in the file
# (a newer cb-linktest's results, e.g. all-to-all timings) is shown as it is.
KNOWN_ARRAYS = {'time', 'hosts', 'meta', 'slowest_pairs', 'slowest_time', 'retest_time',
                'error_pairs', 'task_memory_kib', 'alltoall_time', 'task_order'}
KNOWN_META = {'format', 'test', 'version', 'test_version', 'started', 'duration_s',
              'interrupted', 'ranks', 'hosts', 'steps', 'iterations', 'time_unit', 'time',
              'command', 'options', 'allocator', 'buffers_per_ring', 'gpu_transfer'}
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
# task_memory_kib: one row per task, these columns.
MEMORY_COLUMNS = ['resident', 'peak', 'locked', 'huge pages']


def _is_all_to_all(key):
    k = key.lower().replace('-', '_')
    return 'all_to_all' in k or 'alltoall' in k


def _fmt_value(v):
    '''A settings or result value as text: yes/no, numbers short, lists joined.'''
    if isinstance(v, bool):
        return 'yes' if v else 'no'
    if isinstance(v, float):
        return f'{v:.6g}'
    if isinstance(v, (list, tuple)):
        text = ', '.join(_fmt_value(x) for x in v[:16])
        return text + (f', ... ({len(v)} in all)' if len(v) > 16 else '')
    if v is None:
        return '-'
    return str(v)


def _flatten(key, value, depth=0):
    '''(label, text) lines of a meta value; objects one line per member.'''
    if isinstance(value, dict) and depth < 3:
        lines = []
        for k, v in value.items():
            lines += _flatten(f'{key}.{k}', v, depth + 1)
        return lines or [(key, '{}')]
    return [(key, _fmt_value(value))]


def _array_lines(np, key, a):
    '''(label, text) summary of an extra array of the results file.'''
    if a.dtype.kind in 'fiu' and a.size:
        if a.size <= 8:
            return [(key, ', '.join(_fmt_value(float(x) if a.dtype.kind == 'f' else int(x))
                                    for x in a.ravel()))]
        finite = a[np.isfinite(a)] if a.dtype.kind == 'f' else a.ravel()
        if finite.size:
            return [(key, f'{a.dtype} {tuple(a.shape)}: min {float(finite.min()):.6g}, '
                          f'mean {float(finite.mean()):.6g}, max {float(finite.max()):.6g}')]
    if a.dtype.kind == 'U' and a.size <= 8:
        return [(key, ', '.join(str(x) for x in a.ravel()))]
    return [(key, f'{a.dtype} {tuple(a.shape)}')]


class Analysis:
    '''Everything the text and the PDF report show of one results file.'''

    def __init__(self, np, path, data, min_bw, factor):
        self.path = path
        self.meta, self.time = data['meta'], data['time']
        self.hosts = [str(h) for h in data['hosts']]
        self.opts = self.meta.get('options', {})
        self.size = self.opts.get('size_messages')
        if not self.size:
            raise CannotRun('the file names no message size (meta.options.size_messages)')
        self.n = n = self.time.shape[0]
        with np.errstate(divide='ignore', invalid='ignore'):
            self.bw = self.size * 8 / self.time / 1e9
        iu = np.triu_indices(n, 1)
        self.t_pairs = self.time[iu]
        tested = np.isfinite(self.t_pairs)
        self.pairs_tested, self.pairs_all = int(tested.sum()), len(self.t_pairs)
        self.bw_pairs = self.bw[iu][tested]
        self.host_names = list(dict.fromkeys(self.hosts))
        self.nhosts = len(self.host_names)
        self.min_bw, self.factor = min_bw, factor
        self.flagged, self.median = (flagged_links(np, self.time, self.bw, min_bw, factor)
                                     if self.pairs_tested else ([], float('nan')))
        self.median_bw = self.size * 8 / self.median / 1e9
        self.retests = []   # (a, b, first time, retest time)
        if 'slowest_pairs' in data:
            self.retests = [(int(a), int(b), float(f), float(r)) for (a, b), f, r in
                            zip(data['slowest_pairs'], data['slowest_time'],
                                data['retest_time'])]
        # The slowest pair once the retested pairs count with their retest (as cb-linktest
        # judges): (time, a, b, retested).
        self.after = None
        if self.pairs_tested:
            after = self.time.copy()
            for a, b, _, again in self.retests:
                if again > 0:
                    after[a, b] = after[b, a] = again
            k = int(np.nanargmax(np.where(np.isfinite(after[iu]), after[iu], -1.0)))
            a, b = int(iu[0][k]), int(iu[1][k])
            self.after = (float(after[a, b]), a, b,
                          any((x, y) == (a, b) and r > 0 for x, y, _, r in self.retests))
        self.errors = [(int(a), int(b)) for a, b in data.get('error_pairs', [])]
        self.per_host = []  # (host, ranks, worst, median) of links to other hosts
        if self.nhosts > 1:
            number = {h: k for k, h in enumerate(self.host_names)}
            hidx = np.array([number[h] for h in self.hosts])
            for k, h in enumerate(self.host_names):
                rows = hidx == k
                sub = self.bw[np.ix_(rows, ~rows)]
                sub = sub[np.isfinite(sub)]
                if sub.size:
                    self.per_host.append((h, int(rows.sum()), float(sub.min()),
                                          float(np.median(sub))))
        self._monitoring(np, data)
        # What a newer cb-linktest adds (all-to-all timings first), shown as it is.
        self.all_to_all, self.extra = [], []
        for key, value in self.meta.items():
            if key not in KNOWN_META:
                (self.all_to_all if _is_all_to_all(key) else self.extra).extend(
                    _flatten(key, value))
        for key in sorted(set(data) - KNOWN_ARRAYS) + self._unread:
            a = data[key]
            (self.all_to_all if _is_all_to_all(key) else self.extra).extend(
                _array_lines(np, key, a))

    def _monitoring(self, np, data):
        '''The monitoring arrays of cb-linktest (task_memory_kib, alltoall_time, task_order)
        where they have the shape this report knows; else shown as they are.'''
        n = self.n
        self._unread = []
        self.memory = self.a2a = self.task_orders = None
        mem = data.get('task_memory_kib')
        if mem is not None:
            if mem.ndim == 2 and mem.shape == (n, len(MEMORY_COLUMNS)) and \
                    mem.dtype.kind in 'fiu':
                self.memory = mem.astype(float)
            else:
                self._unread.append('task_memory_kib')
        a2a = data.get('alltoall_time')
        if a2a is not None:
            if a2a.ndim == 2 and a2a.shape == (2, n) and a2a.dtype.kind in 'fiu':
                self.a2a = []   # (when, slowest rank, its time, mean time) or (when, None...)
                for when, row in zip(('before the test', 'after the test'), a2a.astype(float)):
                    ok = np.isfinite(row) & (row > 0)
                    if ok.any():
                        r = int(np.argmax(np.where(ok, row, -1.0)))
                        self.a2a.append((when, r, float(row[r]), float(row[ok].mean())))
                    else:
                        self.a2a.append((when, None, float('nan'), float('nan')))
            else:
                self._unread.append('alltoall_time')
        order = data.get('task_order')
        if order is not None:
            if order.ndim == 2 and order.shape[1] == n:
                self.task_orders = order
            else:
                self._unread.append('task_order')

    def a2a_lines(self):
        '''(label, text) of the all-to-all timings: MPI_Alltoall of -s bytes to every rank,
        the slowest rank's time and what that rank sent per second.'''
        out = []
        for when, r, t, mean in self.a2a or []:
            if r is None:
                out.append((f'All-to-all {when}', 'not reached (interrupted)'))
            else:
                out.append((f'All-to-all {when}',
                            f'slowest rank {r} ({self.hosts[r]}): {fmt_time(t)} '
                            f'({self.size * (self.n - 1) * 8 / t / 1e9:.3f} Gbit/s), '
                            f'average {fmt_time(mean)}'))
        return out

    def rules(self):
        rules = []
        if self.min_bw is not None:
            rules.append(f'below {self.min_bw:g} Gbit/s')
        if self.factor:
            rules.append(f'slower than {self.factor:g} x the median time '
                         f'({fmt_time(self.median)})')
        return rules

    def gbits(self, t):
        return self.size * 8 / t / 1e9

    def run_line(self):
        return (f'{self.meta.get("started", "?")}, {self.n} ranks on {self.nhosts} host'
                f'{"" if self.nhosts == 1 else "s"}, {self.meta.get("iterations", 1)} '
                f'iteration(s), {_meta_number(self.meta, "duration_s", float("nan")):.2f} s')

    def test_line(self):
        o = self.opts
        return (f'{o.get("pattern", "?")}, {self.size} B messages, '
                f'{o.get("num_messages", "?")} timed + {o.get("num_warmup_messages", "?")} '
                f'warm-up{", bisection" if o.get("bisection") else ""}'
                f'{", hosts grouped" if o.get("group_processes_by_hostname") else ""}')

    def title(self):
        o = self.opts
        return (f'{os.path.basename(self.path)}: {self.n} ranks, {self.nhosts} hosts, '
                f'{self.size} B, {o.get("pattern", "")}'
                f'{", bisection" if o.get("bisection") else ""}')


def print_text(np, s, top):
    '''The text report on stdout; False when no pair was tested.'''
    print(f'cb-linktest results {s.path}')
    print(f'  run:      {s.run_line()}')
    print(f'  test:     {s.test_line()}')
    print(f'  command:  {s.meta.get("command", "?")}')
    if not s.pairs_tested:
        print('No pair was tested.')
        return False
    print(f'Pairs tested: {s.pairs_tested} of {s.pairs_all}')
    b = s.bw_pairs
    print(f'Bandwidth [Gbit/s]: min {b.min():.3f}  median {np.median(b):.3f}  '
          f'mean {b.mean():.3f}  max {b.max():.3f}')
    print(f'Time per message:   min {fmt_time(np.nanmin(s.t_pairs))}  median '
          f'{fmt_time(s.median)}  max {fmt_time(np.nanmax(s.t_pairs))}')
    if s.per_host:
        print('Per host (links to other hosts): worst and median bandwidth [Gbit/s]')
        for h, ranks, worst, median in s.per_host:
            print(f'  {h:<24} {ranks:>5} ranks  worst {worst:9.3f}  median {median:9.3f}')
    if s.retests:
        print('Slowest pairs (parallel test, then alone):')
        for a, b_, first, again in s.retests:
            print(f'  {a:>6} <-> {b_:<6} {s.hosts[a]} <-> {s.hosts[b_]}: {fmt_time(first)} '
                  f'({s.gbits(first):.3f} Gbit/s), retest {fmt_time(again)} '
                  f'({s.gbits(again):.3f} Gbit/s)')
    for label, text in s.a2a_lines():
        print(f'{label}: {text}')
    for label, text in s.all_to_all:
        print(f'All-to-all: {label}: {text}')
    rules = s.rules()
    if rules:
        retest = {(a, b_): again for a, b_, _, again in s.retests}
        print(f'Flagged links ({" or ".join(rules)}): {len(s.flagged)}')
        for a, b_, t, b_gbits, ratio in s.flagged[:top]:
            again = retest.get((a, b_))
            extra = f', retest {fmt_time(again)}' if again is not None else ''
            print(f'  {a:>6} <-> {b_:<6} {s.hosts[a]} <-> {s.hosts[b_]}: {fmt_time(t)} '
                  f'({b_gbits:.3f} Gbit/s, {ratio:.1f} x median){extra}')
        if len(s.flagged) > top:
            print(f'  ... and {len(s.flagged) - top} more')
    if s.errors:
        print(f'PAYLOAD ERRORS (--check-buffers) in {len(s.errors)} pair test(s):')
        for a, b_ in s.errors[:top]:
            print(f'  {a} <-> {b_} ({s.hosts[a]} <-> {s.hosts[b_]})')
    return True


# ---- the PDF report -------------------------------------------------------------------------
# One A4 document in the spirit of LinkTest 2.x's report: a first page with the settings
# and the summary, the heat map grouped by host, the host-to-host view, the histogram, and
# the slowest pairs with their serial retest (then the flagged links and payload errors).

A4 = (8.27, 11.69)          # inches, portrait
MARGIN = 0.7                # inches on every side
LINE = 0.19                 # inches per line of 9-point text


class _Pages:
    '''Text pages laid out top-down: headings, label/value lines and tables, a new page
    (its heading repeated, "continued") when one is full.'''

    def __init__(self, pdf, plt, footer):
        self.pdf, self.plt, self.footer = pdf, plt, footer
        self.fig, self.y, self.heading = None, 0.0, ''
        self.count = 0

    def _new_page(self):
        self.close()
        self.fig = self.plt.figure(figsize=A4)
        self.y = MARGIN

    def close(self):
        if self.fig is not None:
            self.count += 1
            self.fig.text(MARGIN / A4[0], 0.35 / A4[1], self.footer, fontsize=7, color='#666666')
            self.pdf.savefig(self.fig)
            self.plt.close(self.fig)
            self.fig = None

    def _room(self, inches):
        if self.fig is None or self.y + inches > A4[1] - MARGIN:
            self._new_page()
            if self.heading:
                self._text(self.heading + ' (continued)', 11, weight='bold')
                self.y += 0.1

    def _text(self, text, size, x=MARGIN, **kw):
        self.fig.text(x / A4[0], 1 - self.y / A4[1], text, fontsize=size, va='top', **kw)
        self.y += size / 72 * 1.45

    def title(self, text, sub=''):
        self._new_page()
        self._text(text, 17, weight='bold')
        if sub:
            self._text(sub, 9, color='#444444')
        self.y += 0.15

    def section(self, text, need=0.8):
        self.heading = ''
        self._room(need)
        self.y += 0.12
        self._text(text, 12, weight='bold', color='#1f3b63')
        self.fig.add_artist(self.plt.Line2D(
            [MARGIN / A4[0], 1 - MARGIN / A4[0]], [1 - (self.y - 0.03) / A4[1]] * 2,
            color='#1f3b63', linewidth=0.6))
        self.y += 0.08
        self.heading = text

    def kv(self, label, value, color=None, wrap=58):
        lines = textwrap.wrap(str(value), wrap, break_long_words=True,
                              break_on_hyphens=False) or ['']
        self._room(LINE * len(lines))
        self.fig.text(MARGIN / A4[0], 1 - self.y / A4[1], label, fontsize=8.5, va='top',
                      color='#333333')
        for line in lines:
            self.fig.text((MARGIN + 3.0) / A4[0], 1 - self.y / A4[1], line, fontsize=9,
                          va='top', color=color or 'black')
            self.y += LINE

    def grid(self, items):
        '''(label, value) pairs in two columns, down the first, then the second.'''
        half = -(-len(items) // 2)
        col = (A4[0] - 2 * MARGIN) / 2
        self._room(LINE * min(half, 4))
        for i in range(half):
            self._room(LINE)
            for k, (label, value) in enumerate(items[i::half][:2] if half else []):
                x = MARGIN + k * col
                self.fig.text(x / A4[0], 1 - self.y / A4[1], label, fontsize=8, va='top',
                              color='#333333')
                text = str(value)
                if len(text) > 22:
                    text = text[:21] + '\u2026'
                self.fig.text((x + col - 0.15) / A4[0], 1 - self.y / A4[1], text,
                              fontsize=8, va='top', ha='right')
            self.y += LINE * 0.92

    def para(self, text, size=9, color='#333333', wrap=100):
        for line in textwrap.wrap(text, wrap):
            self._room(LINE)
            self._text(line, size, color=color)

    def mono(self, text, wrap=96):
        for line in textwrap.wrap(text, wrap, break_long_words=True,
                                  break_on_hyphens=False) or ['']:
            self._room(LINE)
            self._text(line, 8, family='monospace')

    def table(self, header, rows, widths, aligns=None, shade=None):
        '''Rows of cells at the given column widths (inches); a right-aligned column
        where aligns says 'r'; shade(row) a background colour or None.'''
        aligns = aligns or 'l' * len(header)

        def row_at(cells, bold=False, bg=None):
            if bg:
                self.fig.add_artist(self.plt.Rectangle(
                    (MARGIN / A4[0], 1 - (self.y + LINE - 0.03) / A4[1]),
                    sum(widths) / A4[0], LINE / A4[1], color=bg, zorder=0))
            x = MARGIN
            for cell, w, al in zip(cells, widths, aligns):
                cell = str(cell)
                fits = int(w * 15.5) - 1     # characters of 8-point text in w inches
                if len(cell) > fits:
                    cell = cell[:max(1, fits - 1)] + '\u2026'
                self.fig.text((x + (w - 0.08 if al == 'r' else 0)) / A4[0],
                              1 - self.y / A4[1], cell, fontsize=8, va='top',
                              ha='right' if al == 'r' else 'left',
                              weight='bold' if bold else 'normal')
                x += w
            self.y += LINE

        self._room(LINE * 2)
        row_at(header, bold=True, bg='#e4e9f0')
        for i, r in enumerate(rows):
            if self.fig is None or self.y + LINE > A4[1] - MARGIN:
                self._room(LINE * 2)
                row_at(header, bold=True, bg='#e4e9f0')
            row_at(r, bg=(shade(r) if shade else None) or ('#f5f5f5' if i % 2 else None))

    def chart(self, height, draw):
        '''A plot of `height` inches across the text width at the current place:
        draw(fig, rect) with rect the axes' [left, bottom, width, height] in the page.'''
        self._room(height)
        left, right = MARGIN + 0.9, MARGIN + 0.1
        # 0.35 inches above the axes for a legend, 0.55 below for tick labels and label
        draw(self.fig, [left / A4[0], 1 - (self.y + height - 0.55) / A4[1],
                        (A4[0] - left - right) / A4[0], (height - 0.9) / A4[1]])
        self.y += height

    def figure_page(self, draw):
        '''A page of its own for a plot: draw(fig) fills an A4 figure.'''
        self.close()
        self.heading = ''
        fig = self.plt.figure(figsize=A4)
        draw(fig)
        fig.text(MARGIN / A4[0], 0.35 / A4[1], self.footer, fontsize=7, color='#666666')
        self.pdf.savefig(fig)
        self.plt.close(fig)
        self.count += 1


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
    from . import plots
    plt = plots._pyplot()
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages
    footer = (f'cb-linktest report of {os.path.basename(s.path)}, cobalt-bench {__version__}')
    # TrueType fonts (not Type 3): the text stays searchable and copyable (pdftotext).
    with matplotlib.rc_context({'pdf.fonttype': 42}):
        with atomic_file(path) as fp, PdfPages(fp, metadata={
                'Title': f'cb-linktest report: {os.path.basename(s.path)}',
                'Creator': f'cobalt-bench {__version__} linktest-report'}) as pdf:
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
    from . import plots
    note = ('Each cell: the bandwidth of one pair of ranks (message size x 8 / time per '
            'message), ranks grouped by host in order of their first rank; white lines mark '
            'the host boundaries, host names and their rank counts on top (or on the axes '
            'for many ranks). Grey: not tested. A bad link shows as an off-colour cell, a bad '
            'host or adapter as an off-colour row and column.')

    def heat(fig):
        ax = fig.add_subplot()
        plots.draw_linktest_heatmap(fig, ax, s.bw, s.hosts, 'Bandwidth of every pair: '
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
            plots.draw_linktest_host_matrix(fig, ax, s.bw, s.hosts,
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
        plots.draw_linktest_histogram(ax, s.bw_pairs, 'Bandwidth of the pairs: ' + s.title(),
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


def run(args, reexec_module=None):
    '''The report of args.file (parsed options of add_arguments): the exit status. Raises
    UsageError (2) and CannotRun (3).'''
    if args.min_bandwidth is not None and args.min_bandwidth <= 0:
        raise UsageError('--min-bandwidth must be positive')
    if args.factor < 0 or args.top < 0:
        raise UsageError('--factor and --top must not be negative')
    if args.pdf and args.no_pdf:
        raise UsageError('--pdf and --no-pdf exclude each other')
    np = _numpy(reexec_module)

    data = load(np, args.file)
    s = Analysis(np, args.file, data, args.min_bandwidth, args.factor)
    if not print_text(np, s, args.top):
        return 1

    prefix = args.prefix or (args.file[:-4] if args.file.endswith('.npz') else args.file)
    if not args.no_png:
        title = s.title()
        try:
            heatmap(f'{prefix}-heatmap.png', s.bw, s.hosts, title, args.min_bandwidth,
                    s.flagged)
            histogram(f'{prefix}-histogram.png', s.bw_pairs, title, s.median_bw,
                      args.min_bandwidth,
                      s.median_bw / args.factor if args.factor else None)
        except OSError as err:
            raise CannotRun(f'cannot write the PNG files: {err}')
        print(f'PNG: {prefix}-heatmap.png {prefix}-histogram.png')
    # The PDF comes with the PNG files (--no-png: text only), or where --pdf says.
    pdf = args.pdf or (None if args.no_png or args.no_pdf else f'{prefix}-report.pdf')
    if pdf:
        try:
            count = write_pdf(pdf, np, s, args.top)
        except OSError as err:
            raise CannotRun(f'cannot write the PDF report {pdf}: {err}')
        except (ValueError, RuntimeError, OverflowError) as err:
            # matplotlib refusing what the file holds (values load() let through): said,
            # with the text report above intact, rather than a traceback
            raise CannotRun(f'cannot draw the PDF report {pdf} of {args.file}: '
                            f'{err.__class__.__name__}: {err}')
        print(f'PDF: {pdf} ({count} pages)')
    return 1 if s.flagged or s.errors else 0


def main(argv=None):
    '''`cb-linktest-report`: the same command as `cobalt-bench linktest-report`.'''
    ap = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    ap.add_argument('-V', '--version', action='version',
                    version=f'{PROG} (cobalt-bench) {__version__}')
    add_arguments(ap)
    args = ap.parse_args(argv)
    reexec = None if argv is not None else 'cobalt_bench.linktest_report'
    return exit_status(PROG, lambda: run(args, reexec_module=reexec), usage_error=ap.error)


if __name__ == '__main__':
    sys.exit(main())
