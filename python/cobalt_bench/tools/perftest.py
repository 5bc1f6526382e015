'''Reading perftest's bandwidth reports (ib_write_bw and its siblings) and the per-port
runs of ib-write-bw-ports.

The sending side of `ib_write_bw --report_gbits` ends with a table between dashed lines:

    ---------------------------------------------------------------------------------------
    #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
    65536      5000             51.05              51.04              0.097356
    ---------------------------------------------------------------------------------------

(one row per message size; several with -a). Without --report_gbits the bandwidth columns
are in MB/sec; the unit is read from the header, and the checks insist on Gb/sec.

ib-write-bw-ports runs one such test per sending port, each after a line
    # ib_write_bw sender mlx4_0:1 receiver mlx4_1:1
and ends each with
    # ib_write_bw sender mlx4_0:1 exit code 0
'''

import re
from dataclasses import dataclass, field

# Header text (spaces removed, lower case, unit removed) -> metric name.
_KNOWN_COLUMNS = {
    '#bytes': 'bytes',
    '#iterations': 'iterations',
    'bwpeak': 'bw_peak',
    'bwaverage': 'bw_average',
    'msgrate': 'msg_rate',
}

_HEADER = re.compile(r'^\s*#bytes\s')
_UNIT = re.compile(r'\[([^]]*)\]\s*$')
_ROW = re.compile(r'^\s*\d+(\s+[-+.\deE]+)+\s*$')
_RUN_START = re.compile(r'^# ib_write_bw sender (?P<sender>\S+) receiver (?P<receiver>\S+)\s*$')
_RUN_END = re.compile(r'^# ib_write_bw sender (?P<sender>\S+) exit code (?P<code>-?\d+)\s*$')


class PerftestParseError(ValueError):
    '''No perftest bandwidth table, or a malformed one.'''


@dataclass
class BandwidthReport:
    units: dict = field(default_factory=dict)   # metric -> unit, e.g. 'bw_average': 'Gb/sec'
    rows: list = field(default_factory=list)    # one dict per size: metric -> value

    def last(self, metric):
        '''The metric in the last row (the size that was asked for, or the largest).'''
        return self.rows[-1][metric]


@dataclass
class PortRun:
    sender: str           # 'device:port'
    receiver: str
    exit_code: int = None  # None: the run never finished
    report: BandwidthReport = None
    error: str = ''        # why there is no report


def parse(text):
    '''The bandwidth table in `text` (the sending side's output).'''
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not _HEADER.match(line):
            continue

        report = BandwidthReport()
        names = re.split(r'\s{2,}', line.strip())
        metrics = []
        for name in names:
            unit = _UNIT.search(name)
            key = re.sub(r'\s+', '', _UNIT.sub('', name)).lower()
            metric = _KNOWN_COLUMNS.get(key, re.sub(r'[^a-z0-9]+', '_', key).strip('_'))
            metrics.append(metric)
            report.units[metric] = unit.group(1) if unit else ''

        for row in lines[i + 1:]:
            if not _ROW.match(row):
                break

            values = row.split()
            if len(values) != len(metrics):
                raise PerftestParseError(f'{len(values)} values for {len(metrics)} columns: '
                                         f'{row.strip()!r}')
            report.rows.append({m: float(v) for m, v in zip(metrics, values)})

        if not report.rows:
            raise PerftestParseError(f'bandwidth table without rows: {line.strip()!r}')

        return report

    raise PerftestParseError('no perftest bandwidth table (no "#bytes ..." header)')


def parse_port_runs(text):
    '''The runs of ib-write-bw-ports, in order; each with its report, or why not.'''
    runs = []
    current, body = None, []

    def finish(run, lines):
        try:
            run.report = parse('\n'.join(lines))
        except PerftestParseError as err:
            run.error = str(err)

    for line in text.splitlines():
        start = _RUN_START.match(line)
        end = _RUN_END.match(line)
        if start:
            if current is not None:
                finish(current, body)   # a run without its end line
            current = PortRun(start.group('sender'), start.group('receiver'))
            runs.append(current)
            body = []
        elif end and current is not None and end.group('sender') == current.sender:
            current.exit_code = int(end.group('code'))
            finish(current, body)
            current, body = None, []
        elif current is not None:
            body.append(line)

    if current is not None:
        finish(current, body)

    return runs
