'''`cobalt-bench linktest-report` (also installed as `cb-linktest-report`, and run as
`python3 -m cobalt_bench.linktest_report`): read a cb-linktest results file (.npz) and
show which links are slow. The reading, analysis, text, figures and PDF are in
cobalt_bench.linktest; here: the options, finding numpy, printing and the exit status.

Text for terminals: the run, the bandwidth distribution, the slowest pairs with their serial
retest, and the links below --min-bandwidth or slower than --factor times the median time.
PNG for people: the heat map of every pair's bandwidth with the ranks grouped by host (the
report's heat map, linktest.figures.linktest_heatmap_figure), and a histogram of the
bandwidths.
PDF for the acceptance file (as LinkTest 2.x users get one): one A4 document with the run,
its settings and summary, the heat map, the host-to-host view, the histograms and the
slowest pairs with their retest; whatever else a newer cb-linktest wrote into the file
(all-to-all timings) is shown as it is. `cobalt-bench report` links it (PREFIX-report.pdf
beside the results file).

Exit status: 0 no link flagged, 1 links flagged (or payload errors in the run), 2 usage
error, 3 cannot run (file unreadable, output not writable, numpy or matplotlib missing).
'''

import argparse
import os
import sys

from .. import __version__, paths
from ..errors import CannotRun, UsageError
from ..linktest.analysis import Analysis
from ..linktest.figures import heatmap, histogram
from ..linktest.pdf import write_pdf
from ..linktest.results_file import load
from ..linktest.text import text_lines
from .argtypes import finite, nonempty_path
from .status import exit_status

PROG = 'cb-linktest-report'
DESCRIPTION = ('Report on a cb-linktest results file: slow links as text, heat map and '
               'histogram as PNG, and all of it in one PDF report.')
EPILOG = ('Exit status: 0 no link flagged, 1 links flagged or payload errors, 2 usage '
          'error, 3 cannot read the file, cannot write the PNG or PDF files, or '
          'numpy/matplotlib missing.')

# Set in the environment of a re-run with the checkout's .venv Python (see _numpy): a
# second attempt never re-runs again.
REEXEC_VAR = 'CB_LINKTEST_REPORT_REEXEC'


def add_arguments(ap):
    '''The options, for `cb-linktest-report` and `cobalt-bench linktest-report` alike.'''
    ap.add_argument('file', type=nonempty_path,
                    help='results file written by cb-linktest --output (.npz)')
    ap.add_argument('--min-bandwidth', type=finite, metavar='GBITS',
                    help='flag links below GBITS Gbit/s')
    ap.add_argument('--factor', type=finite, default=2.0, metavar='F',
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


def _numpy(reexec):
    '''numpy, or re-run this command with the checkout's .venv Python when this Python
    lacks numpy or matplotlib (as `/usr/bin/python3 -m cobalt_bench ...` does); else
    CannotRun naming what is missing.'''
    try:
        import numpy
        import matplotlib  # noqa: F401  (linktest.figures imports pyplot when it draws)
        return numpy
    except ImportError as err:
        python = paths.venv_python()
        if python and reexec and not os.environ.get(REEXEC_VAR):
            os.environ[REEXEC_VAR] = '1'
            os.execv(python, [python, '-m', *reexec])
        raise CannotRun(
            f'{err.name or err} is missing: it needs numpy and matplotlib.\n'
            '  In a cobalt-bench checkout: ./bootstrap.sh --no-run (or .venv/bin/pip install '
            '-r requirements.txt)\n  Elsewhere: pip install numpy matplotlib, then run it '
            'with that python.')


def print_text(np, s, top):
    '''The text report on stdout; False when no pair was tested.'''
    for line in text_lines(np, s, top):
        print(line)
    return bool(s.pairs_tested)


def run(args, reexec=None):
    '''The report of args.file (parsed options of add_arguments): the exit status. Raises
    UsageError (2) and CannotRun (3).'''
    if args.min_bandwidth is not None and args.min_bandwidth <= 0:
        raise UsageError('--min-bandwidth must be positive')
    if args.factor < 0 or args.top < 0:
        raise UsageError('--factor and --top must not be negative')
    if args.pdf and args.no_pdf:
        raise UsageError('--pdf and --no-pdf exclude each other')
    np = _numpy(reexec)

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
    # Re-run as `python -m cobalt_bench linktest-report ...`, the same command.
    reexec = None if argv is not None else ['cobalt_bench', 'linktest-report', *sys.argv[1:]]
    return exit_status(PROG, lambda: run(args, reexec=reexec), usage_error=ap.error)

