'''`cobalt-bench linktest-report` (also installed as `cb-linktest-report`): read a
cb-linktest results file (.npz) and show which links are slow.

Text for terminals: the run, the bandwidth distribution, the slowest pairs with their serial
retest, and the links below --min-bandwidth or slower than --factor times the median time.
PNG for people: the heat map of every pair's bandwidth with the ranks grouped by host (the
report's heat map, plots.linktest_heatmap_figure), and a histogram of the bandwidths.

Exit status: 0 no link flagged, 1 links flagged (or payload errors in the run), 2 usage
error, 3 cannot run (file unreadable, numpy or matplotlib missing).
'''

import argparse
import json
import math
import os
import sys
import zipfile
import zlib

from . import CannotRun, UsageError, __version__, paths

PROG = 'cb-linktest-report'
DESCRIPTION = ('Report on a cb-linktest results file: slow links as text, heat map and '
               'histogram as PNG.')
EPILOG = ('Exit status: 0 no link flagged, 1 links flagged or payload errors, 2 usage '
          'error, 3 cannot read the file or numpy/matplotlib missing.')

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
                    help='PNG files PATH-heatmap.png and PATH-histogram.png '
                         '(default: the results file without .npz)')
    ap.add_argument('--no-png', action='store_true', help='text only')
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


