'''`python3 -m cobalt_bench.linktest_report` and the console script `cb-linktest-report`
(the names job scripts, docs and users call): the command is
cobalt_bench.cli.linktest_report, its work cobalt_bench.linktest. Kept so that those names
go on working, and so that the command's re-run with the checkout's .venv Python
(`python -m cobalt_bench.linktest_report ...`) finds itself.'''

import sys

from .cli.linktest_report import main

if __name__ == '__main__':
    sys.exit(main())
