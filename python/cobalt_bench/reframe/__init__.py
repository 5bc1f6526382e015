'''cobalt-bench's ReFrame library: the base classes of the checks in reframe_checks/ and
the site helpers of the site configurations in site-configs/, as ReFrame's hpctestlib and
the EESSI test-suite hold theirs. A check file imports only `reframe` and this package:

    import reframe as rfm
    from cobalt_bench.reframe import KernelJsonTest

    @rfm.simple_test
    class MemTest(KernelJsonTest):
        kernel = 'mem-test'   # executable, JSON file, site setting, metrics: its descriptor
        ...

  KernelJsonTest   a cobalt-bench kernel, judged by its --json document (kernel.py)
  OsuBenchmark     one OSU MPI benchmark (osu.py)
  IbWriteBwTest    perftest's ib_write_bw from every InfiniBand port (infiniband.py)
  DolphinTest, DolphinAllNodes, DolphinPair   Dolphin PCIe interconnect tools (dolphin.py)
  SiteSettings     the partition `extras` the checks read, declared, typed and validated
                   (settings.py: SETTINGS, settings.describe())
  Site             what every site configuration shares (site.py)

The parsers of the tools' outputs are in cobalt_bench.tools (no ReFrame there).
'''

from .dolphin import DolphinAllNodes, DolphinPair, DolphinTest
from .infiniband import IbWriteBwTest
from .kernel import KernelJsonTest
from .osu import OsuBenchmark
from .settings import (SETTINGS, Setting, SiteSettings, session_id, shell_arg, shell_args,
                       shell_words, values_of_partitions)
from .site import Site

__all__ = [
    'DolphinAllNodes',
    'DolphinPair',
    'DolphinTest',
    'IbWriteBwTest',
    'KernelJsonTest',
    'OsuBenchmark',
    'SETTINGS',
    'Setting',
    'Site',
    'SiteSettings',
    'session_id',
    'shell_arg',
    'shell_args',
    'shell_words',
    'values_of_partitions',
]