def heatmap(path, bw, hosts, title, min_bw, flagged):
    from . import plots
    fig = plots.linktest_heatmap_figure(bw, hosts, title, min_bw=min_bw, flagged=flagged)
    plt = plots._pyplot()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def histogram(path, values, title, median_bw, min_bw, factor_bw):
    from . import plots
    plt = plots._pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.hist(values, bins=min(60, max(10, len(values) // 4)), color='#3b6ea5')
    ax.set_yscale('log' if len(values) > 100 else 'linear')
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
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)


def run(args, reexec_module=None):
    '''The report of args.file (parsed options of add_arguments): the exit status. Raises
    UsageError (2) and CannotRun (3).'''
    if args.min_bandwidth is not None and args.min_bandwidth <= 0:
        raise UsageError('--min-bandwidth must be positive')
    if args.factor < 0 or args.top < 0:
        raise UsageError('--factor and --top must not be negative')
    np = _numpy(reexec_module)

    data = load(np, args.file)
    meta, time = data['meta'], data['time']
    hosts = [str(h) for h in data['hosts']]
    opts = meta.get('options', {})
    size = opts.get('size_messages')
    if not size:
        raise CannotRun('the file names no message size (meta.options.size_messages)')
    n = time.shape[0]
    with np.errstate(divide='ignore', invalid='ignore'):
        bw = size * 8 / time / 1e9
    iu = np.triu_indices(n, 1)
    t_pairs = time[iu]
    tested = np.isfinite(t_pairs)
    bw_pairs = bw[iu][tested]
    nhosts = len(dict.fromkeys(hosts))

    print(f'cb-linktest results {args.file}')
    print(f'  run:      {meta.get("started", "?")}, {n} ranks on {nhosts} host'
          f'{"" if nhosts == 1 else "s"}, {meta.get("iterations", 1)} iteration(s), '
          f'{_meta_number(meta, "duration_s", float("nan")):.2f} s')
    print(f'  test:     {opts.get("pattern", "?")}, {size} B messages, '
          f'{opts.get("num_messages", "?")} timed + {opts.get("num_warmup_messages", "?")} '
          f'warm-up{", bisection" if opts.get("bisection") else ""}'
          f'{", hosts grouped" if opts.get("group_processes_by_hostname") else ""}')
    print(f'  command:  {meta.get("command", "?")}')
    if not tested.any():
        print('No pair was tested.')
        return 1
    flagged, median = flagged_links(np, time, bw, args.min_bandwidth, args.factor)
    median_bw = size * 8 / median / 1e9
    print(f'Pairs tested: {int(tested.sum())} of {len(t_pairs)}')
    print(f'Bandwidth [Gbit/s]: min {bw_pairs.min():.3f}  median {np.median(bw_pairs):.3f}  '
          f'mean {bw_pairs.mean():.3f}  max {bw_pairs.max():.3f}')
    print(f'Time per message:   min {fmt_time(np.nanmin(t_pairs))}  median {fmt_time(median)}  '
          f'max {fmt_time(np.nanmax(t_pairs))}')

    if nhosts > 1:
        print('Per host (links to other hosts): worst and median bandwidth [Gbit/s]')
        hidx = np.array([list(dict.fromkeys(hosts)).index(h) for h in hosts])
        for k, h in enumerate(dict.fromkeys(hosts)):
            rows = hidx == k
            sub = bw[np.ix_(rows, ~rows)]
            sub = sub[np.isfinite(sub)]
            if sub.size:
                print(f'  {h:<24} {int(rows.sum()):>5} ranks  worst {sub.min():9.3f}  '
                      f'median {np.median(sub):9.3f}')

    retest = {}
    if 'slowest_pairs' in data and len(data['slowest_pairs']):
        print('Slowest pairs (parallel test, then alone):')
        for (a, b), first, again in zip(data['slowest_pairs'], data['slowest_time'],
                                        data['retest_time']):
            retest[(int(a), int(b))] = float(again)
            print(f'  {a:>6} <-> {b:<6} {hosts[a]} <-> {hosts[b]}: {fmt_time(first)} '
                  f'({size * 8 / first / 1e9:.3f} Gbit/s), retest {fmt_time(again)} '
                  f'({size * 8 / again / 1e9:.3f} Gbit/s)')

    rules = []
    if args.min_bandwidth is not None:
        rules.append(f'below {args.min_bandwidth:g} Gbit/s')
    if args.factor:
        rules.append(f'slower than {args.factor:g} x the median time ({fmt_time(median)})')
    if rules:
        print(f'Flagged links ({" or ".join(rules)}): {len(flagged)}')
        for a, b, t, b_gbits, ratio in flagged[:args.top]:
            again = retest.get((a, b))
            extra = f', retest {fmt_time(again)}' if again is not None else ''
            print(f'  {a:>6} <-> {b:<6} {hosts[a]} <-> {hosts[b]}: {fmt_time(t)} '
                  f'({b_gbits:.3f} Gbit/s, {ratio:.1f} x median){extra}')
        if len(flagged) > args.top:
            print(f'  ... and {len(flagged) - args.top} more')
    errors = data.get('error_pairs', np.zeros((0, 2)))
    if len(errors):
        print(f'PAYLOAD ERRORS (--check-buffers) in {len(errors)} pair test(s):')
        for a, b in errors[:args.top]:
            print(f'  {a} <-> {b} ({hosts[a]} <-> {hosts[b]})')

    if not args.no_png:
        prefix = args.prefix or (args.file[:-4] if args.file.endswith('.npz') else args.file)
        title = (f'{os.path.basename(args.file)}: {n} ranks, {nhosts} hosts, {size} B, '
                 f'{opts.get("pattern", "")}{", bisection" if opts.get("bisection") else ""}')
        try:
            heatmap(f'{prefix}-heatmap.png', bw, hosts, title, args.min_bandwidth, flagged)
            histogram(f'{prefix}-histogram.png', bw_pairs, title, median_bw, args.min_bandwidth,
                      median_bw / args.factor if args.factor else None)
        except OSError as err:
            raise CannotRun(f'cannot write the PNG files: {err}')
        print(f'PNG: {prefix}-heatmap.png {prefix}-histogram.png')
    return 1 if flagged or len(errors) else 0


def main(argv=None):
    '''`cb-linktest-report`: the same command as `cobalt-bench linktest-report`.'''
    ap = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    ap.add_argument('-V', '--version', action='version',
                    version=f'{PROG} (cobalt-bench) {__version__}')
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run(args, reexec_module=None if argv is not None else 'cobalt_bench.linktest_report')
    except UsageError as err:
        ap.error(str(err))
    except CannotRun as err:
        print(f'{PROG}: {err}', file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # `cb-linktest-report ... | head`: not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == '__main__':
    sys.exit(main())
