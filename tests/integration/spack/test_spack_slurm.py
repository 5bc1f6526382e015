"""The `local` Spack environment's install (the session's `spack_site` fixture,
tests/plugins/spack.py) used through the local Slurm cluster: the design card's commands
and the perftest job. The install's own tests, which need no cluster, are test_spack.py."""

from __future__ import annotations

import re

import pytest

from plugins.checkout import DEBIAN_PATH, REPO_ROOT
from plugins.slurm import finished_job, sbatch
from plugins.spack import cobalt_bench_prefixes, login_shell
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS        # the design card's checks run eth-test on loopback

needs_spack = pytest.mark.needs_setup("spack")


def _plain(text: str) -> str:
    """ReFrame's output without its colours."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@needs_spack
def test_design_card_commands(spack_site, slurm_cluster, tmp_path):
    # What a user is told to type after the one install, exactly, in a fresh login in an
    # empty directory: load the module, run the checks under ReFrame's own configuration
    # (no site configuration: RFM_CONFIG_FILES unset), submit the OSU latency job to the
    # local Slurm cluster. OSU comes from cobalt-bench's dependency alone.
    prefix = cobalt_bench_prefixes(spack_site)
    work = tmp_path / "work"
    work.mkdir()
    shell = login_shell("""
        unset RFM_CONFIG_FILES
        module load cobalt-bench
        reframe -c $COBALT_BENCH_CHECKS -r
        echo "reframe exit status $?"
        sbatch $COBALT_BENCH_JOBS/osu_latency.slurm
    """, work, timeout=900, MODULEPATH=str(spack_site.lmod_core),
        SLURM_CONF=slurm_cluster.env["SLURM_CONF"])
    out = _plain(shell.stdout + shell.stderr)
    submitted = re.search(r"^Submitted batch job (\d+)$", shell.stdout, re.M)
    assert submitted, out
    jobid = submitted.group(1)
    state = finished_job(jobid, slurm_cluster.env, timeout=300)
    log = work / f"osu_latency-{jobid}.out"
    text = log.read_text() if log.is_file() else f"(no {log})"
    assert state == ("COMPLETED", "0:0"), text
    osu = f"{prefix['osu-micro-benchmarks']}/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency"
    assert f"running: srun {osu}" in text, text
    assert (work / "results" / "slurm" / f"osu_latency-{jobid}.txt").is_file()

    # The checks that fit this machine ran under ReFrame's generic system and passed.
    assert "reframe exit status 0" in out, out
    for check in ("MemTest", "Preflight"):
        assert re.search(rf"^\[\s+OK\s+\] \(\d+/\d+\) {check} ", out, re.M), out
    assert not re.search(r"^\[\s+FAIL\s+\]", out, re.M), out
    assert re.search(r"^\[\s+PASSED\s+\] Ran (\d+)/\1 test case\(s\) .*\(0 failure\(s\)",
                     out, re.M), out


@needs_spack
def test_ib_write_bw_job_runs_spacks_perftest(spack_site, slurm_cluster, tmp_path):
    # One port pair per job, ib_write_bw from the perftest module. This machine has no
    # InfiniBand device: the pair runs and ib_write_bw fails, saying so (exit code 1).
    env = dict(slurm_cluster.env, MODULEPATH=str(spack_site.lmod_core),
               PERFTEST_MODULE="perftest", IB_PAIR="mlx5_0:1=mlx5_1:1",
               COBALT_BENCH_RESULTS=str(tmp_path / "results"), PATH=DEBIAN_PATH)
    env = {k: v for k, v in env.items() if not k.startswith(("COBALT_BENCH_ROOT", "SLURM_JOB"))}
    jobid = sbatch(REPO_ROOT / "jobs" / "ib_write_bw.slurm", tmp_path, env)
    state = finished_job(jobid, env)
    text = (tmp_path / f"ib_write_bw-{jobid}.out").read_text()
    assert state == ("FAILED", "1:0"), text
    assert "Version: 6.27, pair mlx5_0:1=mlx5_1:1" in text, text
    assert "# ib_write_bw sender mlx5_0:1 receiver mlx5_1:1" in text, text
    assert (tmp_path / "results" / "slurm" / f"ib_write_bw-{jobid}.txt").is_file()

    env["IB_PAIR"] = "mlx5_0=mlx5_1"
    jobid = sbatch(REPO_ROOT / "jobs" / "ib_write_bw.slurm", tmp_path, env)
    assert finished_job(jobid, env) == ("FAILED", "2:0")
    assert "IB_PAIR must be SEND_DEV:PORT=RECV_DEV:PORT" in \
        (tmp_path / f"ib_write_bw-{jobid}.out").read_text()
