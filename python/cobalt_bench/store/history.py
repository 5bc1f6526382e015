'''Node history: the results of the store keyed by node, across runs (issue 28, item 4).

A case belongs to a node when it ran on exactly one node (Case.nodes): a single-node
check, a check ReFrame ran once per node with `--distribute`, a job's kernel document
(its `host`). ReFrame 4.10's `--distribute` (reframe/frontend/testgenerators.py,
distribute_tests) makes each node's case a variant with two hidden parameters, so its
display name is `MemTest %.part=local-slurm:x86 %.nid=n1`: store.identity strips them (and
`--repeat`'s `%.repeat_no=N`; a perflog's `MemTest_<variant>`), so that a check is the
same across runs and nodes.

A node *failed in a run* when one of its cases in that run failed (Result.failed: a
reference not met, a sanity failure, an unexpected pass), or failed in an earlier try
that a retry of the same run hid (Case.failed_tries). A node that failed in at least
FLAKY_FAILS (k) of its last LAST_RUNS (n) runs is *flaky*: also when its last try, or
its last run, passed.

Bounded: the runs are read one at a time, newest first, each dropped once its cases are
summed up; each node keeps at most n runs. With a node named, reading stops once that
node has its n runs. A store of 10,000 runs is never held in memory at once. A finished
run read once is kept in the store's index (store.history_index: its node entries, while
its report.json is the one read), so that the next history reads a few rows of it.
'''

import math
import os
import re
from dataclasses import dataclass, field

from .. import kernels
from ..errors import CannotRun
from .history_index import HistoryIndex, stamp_of
from .identity import CheckName
from .model import KIND_JOBS, KIND_REFRAME
from .reader import load_run
from .result import Result, RunState
from .runs import is_run_dir, list_runs, run_state

#: The defaults: a node that failed in FLAKY_FAILS of its last LAST_RUNS runs is flaky.
FLAKY_FAILS, LAST_RUNS = 2, 5
#: At most this many metric values are kept per case (the judged ones first).
KEY_METRICS = 3
#: A metric's noise from history needs this many degrees of freedom: each node's clean
#: values less one, summed over the nodes (metric_noise).
NOISE_MIN_DF = 3

# ReFrame's generated parameters: --distribute's partition and node, --repeat's number.
_STAMP = re.compile(r'(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)')


def run_date(run):
    '''When a run started, 'YYYY-mm-dd HH:MM:SS': ReFrame's session time_start, else the
    run id's leading stamp, else the started time of its first document, else ''.'''
    for text in (str((run.session or {}).get('time_start') or ''), run.run_id or ''):
        m = _STAMP.match(text)
        if m:
            y, mo, d, h, mi, s = m.groups()
            return f'{y}-{mo}-{d} {h}:{mi}:{s}'
    for case in run.cases:
        for doc in case.docs:
            started = doc.get('started')
            if isinstance(started, str) and started:
                return started.replace('T', ' ').rstrip('Z')[:19]
    return ''


@dataclass
class Entry:
    '''One case of a node in one run.'''
    check: str                  # the check, --distribute's suffix stripped
    partition: str              # system:partition (a job document: 'job <id>')
    result: Result
    failed_tries: int = 0       # earlier tries in the run that failed (hidden by a retry)
    metrics: list = field(default_factory=list)     # [(name, value, unit)]
    peers: str = ''             # the partition of its peers (peer_partition)

    @property
    def failed(self):
        return self.result.failed or self.failed_tries > 0

    def to_json(self):
        return {'check': self.check, 'partition': self.partition, 'result': str(self.result),
                'failed_tries': self.failed_tries, 'metrics': self.metrics,
                'peers': self.peers}

    @classmethod
    def from_json(cls, d):
        return cls(d['check'], d['partition'], Result(d['result']), d['failed_tries'],
                   [tuple(m) for m in d['metrics']], d['peers'])


