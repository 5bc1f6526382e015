'''cobalt-bench's Python side: the `cobalt-bench` command (report, preflight, runs,
linktest-report), the results store, the report and its plots, the parsers of
third-party benchmark output (cobalt_bench.parsers) and the ReFrame base classes and site
helpers (cobalt_bench.reframe).

Where the tree is (checkout or install, bin/, results/, VERSION): cobalt_bench.paths, the
one place that knows.
'''

from . import paths

__version__ = paths.version()


class UsageError(Exception):
    '''Bad command-line input: exit status 2.'''


class CannotRun(Exception):
    '''The command cannot do its work (missing run, unreadable file): exit status 3.'''
