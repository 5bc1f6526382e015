'''The former name of `python3 -m cobalt_bench.cli.dolphin` and cobalt_bench.tools.dolphin.'''

import sys

from ..tools.dolphin import *  # noqa: F401,F403  (the parsers, under their former name)
from ..cli.dolphin import main

if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
