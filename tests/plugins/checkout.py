"""The checkout under test, found once: its root, its programs, the package it must
import; and what every test shares about running those programs.

- ``REPO_ROOT`` (a ``pathlib.Path``) and ``ROOT`` (the same, a ``str``): the checkout's
  root; ``BIN``, ``DATA``: its bin/ and tests/data/. Fixtures ``repo_root`` and ``root``
  hand out the same two.
- ``clean_env()``: an environment for a command under test, without the caller's ReFrame
  and cobalt-bench settings.
- ``results_block()``: the results block that ends a kernel's human output.
- ``REFRAME``: ReFrame's command line, with the interpreter that runs the tests.
- ``installed_tree``: a `make install` of the checkout, once per session.
- ``MPI_ENV``: what Open MPI needs to start ranks as root.
- the ``measures`` marker: a timed assertion, rerun once where it fails.

The tests import the ``cobalt_bench`` package by name: ``./bootstrap.sh --no-run``
installs it editable into ``.venv`` (``pip install -e .``), so what they import is the
checkout's ``python/cobalt_bench``. No test changes ``sys.path``; a session whose Python
imports another copy (or none) stops at once and says why.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ROOT = str(REPO_ROOT)
BIN = REPO_ROOT / "bin"
DATA = REPO_ROOT / "tests" / "data"

# ReFrame's command line, from the interpreter that runs the tests (the project's venv).
REFRAME = [sys.executable, "-c",
           'import sys; from reframe.frontend.cli import main; '
           'sys.argv[0] = "reframe"; sys.exit(main())']

# Open MPI refuses to start ranks as root without these.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

# What a command under test must not inherit from the shell that runs the tests: the
# user's ReFrame settings and a loaded cobalt-bench (its results store, its root).
_CALLERS = ("RFM_", "COBALT_BENCH_")
# A batch job's own variables, for a job submitted from inside a test.
JOB_STATE = ("SLURM_JOB", "SBATCH_")
# Lmod's state: a shell with no module loaded.
MODULE_STATE = ("LMOD", "__LMOD", "_LMFILES_", "LOADEDMODULES", "MODULEPATH", "_ModuleTable")
DEBIAN_PATH = "/usr/local/bin:/usr/bin:/bin"


def clean_env(base: dict | None = None, *, drop: tuple = (), **extra) -> dict:
    """`base` (default: this process's environment) without the variables whose names
    start with RFM_, COBALT_BENCH_ or one of `drop`, then `extra` set."""
    prefixes = _CALLERS + tuple(drop)
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not k.startswith(prefixes)}
    env.update(extra)
    return env


RESULTS_RULE = "----- Test results -----"


def results_block(text: str) -> dict:
    """The last results block of a kernel's human output, which must end it:
    {label: value}, one per "Label: value" line."""
    lines = text.rstrip("\n").split("\n")
    assert RESULTS_RULE in lines, text
    start = len(lines) - 1 - lines[::-1].index(RESULTS_RULE)
    block = {}
    for line in lines[start + 1:]:
        label, _, value = line.partition(":")
        assert value.strip(), f"not a results line: {line!r}"
        block[label] = value.strip()
    return block


def repo_version() -> str:
    """The checkout's version (VERSION)."""
    return (REPO_ROOT / "VERSION").read_text().strip()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The root of the cobalt-bench checkout."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def root() -> str:
    """The root of the cobalt-bench checkout, as a string."""
    return ROOT


@pytest.fixture(scope="session")
def installed_tree(tmp_path_factory) -> Path:
    """`make install PREFIX=...` of the checkout, once per session: the prefix. Tests read
    it and run what it holds; none changes it."""
    prefix = tmp_path_factory.mktemp("install") / "prefix"
    make = subprocess.run(["make", "-C", ROOT, "install", f"PREFIX={prefix}"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert make.returncode == 0, make.stdout
    return prefix


def pytest_configure(config):
    """The package under test must be the checkout's python/cobalt_bench."""
    try:
        import cobalt_bench
    except ImportError as exc:
        raise pytest.UsageError(
            f"cannot import cobalt_bench ({exc}): run the tests with the checkout's "
            ".venv/bin/python after ./bootstrap.sh --no-run (.venv/bin/pip install -e .)")
    config.addinivalue_line(
        "markers",
        "measures: the assertion needs a timed measurement to reach its load on this machine "
        "(a rate, a deadline); run once more when it fails (pytest-rerunfailures)")
    where = Path(cobalt_bench.__file__).resolve().parent
    if where != REPO_ROOT / "python" / "cobalt_bench":
        raise pytest.UsageError(
            f"cobalt_bench is imported from {where}, not from this checkout's python/: "
            ".venv/bin/pip install -e . (or unset a PYTHONPATH that names another tree)")


def pytest_collection_modifyitems(config, items):
    """A test marked `measures` gets one rerun. Its measurement is real (mem-test keeping a
    deadline, eth-test a rate without loss) and a 2-core CI machine shared with other
    machines can stall it for the few milliseconds that fail it; a logic error fails both
    runs. Nothing else is rerun, and pytest's summary counts each rerun ("1 rerun")."""
    for item in items:
        if item.get_closest_marker("measures") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=1, reruns_delay=2))


def cobalt_cli(*args):
    """(exit status, stdout, stderr) of `cobalt-bench ARGS` run in this process; an
    exception fails the test (it would have been a traceback)."""
    import contextlib
    import io

    from cobalt_bench import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in args])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def no_store_settings(monkeypatch):
    """No results store or site from the environment running the tests: a test names
    its own (`pytestmark = pytest.mark.usefixtures('no_store_settings')`)."""
    for name in ('COBALT_BENCH_RESULTS', 'COBALT_BENCH_SITE'):
        monkeypatch.delenv(name, raising=False)
