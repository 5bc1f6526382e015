"""Where the suite's wall time goes (issue 57): each test's wall time and CPU time, its
setup and teardown included, and at the end the 30 slowest with their CPU share.

The CPU time is this process's and its waited-for children's (``getrusage``: user +
system), taken around the test's three phases: a test whose CPU share is low spends its
time waiting (a job's state, a daemon, a timeout), one near 100 % of a CPU (or above, where
children run beside) computes. The daemons of the local cluster are not this process's
children: what their jobs compute shows as waiting here.

``--timing-file FILE`` also writes every test's figures as JSON lines (nodeid, wall_s,
cpu_s, phases), for comparing two runs. ``--timing-top N`` changes how many are printed
(0: none).
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

_TIMES: dict = {}


def pytest_addoption(parser):
    group = parser.getgroup("timing", "where the wall time goes")
    group.addoption("--timing-top", type=int, default=30, metavar="N",
                    help="print the N slowest tests with their CPU share (default 30)")
    group.addoption("--timing-file", metavar="FILE",
                    help="write each test's wall and CPU seconds as JSON lines to FILE")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield from _timed(item, "teardown")


def _timed(item, phase):
    wall, cpu = time.monotonic(), _cpu()
    yield
    entry = _TIMES.setdefault(item.nodeid, {"wall_s": 0.0, "cpu_s": 0.0, "phases": {}})
    spent = time.monotonic() - wall
    entry["wall_s"] += spent
    entry["cpu_s"] += _cpu() - cpu
    entry["phases"][phase] = round(spent, 3)


def pytest_terminal_summary(terminalreporter, config):
    top = config.getoption("timing_top")
    dest = config.getoption("timing_file")
    if dest:
        with open(dest + ".tmp", "w") as fp:
            for nodeid, e in _TIMES.items():
                fp.write(json.dumps({"nodeid": nodeid, "wall_s": round(e["wall_s"], 3),
                                     "cpu_s": round(e["cpu_s"], 3),
                                     "phases": e["phases"]}) + "\n")
        os.replace(dest + ".tmp", dest)
    if not top or not _TIMES:
        return
    wall = sum(e["wall_s"] for e in _TIMES.values())
    cpu = sum(e["cpu_s"] for e in _TIMES.values())
    tr = terminalreporter
    tr.write_sep("=", f"{min(top, len(_TIMES))} slowest tests, setup and teardown included "
                      "(CPU: this process and its children)")
    tr.write_line(f"{'wall s':>8} {'CPU s':>8} {'CPU %':>6}  test")
    for nodeid, e in sorted(_TIMES.items(), key=lambda kv: -kv[1]["wall_s"])[:top]:
        share = 100 * e["cpu_s"] / e["wall_s"] if e["wall_s"] > 0 else 0
        tr.write_line(f"{e['wall_s']:8.1f} {e['cpu_s']:8.1f} {share:6.0f}  {nodeid}")
    tr.write_line(f"all {len(_TIMES)} tests: {wall:.0f} s wall in tests, {cpu:.0f} s CPU "
                  f"({100 * cpu / wall if wall else 0:.0f} %)")
