"""The suite on five workers at once (issues 57, 65): `make test` runs `pytest -n 5 --dist
loadgroup` (pytest-xdist), because most of its time is waiting (Slurm jobs, daemons,
kernels' fixed durations), not computing.

- Five streams, one per worker, each in the order of collection: the test files that use
  the local Slurm cluster (any of their tests asks for ``slurm_cluster``, directly or
  through another fixture), those that use the fleet's 8-node cluster beside it
  (``fleet_cluster``), those that use the faults' 2-node cluster (``fault_cluster``:
  killed, timed-out and failed jobs, draining; with it cb-linktest's kernel files), and
  of the others those of Spack and of the kernels (tests/integration/spack/,
  tests/kernels/) and the rest (as one stream they
  took 17 min on this project's 2-core machine, about as long as the local cluster's:
  2026-12-07). A file stays whole on one worker, so its module fixtures run once; a
  cluster's tests stay one at a time, as they share its nodes, its size and its state
  directory. The Spack install is made at the start of its stream, and a cluster's files
  that use it go last in theirs (``LAST_IN_STREAM``), so that none waits for it.
- What two files on different workers would both use is held by one of them at a time:
  a module marked ``pytestmark = pytest.mark.holds(resource)`` holds that resource (a
  lock file) from its first test's set-up to its last test's teardown, a test marked so
  for itself; a file that needs it on the other worker waits (eth-test's ports:
  ``ETH_TEST_PORTS``).

- A cluster is started by one worker at a time (``held("local Slurm cluster start")``): two
  clusters' scripts must not both find munged absent and start it.

Without xdist (plain `pytest`, `pytest -p no:xdist`) the marks change nothing: one
process runs everything in order, and the locks are taken uncontended.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections import defaultdict

import pytest

# (fixture, stream): a file goes to the first stream whose cluster one of its tests uses.
CLUSTER_STREAMS = (("slurm_cluster", "local-slurm-cluster"), ("fleet_cluster", "fleet-cluster"),
                   ("fault_cluster", "fault-cluster"))
OTHER_STREAM = "without-cluster"
# (directory, stream) of a file that uses no cluster, the first whose directory holds it.
# The Spack files without a cluster go with the kernels', first (their directory sorts
# before tests/kernels/): the `local` environment's install, 300-450 s on a fresh cache,
# is done there while the clusters' streams run their other files. cb-linktest's files
# (200 s) go to the faults' cluster's stream, which had that to spare (on a clean clone
# of 3ce87af: the Spack and kernels' stream 1,080 s, the faults' 655 s).
OTHER_STREAMS = (("tests/integration/spack/", "kernels-spack"),
                 ("tests/kernels/cb_linktest/", "fault-cluster"),
                 ("tests/kernels/", "kernels-spack"))
# A cluster's file that uses the Spack install goes last in its stream, by when the
# install is done (plugins/spack.py: one install per session, whichever worker asks first).
LAST_IN_STREAM = "spack_site"
# eth-test's receiver binds fixed UDP ports (47000-47011 by default) on this machine's
# loopback, and eth-test-send sends to them: every test module that can start either
# outside a network namespace of its own is marked `pytestmark = ETH_TEST_PORTS`.
ETH_TEST_PORTS = pytest.mark.holds("eth-test ports")
# What a resource's holder waits for once it holds the lock: the previous holder's
# processes may outlive its module by seconds (a Slurm step is killed after scancel
# returns), and a UDP client anywhere on the machine may be given one of these ports as its
# ephemeral source port (47000 is inside Linux's 32768-60999).
FREE_UDP_PORTS = {"eth-test ports": range(47000, 47012)}
PORTS_WAIT_S = 60
# Shared by every session on this machine (two checkouts' suites at once wait, too).
LOCK_DIR = os.path.join(tempfile.gettempdir(), "cobalt-bench-test-locks")


def pytest_configure(config):
    # An xdist worker ignores SIGINT (execnet: Ctrl-C is the controller's), and so would
    # every process a test starts, as an ignored signal stays ignored across exec: the
    # tests of what Ctrl-C does to a command would see it ignored. A worker takes it as
    # pytest alone does.
    if hasattr(config, "workerinput") and signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line(
        "markers",
        "holds(resource): the test module uses a resource of this machine (named in "
        "words) that one module at a time may use; another worker's module waits for it "
        "(tests/plugins/workers.py)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Each item's stream, as an xdist_group mark (read by --dist loadgroup only)."""
    if not config.pluginmanager.hasplugin("xdist"):      # -p no:xdist: one stream
        return
    by_file = defaultdict(list)
    for item in items:
        by_file[item.path].append(item)
    last = set()
    for path, file_items in by_file.items():
        stream = next((name for fixture, name in CLUSTER_STREAMS
                       if any(fixture in item.fixturenames for item in file_items)), None)
        if stream is None:
            where = os.path.relpath(path, config.rootpath) + "/"
            stream = next((name for directory, name in OTHER_STREAMS
                           if where.startswith(directory)), OTHER_STREAM)
        elif any(LAST_IN_STREAM in item.fixturenames for item in file_items):
            last.add(path)
        mark = pytest.mark.xdist_group(stream)
        for item in file_items:
            item.add_marker(mark)
    items.sort(key=lambda item: item.path in last)     # stable: otherwise as collected


