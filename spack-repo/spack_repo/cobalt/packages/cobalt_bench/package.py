# cobalt-bench: Spack recipe for the suite itself.
#
# It drives the project's own Makefile (`make`, `make install PREFIX=...`), so a Spack
# install is the same tree as `make install`: bin/<kernels>, the Python package cobalt_bench
# in lib/cobalt-bench/python (installed by the Makefile with `pip --target`, using Spack's
# python, py-pip and py-setuptools) with its console scripts linked into bin/
# (cobalt-bench, cb-linktest-report), modulefiles/cobalt-bench/,
# share/cobalt-bench/{jobs,reframe_checks,site-configs}. The variants decide which of the
# optional kernels the Makefile builds, through its WITH_<PART>=yes|no switches, and which
# of the programs the jobs and checks drive come with it as run dependencies (+osu,
# +perftest, +reframe): Spack's module of cobalt-bench, autoloading its direct dependencies
# (modules: autoload: direct), then puts osu_latency, ib_write_bw and reframe on PATH.

import json
import os
import socket
import subprocess
import time

from spack_repo.builtin.build_systems.cuda import CudaPackage
from spack_repo.builtin.build_systems.makefile import MakefilePackage

from spack.package import *

# Releases: version -> (the commit `make dist DIST_REF=<commit>` archives, the sha256 of
# that tarball). tests/integration/spack/test_spack.py remakes each tarball, checks the sum and installs it.
RELEASES = {
    "0.1.0": ("099d5473a2881fa41a57db7372a3addbb3722bd6",
              "8d14fe2e06ca62fa45de55025a7b90f67654e9bb8dbeff4707595b8579b13d85"),
}

# Optional kernels: the variant that builds each, and the Makefile switch behind it.
# A kernel only counts for a version whose sources have it (src/<kernel>/kernel.mk).
OPTIONAL_KERNELS = {
    "cb-linktest": ("mpi", "WITH_MPI"),
    "gpu-copy": ("cuda", "WITH_CUDA"),
    "smp-mad-stress": ("ibumad", "WITH_IBUMAD"),
}

# A short run per kernel for `spack test run`: small enough for a login node, long enough
# to exercise the data path and the result document. Exit 0 (compliant) or 1 (not
# compliant: a busy node) both mean the kernel ran; 3 means the node lacks what the kernel
# needs, and the run is skipped. "mpi": started with the MPI's mpirun on 2 ranks.
# eth-test-send and eth-test-receive run as a pair over loopback (test_eth_loopback).
# The options are typed, by name, as a site's extras['cobalt_bench'] gives them: the
# installed `cobalt-bench options` checks each against the kernel's own description and
# writes the command line (CobaltBench._short_run_args).
SHORT_RUNS = {
    "mem-test": (None, {"stations": 1, "desired_rate": 1, "duration": 1}),
    "cpu-test": (None, {"duration": 1}),
    "cb-linktest": ("mpi", {"num_warmup_messages": 1, "num_messages": 4,
                            "size_messages": 4096, "check_buffers": True,
                            "no_output": True, "quiet": True}),
    "gpu-copy": (None, {"iterations": 2, "alone_iterations": 0,
                        "device_buffer": "256M", "host_buffer": "256M"}),
}


