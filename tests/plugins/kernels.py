"""The kernels' programs as the tests run them, and what their fault tests share.

- ``kernel(name)``: bin/NAME (or $CB_FAULTS_BIN/NAME), the test skipped where it is not
  built; ``smp_mad_stress`` and ``gpu_copy_sim`` fixtures.
- ``load_npz()``, ``check_matrix()``, ``expected_pairs()``: a cb-linktest results file
  and the pairs its matrix must hold.
- the bad option values by type (``BAD_INT`` ...) and ``bad_value_test()``: the table of
  issue 14 (every kernel's options, by type, must be usage errors that name the option);
- ``cpu_isas()``: the vector instruction sets cpu-test runs on this machine;
- ``interrupt()`` and ``check_interrupted()``: real signals to running kernels, which must
  stop, print a results block marked "Interrupted", leave a valid JSON document with
  "interrupted": true and exit 128 + the signal's number.

The kernels parse every number with the one strict parser of src/common (cb_parse_u64,
cb_parse_i64, cb_parse_f64, cb_list_next).
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time

import pytest

from plugins.checkout import BIN, MPI_ENV, REPO_ROOT, results_block
from plugins.setup import nvidia_gpus_present

# $CB_FAULTS_BIN runs the fault tests against another build (default: the checkout's bin/).
FAULTS_BIN = os.environ.get("CB_FAULTS_BIN") or str(BIN)
# $GPU_COPY_SIM: a simulation built elsewhere (make BUILD=DIR DIR/tests/gpu-copy-sim);
# without it the fixture builds build/tests/gpu-copy-sim in the checkout.
GPU_COPY_SIM = os.environ.get("GPU_COPY_SIM") or str(REPO_ROOT / "build" / "tests" / "gpu-copy-sim")
# Open MPI's mpirun (4.1) answers SIGINT or SIGTERM by waiting odls_base_sigkill_timeout
# seconds (1 by default), sending SIGTERM to every rank, waiting as long again and sending
# SIGKILL; meanwhile it forwards no output. On a loaded machine the ranks may need more
# than a second to report, so the signal tests give them 10 (src/cb-linktest/README.md).
MPI_SIGNAL_ENV = dict(MPI_ENV, OMPI_MCA_odls_base_sigkill_timeout="10")


def kernel(name: str) -> str:
    """The kernel's program in $CB_FAULTS_BIN (default bin/); the test is skipped where it
    is not built (make says why)."""
    path = os.path.join(FAULTS_BIN, name)
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not built")
    return path


@pytest.fixture(scope="session")
def smp_mad_stress() -> str:
    """bin/smp-mad-stress of the checkout; skipped where it is not built."""
    path = str(BIN / "smp-mad-stress")
    if not os.access(path, os.X_OK):
        pytest.skip(f"{path} is not built (make builds it where libibumad-dev is installed)")
    return path


@pytest.fixture(scope="session")
def gpu_copy_sim() -> str:
    """gpu-copy's host-memory simulation (make build/tests/gpu-copy-sim, part of make
    ctest), or $GPU_COPY_SIM."""
    if os.environ.get("GPU_COPY_SIM"):
        return GPU_COPY_SIM
    if not shutil.which(os.environ.get("CXX", "g++")):
        pytest.skip("no C++ compiler (g++) to build the simulation")
    r = subprocess.run(["make", "-C", str(REPO_ROOT), "build/tests/gpu-copy-sim"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return GPU_COPY_SIM


def nvcc() -> str | None:
    """The CUDA compiler that make builds gpu-copy with, or None."""
    return shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)


# gpu-copy is built where nvcc is; some of its tests are about a machine without a GPU.
needs_gpu_copy_binary = pytest.mark.skipif(
    not nvcc(), reason="nvcc (CUDA toolkit) not found: gpu-copy is not built")
no_gpu_only = pytest.mark.skipif(nvidia_gpus_present(), reason="this machine has an NVIDIA GPU")

# gpu-copy on simulated GPUs: the riser machine's two GPUs (tests/data/gpu-copy), 64 MiB
# each, copies slowed to 12 and 6 Gbit/s per direction, and a short run on them.
GPU_COPY_RISER_BUSES = "0000:3b:00.0", "0000:86:00.0"
GPU_COPY_RISER_SIM = {"GPU_COPY_FAKE_GPUS": f"{GPU_COPY_RISER_BUSES[0]}=64M@12,"
                                            f"{GPU_COPY_RISER_BUSES[1]}=64M@6"}
GPU_COPY_SMALL = ["--sysfs-root", str(REPO_ROOT / "tests" / "data" / "gpu-copy" / "gen3-x8-riser"),
                  "--device-buffer", "16M", "--chunk", "1M", "--iterations", "3",
                  "--alone-iterations", "2", "--quiet"]


def load_npz(path) -> dict:
    """A cb-linktest results file: {array name: array}, its 'meta' decoded."""
    import numpy as np

    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data["meta"] = json.loads(str(data["meta"].item()))
    return data


def expected_pairs(n, bisection=False, hosts=None) -> set:
    """The pairs (a, b), a < b, that cb-linktest tests among n ranks: all of them, those
    across the two halves (bisection), or those on different hosts."""
    pairs = set()
    for a in range(n):
        for b in range(a + 1, n):
            if bisection and (a < n // 2) == (b < n // 2):
                continue
            if hosts is not None and hosts[a] == hosts[b]:
                continue
            pairs.add((a, b))
    return pairs


def check_matrix(path, n, pairs) -> dict:
    """Every pair to test has a finite time, symmetric; nothing else does."""
    import numpy as np

    data = load_npz(path)
    t = data["time"]
    assert t.shape == (n, n) and t.dtype == np.float64
    tested = {(a, b) for a in range(n) for b in range(a + 1, n) if np.isfinite(t[a, b])}
    assert tested == pairs
    assert np.array_equal(np.isnan(t), np.isnan(t.T))
    assert np.allclose(t[np.isfinite(t)], t.T[np.isfinite(t)])
    assert np.all(np.isnan(np.diag(t)))
    assert np.all(t[np.isfinite(t)] > 0)
    assert len(data["hosts"]) == n
    return data


# ---- bad values by type -----------------------------------------------------------------
# Each list holds values that no option of that type may take.
BAD_INT = ["", "x", "1.5", "+1", " 1", "1 ", "0x10", "1e3", "1,2", "nan", "inf",
           "99999999999999999999", "-99999999999999999999", "18446744073709551616"]
BAD_U64 = ["", "x", "-1", "+1", " 1", "1.0", "1e3", "0x", "nan",
           "18446744073709551616", "0x10000000000000000"]
BAD_REAL = ["", "x", "nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999", "0x1p3", " 1",
            "1 ", "1,5", "1..2"]
BAD_SIZE = ["", "x", "-1", "+1", " 1", "1.5M", "1 K", "16E", "nan", "0x10",
            "18446744073709551616", "17179869184T"]
BAD_DURATION = ["", "x", "-1", "+1", " 1", "nan", "inf", "1e999", "5 m", "1w", "0x10"]


def typed_cases(name: str, table: dict, tail: list) -> list:
    """pytest params (kernel, args, what the message must name): every bad value of each
    option's type, the option first and `tail` (what else a run needs) after it, so that
    it overrides a required one."""
    return [pytest.param(name, [f"--{opt}={v}"] + tail, f"--{opt}", id=f"{name}--{opt}={v!r}")
            for opt, values in table.items() for v in values]


def special_cases(name: str, cases: list) -> list:
    """pytest params of (args, what the message must name) for the kernel `name`."""
    return [pytest.param(name, a, n, id=f'{name}-{" ".join(a)}') for a, n in cases]


def empty_json_cases(tail: list) -> list:
    """An empty --json, and one in a directory that does not exist (issue 14, item 6: it
    failed only after the whole run): (args, what the message must name)."""
    return [(["--json="] + tail, "--json"), (["-j", ""] + tail, "-j"),
            (["--json", "/nonexistent/dir/r.json"] + tail, "--json")]


def exits_2_naming(name: str, args: list, names: str) -> None:
    """The kernel with `args` is a usage error: exit 2, a message naming `names` and the
    way to --help, nothing run and nothing printed on stdout."""
    r = subprocess.run([kernel(name), *args], capture_output=True, text=True, timeout=20,
                       env=dict(os.environ, **MPI_ENV))
    assert r.returncode == 2, f"exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    assert names in r.stderr, r.stderr
    assert f"Try '{name}" in r.stderr, r.stderr
    assert r.stdout == "", "a usage error runs nothing and prints no result"


def bad_value_test(name: str, options: dict, tail: list, special: list):
    """The kernel's test_bad_value_exits_2_naming_it: every bad value of each of its
    `options` ({option: bad values of its type}, `tail` after it) and each of its `special`
    cases ((args, what the message must name)) is a usage error that names it."""
    @pytest.mark.parametrize("name, args, names", typed_cases(name, options, tail)
                             + special_cases(name, special))
    def test_bad_value_exits_2_naming_it(name, args, names):
        exits_2_naming(name, args, names)
    return test_bad_value_exits_2_naming_it


def document_alone_on_stdout(cmd: list) -> dict:
    """`cmd` with --json -: stdout is nothing but the document (issue 14, item 6: it held
    the human output and the document mixed); the human output is all there, on stderr,
    its results block last."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)  # nothing but the document
    assert doc["test"] == os.path.basename(cmd[0]) and doc["interrupted"] is False
    assert "----- Test results -----" in r.stderr
    assert r.stderr.rstrip("\n").split("\n")[-1].split(":")[0] in ("Average late", "Errors")
    return doc


