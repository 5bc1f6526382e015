'''Peers and outliers: the nodes of a run compared with each other (docs/fleet.md).

From a run's judged cases, one distribution over nodes for each (partition, check, metric):
a case belongs to a node when it ran on exactly one node (a ReFrame check run once per
node with `--distribute`, a kernel job document: one host each). ReFrame 4.10's
`--distribute` (reframe/frontend/testgenerators.py, distribute_tests) makes a variant of
the check class per node with two parameters, `.part` and `.nid`: its display name is
`MemTest %.part=sys:part %.nid=n1` and its unique name (a perflog's) `MemTest_<variant>`;
both are stripped so that every node of a check is one distribution.

The rule, per distribution of n nodes:
  median  the median of the values (every node, the one judged included: the median is
          robust to it);
  sigma   max(1.4826 x MAD, 1 % of |median|): the median absolute deviation scaled to a
          standard deviation of normal noise, with a floor so that identical peers (MAD 0)
          do not make a 0.1 % wobble an outlier; for a share in percent (unit %) at least
          one percentage point (mem-test's late share: 0.5 % against a median of 0.08 %
          is noise on a busy node, 37 % is a slow one);
  score   (value - median) / sigma in the metric's bad direction (direction_of);
a node whose score is above the site's threshold (compliance.yaml `fleet:
{outlier_threshold: T}`, default 4) is an outlier. The metrics compared are those the
site's references judge (where a case has any): what the site chose to care about; a
recorded diagnostic (mem-test's average_late: a few tenths of a percent, noise on a busy
node) is shown, not judged against peers. Without any reference, the metrics the kernel's
descriptor declares are (_compared). With fewer than MIN_NODES nodes there is
no judgement (a median of two says nothing of which one is off). A node whose case FAILED
(its references, its sanity) or did not finish (its job cancelled, timed out, its node
lost: no document, or one marked interrupted) is a bad node whatever its peers; a case that
was not run (no GPU, a usage error: judging.sanity) is not the node's fault.

Nothing here changes what it reads; the results are typed values.
'''

import math
import re
import statistics
from dataclasses import dataclass, field

from .. import kernels
from .. import preflight as pf
from ..site import known_checks
from ..site.compliance import DEFAULT_OUTLIER_THRESHOLD
from ..store.identity import CheckName
from ..store.model import KIND_JOBS
from ..store.result import Result, Word
from . import sanity

MAD_SCALE = 1.4826          # MAD x this = the standard deviation of normal noise
RELATIVE_FLOOR = 0.01       # sigma is at least 1 % of |median|
PERCENT_FLOOR = 1.0         # and, for a share in %, at least one percentage point
MIN_NODES = 3               # fewer nodes: no outlier judgement
#: A name Slurm reads as one host name (bad-nodes.txt holds only these).
HOSTNAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')


class Direction(Word):
    '''Which way a metric goes bad.'''
    LOWER = 'lower is bad'      # bandwidths, rates, speeds
    HIGHER = 'higher is bad'    # latencies, times, late shares, errors
    EITHER = 'either way'       # nothing says: both directions are judged


_HIGHER_WORDS = re.compile(r'lat(ency)?|late|time|duration|error|loss|drop|retrans|jitter',
                           re.I)
_RATE_UNIT = re.compile(r'/\s*s(ec)?$|bit|B/s|flop|ops|hz$|^x$', re.I)
_TIME_UNIT = re.compile(r'^(s|sec|ms|us|usec|\u00b5s|ns|min|h)$', re.I)


