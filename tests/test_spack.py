"""Spack deployment (spack-repo/, site-configs/local/spack.yaml): Spack builds cobalt-bench
against Debian's libraries and MPI, and `module load cobalt-bench` from the Lmod tree Spack
generates gives the same kernels and variables as the checkout's module.

Needs a Spack v1 installation: SPACK_ROOT=/path/to/spack (and SPACK_PYTHON, a Python that
has clingo, where Spack cannot bootstrap it, e.g. offline), and Lmod. Without them every
test here skips, saying which is missing.

One install for the whole file, in a temporary environment made from the `local` site's
spack.yaml (its externals and module settings) with a temporary install tree and module
root, and cobalt-bench built with `spack develop` from a copy of this checkout: neither
the checkout nor the Spack installation's own store is touched. Concretizing takes
30-50 s here, the install about as long.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

SPACK_ROOT = os.environ.get("SPACK_ROOT", "")
SPACK = Path(SPACK_ROOT, "bin", "spack") if SPACK_ROOT else None
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
REPO_PACKAGES = Path("spack-repo", "spack_repo", "cobalt")

# Externals the `local` site must take from Debian rather than build.
DEBIAN_EXTERNALS = ("gcc", "gmake", "hwloc", "numactl", "openmpi")


def _skip_reason() -> str | None:
    if not SPACK_ROOT:
        return "Spack not available: SPACK_ROOT is not set (point it at a Spack v1 installation)"
    if not os.access(SPACK, os.X_OK):
        return f"Spack not available: {SPACK} is missing or not executable"
    if not LMOD_INIT.is_file():
        return f"Lmod not installed ({LMOD_INIT} missing; Debian: lmod)"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def _spack(env_dir: Path, *args: str, timeout: float = 600, stdout_only=False) -> str:
    """Run `spack -e ENV ARGS`; its output, or the test fails with the output's end."""
    cmd = [str(SPACK), "-e", str(env_dir), *args]
    proc = subprocess.run(cmd, text=True, capture_output=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        pytest.fail(f"`spack {' '.join(args)}` failed (exit {proc.returncode}):\n{out[-4000:]}",
                    pytrace=False)
    return proc.stdout if stdout_only else out


def _copy_checkout(repo_root: Path, dest: Path) -> None:
    """The checkout's sources as they are now (tracked and untracked files, not ignored
    ones: no .venv, build/ or bin/), for a `spack develop` build that leaves it alone."""
    files = None
    if (repo_root / ".git").exists() and shutil.which("git"):
        listing = subprocess.run(
            ["git", "-C", str(repo_root), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=True)
        files = [f for f in listing.stdout.decode().split("\0") if f]
    if files is None:
        shutil.copytree(repo_root, dest, symlinks=True, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".git", ".venv", "build", "bin", "results",
                                                      "__pycache__", ".spack-env", "spack.lock"))
        return
    for name in files:
        src = repo_root / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the working tree
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / name, follow_symlinks=False)


