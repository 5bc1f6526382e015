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
import shlex
import shutil
import subprocess
import time
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


@pytest.fixture(scope="session")
def smp_mad_stress() -> str:
    """bin/smp-mad-stress of the checkout; skipped where it is not built."""
    path = os.path.join(os.path.realpath(REPO_ROOT), "bin", "smp-mad-stress")
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not built (make builds it where libibumad-dev is installed)")
    return path


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


# ---- Spack: the `local` site's environment, built from an offline mirror ------------------
# A real Spack (scripts/spack-offline: $SPACK_ROOT, else unpacked from ../shared/third-party
# into a cache outside the checkout) installs the `local` site's environment
# (site-configs/local/spack.yaml: cobalt-bench from this checkout, perftest, every OSU
# release the site lists) into that cache and generates its Lmod modules. The cache is
# kept between sessions: a second session rebuilds only what changed (cobalt-bench, when
# the checkout did).
THIRD_PARTY = Path(os.environ.get("CB_THIRD_PARTY", REPO_ROOT.parent / "shared" / "third-party"))
SPACK_CACHE = Path(os.environ.get("CB_SPACK_CACHE", "/var/tmp/cobalt-bench-spack"))
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
# Concretizing the environment takes minutes on 2 busy cores; building it from nothing
# about 10 (three OSU releases, perftest, cobalt-bench).
_SPACK_TIMEOUT = 3600


# ---- batch jobs: what the job tests submit, and their accounting once they end --------------

_QUEUED = ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED")


def sbatch(script, cwd, env, *options) -> str:
    """Submit `script` (sbatch --parsable OPTIONS SCRIPT from `cwd` with `env`); its job id."""
    proc = subprocess.run(["sbatch", "--parsable", *options, str(script)], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def finished_job(jobid, env, timeout=180, fields=("State", "ExitCode")) -> tuple:
    """The job's sacct `fields` once it has left the queue and each of them is filled in
    (sacct may lag behind the job); the test fails when that takes over `timeout` s."""
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", jobid, "-o",
                              ",".join(("JobID", "State", *fields))], env=env, text=True,
                             capture_output=True, timeout=30).stdout
        for line in out.splitlines():
            got = line.split("|")
            if got[0] == jobid and got[1] not in _QUEUED and all(got[2:]):
                return tuple(got[2:])
        time.sleep(0.5)
    pytest.fail(f"job {jobid} did not finish in {timeout} s: {out}")


def osu_releases() -> list[str]:
    """The OSU releases the `local` site's Spack environment lists
    (osu-micro-benchmarks@=<version> in site-configs/local/spack.yaml)."""
    import re

    import yaml

    specs = yaml.safe_load((REPO_ROOT / "site-configs" / "local" / "spack.yaml").read_text())
    return [m.group(1) for s in specs["spack"]["specs"]
            if (m := re.match(r"osu-micro-benchmarks@=?(\S+)", s))]


def spack_skip_reason() -> str | None:
    """Why there is no Spack for the tests, or None."""
    if not os.environ.get("SPACK_ROOT") and not (THIRD_PARTY / "spack-mirror").is_dir():
        return (f"Spack not available: SPACK_ROOT is not set and {THIRD_PARTY} (the offline "
                "Spack and mirror, CB_THIRD_PARTY) does not exist")
    if not LMOD_INIT.is_file():
        return f"Lmod not installed ({LMOD_INIT} missing; Debian: lmod)"
    return None


@dataclass
class SpackSite:
    """The installed `local` environment, as the ``spack_site`` fixture hands it out."""

    env: dict = field(repr=False)   # os.environ plus Spack's variables (SPACK_ROOT, ...)
    env_dir: Path                   # the Spack environment (spack.yaml, spack.lock)
    src: Path                       # the checkout's copy cobalt-bench is built from
    lmod_core: Path                 # `module use` this: Core/ of the generated modules
    specs: str                      # `spack spec -I` of the environment
    log: str                        # what install and module refresh said

    def spack(self, *args, timeout: float = 600, check: bool = True):
        proc = subprocess.run([str(Path(self.env["SPACK_ROOT"], "bin", "spack")),
                               "-e", str(self.env_dir), *args], env=self.env, text=True,
                              capture_output=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"`spack {' '.join(args)}` failed (exit {proc.returncode}):\n"
                        f"{(proc.stdout + proc.stderr)[-4000:]}", pytrace=False)
        return proc

    def osu_module(self, release: str) -> str:
        """What a site loads for that OSU release (Spack's Lmod hierarchy: the MPI first)."""
        return f"openmpi osu-micro-benchmarks/{release}"

    def osu_binaries(self, release: str) -> dict:
        """{benchmark: path} of that release's MPI benchmarks, as its module finds them."""
        names = ("osu_latency", "osu_bw", "osu_bibw", "osu_mbw_mr", "osu_bcast",
                 "osu_allreduce", "osu_alltoall")
        shell = self.module_shell(f"module load {self.osu_module(release)} || exit 90\n"
                                  f"command -v {' '.join(names)}")
        paths = shell.stdout.split()
        if shell.returncode != 0 or len(paths) != len(names):
            pytest.fail(f"module load {self.osu_module(release)}; command -v ...:\n"
                        f"{shell.stdout}{shell.stderr}", pytrace=False)
        return dict(zip(names, paths))

    def module_shell(self, script: str, timeout: float = 120, env: dict | None = None):
        """Run `script` in bash with Lmod initialised and the site's modules in use."""
        full = f"source {LMOD_INIT}\nmodule use {self.lmod_core}\n{script}"
        return subprocess.run(["bash", "-c", full], text=True, capture_output=True,
                              timeout=timeout, env=env if env is not None else clean_env())