class CobaltBench(MakefilePackage, CudaPackage):
    """HPC acceptance benchmarks: DRAM traffic of a streaming application (mem-test),
    each core's compute rate (cpu-test), PCIe bandwidth to GPUs, Ethernet line rate, MPI
    link test, InfiniBand MAD stress, with Slurm jobs, ReFrame checks and per-site
    references."""

    # Releases are the tarballs `make dist` makes: cobalt-bench-X.Y.Z.tar.gz of one commit,
    # unpacking to cobalt-bench-X.Y.Z/, the same bytes for the same commit (git archive,
    # gzip -n), published at `url`'s pattern or put in a site's mirror as
    # <mirror>/cobalt-bench/cobalt-bench-X.Y.Z.tar.gz. A tarball cannot hold its own
    # checksum, so a release is a commit made before the line that records it: RELEASES
    # names the commit (tag vX.Y.Z where tags are cloned) and its tarball's sha256, which
    # `make dist DIST_REF=<commit>` prints and Spack verifies on every fetch.
    # `develop` builds a checkout (`spack develop --path CHECKOUT cobalt-bench@develop`, as
    # site-configs/local does); Spack never prefers it to a release.
    homepage = "https://github.com/cobalt-bench/cobalt-bench"
    url = "https://github.com/cobalt-bench/cobalt-bench/releases/download/v0.1.0/cobalt-bench-0.1.0.tar.gz"
    git = "https://github.com/cobalt-bench/cobalt-bench.git"

    version("develop", branch="main")
    for _version, (_commit, _sha256) in RELEASES.items():
        version(_version, sha256=_sha256)

    # What a typical CPU node needs: MPI yes; GPU and the InfiniBand MAD tool are opt-in
    # (smp-mad-stress needs umad device access, a fabric administrator's tool).
    variant("mpi", default=True, description="Build cb-linktest, the MPI all-pairs link test")
    variant(
        "ibumad",
        default=False,
        description="Build smp-mad-stress, the InfiniBand MAD load tool (libibumad)",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build", when="+cuda")  # nvcc compiles gpu-copy's host code as C++
    depends_on("gmake", type="build")
    depends_on("pkgconfig", type="build")  # the Makefile finds hwloc with pkg-config

    # The Python package (pyproject.toml): built and installed with pip and setuptools (the
    # Makefile's `install` runs `python -m pip install --target`); PyYAML reads the sites'
    # references.yaml. `report` and `linktest-report` draw with matplotlib and numpy, which
    # they import only when drawing: +plots brings them (a long build where the site has
    # no matplotlib to reuse); without, every other command works.
    variant("plots", default=True,
            description="numpy and matplotlib, for the plots of report and linktest-report")
    depends_on("python@3.10:", type=("build", "run"))  # ReFrame 4.10.4 and pyproject
    depends_on("py-pip", type="build")
    depends_on("py-setuptools@64:", type="build")
    depends_on("py-pyyaml", type="run")
    depends_on("py-numpy", type="run", when="+plots")
    depends_on("py-matplotlib", type="run", when="+plots")

    depends_on("hwloc@2:")
    depends_on("mpi", when="+mpi")
    depends_on("rdma-core", when="+ibumad")

    # The third-party benchmarks the jobs and checks drive, so that one install gives all
    # of them. Run dependencies only: nothing here links them; the jobs and checks find
    # them on PATH, where their modules put them (osu-micro-benchmarks' puts its
    # libexec/osu-micro-benchmarks/mpi/* directories there). OSU is built with the MPI
    # cobalt-bench links (one MPI per DAG), so it exists only with +mpi.
    variant("osu", default=True, when="+mpi",
            description="The OSU micro-benchmarks, for the OSU jobs and checks")
    variant("perftest", default=True,
            description="perftest (ib_write_bw), for the InfiniBand bandwidth check")
    depends_on("osu-micro-benchmarks", type="run", when="+osu")
    depends_on("perftest", type="run", when="+perftest")
    # ReFrame runs the checks (reframe_checks/ and the site configs import cobalt_bench,
    # which this package's PYTHONPATH gives them); cobalt_bench.reframe supports 4.5 to
    # 4.10. Spack's `reframe` stops at 4.7.3: the release requirements.txt pins (4.10.4)
    # is declared external (site-configs/local/spack.yaml says how).
    variant("reframe", default=True, description="ReFrame, which runs the checks")
    depends_on("reframe@4.5:", type="run", when="+reframe")

    conflicts("platform=darwin", msg="cobalt-bench binds threads and memory with Linux NUMA")

    def _make_args(self):
        """Variables that make the Makefile build exactly what the variants ask for."""
        spec = self.spec
        args = []
        for kernel, (variant, switch) in OPTIONAL_KERNELS.items():
            args.append(f"{switch}={'yes' if spec.satisfies('+' + variant) else 'no'}")
        if spec.satisfies("+mpi"):
            args.append(f"MPICC={spec['mpi'].mpicc}")
        if spec.satisfies("+cuda"):
            args.append(f"NVCC={spec['cuda'].prefix.bin.nvcc}")
            archs = spec.variants["cuda_arch"].value
            if "none" not in archs:  # else src/gpu-copy/kernel.mk's default: all majors
                args.append("NVCC_ARCH=" + " ".join(self.cuda_flags(archs)))
        return args

    @property
    def build_targets(self):
        return ["all"] + self._make_args()

    @property
    def install_targets(self):
        # PYTHON: the Makefile installs the package with it, and its console scripts run it.
        return (["install", f"PREFIX={self.prefix}", f"PYTHON={self.spec['python'].command.path}"]
                + self._make_args())

    @run_after("install")
    def check_variant_kernels(self):
        """A kernel its variant asked for must have been built (the Makefile only skips
        with a message); one it turned off must not have been."""
        for kernel, (variant, _) in OPTIONAL_KERNELS.items():
            if not os.path.exists(join_path(self.stage.source_path, "src", kernel, "kernel.mk")):
                continue  # this version has no such kernel
            built = os.path.exists(join_path(self.prefix.bin, kernel))
            wanted = self.spec.satisfies("+" + variant)
            if built != wanted:
                raise InstallError(
                    f"{kernel}: +{variant} is {'on' if wanted else 'off'} but the kernel was "
                    f"{'built' if built else 'not built'}; see the build log's 'skipped' lines"
                )

    def _share(self):
        return join_path(self.prefix.share, "cobalt-bench")

    def _tree_version(self):
        """The version the kernels report (VERSION of the sources; `develop` has one too)."""
        try:
            with open(join_path(self._share(), "VERSION"), encoding="utf-8") as f:
                return f.read().strip()
        except OSError:
            return str(self.spec.version)

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        # The same variables as modulefiles/cobalt-bench/*.lua sets for a make-install tree,
        # so jobs/*.slurm and the ReFrame site configs (which import cobalt_bench) work with
        # either module.
        share = self._share()
        env.set("COBALT_BENCH_ROOT", self.prefix)
        env.set("COBALT_BENCH_VERSION", self._tree_version())
        env.set("COBALT_BENCH_JOBS", join_path(share, "jobs"))
        env.set("COBALT_BENCH_CHECKS", join_path(share, "reframe_checks"))
        env.set("COBALT_BENCH_SITE_CONFIGS", join_path(share, "site-configs"))
        env.prepend_path("PYTHONPATH", join_path(self.prefix.lib, "cobalt-bench", "python"))

    # ---- spack test run cobalt-bench ---------------------------------------------------
    def _kernels(self):
        return sorted(
            name
            for name in os.listdir(self.prefix.bin)
            if os.access(join_path(self.prefix.bin, name), os.X_OK)
        )

    def test_version(self):
        """every installed kernel answers --version with the tree's version"""
        version = self._tree_version()
        for kernel in self._kernels():
            with test_part(self, f"test_version_{kernel.replace('-', '_')}",
                           purpose=f"{kernel} --version"):
                exe = which(join_path(self.prefix.bin, kernel), required=True)
                out = exe("--version", output=str.split, error=str.split)
                assert version in out, f"{kernel} --version: {out!r} lacks {version}"

    def _launcher(self, kind):
        """The command that starts a kernel: nothing, or mpirun with 2 ranks."""
        if kind != "mpi":
            return []
        mpi = self.spec["mpi"]
        mpirun = which(mpi.prefix.bin.mpirun, mpi.prefix.bin.mpiexec)
        if mpirun is None:
            raise SkipTest(f"no mpirun in {mpi.prefix.bin}")
        args = [mpirun.path, "-n", "2"]
        if mpi.name == "openmpi":
            args.append("--oversubscribe")  # a login node may have fewer cores
            if os.geteuid() == 0:
                args.append("--allow-run-as-root")
        return args

    def _run_kernel(self, kernel, argv, result):
        """Run argv; check exit status, results block and the JSON document."""
        print(" ".join(argv))  # the command line, into the test log
        exe = Executable(argv[0])
        out = exe(*argv[1:], "--json", result, output=str, error=str, fail_on_error=False)
        print(out)  # into the test log
        if exe.returncode == 3:
            raise SkipTest(f"{kernel} cannot run on this node: {out.strip()[-300:]}")
        assert exe.returncode in (0, 1), f"{kernel} exited {exe.returncode}:\n{out}"
        assert "----- Test results -----" in out, f"{kernel}: no results block:\n{out}"
        with open(result, encoding="utf-8") as f:
            doc = json.load(f)
        assert doc["test"] == kernel, f"{result}: test is {doc['test']!r}"
        errors = doc["metrics"].get("verification_errors", {}).get("value", 0)
        assert errors == 0, f"{kernel}: {errors} verification errors"
        return doc

    def _short_run_args(self, kernel, options):
        """The typed options as the kernel's command line, by the installed `cobalt-bench
        options` (the one rule: each option's name, type and range checked against the
        kernel's own description). A release without that command gets --name value."""
        words = [f"{name}={str(value).lower() if isinstance(value, bool) else value}"
                 for name, value in options.items()]
        exe = Executable(join_path(self.prefix.bin, "cobalt-bench"))
        out = exe("options", kernel, *words, output=str, error=str, fail_on_error=False)
        if exe.returncode == 0:
            return out.splitlines()
        # Refused by a cobalt-bench that has the command: a short run above is wrong.
        exe("options", "--help", output=str, error=str, fail_on_error=False)
        assert exe.returncode != 0, f"cobalt-bench options {kernel}: {out.strip()}"
        args = []
        for name, value in options.items():
            flag = "--" + name.replace("_", "-")
            args += ([flag] if value else []) if isinstance(value, bool) else [flag, str(value)]
        return args

    def test_short_run(self):
        """a short run of each kernel writes a result that passed verification"""
        for kernel in self._kernels():
            if kernel.startswith("eth-test-"):
                continue  # test_eth_loopback
            launcher, options = SHORT_RUNS.get(kernel, (None, None))
            name = f"test_short_run_{kernel.replace('-', '_')}"
            with test_part(self, name, purpose=f"{kernel}, a short run"):
                if options is None:
                    raise SkipTest(f"no short run defined for {kernel}")
                args = self._short_run_args(kernel, options)
                argv = self._launcher(launcher) + [join_path(self.prefix.bin, kernel)] + args
                self._run_kernel(kernel, argv, f"{kernel}.json")

    def test_eth_loopback(self):
        """eth-test-send streams 1 s to eth-test-receive over the loopback interface"""
        send = join_path(self.prefix.bin, "eth-test-send")
        receive = join_path(self.prefix.bin, "eth-test-receive")
        if not (os.path.exists(send) and os.path.exists(receive)):
            raise SkipTest("eth-test-send/eth-test-receive not installed")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))  # a free UDP port, not another test's
            port = str(s.getsockname()[1])
        ready = os.path.abspath("eth-test-ready")
        receiver = subprocess.Popen(
            [receive, "-H", "127.0.0.1", "-p", port, "-n", "1", "--threshold", "0.05",
             "--timeout", "20", "--ready-file", ready, "--json", "eth-test-receive.json"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            for _ in range(100):
                if os.path.exists(ready) or receiver.poll() is not None:
                    break
                time.sleep(0.1)
            assert os.path.exists(ready), "eth-test-receive did not start listening"
            self._run_kernel("eth-test-send",
                             [send, "-H", "127.0.0.1", "-p", port, "-n", "1", "-r", "0.1",
                              "-d", "1", "-q"], "eth-test-send.json")
            out, _ = receiver.communicate(timeout=30)
        finally:
            if receiver.poll() is None:
                receiver.kill()
        assert receiver.returncode in (0, 1), \
            f"eth-test-receive exited {receiver.returncode}:\n{out}"
        assert "----- Test results -----" in out, out
        with open("eth-test-receive.json", encoding="utf-8") as f:
            assert json.load(f)["test"] == "eth-test-receive"
