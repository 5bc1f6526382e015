'''A run's judgement in Prometheus's text exposition format (version 0.0.4), for
node_exporter's textfile collector (docs/prometheus.md).

Every series has labels of a fixed set, each value from a closed vocabulary or a name the
store already validated: site, node, partition, check, metric, unit, result, state. No
reason, path or other free text becomes a label; no run id either (a new series every run
would grow Prometheus's index without bound: the run is the `cobalt_bench_run_info`
series, and the file's own mtime, node_textfile_mtime_seconds, says how fresh it is).

  cobalt_bench_run_info{site, run, state}       1: the run this file describes
  cobalt_bench_run_timestamp_seconds{site}      when the run started (Unix time)
  cobalt_bench_run_verdict{site, state}         1 for the verdict's state, 0 the others
  cobalt_bench_run_bad_nodes{site}              how many nodes are bad
  cobalt_bench_run_cases{site, result}          how many cases had each result, as judged
                                                (judging.outcome: the report's count)
  cobalt_bench_node_bad{site, node, partition}  1 a bad node (failed or stands out), 0 not
  cobalt_bench_case_result{site, node, partition, check, result}   1 (its result only)
  cobalt_bench_metric{site, node, partition, check, metric, unit}  each finite value
  cobalt_bench_metric_passed{site, node, partition, check, metric} 1 met its reference,
                                                0 did not (judged metrics only)
A case of several nodes (cb-linktest) has node="". Nothing here reads or writes files.
'''

import calendar
import functools
import math
import time

from ..judging import fleet as fl
from ..judging.verdict import STATES
from ..store.history import peer_partition, run_date
from ..store.result import Result

PREFIX = 'cobalt_bench_'
_HELP = {
    'run_info': 'The run this file describes (its id and verdict state)',
    'run_timestamp_seconds': 'When the run started, seconds since the epoch',
    'run_verdict': "The run's verdict: 1 for its state, 0 for the others",
    'run_bad_nodes': 'How many nodes of the run are bad (failed, lost or stand out)',
    'run_cases': 'How many of the run\'s cases had each result, as judged',
    'node_bad': 'Whether the node is bad in this run (1) or not (0)',
    'case_result': "A check's result on a node: 1 for the result it had",
    'metric': "A measured value of a check on a node, in the unit label's unit",
    'metric_passed': 'Whether a judged metric met its reference (1) or not (0)',
}


@functools.lru_cache(maxsize=1 << 14)
def label_value(text):
    '''A label value escaped as the format requires (backslash, quote, newline). Cached: a
    sweep's labels are a few names repeated on every node.'''
    return str(text).replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')


def _pairs(**labels):
    return ','.join(f'{k}="{label_value(v)}"' for k, v in labels.items())


def _labels(**labels):
    return '{' + _pairs(**labels) + '}'


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _epoch(date):
    '''Seconds since the epoch of a run_date ('YYYY-mm-dd HH:MM:SS', UTC), or None.'''
    try:
        return calendar.timegm(time.strptime(date, '%Y-%m-%d %H:%M:%S'))
    except (TypeError, ValueError):
        return None


def render_prometheus(run, verdict, site_name):
    '''The exposition text of a run and its judging.verdict.Verdict: one HELP and TYPE
    line per metric family, each series once.'''
    site = site_name or verdict.site or ''
    series = {name: [] for name in _HELP}
    series['run_info'].append((_labels(site=site, run=run.label, state=verdict.state), 1))
    when = _epoch(run_date(run))
    if when is not None:
        series['run_timestamp_seconds'].append((_labels(site=site), when))
    for state in STATES:
        series['run_verdict'].append((_labels(site=site, state=state),
                                      int(verdict.state == state)))
    bad = {b.node for b in verdict.fleet.bad_nodes}
    series['run_bad_nodes'].append((_labels(site=site), len(bad)))
    counted = verdict.counts
    for result in Result:
        series['run_cases'].append((_labels(site=site, result=result),
                                    counted.get(result, 0)))
    nodes = {}
    seen = set()
    for case in verdict.cases:
        node = fl.node_of(case) or ''
        partition = peer_partition(case, run.kind)
        check = fl.check_name(case)
        if node:
            nodes.setdefault(node, partition)
        key = (node, partition, check)
        if key in seen:         # a check twice on one node (a retry): the first, judged
            continue
        seen.add(key)
        # The labels every series of the case shares, escaped once.
        where = '{' + _pairs(site=site, node=node, partition=partition, check=check)
        series['case_result'].append((f'{where},{_pairs(result=case.result)}}}', 1))
        for m in case.metrics:
            if not _number(m.value):
                continue
            metric = f'{where},{_pairs(metric=m.name)}'
            series['metric'].append((f'{metric},{_pairs(unit=m.unit or "")}}}', m.value))
            if m.verdict.judged:
                series['metric_passed'].append((metric + '}', int(m.verdict.passed)))
    for node in sorted(set(nodes) | bad, key=fl.host_key):
        series['node_bad'].append((_labels(site=site, node=node,
                                           partition=nodes.get(node, '')), int(node in bad)))
    out = []
    for name, rows in series.items():
        if not rows:
            continue
        full = PREFIX + name
        out.append(f'# HELP {full} {_HELP[name]}')
        out.append(f'# TYPE {full} gauge')
        out += [f'{full}{labels} {_format(value)}' for labels, value in rows]
    return '\n'.join(out) + '\n'


def _format(value):
    return repr(float(value)) if isinstance(value, float) else str(value)