@dataclass
class NodeRun:
    '''A node's cases in one run.'''
    label: str                  # site/run-id
    date: str
    entries: list = field(default_factory=list)

    @property
    def failed(self):
        return any(e.failed for e in self.entries)


@dataclass
class NodeHistory:
    node: str
    runs: list = field(default_factory=list)        # [NodeRun], newest first
    fails: int = FLAKY_FAILS                        # k of the flaky rule

    @property
    def failed_runs(self):
        return sum(r.failed for r in self.runs)

    @property
    def flaky(self):
        return self.failed_runs >= self.fails


@dataclass
class History:
    base: str
    last: int
    fails: int
    nodes: dict = field(default_factory=dict)       # {node: NodeHistory}
    runs_read: int = 0
    unreadable: list = field(default_factory=list)  # [(site/run-id, why)]
    running: list = field(default_factory=list)     # site/run-id of runs still running

    def sorted_nodes(self):
        return [self.nodes[n] for n in sorted(self.nodes)]


def _key_metrics(case):
    '''[(name, value, unit)] worth showing: the metrics judged by a reference, else the
    ones the kernel's contract names; at most KEY_METRICS.'''
    judged = [m for m in case.metrics if m.judged]
    if not judged:
        kernel = kernels.of_document(case.docs[0]) if case.docs else None
        kernel = kernel or kernels.of_check(CheckName.of(case.check).check)
        names = list(kernel.metrics) if kernel else []
        judged = [m for n in names for m in case.metrics if m.name == n]
    return [(m.name, m.value, m.unit) for m in judged[:KEY_METRICS]]


def peer_partition(case, kind):
    '''The partition whose nodes are a case's peers: a ReFrame case's system:partition; a
    job document's, the site partition its `cobalt-bench judge` recorded, else 'jobs'.'''
    if kind == KIND_JOBS:
        return case.judged_partition or 'jobs'
    return case.where


def node_cases(run):
    '''{node: [Entry]} of a run: the cases that ran on exactly one node.'''
    out = {}
    for case in run.cases:
        nodes = [n for n in case.nodes if n]
        if len(nodes) != 1:
            continue
        out.setdefault(nodes[0], []).append(Entry(
            CheckName.of(case.check).label, case.where, case.result, case.failed_tries,
            _key_metrics(case), peer_partition(case, run.kind)))
    return out


def metric_noise(history, exclude=()):
    '''{(partition, check, metric): relative noise} from a History (node_history's), for
    judging.fleet.analyse's `noise`: the standard deviation of one value about its node's
    mean, relative to that mean, pooled over the nodes (squares summed over the degrees of
    freedom, each node's values less one), of each metric kept of each node's clean entries
    (passed, no failed try). Runs labelled in `exclude` (site/run-id: the run being judged)
    are left out; so is a metric with fewer than NOISE_MIN_DF degrees of freedom.'''
    series = {}
    for h in history.nodes.values():
        for run in h.runs:
            if run.label in exclude:
                continue
            for e in run.entries:
                if e.failed:
                    continue
                for name, value, _ in e.metrics:
                    if isinstance(value, (int, float)) and not isinstance(value, bool) \
                            and math.isfinite(value):
                        key = (e.peers or e.partition, e.check, name)
                        series.setdefault(key, {}).setdefault(h.node, []).append(value)
    noise = {}
    for key, by_node in series.items():
        squares = df = 0
        for xs in by_node.values():
            mean = sum(xs) / len(xs)
            if len(xs) > 1 and mean:
                squares += sum((x / mean - 1) ** 2 for x in xs)
                df += len(xs) - 1
        if df >= NOISE_MIN_DF:
            noise[key] = math.sqrt(squares / df)
    return noise


def _newest_first(runs):
    def key(run):
        site, run_id, path = run
        m = _STAMP.match(run_id)
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            mtime = 0
        return (m.group(0) if m else '', mtime)
    return sorted(runs, key=key, reverse=True)


