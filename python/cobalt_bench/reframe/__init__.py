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

import importlib

#: Where each name is defined. Loaded on first use (PEP 562): a site's config.py imports
#: only cobalt_bench.reframe.site, and cobalt-bench's own commands read it without
#: importing ReFrame (a quarter of a second per command).
_HOMES = {
    'DolphinAllNodes': 'dolphin', 'DolphinPair': 'dolphin', 'DolphinTest': 'dolphin',
    'IbWriteBwTest': 'infiniband',
    'KernelJsonTest': 'kernel',
    'OsuBenchmark': 'osu',
    'SETTINGS': 'settings', 'Setting': 'settings', 'SiteSettings': 'settings',
    'session_id': 'settings', 'shell_arg': 'settings', 'shell_args': 'settings',
    'shell_words': 'settings', 'values_of_partitions': 'settings',
    'Site': 'site',
}


def __getattr__(name):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(f'.{home}', __name__), name)
    globals()[name] = value
    return value


__all__ = sorted(_HOMES)
