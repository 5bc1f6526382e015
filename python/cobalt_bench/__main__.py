'''`python -m cobalt_bench ...`: the same as the `cobalt-bench` console script.'''

import sys

from .cli import main

sys.exit(main())
