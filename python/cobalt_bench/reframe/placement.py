'''Which partitions a check is made for, by ReFrame's own means: a partition's features,
devices and launcher, as ReFrame's hpctestlib and the EESSI test-suite select them, so
that any site configuration (written for cobalt-bench or for another suite) gets each check
on exactly the partitions it fits, and `reframe -l` shows no check where it cannot run.

  placement     a partition fits when                       checks
  any           always                                      Preflight
  compute       it is not a login partition (feature        MemTest, EthTest
                'login', or named 'login')
  gpu           feature 'gpu', or GPU devices               GpuCopy
                ('devices': [{'type': 'gpu', ...}])
  mpi           feature 'mpi'; in a system where no         OsuPt2Pt, OsuCollective,
                partition has it: an MPI launcher (any but  CbLinkTest
                local, ssh, clush, pdsh)
  infiniband    feature 'infiniband'                        IbWriteBw, SmpMadStress
  dolphin       feature 'dolphin', or extras['cobalt_bench']['dolphin']['nodes'] set
                                                            the Dolphin checks

A check says which with `placement = 'gpu'` (SiteSettings). What is absent at run time on a
partition that fits (no InfiniBand port in sysfs, OSU not installed) is still a skip that
says so. docs/running-at-a-site.md has the same table.
'''

__all__ = ['PLACEMENTS', 'fits', 'partitions_for']

# ReFrame's launchers that start one process on a node, not MPI ranks.
_NOT_MPI = frozenset({'local', 'ssh', 'clush', 'pdsh'})


def _login(part):
    return 'login' in part.features or part.name == 'login'


def _launcher(part):
    return getattr(part.launcher_type, 'registered_name', '')


# Each: (partition, setting) -> bool; setting(partition, name) is a site setting's value
# (settings.partition_value, passed in: the settings table is the one reader of extras).
PLACEMENTS = {
    'any': lambda p, setting: True,
    'compute': lambda p, setting: not _login(p),
    'gpu': lambda p, setting: 'gpu' in p.features or bool(p.select_devices('gpu')),
    'mpi': lambda p, setting: 'mpi' in p.features,
    'mpi launcher': lambda p, setting: _launcher(p) not in _NOT_MPI,
    'infiniband': lambda p, setting: 'infiniband' in p.features,
    'dolphin': lambda p, setting: ('dolphin' in p.features or
                                   bool(setting(p, 'dolphin').get('nodes'))),
}


def fits(placement, part, setting):
    '''Whether the ReFrame partition `part` fits checks of `placement` (PLACEMENTS).'''
    try:
        return PLACEMENTS[placement](part, setting)
    except KeyError:
        raise ValueError(f'unknown placement {placement!r}; placements: '
                         f'{", ".join(PLACEMENTS)}') from None


def partitions_for(placement, system, setting):
    '''The full names of the partitions of `system` that fit `placement`.'''
    if placement == 'mpi' and not any(fits('mpi', p, setting) for p in system.partitions):
        # A site that marks no partition 'mpi' (another suite's configuration, which
        # says it with its launchers) gets the MPI checks wherever ranks can start; one
        # that marks some has chosen (a one-node partition cannot run two-node tests).
        placement = 'mpi launcher'
    return [p.fullname for p in system.partitions if fits(placement, p, setting)]
