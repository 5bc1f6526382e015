'''Peers and outliers: the nodes of a run compared with each other (docs/fleet.md).

From a run's judged cases, one distribution over nodes for each (partition, check, metric):
a case belongs to a node when it ran on exactly one node (a ReFrame check run once per
node with `--distribute`, a kernel job document: one host each). ReFrame 4.10's
`--distribute` (reframe/frontend/testgenerators.py, distribute_tests) makes a variant of
the check class per node with two parameters, `.part` and `.nid`: its display name is
`MemTest %.part=sys:part %.nid=n1` and its unique name (a perflog's) `MemTest_<variant>`;
both are stripped so that every node of a check is one distribution.

The rule, per distribution of n nodes (a node with several values, repeats of the check in
the run, is judged by their mean):
  median  the median of the nodes' values (the one judged included: it is robust to it);
  spread  1.4826 x MAD: the nodes' spread as a standard deviation of normal noise;
  noise   s, the standard deviation of one value, measured: the pooled spread of the
          nodes' repeats (MIN_REPEAT_DF degrees of freedom or more), else the relative
          noise the caller measured on the partition's clean history (`noise`,
          store.history.metric_noise); else not measured: DEFAULT_NOISE (5 %, the noise of
          unpaced mem-test on an exclusive node) of |median|, weighing as 10 nodes, pooled
          with the spread (a few nodes' MAD scatters by tens of percent: the default rules
          them; a thousand nodes' spread rules itself);
  sigma   measured: sqrt(s^2 / k + excess^2) for a node of k values, excess the spread
          beyond what the noise explains, allowing the MAD 2 standard errors (1.166 /
          sqrt(n)) of its own scatter; not measured: max(s, spread). A spread wider than
          the noise (two kinds of node, half and half) widens sigma: such a partition is
          not all flagged. For a share in % (mem-test's late share) at least one point;
  score   (value - median) / sigma in the metric's bad direction (direction_of);
a node whose score is above the site's threshold (compliance.yaml `fleet:
{outlier_threshold: T}`, default 4) and whose value is at least MIN_EFFECT (5 %) off the
median is an outlier. Peers that agree exactly (paced: 0 %) and no noise measured: 4
sigmas are 17.5 % of the median with 3 nodes, 15 % with 8, 6 % with 100; with a measured
quiet noise, 5 % is the least worth naming. A metric that is a constant multiple of
another of the same case (mem-test's percent_of_desired, paced per-operation speeds: equal
ratios on every case within 1e-6) is compared once, as the one its kernel's descriptor
declares first (primaries). The scale, its constants and the twins: judging.scales.

The metrics compared are those the
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

import functools
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from .. import kernels
from .. import preflight as pf
from ..site import known_checks
from ..site.compliance import DEFAULT_OUTLIER_THRESHOLD
from ..store.history import peer_partition
from ..store.identity import CheckName
from ..store.model import KIND_JOBS
from ..store.result import Result, Word
from . import classes, sanity
# The rule's scale and twins: judging.scales.
from .scales import MAD_SCALE, MIN_EFFECT, primaries, scale_of

MIN_NODES = 3               # fewer nodes: no outlier judgement
#: The results of a case that did not finish (looked up once: asked of every case).
_UNFINISHED = (Result.ABORT, Result.DAMAGED)
#: A name Slurm reads as one host name (bad-nodes.txt holds only these).
HOSTNAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]*')
#: The check name of a cause that is the node's configuration, not a measurement.
CONFIGURATION = 'configuration'
#: A host name's last run of digits, the number a hostlist ranges (n0012 -> n, 0012, '').
_NUMBERED = re.compile(r'(.*?)(\d+)(\D*)')


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


@dataclass(frozen=True, slots=True)     # two or more per node and check of a sweep
class NodeValue:
    node: str
    check: str                  # the case's own name (with its node)
    value: float
    # The node's, of the mean of its values where it has several (repeats):
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
    sigma: float = 0.0          # the scale of a node's value (of the mean of its repeats)
    floored: bool = False       # sigma is the noise (the peers agree closer than it)
    noise: object = None        # the relative noise of one value used (None: median 0)
    noise_from: str = ''        # 'repeats', 'history' or 'default' (judge_distribution)
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
        if self.check == CONFIGURATION:
            return self.why.split(': ', 1)[0]
        if not self.metric:
            return f'{self.check} failed'
        pct = f' {self.percent:+.0f} %' if self.percent is not None else ''
        return f'{self.check} {self.metric}{pct}'


@dataclass
class BadNode:
    node: str
    causes: list = field(default_factory=list)      # [Cause]
    findings: tuple = ()        # its preflight findings (fail, warn) most nodes do not share
    differences: tuple = ()     # (classes.Difference, ...) from its peers' configuration

    @property
    def summary(self):
        '''One short phrase: what made it bad (the first screen's).'''
        return ', '.join(dict.fromkeys(c.short for c in self.causes))

    @property
    def likely(self):
        '''The likely why: what it is that its peers are not ('' : nothing known).'''
        return '; '.join([d.text for d in self.differences] +
                         [finding_text(f) for f in self.findings[:4]])

    @property
    def why(self):
        text = '; '.join(c.why for c in self.causes)
        if self.differences and not any(c.check == CONFIGURATION for c in self.causes):
            text += '; differs from its peers: ' + ', '.join(d.text for d in self.differences)
        if self.findings:
            text += '; preflight: ' + ', '.join(finding_text(f) for f in self.findings[:4])
        return text


@dataclass
class Fleet:
    threshold: float = DEFAULT_OUTLIER_THRESHOLD
    distributions: list = field(default_factory=list)   # [Distribution], >= 2 nodes
    bad_nodes: list = field(default_factory=list)       # [BadNode], sorted by name
    classes: list = field(default_factory=list)         # [classes.PartitionClasses]
    # [(finding text, nodes)]: the preflight findings more than half of the nodes share
    shared_findings: list = field(default_factory=list)

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


class NodeIndex:
    '''A Fleet's causes and distributions by (node, check), read once: the verdict asks
    them of every capacity case, and a scan of the fleet per case is quadratic in the
    nodes. `causes` {(node, check): [Cause]}, `distributions` {(node, check):
    [Distribution]}, each in the fleet's order.'''

    def __init__(self, fleet):
        self.causes, self.distributions = {}, {}
        for b in fleet.bad_nodes:
            for c in b.causes:
                self.causes.setdefault((b.node, c.check), []).append(c)
        for d in fleet.distributions:
            for node in dict.fromkeys(v.node for v in d.values):
                self.distributions.setdefault((node, d.check), []).append(d)


def finding_text(f):
    return f'{f.setting} {f.status}: {f.value}' + (f' (expected {f.expected})'
                                                   if f.expected else '')


def check_name(case, checks=None):
    '''A case's check without the node (store.identity: --distribute's parameters
    dropped, other parameters kept: `EthTest %interface=lo` is its own check; a perflog's
    unique name `MemTest_3` is MemTest; a job document's kernel is itself).'''
    return CheckName.of(case.check, known_checks() if checks is None else checks).label


def node_of(case):
    nodes = [n for n in case.nodes if isinstance(n, str) and n]
    return nodes[0] if len(nodes) == 1 and len(case.nodes) == 1 else None


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _distinct_findings(findings):
    '''({host: its findings that at most half of the hosts share}, [(finding text, hosts)]
    of those more than half share): a finding every node has (the fleet's MTU) is said
    once, not as every node's why.'''
    texts = {h: [finding_text(f) for f in fs] for h, fs in findings.items()}    # once each
    counts = Counter(t for ts in texts.values() for t in set(ts))
    common = {t for t, n in counts.items() if 2 * n > len(findings) and len(findings) > 1}
    own = {h: tuple(f for f, t in zip(fs, texts[h]) if t not in common)
           for h, fs in findings.items()}
    return own, sorted(((t, counts[t]) for t in common), key=lambda tn: (-tn[1], tn[0]))


def node_findings(preflight_docs, read=None):
    '''{host: (Finding, ...)}: each host's failed and warned settings, failed first.
    `read`: [(doc, its findings)] of the same documents where the caller read them.'''
    out = {}
    for doc, found in read if read is not None else ((doc, pf.findings_of(doc))
                                                     for _, doc in preflight_docs):
        host = doc.get('host')
        if not isinstance(host, str):
            continue
        found = [f for f in found if f.status in (pf.FAIL, pf.WARN)]
        out.setdefault(host, []).extend(found)
    return {h: tuple(sorted(fs, key=lambda f: (f.status != pf.FAIL, f.level != pf.REQUIRED)))
            for h, fs in out.items()}


def judge_distribution(dist, threshold, noise=None):
    '''Median, scale and each node's score and flag (the rule of the module). `noise`:
    {(partition, check, metric): the relative standard deviation of one value} measured on
    the partition's clean history (store.history.metric_noise), used where the nodes did
    not repeat the metric in this run.'''
    by_node = {}
    for v in dist.values:
        by_node.setdefault(v.node, []).append(v.value)
    means = {node: statistics.fmean(xs) for node, xs in by_node.items()}
    med = statistics.median(means.values())
    mad = statistics.median([abs(x - med) for x in means.values()])
    sigmas, sigma, noise_sd, source, quiet = scale_of(dist, by_node, med, MAD_SCALE * mad,
                                                      noise)
    dist.median, dist.mad, dist.sigma, dist.floored = med, mad, sigma, quiet
    dist.noise, dist.noise_from = (noise_sd / abs(med) if med else None), source
    dist.threshold = threshold
    dist.judged = dist.nodes >= MIN_NODES
    if not dist.judged:
        dist.note = (f'{dist.nodes} nodes: no outlier judgement (it needs {MIN_NODES} or '
                     'more)')
    sign = {Direction.LOWER: -1.0, Direction.HIGHER: 1.0}.get(dist.direction)
    scored = {}     # {node: (score, deviation, percent, flagged)}, of the mean of its values
    for node, mean in means.items():
        diff, node_sigma = mean - med, sigmas[node]
        dev = diff / node_sigma if node_sigma else \
            (0.0 if diff == 0 else math.copysign(math.inf, diff))
        score = abs(dev) if sign is None else sign * dev
        pct = 100.0 * diff / abs(med) if med else None
        large = abs(diff) >= MIN_EFFECT * abs(med)
        scored[node] = (score, dev, pct, dist.judged and score > threshold and large)
    judged = [NodeValue(v.node, v.check, v.value, *scored[v.node], v.failed, v.findings)
              for v in dist.values]
    # Worst first: failed cases, then outliers, then by score.
    judged.sort(key=lambda v: (not v.failed, not v.flagged, -v.score, v.node))
    dist.values = judged
    return dist


def _compared(case, check):
    '''The metrics of `case` compared with its peers: those the site's references judge;
    where none is, the metrics of a check its peers judge (kernels.BY_PEERS: a capacity
    check's capacity metrics, cpu-test's rates); else those its kernel's descriptor
    declares (the kernel contract's figures, not the per-operation diagnostics such as
    mem-test's *_busy_speed, which scatter by tens of percent when nodes share cores); for
    a check of no known kernel, every one.'''
    judged = [m for m in case.metrics if m.judged]
    if judged:
        return judged
    # what it measures of the node, not diagnostics; a job document's check is its
    # kernel's name (cpu-test), whose descriptor names them
    kernel = next(filter(None, map(kernels.of_document, case.docs)), None)
    peers = kernels.BY_PEERS.get(check) or (kernel.peers if kernel else ())
    if peers:
        return [m for m in case.metrics if m.name in peers]
    kernel = kernel or kernels.of_check(check)
    return [m for m in case.metrics if m.name in kernel.metrics] if kernel else case.metrics


def analyse(cases, kind='', preflight_docs=(), threshold=DEFAULT_OUTLIER_THRESHOLD,
            checks=None, inventories=(), noise=None, findings=None):
    '''The Fleet of a run's judged cases (Verdict.cases): its distributions of two nodes or
    more (judged from MIN_NODES), its configuration classes (judging.classes, from the
    nodes' `inventories`), and its bad nodes (outliers, failed cases, minority classes).
    `preflight_docs`: (label, doc) of the run's preflight documents. A bad node's likely
    why is what sets it apart: where its configuration differs from its peers', and the
    findings of its own that most nodes do not share (those shown once, fleet-wide).
    `noise`: {(partition, check, metric): relative noise} measured on the partition's clean
    history (store.history.metric_noise; judge_distribution). `findings`: the preflight
    documents' findings where the caller read them (node_findings' `read`).'''
    checks = known_checks() if checks is None else checks
    findings, shared = _distinct_findings(node_findings(preflight_docs, findings))
    groups = {}
    bad = {}
    partition_of = {}
    names = {}      # {case name: check_name}: a sweep has a few checks and 10,000 nodes
    for case in cases:
        node = node_of(case)
        if node is None:
            continue
        partition = peer_partition(case, kind)
        partition_of.setdefault(node, partition)
        name = names.get(case.check)
        if name is None:
            name = names[case.check] = check_name(case, checks)
        failed = case.result.failed and not sanity.did_not_run(case.fail_phase,
                                                                case.fail_reason)
        if failed and case.failed_settings:
            # Failed by its required settings (judging.outcome): a node whose own they are
            # is named; a setting most nodes fail (the fleet's MTU) is the fleet's, said
            # once among the shared findings, and names no node.
            own = {f.setting for f in findings.get(node, ()) if f.status == pf.FAIL}
            failed = bool(own & set(case.failed_settings))
        if case.result in _UNFINISHED:
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
            key = (partition, name, m.name)
            dist = groups.get(key)
            if dist is None:
                dist = groups[key] = Distribution(partition, name, m.name, m.unit,
                                                  direction_of(m), [])
            dist.values.append(NodeValue(node, case.check, float(m.value), 0.0, 0.0, None,
                                         False, failed, findings.get(node, ())))
    fleet = Fleet(threshold, shared_findings=shared)
    fleet.classes = classes.classify(
        inventories, lambda n: partition_of.get(n, 'jobs' if kind == KIND_JOBS else ''))
    differences = {}
    for pc in fleet.classes:
        for cls in pc.minorities:
            for node in cls.nodes:
                differences[node] = cls.differences
                keys = ', '.join(classes.LABELS.get(d.key, d.key) for d in cls.differences)
                bad.setdefault(node, []).append(Cause(
                    CONFIGURATION, f'configuration differs ({keys}): from its peers\' in '
                    f'{pc.partition}: {cls.text}'))
    groups = primaries(groups)      # a metric that is a multiple of another: compared once
    for key in sorted(groups):
        dist = groups[key]
        if dist.nodes < 2:
            continue
        fleet.distributions.append(judge_distribution(dist, threshold, noise))
        for v in dist.outliers:
            pct = f', {v.percent:+.1f} %' if v.percent is not None else ''
            bad.setdefault(v.node, []).append(Cause(
                dist.check, f'{dist.check} {dist.metric} = {v.value:g} {dist.unit}'.rstrip()
                + f', peers\' median {dist.median:g}{pct} ({v.deviation:+.1f} robust sigmas, '
                f'{dist.direction})', dist.metric, v.value, dist.unit, dist.median,
                v.deviation, v.percent))
    fleet.bad_nodes = [BadNode(n, causes, findings.get(n, ()), differences.get(n, ()))
                       for n, causes in sorted(bad.items(), key=lambda nc: host_key(nc[0]))]
    return fleet


def peer_outliers(values, unit, direction=Direction.EITHER,
                  threshold=DEFAULT_OUTLIER_THRESHOLD):
    '''[NodeValue] of the nodes that stand out from their peers, by the rule of the module,
    among `values` ({node: value}): what `references derive` asks of every metric it would
    write, judged by a reference or not yet.'''
    dist = Distribution('', '', '', unit, direction,
                        [NodeValue(n, '', float(v)) for n, v in sorted(values.items())])
    return judge_distribution(dist, threshold).outliers


def host_key(name):
    m = _NUMBERED.fullmatch(name)
    return (m.group(1), m.group(3), int(m.group(2)), name) if m else (name, '', -1, name)


def hostlist(names):
    '''A Slurm hostlist of `names`: n1,n2,n3,n7 -> n[1-3,7]; zero padding kept
    (node001,node002 -> node[001-002]); a number's last run of digits is ranged, names
    without digits are listed as they are.'''
    # The report names the same groups of hosts several times (each reading of a verdict's
    # reasons): each list is ranged once.
    return _hostlist(tuple(names))


@functools.lru_cache(maxsize=64)
def _hostlist(names):
    groups = {}         # (prefix, suffix, width) -> {number}; width 0: not padded
    plain = []
    parsed = []
    for name in dict.fromkeys(names):
        m = _NUMBERED.fullmatch(name)
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
