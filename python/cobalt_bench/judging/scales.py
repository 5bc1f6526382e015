'''The scale of a distribution over nodes (judging.fleet's rule, docs/fleet.md): the noise of
one value, measured from the nodes' repeats or given from the partition's history, else a
default pooled with the nodes' spread; the spread beyond the noise; and the metrics that
are compared once because one is a constant multiple of another.'''

import math
import statistics

from .. import kernels

MAD_SCALE = 1.4826          # MAD x this = the standard deviation of normal noise
#: The standard error of MAD_SCALE x MAD over n nodes of normal noise is this / sqrt(n)
#: sigmas (the MAD's efficiency, 37 %: 1 / sqrt(2 x 0.368)).
MAD_SE = 1.166
#: With a measured noise, the nodes' own spread counts once it exceeds what that noise
#: explains by this many standard errors (the MAD of few nodes scatters by tens of %).
MAD_ALLOWANCE = 2.0
#: The relative noise assumed where none is measured: mem-test unpaced, recorded on an
#: exclusive 16-core node (4.4 % whole node, 4.8 % one station; bench/data/README.md).
DEFAULT_NOISE = 0.05
#: ... counted as the spread of this many nodes, pooled with the nodes' own spread: it
#: rules a few nodes, the nodes' own spread rules a thousand.
DEFAULT_NOISE_NODES = 10
#: Repeats measure the noise once they give this many degrees of freedom (sum of each
#: node's values less one).
MIN_REPEAT_DF = 3
MIN_EFFECT = 0.05           # an outlier is also at least 5 % off the median
PERCENT_FLOOR = 1.0         # for a share in %, sigma is at least one percentage point
#: Two metrics of a check whose ratio is the same on every case within this (relative):
#: one is a constant multiple of the other, compared once (mem-test's percent_of_desired).
TWIN_TOLERANCE = 1e-6


def measured_noise(dist, by_node, med, noise):
    '''(the standard deviation of one value, where it was measured): the pooled spread of
    the nodes' repeats in this run (each value about its node's mean), else the relative
    noise `noise` gives for (partition, check, metric), else (None, 'default').'''
    df = sum(len(xs) - 1 for xs in by_node.values())
    if df >= MIN_REPEAT_DF:
        squares = sum((x - statistics.fmean(xs)) ** 2 for xs in by_node.values() for x in xs)
        return math.sqrt(squares / df), 'repeats'
    relative = (noise or {}).get((dist.partition, dist.check, dist.metric))
    if isinstance(relative, (int, float)) and not isinstance(relative, bool) and \
            math.isfinite(relative) and relative >= 0:
        return relative * abs(med), 'history'
    return None, 'default'


def scale_of(dist, by_node, med, spread, noise):
    '''({node: sigma of its mean}, sigma of a typical node, noise of one value, where the
    noise comes from, whether the noise alone sets sigma) by judging.fleet's rule.'''
    n = len(by_node)
    typical = statistics.median(len(xs) for xs in by_node.values())
    noise_sd, source = measured_noise(dist, by_node, med, noise)
    if noise_sd is None:
        # Not measured: the default, weighing as DEFAULT_NOISE_NODES nodes, pooled with the
        # nodes' own spread; never below that spread.
        default = DEFAULT_NOISE * abs(med)
        noise_sd = math.sqrt((n * spread ** 2 + DEFAULT_NOISE_NODES * default ** 2)
                             / (n + DEFAULT_NOISE_NODES))
        quiet = noise_sd >= spread

        def sigma(k):
            return max(noise_sd, spread)
    else:
        # Measured: a node's mean of k values has noise sd / sqrt(k); the nodes' spread
        # beyond what that noise explains (with the MAD's own scatter allowed) is added.
        allowed = (1 + MAD_ALLOWANCE * MAD_SE / math.sqrt(n)) * noise_sd / math.sqrt(typical)
        excess = max(0.0, spread ** 2 - allowed ** 2)
        quiet = excess == 0

        def sigma(k):
            return math.sqrt(noise_sd ** 2 / k + excess)
    floor = PERCENT_FLOOR if dist.unit == '%' else 0.0
    return ({node: max(sigma(len(xs)), floor) for node, xs in by_node.items()},
            max(sigma(typical), floor), noise_sd, source, quiet)


def twin_ratio(a, b):
    '''b / a where distribution b is a constant multiple of distribution a: the same cases
    (node and case name, in the order analyse collects them), no value zero, the ratio the
    same on every case within TWIN_TOLERANCE and a's values not all equal; else None.'''
    if len(a.values) != len(b.values) or len({v.value for v in a.values}) < 2:
        return None
    low = high = None
    for x, y in zip(a.values, b.values):
        if (x.node, x.check) != (y.node, y.check) or not x.value or not y.value:
            return None
        r = y.value / x.value
        low, high = (r, r) if low is None else (min(low, r), max(high, r))
        if low * high <= 0 or high - low > TWIN_TOLERANCE * min(abs(low), abs(high)):
            return None
    return (low + high) / 2


def _metric_rank(check, metric):
    kernel = kernels.of_check(check) or kernels.KERNELS.get(check)
    order = list(kernel.metrics) if kernel else []
    return (order.index(metric) if metric in order else len(order), metric)


def primaries(groups):
    '''{(partition, check, metric): Distribution} less each distribution that is a constant
    multiple of another of its partition and check (twin_ratio): one cause counted once
    (mem-test's percent_of_desired is 100 x measured_speed / desired_speed; paced, its
    per-operation speeds are fixed shares of measured_speed). Of twins, the one kept is the
    first its kernel's descriptor declares, else the first by name; the site's choice came
    first (_compared: where the references judge some metrics, only those are compared).'''
    kept = {}
    for key in sorted(groups, key=lambda k: (k[0], k[1], _metric_rank(k[1], k[2]))):
        if not any(p[:2] == key[:2] and twin_ratio(kept[p], groups[key]) is not None
                   for p in kept):
            kept[key] = groups[key]
    return kept