def _lock_path(resource: str) -> str:
    return os.path.join(LOCK_DIR, re.sub(r"[^A-Za-z0-9.-]+", "-", resource) + ".lock")


# resource -> how many blocks of this process hold it: a lock file opened again and locked
# by the process that holds it would wait for itself.
_HOLDING: dict[str, int] = defaultdict(int)


@contextlib.contextmanager
def _one_held(name: str):
    if _HOLDING[name]:
        _HOLDING[name] += 1
        try:
            yield
        finally:
            _HOLDING[name] -= 1
        return
    os.makedirs(LOCK_DIR, exist_ok=True)
    with open(_lock_path(name), "a") as fp:
        fcntl.flock(fp, fcntl.LOCK_EX)
        _HOLDING[name] += 1
        try:
            yield
        finally:
            _HOLDING[name] -= 1


@contextlib.contextmanager
def held(*resources: str):
    """The machine's `resources` (named in words), each held by this process alone (a lock
    file each, taken in name order: no two holders wait on each other) for the block; one
    this process holds already is held on."""
    with contextlib.ExitStack() as stack:
        for name in sorted(set(resources)):
            stack.enter_context(_one_held(name))
        yield


def _udp_ports_in_use(ports) -> list[int]:
    in_use = []
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                in_use.append(port)
    return in_use


def wait_for_free_udp_ports(ports, timeout=PORTS_WAIT_S):
    """Wait until no socket of this machine's network namespace holds any of `ports` on
    loopback; past `timeout`, fail naming the ports and what holds them (ss)."""
    deadline = time.monotonic() + timeout
    while (in_use := _udp_ports_in_use(ports)) and time.monotonic() < deadline:
        time.sleep(0.5)
    if in_use:
        holders = subprocess.run(["ss", "-uanp"], capture_output=True, text=True).stdout
        pytest.fail(f"UDP ports {in_use} on 127.0.0.1 still in use after {timeout} s, "
                    f"by:\n{holders}")


@contextlib.contextmanager
def _holding(marks):
    resources = [mark.args[0] for mark in marks if mark.name == "holds"]
    with held(*resources):
        for resource in resources:
            if resource in FREE_UDP_PORTS:
                wait_for_free_udp_ports(FREE_UDP_PORTS[resource])
        yield


@pytest.fixture(scope="module", autouse=True)
def _held_by_module(request):
    """The module's `holds` resources (its pytestmark), held before its first fixture and
    released after its last teardown."""
    with _holding(request.node.iter_markers("holds")):
        yield


@pytest.fixture(autouse=True)
def _held_by_test(request):
    """A test's own `holds` resources (a mark on the test alone: a module whose other tests
    do not need them, and would keep them from other workers' files all along)."""
    with _holding(request.node.own_markers):
        yield


