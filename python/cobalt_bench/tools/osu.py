'''Reading the tables the OSU micro-benchmarks print.

Every OSU MPI benchmark prints one table: a title line with the version, optional
parameter lines, a column header, then one row per message size:

    # OSU MPI Multiple Bandwidth / Message Rate Test v5.7.1     <- title (version: 5.x/7.x)
    # [ pairs: 1 ] [ window size: 64 ]                          <- parameters (mbw_mr)
    # Datatype: MPI_CHAR.                                       <- parameters (7.x)
    # Size                  MB/s        Messages/s              <- columns (2+ spaces apart)
    1                       6.82        6819901.32
    ...

What differs between versions and is handled here (tests/data/osu: real outputs of 5.3 and
of 5.6.1 to 7.5): latency starts at size 0 up to 7.0, at 1 from 7.1; 7.1 adds the
`# Datatype:` line, before the column header except in 7.1-7.3 point-to-point, which print
it between the header and the rows; 7.4 names the latency column `Avg Latency(us)` instead
of `Latency (us)`; 5.6.x osu_mbw_mr prints a stray latency header before its parameters and
its real header, 6.0-7.3 print its title twice; allreduce starts at 4 (floats; MPI_INT in
7.5) except in 7.1-7.4 (MPI_CHAR: at 1). `-f` adds Min/Max Latency and Iterations columns,
`-c` (5.9 and later) a Validation column (Pass/Fail). Some releases print another version
than their own (6.0: v5.9, 7.0.1: v7.0, 7.1-1: v7.1). A comparison table with several
value columns of the same name (as in the SJTU document, one column per cluster) parses
too: every column is kept, in order.

No ReFrame here: the OSU checks (cobalt_bench.reframe.osu), the report's plots
(cobalt_bench.report.plots) and the tests use it alike. What each benchmark prints when run without
options (its title, sizes and metrics) is declared here too, for the same readers.
'''

import re
from dataclasses import dataclass, field

# Column header text (spaces removed, lower case) -> (metric name, unit). The units are
# OSU's own: MB/s is 10^6 bytes/s.
_KNOWN_COLUMNS = {
    'latency(us)': ('latency', 'us'),
    'avglatency(us)': ('latency', 'us'),
    'minlatency(us)': ('min_latency', 'us'),
    'maxlatency(us)': ('max_latency', 'us'),
    'bandwidth(mb/s)': ('bandwidth', 'MB/s'),
    'mb/s': ('bandwidth', 'MB/s'),
    'messages/s': ('message_rate', 'messages/s'),
    'iterations': ('iterations', ''),
    'validation': ('validation', ''),
}

_TITLE = re.compile(r'^#\s*(?P<title>OSU\b.*?)(?:\s+v(?P<version>\d+(?:\.\d+)*))?\s*$')
_PARAM_BRACKETS = re.compile(r'\[\s*([^]:]+?)\s*:\s*([^]]*?)\s*\]')
_PARAM_LINE = re.compile(r'^#\s*(?P<key>[A-Za-z][\w ]*?)\s*:\s*(?P<value>.*?)\.?\s*$')
_COLUMNS = re.compile(r'^#\s*Size\b(?P<rest>.*)$')
_ROW = re.compile(r'^(?P<size>\d+)(?P<rest>(?:\s+\S+)+)\s*$')
# Parameter lines a release prints between the column header and the rows (7.1-7.3 pt2pt:
# `# Datatype: MPI_CHAR.`); any other line there is an error that names it.
_PARAMS_AFTER_HEADER = {'Datatype'}


def _powers_of_two(first, last):
    return [1 << i for i in range(first, last + 1)]


# What each benchmark measures when run without options (OSU 5.x to 7.0; 7.1 and later
# have no size 0, and 7.1-7.4's allreduce starts at 1 where the others, counting floats or
# ints, start at 4). A site narrows this with extras['osu_sizes'] (a size a benchmark does
# not measure is not declared for it).
DEFAULT_SIZES = {
    'osu_latency': [0] + _powers_of_two(0, 22),
    'osu_bw': _powers_of_two(0, 22),
    'osu_bibw': _powers_of_two(0, 22),
    'osu_mbw_mr': _powers_of_two(0, 22),
    'osu_bcast': _powers_of_two(0, 20),
    'osu_allreduce': _powers_of_two(2, 20),
    'osu_alltoall': _powers_of_two(0, 20),
}

# The title each benchmark prints (5.x to 7.x alike).
TITLES = {
    'osu_latency': 'OSU MPI Latency Test',
    'osu_bw': 'OSU MPI Bandwidth Test',
    'osu_bibw': 'OSU MPI Bi-Directional Bandwidth Test',
    'osu_mbw_mr': 'OSU MPI Multiple Bandwidth / Message Rate Test',
    'osu_bcast': 'OSU MPI Broadcast Latency Test',
    'osu_allreduce': 'OSU MPI Allreduce Latency Test',
    'osu_alltoall': 'OSU MPI All-to-All Personalized Exchange Latency Test',
}

# The metrics each benchmark must report.
REQUIRED_METRICS = {
    'osu_latency': ['latency'],
    'osu_bw': ['bandwidth'],
    'osu_bibw': ['bandwidth'],
    'osu_mbw_mr': ['bandwidth', 'message_rate'],
    'osu_bcast': ['latency'],
    'osu_allreduce': ['latency'],
    'osu_alltoall': ['latency'],
}

# The units of the metrics this module names from OSU's column headers.
METRIC_UNITS = {metric: unit for metric, unit in _KNOWN_COLUMNS.values()
                if metric not in ('iterations', 'validation')}

