'''cobalt-bench's Python side, in layers that import only downward (docs/architecture.md):

  errors, paths, fileio, netns   the bottom: errors, where the tree is, atomic files
  tools/      third-party benchmarks' output parsers and install locators (OSU, perftest,
              Dolphin, InfiniBand ports)
  kernels/    one descriptor per kernel: name, family, options setting, metrics, the checks
              its JSON document must pass, plots, hints
  store/      the results model (Result, Metric, Case, Run), where runs live, the readers
              of ReFrame reports, perflogs and kernel documents
  site/       a site: references.yaml, compliance.yaml, the site loader
  preflight/  the system settings check and its document
  judging/    one bounds rule, one sanity rule, judgements and the verdict
  linktest/   a cb-linktest results file: analysis, figures, text and PDF
  report/     the compliance report: model, Markdown, HTML, plots, compare
  reframe/    the ReFrame base classes and site helpers the checks and site configs import
  cli/        the `cobalt-bench` command: the only code that reads argv, prints and exits
'''

from . import paths
from .errors import CannotRun, UsageError  # noqa: F401  (the package's API)

__version__ = paths.version()
