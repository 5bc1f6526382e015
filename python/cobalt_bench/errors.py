'''The package's two errors, at the bottom of every layer: what went wrong is raised where
it is found and said (with its exit status) only by the command line, cobalt_bench.cli.'''


class UsageError(Exception):
    '''Bad command-line input: exit status 2.'''


class CannotRun(Exception):
    '''The command cannot do its work (missing run, unreadable file): exit status 3.'''
