'''The former name of cobalt_bench.tools (kept for the scripts and site checks that import
it, and for `python3 -m cobalt_bench.parsers.dolphin`).'''

from ..tools import dolphin, ib_ports, osu, osu_install, perftest  # noqa: F401