def clean_env() -> dict:
    """os.environ without module state or cobalt-bench variables, PATH Debian's."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("COBALT_BENCH_", "LMOD", "__LMOD", "_LMFILES_",
                                "LOADEDMODULES", "MODULEPATH", "_ModuleTable"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    return env


def _sync_checkout(dest: Path) -> None:
    """Make `dest` hold the checkout's sources as they are now (tracked and untracked, not
    ignored files), copying only files that changed: Spack rebuilds a develop package
    when a file in it is newer than the install."""
    listing = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached",
                              "--others", "--exclude-standard"], capture_output=True,
                             check=True)
    wanted = {f for f in listing.stdout.decode().split("\0")
              if f and (REPO_ROOT / f).is_file()}
    for name in wanted:
        src, dst = REPO_ROOT / name, dest / name
        if dst.is_file() and not dst.is_symlink() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
    for path in sorted(dest.rglob("*"), reverse=True):
        rel = path.relative_to(dest).as_posix()
        if path.is_file() and rel not in wanted and not rel.startswith(("build/", "bin/")):
            path.unlink()


@pytest.fixture(scope="session")
def spack_site(tmp_path_factory):
    """Install site-configs/local/spack.yaml with a real Spack, offline, into SPACK_CACHE;
    hand out a SpackSite. Skipped, saying what is missing, without a Spack."""
    import fcntl

    import yaml

    reason = spack_skip_reason()
    if reason:
        pytest.skip(reason)
    SPACK_CACHE.mkdir(parents=True, exist_ok=True)
    # One session at a time prepares and installs into the cache.
    lock = open(SPACK_CACHE / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        proc = subprocess.run([str(REPO_ROOT / "scripts" / "spack-offline"),
                               "--third-party", str(THIRD_PARTY), "--cache", str(SPACK_CACHE),
                               "env"], text=True, capture_output=True, timeout=_SPACK_TIMEOUT)
        if proc.returncode != 0:
            pytest.fail(f"scripts/spack-offline env failed (exit {proc.returncode}):\n"
                        f"{proc.stderr[-4000:]}", pytrace=False)
        env = clean_env()
        for line in proc.stdout.splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            env[name] = shlex.split(value)[0] if value else ""

        src, env_dir = SPACK_CACHE / "cobalt-bench-src", SPACK_CACHE / "env-local"
        src.mkdir(exist_ok=True)
        env_dir.mkdir(exist_ok=True)
        _sync_checkout(src)
        site = yaml.safe_load((REPO_ROOT / "site-configs" / "local" / "spack.yaml").read_text())
        spec = site["spack"]
        # The mirror's own checksums first (scripts/spack-offline), then ours.
        spec["repos"] = {"cobalt": str(REPO_ROOT / "spack-repo" / "spack_repo" / "cobalt")}
        if env.get("CB_SPACK_MIRROR_REPO"):
            spec["repos"] = {"offline_mirror": env["CB_SPACK_MIRROR_REPO"], **spec["repos"]}
        spec["develop"] = {"cobalt-bench": {"spec": "cobalt-bench@develop", "path": str(src)}}
        spec["config"] = {"install_tree": {"root": str(SPACK_CACHE / "opt")}}
        spec["modules"]["default"]["roots"] = {"lmod": str(SPACK_CACHE / "lmod")}
        text = yaml.safe_dump({"spack": spec}, sort_keys=False)
        if not (env_dir / "spack.yaml").is_file() or (env_dir / "spack.yaml").read_text() != text:
            (env_dir / "spack.yaml").write_text(text)
        site_env = SpackSite(env, env_dir, src, SPACK_CACHE / "lmod" / "Core", "", "")
        install = site_env.spack("install", "--fail-fast",
                                 timeout=_SPACK_TIMEOUT)
        refresh = site_env.spack("module", "lmod", "refresh", "-y", "--delete-tree",
                                 timeout=600)
        site_env.specs = site_env.spack("spec", "-I", timeout=600).stdout
        site_env.log = install.stdout + install.stderr + refresh.stdout + refresh.stderr
        return site_env
    finally:
        lock.close()