# ---- the CPU ---------------------------------------------------------------------------------
def cpu_isas() -> list:
    """The vector instruction sets cpu-test runs on this machine, widest first (as its
    --isa auto takes them), from /proc/cpuinfo's flags."""
    if os.uname().machine == "aarch64":
        return ["neon", "scalar"]
    flags = set()
    with open("/proc/cpuinfo") as fp:
        for line in fp:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    return ((["avx512"] if "avx512f" in flags else [])
            + (["avx2"] if {"avx2", "fma"} <= flags else []) + ["scalar"])


# ---- signals ------------------------------------------------------------------------------
SIGNAL_NAMES = ["SIGINT", "SIGTERM", "SIGHUP"]


def interrupt(cmd, sig, ready, human="stdout", after=0.5, env=None, timeout=30, ranks=None):
    """Starts cmd, waits until its human output shows `ready`, lets it measure `after`
    seconds, sends sig (to the processes running `ranks` when given: the MPI ranks, as
    scancel and srun deliver it; else to cmd itself), and returns (exit code, stdout,
    stderr, seconds to stop)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, **(env or {})))
    stream = p.stdout if human == "stdout" else p.stderr
    seen = b""
    deadline = time.monotonic() + timeout
    # the kernels flush their plan before measuring; select, so that a kernel that never
    # says it is ready fails the test instead of hanging it
    while ready.encode() not in seen and time.monotonic() < deadline and p.poll() is None:
        if select.select([stream], [], [], 0.2)[0]:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                break
            seen += chunk
    assert ready.encode() in seen, f"{cmd[0]} never printed {ready!r}: {seen.decode()}"
    time.sleep(after)
    if ranks:
        subprocess.run(["pkill", f"-{int(sig)}", "-f", "^" + re.escape(ranks)], check=True)
    else:
        p.send_signal(sig)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    took = time.monotonic() - t0
    if human == "stdout":
        out = seen + out
    else:
        err = seen + err
    return p.returncode, out.decode(), err.decode(), took


def check_interrupted(rc, human, doc_text, sig, name):
    """Exit 128 + sig, a results block marked "Interrupted" by `name`, and a document
    that says it was interrupted and is not judged compliant: (block, document)."""
    assert rc == 128 + sig, f"exit {rc}\n{human}"
    block = results_block(human)
    assert block["Interrupted"].startswith(name), block
    doc = json.loads(doc_text)
    assert doc["interrupted"] is True
    assert doc["compliance"]["passed"] is False  # a run cut short is not judged compliant
    return block, doc
