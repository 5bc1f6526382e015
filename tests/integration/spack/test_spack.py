"""Spack deployment (spack-repo/, site-configs/local/spack.yaml, scripts/spack-offline): a
real Spack 1.x, offline, installs the `local` site's environment -- cobalt-bench from this
checkout, perftest and every OSU release the site lists -- from a source mirror, against
Debian's compiler, MPI, libraries and Python (and ReFrame, an external), and generates
the Lmod modules a site loads: cobalt-bench's alone gives its OSU, perftest and ReFrame.

The Spack and the install are the session's `spack_site` fixture (tests/plugins/spack.py):
it uses $SPACK_ROOT, or the Spack that `scripts/spack-offline env` unpacked from
../shared/third-party into a cache outside the checkout. The tests that need it are marked
needs_setup("spack"): without either, they skip, naming `scripts/spack-offline env`.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from plugins.checkout import REPO_ROOT
from plugins.spack import bare_env, cobalt_bench_prefixes, login_shell, osu_releases
from plugins.workers import ETH_TEST_PORTS

needs_spack = pytest.mark.needs_setup("spack")


def test_spack_offline_without_spack_says_what_is_missing(tmp_path):
    env = {k: v for k, v in bare_env().items() if k != "SPACK_ROOT"}
    proc = subprocess.run([str(REPO_ROOT / "scripts" / "spack-offline"), "--third-party",
                           str(tmp_path / "none"), "--cache", str(tmp_path / "cache"), "env"],
                          text=True, capture_output=True, timeout=60, env=env)
    assert proc.returncode == 3, proc.stderr
    assert "SPACK_ROOT is not set" in proc.stderr and str(tmp_path / "none") in proc.stderr
    assert not (tmp_path / "cache").exists()

# What the `local` site takes from Debian rather than build.
DEBIAN_EXTERNALS = ("gcc", "gmake", "hwloc", "openmpi", "rdma-core", "python", "py-pip",
                    "py-setuptools", "py-pyyaml")
# What Spack builds: the three packages, and Spack's own compiler wrapper and runtime.
BUILT = {"cobalt-bench", "perftest", "osu-micro-benchmarks", "compiler-wrapper",
         "gcc-runtime"}


@needs_spack
def test_concretizes_against_debian_externals(spack_site):
    out = spack_site.specs
    for name in DEBIAN_EXTERNALS:
        assert re.search(rf"^\[e\]\s+(?:\w{{7}}\s+)?\^?{re.escape(name)}@", out, re.M), \
            f"{name} is not an external in:\n{out}"
    # Everything else comes from Debian: Spack builds no library, tool or interpreter.
    built = {m.group(1) for m in re.finditer(r"^\[[+-]\]\s+(?:\w{7}\s+)?\^?([\w-]+)@", out, re.M)}
    assert built <= BUILT, f"Spack builds {sorted(built - BUILT)}:\n{out}"
    assert re.search(r"cobalt-bench@develop\S*.*dev_path=", out), out


@needs_spack
def test_install_is_a_make_install_tree(spack_site, repo_root):
    prefix = Path(spack_site.spack("location", "-i", "cobalt-bench").stdout.strip())
    version = (repo_root / "VERSION").read_text().strip()
    share = prefix / "share" / "cobalt-bench"
    assert (prefix / "bin" / "mem-test").is_file()
    assert (prefix / "bin" / "cpu-test").is_file()
    assert (share / "jobs" / "cpu-test.slurm").is_file()
    assert (prefix / "modulefiles" / "cobalt-bench" / f"{version}.lua").is_file()
    assert (share / "jobs" / "mem-test.slurm").is_file()
    assert (share / "reframe_checks" / "memory.py").is_file()
    assert (share / "site-configs" / "local" / "config.py").is_file()
    assert (share / "VERSION").read_text().strip() == version
    # The Python package, installed by `make install` with Debian's python3 and pip.
    assert (prefix / "lib" / "cobalt-bench" / "python" / "cobalt_bench" / "cli" / "__init__.py").is_file()


@needs_spack
@ETH_TEST_PORTS       # its eth-test on loopback; the module's other tests use no port
def test_spack_test_run_runs_each_kernel_short(spack_site):
    """`spack test run cobalt-bench`: each kernel's --version and its short run, whose typed
    options (SHORT_RUNS) the installed `cobalt-bench options` turned into its command line."""
    alias = f"cb-short-{os.getpid()}-{int(time.time())}"    # a suite's alias is kept
    run = spack_site.spack("test", "run", "--alias", alias, "cobalt-bench", timeout=900,
                           check=False)
    results = spack_site.spack("test", "results", "-l", alias, check=False)
    spack_site.spack("test", "remove", "-y", alias, check=False)
    text = run.stdout + run.stderr + results.stdout + results.stderr
    assert run.returncode == 0, text[-6000:]
    for part in ("test_short_run_mem_test", "test_short_run_cpu_test",
                 "test_short_run_cb_linktest", "test_eth_loopback", "test_version_mem_test"):
        assert any(part in line and "PASSED" in line for line in text.splitlines()), \
            (part, text[-6000:])
    # the short run's options as `cobalt-bench options` wrote them
    assert "--stations 1 --desired-rate 1 --duration 1" in text, text[-6000:]


@needs_spack
def test_module_load_cobalt_bench(spack_site, repo_root):
    version = (repo_root / "VERSION").read_text().strip()
    prefix = Path(spack_site.spack("location", "-i", "cobalt-bench").stdout.strip())
    shell = spack_site.module_shell("""
        module load cobalt-bench || exit 90
        echo "MEM_TEST_PATH=$(command -v mem-test)"
        mem-test --version || exit 91
        cobalt-bench --version || exit 92
        env | grep '^COBALT_BENCH_'
    """)
    out = shell.stdout + shell.stderr
    assert shell.returncode == 0, out
    # Named cobalt-bench, in Core although +mpi: it loads without an MPI module first.
    assert (spack_site.lmod_core / "cobalt-bench" / "develop.lua").is_file()
    path = re.search(r"^MEM_TEST_PATH=(.*)$", shell.stdout, re.M).group(1)
    assert Path(path) == prefix / "bin" / "mem-test", out
    assert re.search(rf"^mem-test .*{re.escape(version)}", shell.stdout, re.M), out
    # The console script runs the installed package with Debian's python3.
    assert f"cobalt-bench {version}" in shell.stdout, out
    env = dict(re.findall(r"^(COBALT_BENCH_\w+)=(.*)$", shell.stdout, re.M))
    share = prefix / "share" / "cobalt-bench"
    assert env.get("COBALT_BENCH_ROOT") == str(prefix), shell.stdout
    assert env.get("COBALT_BENCH_VERSION") == version
    assert env.get("COBALT_BENCH_JOBS") == str(share / "jobs")
    assert env.get("COBALT_BENCH_CHECKS") == str(share / "reframe_checks")
    assert env.get("COBALT_BENCH_SITE_CONFIGS") == str(share / "site-configs")


def pinned_reframe() -> str:
    """The ReFrame release requirements.txt pins (what the suite is tested with)."""
    text = (REPO_ROOT / "requirements.txt").read_text()
    return re.search(r"^reframe-hpc==(\S+)", text, re.M).group(1)


@needs_spack
def test_module_gives_the_benchmarks_and_reframe_of_its_dependencies(spack_site, tmp_path):
    # One install: cobalt-bench's module autoloads its run dependencies, so a user who
    # loads it alone has what its jobs and checks drive, from those dependencies' installs.
    prefix = cobalt_bench_prefixes(spack_site)
    work = tmp_path / "work"
    work.mkdir()
    shell = login_shell("""
        module load cobalt-bench || exit 90
        which osu_latency ib_write_bw reframe || exit 91
        reframe --version || exit 92
        # reframe's own interpreter imports the ReFrame and the cobalt_bench it runs with.
        "$(sed -n '1s/^#!//p' "$(command -v reframe)")" -c \
            'import reframe, cobalt_bench; print(reframe.__file__, cobalt_bench.__file__)'
    """, work, MODULEPATH=str(spack_site.lmod_core))
    out = shell.stdout + shell.stderr
    assert shell.returncode == 0, out
    which = shell.stdout.split()
    osu = prefix["osu-micro-benchmarks"]
    assert which[:3] == [f"{osu}/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency",
                         f"{prefix['perftest']}/bin/ib_write_bw",
                         f"{prefix['reframe']}/bin/reframe"], out
    # The ReFrame the suite is tested with, declared as the external it is.
    assert which[3] == pinned_reframe(), out
    assert re.search(rf"^\[e\].*\^reframe@{re.escape(pinned_reframe())}\b", spack_site.specs,
                     re.M), spack_site.specs
    assert which[4].startswith(prefix["reframe"] + "/"), out
    assert which[5].startswith(prefix["cobalt-bench"] + "/"), out


@needs_spack
def test_perftest_module_gives_ib_write_bw(spack_site):
    shell = spack_site.module_shell("""
        module load perftest || exit 90
        command -v ib_write_bw
        ib_write_bw --version
        true
    """)
    out = shell.stdout + shell.stderr
    assert shell.returncode == 0, out
    prefix = spack_site.spack("location", "-i", "perftest").stdout.strip()
    assert f"{prefix}/bin/ib_write_bw" in shell.stdout, out
    assert re.search(r"^Version: 6\.27$", out, re.M), out


@needs_spack
@pytest.mark.parametrize("release", osu_releases())
def test_each_osu_release_is_a_module_under_openmpi(spack_site, release):
    paths = spack_site.osu_binaries(release)
    prefix = spack_site.spack("location", "-i", f"osu-micro-benchmarks@={release}").stdout.strip()
    assert all(p.startswith(prefix + "/") for p in paths.values()), paths
    assert release in prefix, prefix


@needs_spack
def test_one_openmpi_module_although_the_site_found_one_too(spack_site):
    # scripts/spack-offline declares Debian's Open MPI in the site scope (as
    # `spack external find openmpi` would); the environment's `openmpi::` keeps it from
    # becoming a second /usr spec with the same module name.
    site = spack_site.spack("config", "--scope", "site", "get", "packages").stdout
    assert "openmpi" in site, site
    assert "Name clashes" not in spack_site.log, spack_site.log
    shell = spack_site.module_shell("module -t avail openmpi 2>&1")
    assert re.findall(r"^openmpi/\S+$", shell.stdout, re.M) == ["openmpi/4.1.4"], shell.stdout


RECIPE = REPO_ROOT / "spack-repo" / "spack_repo" / "cobalt" / "packages" / "cobalt_bench" / "package.py"


def recipe_releases() -> dict:
    """The recipe's RELEASES: {version: (commit, sha256 of `make dist` of that commit)}."""
    import ast

    for node in ast.parse(RECIPE.read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "RELEASES"
                                                for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{RECIPE} has no RELEASES")


def need_commit(version, commit):
    """The release's commit is in this clone; a shallow clone that lacks it skips (saying
    how to get it), a full clone that lacks it fails."""
    have = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=REPO_ROOT,
                          capture_output=True)
    if have.returncode == 0:
        return
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=REPO_ROOT,
                             capture_output=True, text=True).stdout.strip() == "true"
    if shallow:
        pytest.skip(f"release {version}: commit {commit} is not in this shallow clone "
                    "(git fetch --unshallow)")
    pytest.fail(f"release {version}: commit {commit} is not in this clone's history")


