"""The local-slurm site's cluster (site-configs/local-slurm/cluster) really runs jobs.

Jobs are submitted without ``sbatch --wait`` (it polls at 2, 10, 42 s) and followed with
sacct, every 0.2 s, up to a bounded time (``SlurmCluster.sbatch()`` and
``.wait_for_job()``, tests/plugins/slurm.py).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from plugins.slurm import jobs_cpu

DAEMON_PIDFILES = ["slurmctld.pid", "slurmdbd.pid", "slurmd-n1.pid", "slurmd-n2.pid",
                   "mysql/mysqld.pid"]

MPI_HELLO = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const char *node = getenv("SLURMD_NODENAME");
    printf("rank %d of %d on %s sum %d\n", rank, size, node ? node : "?", sum);
    MPI_Finalize();
    return 0;
}
"""


def daemon_pids(cluster) -> dict:
    run = cluster.state_dir / "run"
    return {name: (run / name).read_text().strip() for name in DAEMON_PIDFILES}


# --- the script itself -------------------------------------------------------------------

def test_help(repo_root):
    script = repo_root / "site-configs" / "local-slurm" / "cluster"
    res = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0
    for word in ("start", "stop", "status", "restart", "logs", "COBALT_SLURM_DIR", "SLURM_CONF"):
        assert word in res.stdout
    res = subprocess.run([script, "no-such-command"], capture_output=True, text=True,
                         timeout=30)
    assert res.returncode == 2
    assert "unknown command" in res.stderr