# Columns that are not measurements.
NOT_PERFORMANCE = {'iterations', 'validation'}


class OsuParseError(ValueError):
    '''The text holds no OSU table, or one that is malformed.'''


@dataclass
class Column:
    name: str     # as OSU prints it, e.g. 'Avg Latency(us)'
    metric: str   # what it measures, e.g. 'latency'
    unit: str     # e.g. 'us'


@dataclass
class OsuTable:
    title: str = ''                               # e.g. 'OSU MPI Latency Test'
    version: str = ''                             # e.g. '7.4' ('' if not printed)
    params: dict = field(default_factory=dict)    # e.g. {'pairs': '1', 'window size': '64'}
    columns: list = field(default_factory=list)   # Column, one per value column
    rows: dict = field(default_factory=dict)      # size -> [value per column]

    @property
    def major_version(self):
        '''5, 6 or 7 (the layouts differ), None when no version was printed.'''
        return int(self.version.split('.')[0]) if self.version else None

    @property
    def sizes(self):
        return sorted(self.rows)

    def metrics(self):
        '''The metric names, in column order, without repeats.'''
        return list(dict.fromkeys(c.metric for c in self.columns))

    def unit(self, metric):
        return next(c.unit for c in self.columns if c.metric == metric)

    def column(self, metric, occurrence=0):
        '''{size: value} of a metric's column (the n-th such column, for comparison
        tables that have several).'''
        indexes = [i for i, c in enumerate(self.columns) if c.metric == metric]
        if occurrence >= len(indexes):
            raise KeyError(f'{self.title}: no column {metric!r} (#{occurrence})')

        i = indexes[occurrence]
        return {size: values[i] for size, values in self.rows.items()}


def _column(name):
    key = re.sub(r'\s+', '', name).lower()
    if key in _KNOWN_COLUMNS:
        metric, unit = _KNOWN_COLUMNS[key]
    else:
        # A column this module does not know (e.g. 7.x tail latencies `-z`): keep it,
        # named after its header, unit from the parentheses.
        unit_match = re.search(r'\(([^)]*)\)\s*$', name)
        unit = unit_match.group(1) if unit_match else ''
        base = name[:unit_match.start()] if unit_match else name
        metric = re.sub(r'[^a-z0-9]+', '_', base.lower()).strip('_')

    return Column(name, metric, unit)


def _header_columns(match, lineno):
    names = [n for n in re.split(r'\s{2,}', match.group('rest').strip()) if n]
    if not names:
        raise OsuParseError(f'line {lineno}: column header without columns')

    return [_column(n) for n in names]


def _value(text, column, lineno):
    if column.metric == 'validation':
        return text

    try:
        return float(text)
    except ValueError:
        raise OsuParseError(f'line {lineno}: {column.name!r} is not a number: {text!r}')


def parse(text):
    '''The first OSU table in `text` (an OSU benchmark's output, possibly with other lines
    around it). Raises OsuParseError if there is none, or if it is malformed: a row whose
    number of values differs from the columns, a non-numeric value, a size out of order
    or repeated, or a header with no rows.'''
    table = OsuTable()
    seen_title = False
    in_rows = False
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if in_rows:
            row = _ROW.match(line.strip())
            if not row:
                if table.rows:
                    break   # the table ends at the first line that is not a row
                if not line.strip():
                    continue
                # Between the header and the first row, what releases print there: 7.1-7.3
                # pt2pt the `# Datatype:` line, 5.6.x osu_mbw_mr its parameters and then
                # its real header (after a stray latency header, which it replaces).
                columns = _COLUMNS.match(line)
                if columns:
                    table.columns = _header_columns(columns, lineno)
                    header = line
                    continue
                brackets = _PARAM_BRACKETS.findall(line)
                param = _PARAM_LINE.match(line)
                if brackets:
                    table.params.update({k.strip(): v.strip() for k, v in brackets})
                    continue
                if param and param.group('key') in _PARAMS_AFTER_HEADER:
                    table.params[param.group('key')] = param.group('value').strip()
                    continue
                # Anything else (a release that prints something new there) is named,
                # not skipped: it may change what the rows mean.
                raise OsuParseError(f'line {lineno}: not a row of the table under '
                                    f'{header!r}: {line!r}')

            size = int(row.group('size'))
            fields = row.group('rest').split()
            if len(fields) != len(table.columns):
                raise OsuParseError(f'line {lineno}: {len(fields)} values for '
                                    f'{len(table.columns)} columns: {line!r}')
            if table.rows and size <= max(table.rows):
                raise OsuParseError(f'line {lineno}: size {size} out of order')

            table.rows[size] = [_value(f, c, lineno) for f, c in zip(fields, table.columns)]
            continue

        columns = _COLUMNS.match(line)
        if columns:
            table.columns = _header_columns(columns, lineno)
            header = line
            in_rows = True
            continue

        if not line.startswith('#'):
            continue

        if not seen_title:
            title = _TITLE.match(line)
            if title:
                table.title = title.group('title').strip()
                table.version = title.group('version') or ''
                seen_title = True
                continue

        brackets = _PARAM_BRACKETS.findall(line)
        if brackets:
            table.params.update({k.strip(): v.strip() for k, v in brackets})
            continue

        param = _PARAM_LINE.match(line)
        if param:
            table.params[param.group('key').strip()] = param.group('value').strip()

    if not table.columns:
        raise OsuParseError('no OSU table (no "# Size ..." column header)')
    if not table.rows:
        raise OsuParseError(f'{table.title or "OSU table"}: column header without rows')

    return table


def parse_file(path):
    with open(path) as fp:
        return parse(fp.read())
