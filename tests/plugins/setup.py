"""Optional set-up: what some tests need that `make test` does not make (it takes minutes,
and is cached outside the checkout, or is hardware), and the one marker that says so:

    @pytest.mark.needs_setup("arm64-root")      # one or more of the names in SETUPS

A marked test is skipped, before any of its fixtures runs, where a set-up it names is
absent; the skip message names the command that prepares it. Nothing here prepares
anything, and no fixture of the suite does: `make test` on a fresh machine skips these
tests. `pytest -m needs_setup` selects exactly them (.ci/run runs them with the caches
pointed at empty directories and requires that every one of them skips), and a test that
uses a fixture which needs a set-up but is not marked for it stops the collection.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from plugins.checkout import REPO_ROOT

ARM64_ROOT = REPO_ROOT / "scripts" / "arm64-root"
CROSS_CC = "aarch64-linux-gnu-gcc"
# OSU for the aarch64 node, as `make arm` (scripts/arm64-root osu) installs it in the root.
ARM64_OSU_MODULE = "osu-micro-benchmarks/5.7-gcc-12.2.0-openmpi"
ARM64_OSU_LATENCY = "/opt/osu-micro-benchmarks/5.7/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency"
# The offline Spack of scripts/spack-offline, and where it is prepared.
THIRD_PARTY = Path(os.environ.get("CB_THIRD_PARTY", REPO_ROOT.parent / "shared" / "third-party"))
SPACK_CACHE = Path(os.environ.get("CB_SPACK_CACHE", "/var/tmp/cobalt-bench-spack"))


@dataclass(frozen=True)
class Setup:
    what: str                               # what the tests need, in words
    command: str                            # the command that prepares it
    problem: Callable[[], str | None]       # why it is absent here, or None
    how: str = ""                           # in words, where no command can make it

    def hint(self) -> str:
        return self.how or f"prepare it with `{self.command}`"


def arm64_root_path() -> Path:
    """The directory of the arm64 root (scripts/arm64-root path; $COBALT_ARM64_ROOT)."""
    return Path(subprocess.run([ARM64_ROOT, "path"], capture_output=True, text=True,
                               check=True, timeout=60).stdout.strip())


@functools.cache
def _arm64_root_problem() -> str | None:
    if os.geteuid() != 0:
        return "the arm64 root is entered with chroot and namespaces: run as root"
    if shutil.which(CROSS_CC) is None:
        return f"{CROSS_CC} not installed (Debian: gcc-aarch64-linux-gnu)"
    check = subprocess.run([ARM64_ROOT, "check"], capture_output=True, text=True, timeout=120)
    if check.returncode != 0:
        return (check.stdout + check.stderr).strip() or "scripts/arm64-root check failed"
    return None


@functools.cache
def _arm64_osu_problem() -> str | None:
    problem = _arm64_root_problem()
    if problem:
        return problem
    if not (Path(str(arm64_root_path()) + ARM64_OSU_LATENCY)).is_file():
        return (f"OSU 5.7 for aarch64 is not built in the arm64 root (its source is "
                f"{THIRD_PARTY}/spack-mirror/osu-micro-benchmarks/)")
    return None


@functools.cache
def _spack_problem() -> str | None:
    spack_root = os.environ.get("SPACK_ROOT")
    if spack_root:
        if not os.access(Path(spack_root, "bin", "spack"), os.X_OK):
            return f"SPACK_ROOT={spack_root} has no bin/spack"
        return None
    # scripts/spack-offline writes its stamp last, naming the checkout it was prepared for.
    stamp = SPACK_CACHE / ".ready"
    if not stamp.is_file() or f"checkout {REPO_ROOT}" not in stamp.read_text():
        where = (f"from {THIRD_PARTY}" if THIRD_PARTY.is_dir() else
                 f"which needs {THIRD_PARTY} (CB_THIRD_PARTY), absent here")
        return (f"the offline Spack is not prepared in {SPACK_CACHE} (CB_SPACK_CACHE), "
                f"{where}, and SPACK_ROOT is not set")
    return None


# Other centres' published ReFrame configurations (scripts/other-sites).
OTHER_SITES = Path(os.environ.get("COBALT_OTHER_SITES", "/var/tmp/cobalt-bench-other-sites"))


def _other_sites_problem(part: str, what: str) -> Callable[[], str | None]:
    def problem() -> str | None:
        if not (OTHER_SITES / part).is_dir():
            return (f"{what} not prepared in {OTHER_SITES} (COBALT_OTHER_SITES)")
        return None
    return problem


def gpu_hidden() -> bool:
    """CUDA_VISIBLE_DEVICES set to name no device hides the GPUs (as CUDA takes it)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible is not None and visible.strip() in ("", "-1", "NoDevFiles")


