"""Fixtures shared by the cobalt-bench test suite.

The tests import the ``cobalt_bench`` package by name: ``./bootstrap.sh --no-run`` installs
it editable into ``.venv`` (``pip install -e .``), so what they import is the checkout's
``python/cobalt_bench``. No test changes ``sys.path``; a session whose Python imports
another copy (or none) stops at once and says why.

- ``repo_root``: the checkout's root directory (a ``pathlib.Path``).
- ``slurm_cluster``: the ``local-slurm`` site's real Slurm cluster
  (``site-configs/local-slurm/cluster``), started once per test session. Tests that need
  it are skipped, with the reason, where it cannot run (not root, Slurm not installed);
  where it can run but fails to start, they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """The package under test must be the checkout's python/cobalt_bench."""
    try:
        import cobalt_bench
    except ImportError as exc:
        raise pytest.UsageError(
            f"cannot import cobalt_bench ({exc}): run the tests with the checkout's "
            ".venv/bin/python after ./bootstrap.sh --no-run (.venv/bin/pip install -e .)")
    where = Path(cobalt_bench.__file__).resolve().parent
    if where != REPO_ROOT / "python" / "cobalt_bench":
        raise pytest.UsageError(
            f"cobalt_bench is imported from {where}, not from this checkout's python/: "
            ".venv/bin/pip install -e . (or unset a PYTHONPATH that names another tree)")
CLUSTER_SCRIPT = REPO_ROOT / "site-configs" / "local-slurm" / "cluster"

# What `cluster start` needs, by command; the package that provides each on Debian 12.
_REQUIRED_COMMANDS = {
    "slurmctld": "slurmctld (slurm-wlm)",
    "slurmd": "slurmd (slurm-wlm)",
    "slurmdbd": "slurmdbd",
    "sbatch": "slurm-client",
    "munged": "munge",
    "mariadbd": "mariadb-server",
}

# Seconds allowed for `cluster start` (a cold start takes a few seconds) and `stop`.
_START_TIMEOUT = 300
_STOP_TIMEOUT = 120


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The root of the cobalt-bench checkout."""
    return REPO_ROOT


@dataclass
class SlurmCluster:
    """A running local-slurm cluster, as the ``slurm_cluster`` fixture hands it out."""

    script: Path  # site-configs/local-slurm/cluster
    state_dir: Path  # $COBALT_SLURM_DIR: configuration, state, logs
    slurm_conf: Path  # export this as SLURM_CONF
    env: dict = field(repr=False)  # os.environ plus SLURM_CONF: pass to subprocess
    started_here: bool = False  # True when this session started it (and stops it)

    def run(self, args, timeout: float = 60, check: bool = False, **kwargs):
        """Run a command (a list) with the cluster's environment; text output captured."""
        return subprocess.run(
            [str(a) for a in args],
            env=self.env,
            text=True,
            capture_output=True,
            timeout=timeout,
            check=check,
            **kwargs,
        )

    def cluster(self, *args, timeout: float = _START_TIMEOUT):
        """Run the ``cluster`` script with the given arguments."""
        return self.run([self.script, *args], timeout=timeout)

    def logs(self) -> str:
        """The end of every daemon log, for failure messages."""
        try:
            return self.cluster("logs", "-n", "20", timeout=30).stdout
        except Exception as exc:  # a failure message must not fail itself
            return f"(logs unavailable: {exc})"


def _cannot_run_reason() -> str | None:
    """Why the local cluster cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return ("the local Slurm cluster must be started as root (its daemons drop to the "
                "munge, mysql and slurm users); run the tests as root")
    missing = [pkg for cmd, pkg in _REQUIRED_COMMANDS.items()
               if shutil.which(cmd) is None
               and not (cmd == "mariadbd" and shutil.which("mysqld"))]
    if missing:
        return "not installed: " + ", ".join(missing)
    if not os.access(CLUSTER_SCRIPT, os.X_OK):
        return f"{CLUSTER_SCRIPT} is missing or not executable"
    return None


@pytest.fixture(scope="session")
def slurm_cluster():
    """Start the local-slurm cluster (unless it already runs) and yield a SlurmCluster.

    A cluster that was already up before the session is left running at the end; one that
    this session started is stopped again.
    """
    reason = _cannot_run_reason()
    if reason:
        pytest.skip(f"local Slurm cluster unavailable: {reason}")

    state_dir = Path(os.environ.get("COBALT_SLURM_DIR", "/var/tmp/cobalt-bench-slurm"))
    state_dir = state_dir.resolve()
    slurm_conf = state_dir / "etc" / "slurm.conf"
    env = dict(os.environ, SLURM_CONF=str(slurm_conf))
    env.setdefault("COBALT_SLURM_DIR", str(state_dir))
    cluster = SlurmCluster(CLUSTER_SCRIPT, state_dir, slurm_conf, env)

    was_running = cluster.cluster("status", timeout=60).returncode == 0
    if not was_running:
        start = cluster.cluster("start")
        if start.returncode != 0:
            pytest.fail(
                "`cluster start` failed (exit %d):\n%s\n%s"
                % (start.returncode, start.stdout, start.stderr),
                pytrace=False,
            )
        cluster.started_here = True

    yield cluster

    if cluster.started_here:
        cluster.cluster("stop", timeout=_STOP_TIMEOUT)
