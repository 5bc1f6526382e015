"""The cobalt-bench test suite, laid out like the product:

- kernels/<kernel>/: each kernel's command line, results block, JSON document and faults;
- python/<subpackage>/: the cobalt_bench package, by layer (store, site, judging, report,
  preflight, linktest, reframe, cli, tools);
- integration/: the real infrastructure (slurm, reframe, spack, arm, modules, osu,
  ib_fabric, mpi, scripts);
- structure/: the shape rules of the tree;
- data/: recorded tool outputs and sysfs trees; c/: the C unit tests (make ctest).

What more than one test module uses is a plugin of tests/plugins/, loaded here; fixtures
and helpers are never imported from a conftest.py.
"""

pytest_plugins = [
    "plugins.workers",      # first: plugins.slurm imports its lock
    "plugins.checkout",
    "plugins.setup",
    "plugins.kernels",
    "plugins.slurm",
    "plugins.spack",
    "plugins.reframe_runs",
    "plugins.tools",
    "plugins.timing",
]
