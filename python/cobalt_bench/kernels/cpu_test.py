'''cpu-test: every core's verified FMA rate, clock, spread and throttle drop (src/cpu-test).'''

from .descriptor import Kernel

CORE_NUMBERS = ('gflops', 'first_interval_gflops', 'sustained_gflops', 'clock_ghz',
                'flop_per_cycle')
INTERVAL_NUMBERS = ('end_s', 'seconds', 'node_gflops', 'min_core_gflops')


def hints(doc):
    '''A slow core among fast ones points at that core; a large drop at the cooling.'''
    out = []
    metrics = doc.get('metrics', {})
    ratio = metrics.get('slowest_core_ratio', {}).get('value')
    if isinstance(ratio, (int, float)) and ratio < 90:
        slow = min((c for c in doc.get('cores') or [] if isinstance(c.get('gflops'), (int, float))),
                   key=lambda c: c['gflops'], default=None)
        where = f' (CPU {slow.get("cpu")})' if slow else ''
        out.append(f'cpu-test: the slowest core{where} ran at {ratio:.3g}% of the median '
                   'core: look at its clock, its temperature and what else runs on it')
    drop = metrics.get('throttle_drop', {}).get('value')
    if isinstance(drop, (int, float)) and drop > 10:
        out.append(f'cpu-test: the FLOP rate dropped {drop:.3g}% from the first interval to '
                   'the sustained one: the node throttles (cooling, power limit)')
    return out


KERNEL = Kernel(
    name='cpu-test', family='compute', check='CpuTest', binaries=('cpu-test',),
    declared=('node_gflops', 'core_gflops_median', 'core_gflops_min', 'core_gflops_max',
              'slowest_core_ratio', 'cores', 'verification_errors'),
    options_setting='cpu_test_opts',
    options_doc="cpu-test options (CpuTest), e.g. '--burn 10' or '--desired-gflops 40'; "
                "'': cpu-test's defaults (every core, 10 s)",
    number_lists={'cores': CORE_NUMBERS, 'intervals': INTERVAL_NUMBERS},
    plots=('cpu_test_cores', 'cpu_test_burn'), hints=hints,
    # What a node computes is known from its peers, not in advance: without a reference
    # of the site, each node's rates are held against the other nodes' (judging.fleet);
    # the slowest core's share catches one sick core among many.
    peers=('node_gflops', 'core_gflops_median', 'slowest_core_ratio'))