def nvidia_gpus_present() -> bool:
    """The machine has an NVIDIA GPU (its driver lists one), hidden or not."""
    gpus = Path("/proc/driver/nvidia/gpus")
    return gpus.is_dir() and any(gpus.iterdir())


def _gpu_problem() -> str | None:
    if not nvidia_gpus_present():
        return "no NVIDIA GPU on this machine (/proc/driver/nvidia/gpus)"
    if gpu_hidden():
        return "CUDA_VISIBLE_DEVICES hides the GPUs"
    return None


SETUPS = {
    "arm64-root": Setup("the arm64 root and the aarch64 build", "make arm",
                        _arm64_root_problem),
    "arm64-osu": Setup("OSU for aarch64 in the arm64 root",
                       "make arm (with ../shared/third-party beside the checkout)",
                       _arm64_osu_problem),
    "spack": Setup("the offline Spack", "scripts/spack-offline env", _spack_problem),
    "other-sites": Setup("the EESSI test suite's site configurations (PyPI)",
                         "scripts/other-sites",
                         _other_sites_problem("eessi/config", "the EESSI configurations")),
    "other-sites-mirrors": Setup(
        "CSCS's and LUMI's site configurations, from git mirrors of their repositories",
        "COBALT_GIT_MIRRORS=DIR scripts/other-sites",
        _other_sites_problem("cscs/config", "CSCS's and LUMI's configurations"),
        how="prepare them with `scripts/other-sites` where a git mirror of "
            "eth-cscs/cscs-reframe-tests and Lumi-supercomputer/lumi-reframe-tests is "
            "(COBALT_GIT_MIRRORS: a directory of OWNER+NAME/repo mirrors)"),
    "gpu": Setup("an NVIDIA GPU", "make", _gpu_problem,
                 how="run them on a machine with an NVIDIA GPU, where `make` builds gpu-copy "
                     "with nvcc (CUDA_VISIBLE_DEVICES unset or naming a GPU)"),
}

# Fixtures that use a set-up: a test that requests one must be marked for it.
SETUP_FIXTURES = {
    "arm64": "arm64-root",
    "aarch64_build": "arm64-root",
    "aarch64_osu": "arm64-osu",
    "spack_offline": "spack",
    "spack_site": "spack",
}


def setup_names(item) -> list[str]:
    return [name for mark in item.iter_markers("needs_setup") for name in mark.args]


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "needs_setup(*names): the test needs optional set-up that `make test` does not "
        "make (" + "; ".join(f"{n}: {s.hint()}" for n, s in SETUPS.items()) + "); "
        "skipped, naming that command, where it is absent")


def pytest_collection_modifyitems(config, items):
    wrong = []
    for item in items:
        names = setup_names(item)
        if any(not mark.args for mark in item.iter_markers("needs_setup")):
            wrong.append(f"{item.nodeid}: needs_setup names no set-up ({', '.join(SETUPS)})")
        wrong += [f"{item.nodeid}: unknown set-up {n!r} ({', '.join(SETUPS)})"
                  for n in names if n not in SETUPS]
        wrong += [f"{item.nodeid}: uses the fixture {f!r}, which needs "
                  f"@pytest.mark.needs_setup({s!r})"
                  for f, s in SETUP_FIXTURES.items()
                  if f in getattr(item, "fixturenames", ()) and s not in names]
    if wrong:
        raise pytest.UsageError("needs_setup:\n  " + "\n  ".join(wrong))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Skip a marked test whose set-up is absent, before its fixtures are set up."""
    for name in dict.fromkeys(setup_names(item)):
        setup = SETUPS[name]
        problem = setup.problem()
        if problem:
            pytest.skip(f"needs {setup.what}, absent: {problem}; {setup.hint()}")
