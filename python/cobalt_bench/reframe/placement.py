'''Which partitions a check is made for, by ReFrame's own means: a partition's features,
devices and launcher, as ReFrame's hpctestlib and the EESSI test-suite select them, so
that any site configuration (written for cobalt-bench or for another suite) gets each check
on exactly the partitions it fits, and `reframe -l` shows no check where it cannot run.

  placement     a partition fits when                       checks
  any           always                                      Preflight
  compute       it is not a login partition (feature        MemTest, MemCapacity,
                'login', or named 'login')                  CpuTest, EthTest
  gpu           feature 'gpu', or GPU devices               (a GPU of any vendor)
                ('devices': [{'type': 'gpu', ...}])
  nvidia gpu    'gpu', and its GPUs are NVIDIA's or of no   GpuCopy
                vendor said: not where the partition says
                AMD or Intel (gpu_vendors: extras
                'gpu_vendor' as EESSI writes it, features
                'nvgpu'/'amdgpu'/'intelgpu' as CSCS does,
                a GPU device's arch: sm_* NVIDIA, gfx*
                AMD, pvc/xe* Intel)
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

__all__ = ['PLACEMENTS', 'fits', 'gpu_vendors', 'partitions_for']

# ReFrame's launchers that start one process on a node, not MPI ranks.
_NOT_MPI = frozenset({'local', 'ssh', 'clush', 'pdsh'})


def _login(part):
    return 'login' in part.features or part.name == 'login'


def _launcher(part):
    return getattr(part.launcher_type, 'registered_name', '')


#: What real configurations say of a partition's GPU vendor (lower case).
_VENDOR_FEATURES = {
    'nvidia': {'nvgpu', 'nvidia', 'cuda', 'nvidia-gpu', 'gpu-nvidia'},
    'amd': {'amdgpu', 'amd-gpu', 'gpu-amd', 'rocm', 'mi250', 'mi300'},
    'intel': {'intelgpu', 'intel-gpu', 'gpu-intel', 'pvc', 'xe'},
}
_VENDOR_ARCH = (('sm_', 'nvidia'), ('gfx', 'amd'), ('pvc', 'intel'), ('xe', 'intel'))


def _gpu(part):
    return 'gpu' in part.features or bool(part.select_devices('gpu'))


def gpu_vendors(part, setting):
    '''The GPU vendors a partition's configuration names ('nvidia', 'amd', 'intel'): the
    extras key 'gpu_vendor' (EESSI's convention; read, never required), its features, and
    its GPU devices' arch.'''
    vendors = set()
    named = setting(part, 'gpu_vendor')
    if isinstance(named, str) and named.strip():
        vendors.add(named.strip().lower())
    features = {f.lower() for f in part.features}
    vendors |= {v for v, said in _VENDOR_FEATURES.items() if features & said}
    for dev in part.select_devices('gpu'):
        arch = str(getattr(dev, 'arch', '') or '').lower()
        vendors |= {v for prefix, v in _VENDOR_ARCH if arch.startswith(prefix)}
    return vendors


def _nvidia_or_unsaid(part, setting):
    vendors = gpu_vendors(part, setting)
    return not vendors or 'nvidia' in vendors


# Each: (partition, setting) -> bool; setting(partition, name) is a site setting's value
# (settings.partition_value, passed in: the settings table is the one reader of extras).
PLACEMENTS = {
    'any': lambda p, setting: True,
    'compute': lambda p, setting: not _login(p),
    'gpu': lambda p, setting: _gpu(p),
    'nvidia gpu': lambda p, setting: _gpu(p) and _nvidia_or_unsaid(p, setting),
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