def direction_of(metric):
    '''The bad direction of a store.Metric, by the first rule that says: (1) the site's
    bounds, where only one side is bounded (a lower bound only: lower is bad); (2) its
    name (latency, time, late, error, loss, drop, retrans, jitter: higher is bad); (3) its
    unit (a rate: .../s, bit, flop, ops: lower is bad; a time: s, ms, us, ns: higher is
    bad); (4) else either way.'''
    if metric.lower is not None and metric.upper is None:
        return Direction.LOWER
    if metric.upper is not None and metric.lower is None:
        return Direction.HIGHER
    words = re.split(r'[^A-Za-z]+', metric.name)
    if any(_HIGHER_WORDS.fullmatch(w) for w in words if w):
        return Direction.HIGHER
    unit = (metric.unit or '').strip()
    if _TIME_UNIT.match(unit):
        return Direction.HIGHER
    if unit and _RATE_UNIT.search(unit):
        return Direction.LOWER
    return Direction.EITHER


@dataclass(frozen=True)
class NodeValue:
    node: str
    check: str                  # the case's own name (with its node)
    value: float
    score: float = 0.0          # robust sigmas from the median, in the bad direction
    deviation: float = 0.0      # signed robust sigmas (value - median) / sigma
    percent: object = None      # signed % from the median (None: median 0)
    flagged: bool = False       # an outlier by the rule
    failed: bool = False        # its case failed (references or sanity)
    findings: tuple = ()        # the node's preflight findings (fail, warn): the likely why


@dataclass
class Distribution:
    partition: str
    check: str                  # the check's name without the node (MemTest)
    metric: str
    unit: str
    direction: Direction
    values: list                # [NodeValue], worst first
    median: float = 0.0
    mad: float = 0.0
    sigma: float = 0.0          # the scale used: max(MAD_SCALE x MAD, floor)
    floored: bool = False       # sigma is the floor (the peers agree closer than it)
    threshold: float = DEFAULT_OUTLIER_THRESHOLD
    judged: bool = False        # MIN_NODES nodes or more
    note: str = ''              # why not judged

    @property
    def nodes(self):
        return len({v.node for v in self.values})

    @property
    def outliers(self):
        return [v for v in self.values if v.flagged]


@dataclass(frozen=True)
class Cause:
    '''Why one node is bad: an outlier of a distribution, or a failed case.'''
    check: str
    why: str
    metric: str = ''
    value: object = None
    unit: str = ''
    median: object = None
    deviation: object = None    # robust sigmas
    percent: object = None

    @property
    def short(self):
        if not self.metric:
            return f'{self.check} failed'
        pct = f' {self.percent:+.0f} %' if self.percent is not None else ''
        return f'{self.check} {self.metric}{pct}'


@dataclass
class BadNode:
    node: str
    causes: list = field(default_factory=list)      # [Cause]
    findings: tuple = ()                            # its preflight findings (fail, warn)

    @property
    def summary(self):
        '''One short phrase: what made it bad (the first screen's).'''
        return ', '.join(dict.fromkeys(c.short for c in self.causes))

    @property
    def why(self):
        text = '; '.join(c.why for c in self.causes)
        if self.findings:
            text += '; preflight: ' + ', '.join(finding_text(f) for f in self.findings[:4])
        return text


@dataclass
class Fleet:
    threshold: float = DEFAULT_OUTLIER_THRESHOLD
    distributions: list = field(default_factory=list)   # [Distribution], >= 2 nodes
    bad_nodes: list = field(default_factory=list)       # [BadNode], sorted by name

    @property
    def hostlist(self):
        '''The bad nodes as one Slurm hostlist (names Slurm would not read left out).'''
        return hostlist([b.node for b in self.bad_nodes if HOSTNAME.fullmatch(b.node)])

    @property
    def unlisted(self):
        '''Bad nodes whose names are no Slurm host name: named, never in the hostlist.'''
        return [b.node for b in self.bad_nodes if not HOSTNAME.fullmatch(b.node)]

    def to_json(self):
        return [{'node': b.node, 'why': b.why} for b in self.bad_nodes]


def finding_text(f):
    return f'{f.setting} {f.status}: {f.value}' + (f' (expected {f.expected})'
                                                   if f.expected else '')