@pytest.mark.skipif(not (REPO_ROOT / ".git").exists(),
                    reason="not a git checkout (e.g. an unpacked release): no history to remake "
                           "releases from")
def test_each_release_is_make_dist_of_its_commit(tmp_path):
    # The sha256 the recipe holds is that of `make dist` of the release's commit, remade
    # here from the history (tags or not): what a site's mirror holds is what Spack checks.
    releases = recipe_releases()
    assert releases, "the recipe has no release"
    for version, (commit, sha256) in releases.items():
        need_commit(version, commit)
        dist = subprocess.run(["make", "-s", "dist", f"DIST={tmp_path / version}",
                               f"DIST_REF={commit}"], cwd=REPO_ROOT, text=True,
                              capture_output=True, timeout=120)
        assert dist.returncode == 0, dist.stdout + dist.stderr
        tarball = tmp_path / version / f"cobalt-bench-{version}.tar.gz"
        assert dist.stdout.split() == [str(tarball), "sha256", sha256, "commit", commit], \
            dist.stdout
        assert hashlib.sha256(tarball.read_bytes()).hexdigest() == sha256
        with tarfile.open(tarball) as tar:
            assert tar.extractfile(f"cobalt-bench-{version}/VERSION").read().decode().strip() \
                == version


@needs_spack
def test_release_installs_outside_an_environment(spack_site, tmp_path):
    # What an offline site does with a release: the tarball (`make dist DIST_REF=<its
    # commit>`, or the published one) into its mirror where Spack looks for a version with
    # a checksum, _source-cache/archive/<sha256[:2]>/<sha256>.tar.gz, then `spack install
    # cobalt-bench` with no environment and no version: Spack takes the newest release,
    # fetches it from the mirror and verifies it against the recipe's sha256.
    releases = recipe_releases()
    version = max(releases, key=lambda v: tuple(int(p) for p in v.split(".")))
    commit, sha256 = releases[version]
    need_commit(version, commit)
    dist = subprocess.run(["make", "-s", "dist", f"DIST={tmp_path / 'dist'}",
                           f"DIST_REF={commit}"], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=120)
    assert dist.returncode == 0, dist.stdout + dist.stderr
    mirror = tmp_path / "mirror"
    archive = mirror / "_source-cache" / "archive" / sha256[:2] / f"{sha256}.tar.gz"
    archive.parent.mkdir(parents=True)
    (tmp_path / "dist" / f"cobalt-bench-{version}.tar.gz").rename(archive)
    spack = [str(Path(spack_site.env["SPACK_ROOT"], "bin", "spack")), "--no-env"]
    env = {k: v for k, v in spack_site.env.items() if k != "SPACK_ENV"}

    def run(*args, timeout=1800):
        proc = subprocess.run(spack + list(args), env=env, text=True, capture_output=True,
                              timeout=timeout, cwd=tmp_path)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        return proc.stdout + proc.stderr

    # A scope of this test's own: the mirror, this checkout's recipes, an install tree and
    # a download cache of its own (so the release is fetched and built here, not found
    # installed or cached); the externals are the site scope's (scripts/spack-offline).
    scope = tmp_path / "scope"
    scope.mkdir()
    (scope / "mirrors.yaml").write_text(yaml.safe_dump({"mirrors": {"dist": f"file://{mirror}"}}))
    (scope / "repos.yaml").write_text(yaml.safe_dump(
        {"repos": {"cobalt": str(REPO_ROOT / "spack-repo" / "spack_repo" / "cobalt")}}))
    (scope / "config.yaml").write_text(yaml.safe_dump(
        {"config": {"install_tree": {"root": str(tmp_path / "opt")},
                    "source_cache": str(tmp_path / "source-cache")}}))
    # ~plots: matplotlib is no Debian external here and the mirror has no sources for it.
    # ~osu~perftest~reframe: this test is about the release's own tarball; building OSU and
    # perftest again into its install tree would cost minutes, and ReFrame is an external
    # of the `local` environment only, not of the site scope this install sees.
    out = run("-C", str(scope), "install", "cobalt-bench~plots~osu~perftest~reframe")
    assert f"Fetching file://{archive}" in out, out[-4000:]
    found = run("-C", str(scope), "find", "--format", "{name}@{version}", "cobalt-bench")
    assert found.split() == [f"cobalt-bench@{version}"], found
    prefix = Path(run("-C", str(scope), "location", "-i", "cobalt-bench").strip())
    assert prefix.is_relative_to(tmp_path / "opt"), prefix
    out = subprocess.run([str(prefix / "bin" / "mem-test"), "--version"], text=True,
                         capture_output=True, timeout=60)
    assert re.search(rf"^mem-test .*\b{re.escape(version)}\b", out.stdout + out.stderr, re.M), \
        out.stdout + out.stderr
    assert (prefix / "share" / "cobalt-bench" / "VERSION").read_text().strip() == version


@needs_spack
def test_spack_offline_reuses_its_cache(spack_site):
    # The fixture prepared the cache; asking again finds it intact and prepares nothing.
    proc = subprocess.run([str(REPO_ROOT / "scripts" / "spack-offline"), "--cache",
                           spack_site.env["CB_SPACK_CACHE"], "env"], text=True,
                          capture_output=True, timeout=120, env=bare_env())
    assert proc.returncode == 0, proc.stderr
    assert "preparing" not in proc.stderr, proc.stderr
    assert f"export SPACK_ROOT={spack_site.env['SPACK_ROOT']}" in proc.stdout
