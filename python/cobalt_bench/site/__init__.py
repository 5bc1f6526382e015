'''A site's definition: references.yaml (the numbers every result is judged by, ReFrame's
external reference format), compliance.yaml (what compliance requires), and the ReFrame
configuration (config.py) whose systems and partitions they name; loaded and validated by
one loader (site.loader), used by everything that judges: ReFrame (the site configs call
Site.checked()), `cobalt-bench judge` and the report.

A reference that would judge nothing is an error here (SiteError), not a silent pass: a
check that is not in reframe_checks/, a partition key that names no partition of the site,
a value that is not [value, lower, upper, unit] or a bound that ReFrame would reject, an
empty file or one that is not a mapping. Every error names the file, the check, the
partition key and the metric.
'''

from .bounds import Bounds, meets  # noqa: F401
from .checks import CheckInfo, check_of_kernel, checks_dir, known_checks  # noqa: F401
from .compliance import COMPLIANCE, Compliance, Required, load_compliance  # noqa: F401
from .files import SiteError  # noqa: F401
from .loader import (SiteDef, load_site, site_dir, site_systems, sites_dir,  # noqa: F401
                     systems_of, validate)
from .references import REFERENCES, Ref, References, load_references  # noqa: F401