def check_name(case, checks=None):
    '''A case's check without the node (store.identity: --distribute's parameters
    dropped, other parameters kept: `EthTest %interface=lo` is its own check; a perflog's
    unique name `MemTest_3` is MemTest; a job document's kernel is itself).'''
    return CheckName.of(case.check, known_checks() if checks is None else checks).label


def _node_of(case):
    nodes = [n for n in case.nodes if isinstance(n, str) and n]
    return nodes[0] if len(nodes) == 1 and len(case.nodes) == 1 else None


def _partition_of(case, kind):
    if kind == KIND_JOBS:
        return case.judged_partition or 'jobs'
    return case.where


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def node_findings(preflight_docs):
    '''{host: (Finding, ...)}: each host's failed and warned settings, failed first.'''
    out = {}
    for _, doc in preflight_docs:
        host = doc.get('host')
        if not isinstance(host, str):
            continue
        found = [f for f in pf.findings_of(doc) if f.status in (pf.FAIL, pf.WARN)]
        out.setdefault(host, []).extend(found)
    return {h: tuple(sorted(fs, key=lambda f: (f.status != pf.FAIL, f.level != pf.REQUIRED)))
            for h, fs in out.items()}


def judge_distribution(dist, threshold):
    '''Median, sigma and each node's score and flag (the rule of the module).'''
    values = [v.value for v in dist.values]
    med = statistics.median(values)
    mad = statistics.median([abs(x - med) for x in values])
    floor = max(RELATIVE_FLOOR * abs(med), PERCENT_FLOOR if dist.unit == '%' else 0.0)
    sigma = max(MAD_SCALE * mad, floor)
    dist.median, dist.mad, dist.sigma = med, mad, sigma
    dist.floored = floor >= MAD_SCALE * mad
    dist.threshold = threshold
    dist.judged = dist.nodes >= MIN_NODES
    if not dist.judged:
        dist.note = (f'{dist.nodes} nodes: no outlier judgement (it needs {MIN_NODES} or '
                     'more)')
    sign = {Direction.LOWER: -1.0, Direction.HIGHER: 1.0}.get(dist.direction)
    judged = []
    for v in dist.values:
        diff = v.value - med
        dev = diff / sigma if sigma else (0.0 if diff == 0 else math.copysign(math.inf, diff))
        score = abs(dev) if sign is None else sign * dev
        pct = 100.0 * diff / abs(med) if med else None
        judged.append(NodeValue(v.node, v.check, v.value, score, dev, pct,
                                dist.judged and score > threshold, v.failed, v.findings))
    # Worst first: failed cases, then outliers, then by score.
    judged.sort(key=lambda v: (not v.failed, not v.flagged, -v.score, v.node))
    dist.values = judged
    return dist


def _compared(case, check):
    '''The metrics of `case` compared with its peers: those the site's references judge;
    where none is, those its kernel's descriptor declares (the kernel contract's figures,
    not the per-operation diagnostics such as mem-test's *_busy_speed, which scatter by tens
    of percent when nodes share cores); for a check of no known kernel, every one.'''
    judged = [m for m in case.metrics if m.judged]
    if judged:
        return judged
    kernel = next(filter(None, map(kernels.of_document, case.docs)), None) or \
        kernels.of_check(check)
    return [m for m in case.metrics if m.name in kernel.metrics] if kernel else case.metrics