def _clean_shell_env() -> dict:
    """The environment without any module state or cobalt-bench variables of the caller."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COBALT_BENCH_", "LMOD", "__LMOD", "_LMFILES_",
                                "LOADEDMODULES", "MODULEPATH", "_ModuleTable"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return env


@pytest.fixture(scope="module")
def spack_install(repo_root, tmp_path_factory):
    """Concretize and install cobalt-bench in a temporary `local`-site environment, refresh
    its Lmod modules and load the module; hand out what each step said."""
    version_out = subprocess.run([str(SPACK), "--version"], capture_output=True, text=True,
                                 timeout=120)
    major = re.match(r"(\d+)\.", version_out.stdout.strip())
    if version_out.returncode != 0 or not major or int(major.group(1)) < 1:
        pytest.skip(f"needs Spack v1 (package API v2): `spack --version` says "
                    f"{(version_out.stdout + version_out.stderr).strip()!r}")

    tmp = tmp_path_factory.mktemp("spack")
    src, env_dir = tmp / "cobalt-bench", tmp / "env"
    src.mkdir()
    env_dir.mkdir()
    _copy_checkout(repo_root, src)

    site = yaml.safe_load((repo_root / "site-configs" / "local" / "spack.yaml").read_text())
    env = copy.deepcopy(site["spack"])
    env["specs"] = ["cobalt-bench"]
    env.pop("repos", None)  # added below, as a site admin adds it
    env["develop"] = {"cobalt-bench": {"spec": "cobalt-bench@develop", "path": str(src)}}
    env["config"] = {"install_tree": {"root": str(tmp / "opt")}}
    env["modules"]["default"]["roots"] = {"lmod": str(tmp / "lmod")}
    (env_dir / "spack.yaml").write_text(yaml.safe_dump({"spack": env}, sort_keys=False))

    _spack(env_dir, "repo", "add", str(repo_root / REPO_PACKAGES), timeout=120)
    concretized = _spack(env_dir, "concretize")
    installed = _spack(env_dir, "install", timeout=900)
    prefix = Path(_spack(env_dir, "location", "-i", "cobalt-bench", timeout=120,
                         stdout_only=True).strip())
    _spack(env_dir, "module", "lmod", "refresh", "-y", timeout=300)

    lmod_core = tmp / "lmod" / "Core"
    script = f"""
        source {LMOD_INIT}
        module use {lmod_core}
        module load cobalt-bench || exit 90
        echo "MEM_TEST_PATH=$(command -v mem-test)"
        mem-test --version || exit 91
        env | grep '^COBALT_BENCH_'
    """
    shell = subprocess.run(["bash", "-c", script], text=True, capture_output=True,
                           env=_clean_shell_env(), timeout=120)
    return {
        "tmp": tmp, "prefix": prefix, "lmod_core": lmod_core,
        "concretized": concretized, "installed": installed,
        "shell": shell, "version": (repo_root / "VERSION").read_text().strip(),
    }


def test_concretizes_against_debian_externals(spack_install):
    out = spack_install["concretized"]
    for name in DEBIAN_EXTERNALS:
        assert re.search(rf"^\[e\]\s+\w+\s+\^{name}@", out, re.M), \
            f"{name} is not an external in:\n{out}"
    assert re.search(r"cobalt-bench@develop\S*.*dev_path=", out), out


def test_install_is_a_make_install_tree(spack_install):
    prefix = spack_install["prefix"]
    share = prefix / "share" / "cobalt-bench"
    assert (prefix / "bin" / "mem-test").is_file()
    assert (prefix / "modulefiles" / "cobalt-bench" / f"{spack_install['version']}.lua").is_file()
    assert (share / "jobs" / "mem-test.slurm").is_file()
    assert (share / "reframe_checks" / "memory.py").is_file()
    assert (share / "site-configs" / "local" / "config.py").is_file()
    assert (share / "VERSION").read_text().strip() == spack_install["version"]


def test_module_load_puts_mem_test_on_path(spack_install):
    shell = spack_install["shell"]
    out = shell.stdout + shell.stderr
    assert shell.returncode == 0, f"module load cobalt-bench; mem-test --version:\n{out}"
    # Named cobalt-bench, in Core although +mpi: it loads without an MPI module first.
    assert (spack_install["lmod_core"] / "cobalt-bench" / "develop.lua").is_file()
    path = re.search(r"^MEM_TEST_PATH=(.*)$", shell.stdout, re.M).group(1)
    assert Path(path) == spack_install["prefix"] / "bin" / "mem-test", out
    assert re.search(rf"^mem-test .*{re.escape(spack_install['version'])}", shell.stdout,
                     re.M), out


def test_module_sets_the_checkout_modules_variables(spack_install):
    shell = spack_install["shell"]
    env = dict(re.findall(r"^(COBALT_BENCH_\w+)=(.*)$", shell.stdout, re.M))
    prefix = spack_install["prefix"]
    share = prefix / "share" / "cobalt-bench"
    assert env.get("COBALT_BENCH_ROOT") == str(prefix), shell.stdout
    assert env.get("COBALT_BENCH_VERSION") == spack_install["version"]
    assert env.get("COBALT_BENCH_JOBS") == str(share / "jobs")
    assert env.get("COBALT_BENCH_CHECKS") == str(share / "reframe_checks")
    assert env.get("COBALT_BENCH_SITE_CONFIGS") == str(share / "site-configs")