def _as_of(runs, current):
    '''The runs from `current` (a Run) on, newest first: a run newer than it is left out,
    so that the history is the one it had when it ran. Not among them: all of them.'''
    here = os.path.realpath(current.path or '')
    for i, (_, _, path) in enumerate(runs):
        if os.path.realpath(path) == here:
            return runs[i:]
    return runs


def node_history(base, site=None, last=LAST_RUNS, fails=FLAKY_FAILS, node=None,
                 nodes=None, current=None, max_runs=None):
    '''The History of the store `base` (of `site` only, and of `node` only, when given):
    each node's last `last` runs, newest first, flaky when it failed in `fails` of them.
    A run still running is left out (named); one that cannot be read is named, never a
    reason to stop. `nodes`: only these nodes (reading stops once each has its `last`
    runs). `current`: a Run of the store already read: the history as of that run (the
    newer runs are left out) and it is not read again. `max_runs`: at most this many
    runs are read.'''
    if last < 1 or fails < 1:
        raise ValueError('last and fails must be at least 1')
    wanted = {node} if node is not None else set(nodes) if nodes is not None else None
    history = History(base, last, fails)
    try:
        runs = _newest_first(list_runs(base, site))
    except OSError as err:
        raise CannotRun(f'cannot read the results store {base}: {err.strerror or err}')
    if current is not None:
        runs = _as_of(runs, current)
    here = os.path.realpath(current.path) if current is not None else None
    with HistoryIndex(base) as index:
        for s, r, path in runs:
            if wanted is not None and not wanted:
                break
            if max_runs is not None and history.runs_read >= max_runs:
                break
            label = f'{s}/{r}'
            state = run_state(path)[0]
            if state is RunState.RUNNING:
                history.running.append(label)
                continue
            if here is not None and os.path.realpath(path) == here:
                date, cases = run_date(current), node_cases(current)
            else:
                read = _read_run(path, index, indexable=state is RunState.COMPLETE)
                if isinstance(read, str):
                    history.unreadable.append((label, read))
                    continue
                date, cases = read
            history.runs_read += 1
            for name, entries in cases.items():
                if wanted is not None and name not in wanted:
                    continue
                h = history.nodes.setdefault(name, NodeHistory(name, fails=fails))
                if len(h.runs) < last:
                    h.runs.append(NodeRun(label, date, [
                        e if isinstance(e, Entry) else Entry.from_json(e) for e in entries]))
                if wanted is not None and len(h.runs) >= last:
                    wanted.discard(name)
    return history


def _read_run(path, index, indexable):
    '''(date, {node: [Entry, or its JSON]}) of a finished run, from the store's index while
    it holds this report.json, else read from its documents (and indexed where
    `indexable`: the run is complete); why, where it cannot be read.'''
    indexed = index.lookup(path)
    if indexed is not None:
        return indexed
    stamp = stamp_of(path)          # before reading: a report.json rewritten meanwhile
    try:                            # is read again next time
        run = load_run(path)
    except CannotRun as err:
        return str(err)
    date, cases = run_date(run), node_cases(run)
    if indexable:
        index.keep(path, stamp, date, {n: [e.to_json() for e in es]
                                       for n, es in cases.items()})
    return date, cases


#: Where job scripts write their documents in a results store (jobs/lib/cobalt-job.sh).
JOBS_DIR = 'slurm'


def store_of(run):
    '''(store, site) of a run read from a results store, else None. A ReFrame run
    STORE/SITE/RUN-ID: its site directory's parent, of that site; job documents under
    STORE/slurm/ (a file, the directory, a node sweep's directory in it): STORE, of every
    site (a job document does not say its site).'''
    path = os.path.abspath(run.path or '')
    if not run.path:
        return None
    if run.kind == KIND_REFRAME:
        site_dir = os.path.dirname(path)
        base = os.path.dirname(site_dir)
        return (base, os.path.basename(site_dir)) if is_run_dir(path) and base != site_dir \
            else None
    here = path
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return None
        if os.path.basename(here) == JOBS_DIR and os.path.isdir(here):
            return parent, None
        here = parent