def analyse(cases, kind='', preflight_docs=(), threshold=DEFAULT_OUTLIER_THRESHOLD,
            checks=None):
    '''The Fleet of a run's judged cases (Verdict.cases): its distributions of two nodes or
    more (judged from MIN_NODES), and its bad nodes (outliers and failed cases).
    `preflight_docs`: (label, doc) of the run's preflight documents (each node's findings
    are the likely why).'''
    checks = known_checks() if checks is None else checks
    findings = node_findings(preflight_docs)
    groups = {}
    bad = {}
    for case in cases:
        node = _node_of(case)
        if node is None:
            continue
        name = check_name(case, checks)
        failed = case.result.failed and not sanity.did_not_run(case.fail_phase,
                                                                case.fail_reason)
        if case.result in (Result.ABORT, Result.DAMAGED):
            bad.setdefault(node, []).append(Cause(name, f'{name} did not finish: '
                                                  f'{case.fail_reason or case.result}'))
        if failed:
            failing = [m for m in case.metrics if m.verdict.failed]
            why = (f'{name} failed its references: '
                   + ', '.join(f'{m.name} = {m.value:g} {m.unit}'.rstrip() if _number(m.value)
                               else m.name for m in failing)) if failing else \
                f'{name} failed: {case.fail_reason or case.fail_phase or "?"}'
            bad.setdefault(node, []).append(Cause(name, why))
        for m in _compared(case, name):
            if not _number(m.value):
                continue
            key = (_partition_of(case, kind), name, m.name)
            if key not in groups:
                groups[key] = Distribution(key[0], name, m.name, m.unit, direction_of(m), [])
            groups[key].values.append(NodeValue(node, case.check, float(m.value),
                                                failed=failed,
                                                findings=findings.get(node, ())))
    fleet = Fleet(threshold)
    for key in sorted(groups):
        dist = groups[key]
        if dist.nodes < 2:
            continue
        fleet.distributions.append(judge_distribution(dist, threshold))
        for v in dist.outliers:
            pct = f', {v.percent:+.1f} %' if v.percent is not None else ''
            bad.setdefault(v.node, []).append(Cause(
                dist.check, f'{dist.check} {dist.metric} = {v.value:g} {dist.unit}'.rstrip()
                + f', peers\' median {dist.median:g}{pct} ({v.deviation:+.1f} robust sigmas, '
                f'{dist.direction})', dist.metric, v.value, dist.unit, dist.median,
                v.deviation, v.percent))
    fleet.bad_nodes = [BadNode(n, causes, findings.get(n, ()))
                       for n, causes in sorted(bad.items(), key=lambda nc: _host_key(nc[0]))]
    return fleet


def _host_key(name):
    m = re.fullmatch(r'(.*?)(\d+)(\D*)', name)
    return (m.group(1), m.group(3), int(m.group(2)), name) if m else (name, '', -1, name)


def hostlist(names):
    '''A Slurm hostlist of `names`: n1,n2,n3,n7 -> n[1-3,7]; zero padding kept
    (node001,node002 -> node[001-002]); a number's last run of digits is ranged, names
    without digits are listed as they are.'''
    groups = {}         # (prefix, suffix, width) -> {number}; width 0: not padded
    plain = []
    parsed = []
    for name in dict.fromkeys(names):
        m = re.fullmatch(r'(.*?)(\d+)(\D*)', name)
        if not m:
            plain.append(name)
            continue
        digits = m.group(2)
        width = len(digits) if digits.startswith('0') and len(digits) > 1 else 0
        parsed.append((m.group(1), m.group(3), digits, width))
    padded = {(p, s, w) for p, s, _, w in parsed if w}
    for prefix, suffix, digits, width in parsed:
        if not width and (prefix, suffix, len(digits)) in padded:
            width = len(digits)     # node100 goes with node099 (width 3)
        groups.setdefault((prefix, suffix, width), set()).add(int(digits))
    out = []
    for (prefix, suffix, width) in sorted(groups):
        nums = sorted(groups[(prefix, suffix, width)])
        ranges, start = [], nums[0]
        for a, b in zip(nums, nums[1:] + [None]):
            if b != a + 1:
                ranges.append((start, a))
                start = b
        text = ','.join(f'{a:0{width}d}' if a == b else f'{a:0{width}d}-{b:0{width}d}'
                        for a, b in ranges)
        single = len(ranges) == 1 and ranges[0][0] == ranges[0][1]
        out.append(f'{prefix}{text}{suffix}' if single else f'{prefix}[{text}]{suffix}')
    return ','.join(out + sorted(plain))