@pytest.mark.parametrize("args, why", [
    (["--nodes", "0"], "the number of nodes must be 1 to 64, not '0'"),
    (["--nodes", "65"], "the number of nodes must be 1 to 64, not '65'"),
    (["--nodes=x"], "the number of nodes must be 1 to 64, not 'x'"),
    (["--node", "4"], "start: unknown option --node"),
])
def test_start_refuses_a_bad_node_count(repo_root, tmp_path, args, why):
    """Refused before anything starts (exit 2), in a state directory never used."""
    script = repo_root / "site-configs" / "local-slurm" / "cluster"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "COBALT_SLURM_DIR": str(tmp_path / "none")}
    res = subprocess.run([script, "start", *args], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert why in res.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("setting, value, why", [
    ("COBALT_SLURM_SLURMD_TIMEOUT", "9", "a number of seconds, at least 10, not '9'"),
    ("COBALT_SLURM_SLURMD_TIMEOUT", "1m", "a number of seconds, at least 10, not '1m'"),
    ("COBALT_SLURM_PORT_OFFSET", "-1", "a number, not '-1'"),
])
def test_start_refuses_a_bad_setting(repo_root, tmp_path, setting, value, why):
    """A bad setting in the environment is a usage error too, before anything starts."""
    script = repo_root / "site-configs" / "local-slurm" / "cluster"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "COBALT_SLURM_DIR": str(tmp_path / "none"),
           setting: value}
    res = subprocess.run([script, "start"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"cluster: {setting} must be {why}" in res.stderr
    assert not (tmp_path / "none").exists()


def test_status_of_a_cluster_that_never_ran(repo_root, tmp_path):
    """An empty state directory is a stopped cluster: exit 3."""
    script = repo_root / "site-configs" / "local-slurm" / "cluster"
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "COBALT_SLURM_DIR": str(tmp_path / "none")}
    res = subprocess.run([script, "status"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "status: stopped" in res.stdout


# --- a running cluster ---------------------------------------------------------------------

def test_status_up(slurm_cluster):
    res = slurm_cluster.cluster("status", timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"export SLURM_CONF={slurm_cluster.slurm_conf}" in res.stdout
    assert "status: up" in res.stdout


def arm_nodes(cluster):
    """Partition arm's nodes as the cluster configured them: the aarch64 node a1 where the
    arm64 root runs (tests/integration/arm/), else n1 and n2 standing in."""
    return "a1" if cluster.has_arm_node() else "n[1-2]"


def test_config_declares_both_partitions(slurm_cluster):
    res = slurm_cluster.run(["sinfo", "-h", "-o", "%P %N"])
    assert res.returncode == 0, res.stderr
    parts = dict(line.split() for line in res.stdout.splitlines())
    assert parts == {"x86*": "n[1-2]", "arm": arm_nodes(slurm_cluster)}


@pytest.mark.parametrize("partition", ["x86", "arm"])
def test_batch_job_completes(slurm_cluster, tmp_path, partition):
    job = slurm_cluster.sbatch(tmp_path, "-p", partition, "-t", "1",
                 "--wrap", "echo hello from $SLURMD_NODENAME in $SLURM_JOB_PARTITION")
    rec = slurm_cluster.wait_for_job(job)
    assert rec["State"] == "COMPLETED", rec
    assert rec["Partition"] == partition
    assert rec["ExitCode"] == "0:0"
    assert re.search(rf"hello from (n[12]|a1) in {partition}",
                     slurm_cluster.job_output(tmp_path, job))


def test_failing_job_is_reported_failed(slurm_cluster, tmp_path):
    """sacct tells failure from success (so the COMPLETED checks above mean something)."""
    job = slurm_cluster.sbatch(tmp_path, "-t", "1", "--wrap", "exit 3")
    rec = slurm_cluster.wait_for_job(job)
    assert rec["State"] == "FAILED", rec
    assert rec["ExitCode"] == "3:0"


def test_a_jobs_cpu_time_is_read_from_accounting(slurm_cluster, tmp_path):
    """What the test suite's timing charges to a test (plugins.slurm.jobs_cpu): a job that
    computes, in its batch step and in an srun step, counted as the CPU time the job's
    shells say their children used (bash's `times`), and a job that sleeps as next to
    none."""
    since = time.time() - 1
    spin = "timeout {} sh -c 'while :; do :; done'"
    submitting = time.time()
    busy = slurm_cluster.sbatch(
        tmp_path, "-n", "1", "-t", "1", "--wrap",
        f"srun -n 1 bash -c {shlex.quote(spin.format(2) + '; times')}; {spin.format(1)}; times")
    idle = slurm_cluster.sbatch(tmp_path, "-n", "1", "-t", "1", "--wrap", "sleep 2")
    for job in (busy, idle):
        assert slurm_cluster.wait_for_job(job)["State"] == "COMPLETED"
    # the shells' own and their children's user and system times, both steps'
    said = sum(60 * int(m) + float(s) for m, s in
               re.findall(r"(\d+)m([\d.]+)s", slurm_cluster.job_output(tmp_path, busy)))
    assert said >= 0.5, slurm_cluster.job_output(tmp_path, busy)
    cpu = {}
    deadline = time.monotonic() + 30          # the steps' records may follow the job's
    while time.monotonic() < deadline and abs(cpu.get(str(busy), 0) - said) > 0.2 + said / 10:
        cpu = {job: s for job, _, s in jobs_cpu(slurm_cluster, since)}
        time.sleep(0.5)
    assert {str(busy), str(idle)} <= set(cpu), cpu
    assert abs(cpu[str(busy)] - said) <= 0.2 + said / 10, (cpu, said)
    assert cpu[str(idle)] < 0.2, cpu
    # Submit times in whole seconds, at or after the second sbatch was called in (the
    # timing plugin takes a test's start in whole seconds so: plugins/timing.py)
    submitted = {job: t for job, t, _ in jobs_cpu(slurm_cluster, since)}[str(busy)]
    assert submitted == int(submitted) and int(submitting) <= submitted <= time.time(), \
        (submitting, submitted)


def test_default_partition_is_x86(slurm_cluster, tmp_path):
    job = slurm_cluster.sbatch(tmp_path, "-t", "1", "--wrap", "true")
    rec = slurm_cluster.wait_for_job(job)
    assert rec["State"] == "COMPLETED", rec
    assert rec["Partition"] == "x86"


@pytest.mark.parametrize("partition", ["x86", "arm"])
def test_two_node_job(slurm_cluster, tmp_path, partition):
    if partition == "arm" and arm_nodes(slurm_cluster) == "a1":
        pytest.skip("partition arm has one node, the aarch64 node a1")
    job = slurm_cluster.sbatch(tmp_path, "-p", partition, "-N", "2", "-t", "1",
                 "--wrap", "srun hostname")
    rec = slurm_cluster.wait_for_job(job)
    assert rec["State"] == "COMPLETED", rec
    assert rec["NNodes"] == "2"
    assert rec["NodeList"] == "n[1-2]"
    # Each slurmd runs with its node name as hostname (see `cluster`, start_slurmd).
    assert sorted(slurm_cluster.job_output(tmp_path, job).split()) == ["n1", "n2"]


def test_two_one_cpu_jobs_share_a_node(slurm_cluster, tmp_path):
    """select/cons_tres by core: two 1-CPU jobs fit on one node at the same time."""
    jobs = [slurm_cluster.sbatch(tmp_path, "-w", "n1", "-n", "1", "-c", "1", "-t", "1",
                   "--wrap", "sleep 3") for _ in range(2)]
    deadline = time.monotonic() + 20
    running = set()
    while time.monotonic() < deadline and len(running) < 2:
        res = slurm_cluster.run(["squeue", "-h", "-t", "R", "-o", "%A",
                                 "-j", ",".join(map(str, jobs))])
        running = set(res.stdout.split())
        time.sleep(0.2)
    for job in jobs:
        assert slurm_cluster.wait_for_job(job)["State"] == "COMPLETED"
    assert running == {str(j) for j in jobs}, "the two jobs never ran at the same time"


def test_srun_pmix_two_nodes(slurm_cluster):
    listing = slurm_cluster.run(["srun", "--mpi=list"])
    assert "pmix" in listing.stdout + listing.stderr, "Slurm's pmix plugin is missing"
    res = slurm_cluster.run(["srun", "--mpi=pmix", "-N2", "-n2", "-t", "1", "bash", "-c",
                             "echo $PMIX_RANK $SLURMD_NODENAME"])
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.splitlines()) == ["0 n1", "1 n2"]


def test_openmpi_under_srun_pmix(slurm_cluster, tmp_path):
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        pytest.skip("mpicc not installed (Debian: libopenmpi-dev)")
    src = tmp_path / "hello.c"
    src.write_text(MPI_HELLO)
    exe = tmp_path / "hello"
    subprocess.run([mpicc, "-o", str(exe), str(src)], check=True, timeout=120)
    # Two ranks per node: with shared hostnames they would clash in shared memory.
    res = slurm_cluster.run(["srun", "--mpi=pmix", "-N2", "-n4", "-t", "1", exe], timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = sorted(res.stdout.splitlines())
    assert lines == [f"rank {r} of 4 on {n} sum 6"
                     for r, n in [(0, "n1"), (1, "n1"), (2, "n2"), (3, "n2")]], res.stdout
    assert "vader" not in res.stderr, res.stderr


def test_start_twice_is_idempotent(slurm_cluster):
    before = daemon_pids(slurm_cluster)
    res = slurm_cluster.cluster("start")
    assert res.returncode == 0, res.stdout + res.stderr
    for daemon in ("mysqld", "slurmdbd", "slurmctld", "slurmd n1", "slurmd n2"):
        assert f"{daemon}: already running" in res.stdout
    assert f"export SLURM_CONF={slurm_cluster.slurm_conf}" in res.stdout
    assert daemon_pids(slurm_cluster) == before
    assert slurm_cluster.cluster("status", timeout=60).returncode == 0


def test_status_degraded_and_start_repairs(slurm_cluster, tmp_path):
    """A dead slurmd makes status exit 1; start brings back just that daemon."""
    before = daemon_pids(slurm_cluster)
    pid = int(before["slurmd-n2.pid"])
    subprocess.run(["kill", "-TERM", str(pid)], check=True)
    deadline = time.monotonic() + 30
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists(), "slurmd n2 ignored TERM"

    res = slurm_cluster.cluster("status", timeout=60)
    assert res.returncode == 1, res.stdout
    assert "slurmd n2    not running" in res.stdout

    res = slurm_cluster.cluster("start")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "slurmd n2: started" in res.stdout
    after = daemon_pids(slurm_cluster)
    assert after["slurmd-n2.pid"] != before["slurmd-n2.pid"]
    assert {k: v for k, v in after.items() if k != "slurmd-n2.pid"} == \
           {k: v for k, v in before.items() if k != "slurmd-n2.pid"}
    assert slurm_cluster.cluster("status", timeout=60).returncode == 0
    # and the restored node runs jobs again
    job = slurm_cluster.sbatch(tmp_path, "-w", "n2", "-t", "1", "--wrap", "true")
    assert slurm_cluster.wait_for_job(job)["State"] == "COMPLETED"


def _x86(cluster) -> list:
    out = subprocess.run(["sinfo", "-h", "-p", "x86", "-N", "-o", "%N"], env=cluster.env,
                         text=True, capture_output=True, timeout=30).stdout.split()
    return sorted(set(out))


def test_a_start_after_slurmctld_died_keeps_the_clusters_size(slurm_cluster):
    """Issue 37: `cluster start` after slurmctld died shrank a 3-node cluster to its
    default 2, leaving n3's slurmd running unused and 3-node jobs pending. The start that
    finds the slurmds alive keeps the size slurm.conf records."""
    before = len(_x86(slurm_cluster))
    r = slurm_cluster.cluster("restart", "--nodes", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        pid = int((slurm_cluster.state_dir / "run" / "slurmctld.pid").read_text())
        subprocess.run(["kill", "-9", str(pid)], check=True, timeout=30)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        r = slurm_cluster.cluster("start")
        assert r.returncode == 0, r.stdout + r.stderr
        assert _x86(slurm_cluster) == ["n1", "n2", "n3"], r.stdout + r.stderr
        out = subprocess.run(["srun", "-N", "3", "-p", "x86", "hostname"], env=slurm_cluster.env,
                             text=True, capture_output=True, timeout=120)
        assert out.returncode == 0 and len(out.stdout.split()) == 3, out.stdout + out.stderr
    finally:
        r = slurm_cluster.cluster("restart", "--nodes", str(before))
        assert r.returncode == 0, r.stdout + r.stderr
