"""Spack: the offline Spack of scripts/spack-offline, and the `local` site's environment
installed with it.

A real Spack ($SPACK_ROOT, else the one `scripts/spack-offline env` unpacked from
../shared/third-party into a cache outside the checkout, $CB_SPACK_CACHE) installs the
`local` site's environment (site-configs/local/spack.yaml: cobalt-bench from this
checkout, perftest, every OSU release the site lists; ReFrame external, the one
scripts/spack-offline installs into its cache) into that cache and generates its
Lmod modules. The cache is kept between sessions: a second session rebuilds only what
changed (cobalt-bench, when the checkout did). Preparing the Spack is no test's work:
the tests that use these fixtures are marked ``needs_setup("spack")`` (plugins/setup.py)
and skip, naming `scripts/spack-offline env`, where it was not run.

- ``spack_offline``: the environment that runs that Spack (SPACK_ROOT, ...).
- ``spack_site``: the installed `local` environment, a ``SpackSite``: installed once per
  session, by the first worker that asks (pytest-xdist), the others finding it installed.
- ``osu_releases()``: the OSU releases the `local` site lists.
- ``login_shell()``, ``cobalt_bench_prefixes()``: a user's fresh login, the install's
  prefixes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from plugins.checkout import DEBIAN_PATH, MODULE_STATE, REPO_ROOT, clean_env
from plugins.setup import SPACK_CACHE, THIRD_PARTY

SPACK_OFFLINE = REPO_ROOT / "scripts" / "spack-offline"
LOCAL_SPACK_YAML = REPO_ROOT / "site-configs" / "local" / "spack.yaml"
LMOD_INIT = Path("/usr/share/lmod/lmod/init/bash")
# Concretizing the environment takes minutes on 2 busy cores; building it from nothing
# about 10 (three OSU releases, perftest, cobalt-bench).
_SPACK_TIMEOUT = 3600


def bare_env(**extra) -> dict:
    """clean_env() without module state, PATH Debian's: a new login's environment."""
    return clean_env(drop=MODULE_STATE, PATH=DEBIAN_PATH, **extra)


def osu_releases() -> list[str]:
    """The OSU releases the `local` site's Spack environment lists
    (osu-micro-benchmarks@=<version> in site-configs/local/spack.yaml)."""
    specs = yaml.safe_load(LOCAL_SPACK_YAML.read_text())
    return [m.group(1) for s in specs["spack"]["specs"]
            if (m := re.match(r"osu-micro-benchmarks@=?(\S+)", s))]


@dataclass
class SpackSite:
    """The installed `local` environment, as the ``spack_site`` fixture hands it out."""

    env: dict = field(repr=False)   # bare_env() plus Spack's variables (SPACK_ROOT, ...)
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
                              timeout=timeout, env=env if env is not None else bare_env())


def _sync_checkout(dest: Path) -> int:
    """Make `dest` hold the checkout's sources as they are now (tracked and untracked, not
    ignored files), copying only files that changed: Spack rebuilds a develop package
    when a file in it is newer than the install. The number of files copied or removed."""
    listing = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z", "--cached",
                              "--others", "--exclude-standard"], capture_output=True,
                             check=True)
    wanted = {f for f in listing.stdout.decode().split("\0")
              if f and (REPO_ROOT / f).is_file()}
    changed = 0
    for name in wanted:
        src, dst = REPO_ROOT / name, dest / name
        if src.is_symlink():
            # A link of the tree (jobs/lib/osu-search-dirs): the same link, relative.
            if dst.is_symlink() and os.readlink(dst) == os.readlink(src):
                continue
        elif dst.is_file() and not dst.is_symlink() and dst.read_bytes() == src.read_bytes():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_symlink() or dst.exists():
            dst.unlink()
        shutil.copy2(src, dst, follow_symlinks=False)
        changed += 1
    extra = []
    for path in sorted(dest.rglob("*"), reverse=True):
        rel = path.relative_to(dest).as_posix()
        if path.is_file() and rel not in wanted and not rel.startswith(("build/", "bin/")):
            path.unlink()
            extra.append(rel)
    # What the checkout ignores is what the install's build wrote (the egg-info,
    # described.json): no source of the checkout changed.
    ignored = subprocess.run(["git", "-C", str(REPO_ROOT), "check-ignore", "--no-index",
                              "--stdin"], input="\n".join(extra), text=True,
                             capture_output=True).stdout.split("\n")
    return changed + len(set(extra) - set(ignored))


@pytest.fixture(scope="session")
def spack_offline() -> dict:
    """bare_env() plus the variables of the Spack that `scripts/spack-offline env` prepared
    (SPACK_ROOT, SPACK_PYTHON, ..., CB_SPACK_CACHE), or of $SPACK_ROOT."""
    proc = subprocess.run([str(SPACK_OFFLINE), "--third-party", str(THIRD_PARTY),
                           "--cache", str(SPACK_CACHE), "env"], text=True,
                          capture_output=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"scripts/spack-offline env failed (exit {proc.returncode}):\n"
                    f"{proc.stderr[-4000:]}", pytrace=False)
    env = bare_env()
    for line in proc.stdout.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = shlex.split(value)[0] if value else ""
    return env


@pytest.fixture(scope="session")
def spack_site(spack_offline):
    """Install site-configs/local/spack.yaml with the offline Spack into its cache; hand
    out a SpackSite. Skipped, saying so, without Lmod."""
    import fcntl

    if not LMOD_INIT.is_file():
        pytest.skip(f"Lmod not installed ({LMOD_INIT} missing; Debian: lmod)")
    env = dict(spack_offline)
    cache = Path(env.get("CB_SPACK_CACHE") or SPACK_CACHE)
    cache.mkdir(parents=True, exist_ok=True)   # with $SPACK_ROOT: where the install goes
    # One session at a time installs into the cache.
    lock = open(cache / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        src, env_dir = cache / "cobalt-bench-src", cache / "env-local"
        src.mkdir(exist_ok=True)
        env_dir.mkdir(exist_ok=True)
        changed = _sync_checkout(src)
        site = yaml.safe_load(LOCAL_SPACK_YAML.read_text())
        spec = site["spack"]
        # The mirror's own checksums first (scripts/spack-offline), then ours.
        spec["repos"] = {"cobalt": str(REPO_ROOT / "spack-repo" / "spack_repo" / "cobalt")}
        if env.get("CB_SPACK_MIRROR_REPO"):
            spec["repos"] = {"offline_mirror": env["CB_SPACK_MIRROR_REPO"], **spec["repos"]}
        spec["develop"] = {"cobalt-bench": {"spec": "cobalt-bench@develop", "path": str(src)}}
        spec["config"] = {"install_tree": {"root": str(cache / "opt")}}
        spec["modules"]["default"]["roots"] = {"lmod": str(cache / "lmod")}
        if env.get("CB_SPACK_REFRAME"):
            # scripts/spack-offline's ReFrame, where a site has its own (the file's prefix).
            for external in spec["packages"]["reframe"]["externals"]:
                external["prefix"] = env["CB_SPACK_REFRAME"]
        text = yaml.safe_dump({"spack": spec}, sort_keys=False)
        if not (env_dir / "spack.yaml").is_file() or (env_dir / "spack.yaml").read_text() != text:
            (env_dir / "spack.yaml").write_text(text)
        site_env = SpackSite(env, env_dir, src, cache / "lmod" / "Core", "", "")
        # Another worker of this session installed it (plugins/workers.py): the same
        # spack.yaml, no source changed since. Installed again, its modules' tree would be
        # deleted and written anew under the other worker's tests.
        stamp = cache / ".installed-by"
        this = {"session": os.environ.get("PYTEST_XDIST_TESTRUNUID"),
                "spack.yaml": hashlib.sha256(text.encode()).hexdigest()}
        if this["session"] and not changed and stamp.is_file():
            done = json.loads(stamp.read_text())
            if {k: done.get(k) for k in this} == this:
                site_env.specs, site_env.log = done["specs"], done["log"]
                return site_env
        stamp.unlink(missing_ok=True)
        install = site_env.spack("install", "--fail-fast", timeout=_SPACK_TIMEOUT)
        refresh = site_env.spack("module", "lmod", "refresh", "-y", "--delete-tree",
                                 timeout=600)
        site_env.specs = site_env.spack("spec", "-I", timeout=600).stdout
        site_env.log = install.stdout + install.stderr + refresh.stdout + refresh.stderr
        partial = stamp.with_suffix(".tmp")
        partial.write_text(json.dumps({**this, "specs": site_env.specs, "log": site_env.log}))
        partial.replace(stamp)
        return site_env
    finally:
        lock.close()


def login_shell(script: str, cwd: Path, timeout: float = 120, **env):
    """Run `script` in a new login shell (bash -l: /etc/profile and Lmod's initialisation)
    started in `cwd` from a clean environment, as a user who has just logged in, with `env`
    (MODULEPATH, SLURM_CONF), and a home and TMPDIR of its own beside `cwd` (ReFrame's
    generic configuration logs to a temporary file)."""
    home, tmp = cwd.parent / "home", cwd.parent / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    base = {k: os.environ[k] for k in ("USER", "LOGNAME", "LANG") if k in os.environ}
    return subprocess.run(["bash", "-l", "-c", script], cwd=cwd, text=True,
                          capture_output=True, timeout=timeout,
                          env={**base, "HOME": str(home), "TMPDIR": str(tmp),
                               "PATH": DEBIAN_PATH, **env})


def cobalt_bench_prefixes(spack_site) -> dict:
    """{name: prefix} of the installed cobalt-bench and of its direct dependencies."""
    out = spack_site.spack("find", "-d", "--format", "{name} {prefix}", "cobalt-bench").stdout
    return dict(re.findall(r"^(?:    )?(\S+) (/\S*)$", out, re.M))
