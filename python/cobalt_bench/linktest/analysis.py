'''What the text and the PDF report show of one cb-linktest results file: the bandwidth of
every pair, the flagged links, the retest, each host's worst link, the monitoring arrays
and whatever else a newer cb-linktest wrote into the file (Analysis).

numpy comes in as `np` from the caller, as in results_file.
'''

import math
import os

from ..errors import CannotRun
from .results_file import KNOWN_ARRAYS, KNOWN_META, MEMORY_COLUMNS


def _meta_number(meta, key, default):
    '''meta[key] where it is a number (JSON true is not one); else default.'''
    value = meta.get(key, default)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else default


def fmt_time(s):
    '''A time in seconds in the unit that keeps it short: ns, us, ms or s.'''
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
