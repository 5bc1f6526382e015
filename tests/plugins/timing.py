"""Where the suite's wall time goes (issue 57): each test's wall time and CPU time, its
setup and teardown included, and at the end the 30 slowest with their CPU share.

The wall time is each phase's report's duration; the CPU time is the process's that ran
it and its waited-for children's (``getrusage``: user + system), taken around the test's
three phases: a test whose CPU share is low spends its time waiting (a job's state, a
daemon, a timeout), one near 100 % of a CPU (or above, where children run beside)
computes. What the local clusters' jobs compute is no child of the test's (slurmd runs
it): it is counted apart, as the job CPU time of each job the test submitted (its steps'
user + system time from the cluster's accounting, ``plugins.slurm.JOBS_CPU``, charged to
the test that was running in the process when the job was submitted), so that a test
waiting on Slurm is told from one whose jobs compute.

``--timing-file FILE`` also writes every test's figures as JSON lines (nodeid, wall_s,
cpu_s, job_cpu_s, phases), for comparing two runs. ``--timing-top N`` changes how many are printed
(0: none).
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

from plugins import slurm

_TIMES: dict = {}
# {xdist worker: [tests, wall seconds]}: a worker runs its streams one test at a time, so
# the busiest one's wall time is the least the session can take.
_WORKERS: dict = {}
_STARTED = time.monotonic()
# (nodeid, start, end) in epoch seconds of each test this process ran, set-up to teardown.
_WINDOWS: list = []


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


_PHASE_CPU = pytest.StashKey[dict]()


def _entry(nodeid):
    return _TIMES.setdefault(nodeid, {"wall_s": 0.0, "cpu_s": 0.0, "job_cpu_s": 0.0,
                                      "phases": {}})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.time()
    yield
    _WINDOWS.append((item.nodeid, start, time.time()))


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
    cpu = _cpu()
    yield
    item.stash.setdefault(_PHASE_CPU, {})[phase] = _cpu() - cpu


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The phase's CPU seconds go with its report (under pytest-xdist, from the worker
    that ran it to the process that prints)."""
    outcome = yield
    spent = item.stash.get(_PHASE_CPU, {}).get(call.when)
    if spent is not None:
        outcome.get_result().user_properties.append(("cpu_s", spent))


def pytest_runtest_logreport(report):
    entry = _entry(report.nodeid)
    entry["wall_s"] += report.duration
    entry["cpu_s"] += sum(v for k, v in report.user_properties if k == "cpu_s")
    entry["phases"][report.when] = round(report.duration, 3)
    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
    if worker is not None:
        tally = _WORKERS.setdefault(worker, [0, 0.0])
        tally[0] += report.when == "call"
        tally[1] += report.duration


def _jobs_by_test() -> dict:
    """{nodeid: job CPU seconds}: each job of this process's clusters charged to the test
    of this process running when it was submitted (one test at a time uses a cluster);
    one submitted between tests (a module fixture's teardown) to the test before. Slurm
    records the submit time in whole seconds: a test's start is taken in whole seconds
    too, or the job a test submits in its first second is charged to the test before."""
    charged: dict = {}
    for _, submitted, cpu in slurm.JOBS_CPU:
        before = [w for w in _WINDOWS if int(w[1]) <= submitted]
        if before:
            nodeid = max(before, key=lambda w: w[1])[0]
            charged[nodeid] = charged.get(nodeid, 0.0) + cpu
    return charged


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """The clusters are stopped by now, their accounting read (plugins.slurm): a worker
    sends its tests' job CPU time to the controller, a lone process keeps it."""
    charged = _jobs_by_test()
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["timing_job_cpu_s"] = charged
    else:
        _charge(charged)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _charge(getattr(node, "workeroutput", {}).get("timing_job_cpu_s", {}))


def _charge(charged):
    for nodeid, cpu in charged.items():
        _entry(nodeid)["job_cpu_s"] += cpu


def pytest_terminal_summary(terminalreporter, config):
    top = config.getoption("timing_top")
    dest = config.getoption("timing_file")
    if dest:
        with open(dest + ".tmp", "w") as fp:
            for nodeid, e in _TIMES.items():
                fp.write(json.dumps({"nodeid": nodeid, "wall_s": round(e["wall_s"], 3),
                                     "cpu_s": round(e["cpu_s"], 3),
                                     "job_cpu_s": round(e["job_cpu_s"], 3),
                                     "phases": e["phases"]}) + "\n")
        os.replace(dest + ".tmp", dest)
    if not top or not _TIMES:
        return
    wall = sum(e["wall_s"] for e in _TIMES.values())
    cpu = sum(e["cpu_s"] for e in _TIMES.values())
    jobs = sum(e["job_cpu_s"] for e in _TIMES.values())
    tr = terminalreporter
    tr.write_sep("=", f"{min(top, len(_TIMES))} slowest tests, setup and teardown included "
                      "(CPU: the test's process and its children; jobs: its Slurm jobs' "
                      "steps)")
    tr.write_line(f"{'wall s':>8} {'CPU s':>8} {'jobs s':>8} {'CPU %':>6}  test")
    for nodeid, e in sorted(_TIMES.items(), key=lambda kv: -kv[1]["wall_s"])[:top]:
        share = 100 * (e["cpu_s"] + e["job_cpu_s"]) / e["wall_s"] if e["wall_s"] > 0 else 0
        tr.write_line(f"{e['wall_s']:8.1f} {e['cpu_s']:8.1f} {e['job_cpu_s']:8.1f} "
                      f"{share:6.0f}  {nodeid}")
    tr.write_line(f"all {len(_TIMES)} tests: {wall:.0f} s wall in tests, {cpu:.0f} s CPU "
                  f"in the tests' processes and {jobs:.0f} s in their Slurm jobs "
                  f"({100 * (cpu + jobs) / wall if wall else 0:.0f} %); the session: "
                  f"{time.monotonic() - _STARTED:.0f} s wall")
    if _WORKERS:
        tr.write_line("per worker: " + ", ".join(
            f"{worker} {n} tests {w:.0f} s" for worker, (n, w) in sorted(_WORKERS.items())))
