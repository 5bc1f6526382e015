# perftest: the RDMA verbs micro-benchmarks (ib_write_bw, ib_read_lat, ...), which Spack's
# builtin repository lacks. Written for cobalt-bench, which drives ib_write_bw and friends.

import re

from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *

# Spack versions are the version the tools themselves report (`ib_write_bw --version`
# prints "Version: 6.27"; configure.ac's AC_INIT), so that an existing install -- a
# distribution package or MLNX_OFED's build -- is detected with the same numbers.
# Upstream tags its releases differently; this maps each version to its release tag.
RELEASE_TAGS = {
    "6.29": "26.04.17",
    "6.28": "perftest-26.01.5",
    "6.27": "25.10.0-0.128",
    "6.26": "25.07.0-0.104",
    "6.25": "25.04.0-0.84",
    "6.24": "25.01.0-0.80",
    "6.23": "24.10.0-0.66",
}


class Perftest(AutotoolsPackage, CudaPackage):
    """RDMA verbs performance tests: bandwidth and latency of send, RDMA write, RDMA read
    and atomics over InfiniBand, RoCE and iWARP (linux-rdma/perftest)."""

    homepage = "https://github.com/linux-rdma/perftest"
    url = "https://github.com/linux-rdma/perftest/archive/refs/tags/25.10.0-0.128.tar.gz"
    git = "https://github.com/linux-rdma/perftest.git"

    license("GPL-2.0-only OR BSD-2-Clause")

    # sha256 of GitHub's tag archives (archive/refs/tags/<tag>.tar.gz). 6.29's agrees with
    # the hash nixpkgs publishes for that file; the others were computed the same way
    # (`git archive --prefix=perftest-<tag>/ <tag> | gzip -n`), which reproduces GitHub's
    # archives byte for byte. `spack checksum perftest` re-checks them with network access.
    version("master", branch="master")
    version("6.29", sha256="18446f0390dbb097e623ab5f100ba163de6867bc5ad4e42669701e3ca3c4a4bf")
    version("6.28", sha256="662a426ac4aa8dddc8807a5010edc33e2168145598109c5eefc2acaa4d87df3f")
    version("6.27", sha256="5b05c9e1a82c285dd4f41e111a049d3440e0a4a90c14511fc67d9716800d1b5f")
    version("6.26", sha256="e5acee7cd735b60e04c997c2792d7400fbc39aeeea526fbc377a224398fb5f18")
    version("6.25", sha256="c83371d960f23649b248537147109a24d0d8b4a5ed569daa4cd75b340b3bff85")
    version("6.24", sha256="233fb1e8c35a4c2ff670386d0432c8996e5ed35dd27acac6167f8968bed5bc93")
    version("6.23", sha256="73822a885dadb55bd1bfad24275d335a846c155bb6f6aeb1cb2cdb9d6eb80f75")

    depends_on("c", type="build")
    depends_on("cxx", type="build")  # configure.ac runs AC_PROG_CXX
    # Tag archives carry no configure script: autogen.sh makes it.
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")

    depends_on("rdma-core")  # libibverbs, librdmacm, libibumad: configure requires all three
    depends_on("pciutils")  # libpci: relaxed-ordering detection, required on Linux

    conflicts("platform=darwin", msg="perftest needs Linux RDMA verbs")

    # Detection of an existing install: `spack external find perftest`.
    executables = [r"^ib_write_bw$"]

    @classmethod
    def determine_version(cls, exe):
        # --version prints "Version: 6.27" and exits non-zero (1 since 6.x).
        output = Executable(exe)("--version", output=str, error=str, fail_on_error=False)
        match = re.search(r"Version:\s*(\d+(?:\.\d+)+)", output)
        return match.group(1) if match else None

    def url_for_version(self, version):
        tag = RELEASE_TAGS.get(str(version), str(version))
        return f"https://github.com/linux-rdma/perftest/archive/refs/tags/{tag}.tar.gz"

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        args = []
        if self.spec.satisfies("+cuda"):
            # GPUDirect RDMA (--use_cuda): configure takes cuda.h's path.
            args.append(f"CUDA_H_PATH={self.spec['cuda'].prefix.include}/cuda.h")
        return args

    def test_version(self):
        """every installed tool reports the package's version"""
        for tool in ("ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat",
                     "ib_send_bw", "ib_send_lat", "ib_atomic_bw", "ib_atomic_lat"):
            with test_part(self, f"test_version_{tool}", purpose=f"{tool} --version"):
                exe = which(join_path(self.prefix.bin, tool), required=True)
                # Exits 1 after printing the version (perftest's VERSION_EXIT path).
                out = exe("--version", output=str, error=str, fail_on_error=False)
                expected = r"\d+(\.\d+)+" if self.spec.satisfies("@master") else re.escape(
                    str(self.spec.version))
                assert re.search(rf"^Version: {expected}$", out, re.M), out
