"""The local Slurm cluster and the batch jobs the tests submit to it.

- ``slurm_cluster``: the ``local-slurm`` site's real Slurm cluster
  (``site-configs/local-slurm/cluster``), started once per test session unless it already
  runs (a cluster this session started is stopped again at its end).
- ``fleet_cluster``: a second one beside it, of 8 nodes (its own state directory and
  ports), for the fleet's sweeps; ``fault_cluster``: a third, of 2 nodes, for the tests
  that kill, cancel, time out, fail and drain (their waits on Slurm run beside the
  others', and their restarts with memory limits or a health check change no other
  test's cluster). Each started and stopped the same way. Tests that need one
  are skipped, with the reason, where it cannot run (not root, Slurm not installed); where
  it can run but fails to start, they fail.
- ``sbatch()`` and ``finished_job()``: submit one of jobs/ as a user does (from a directory,
  with an environment) and wait for its accounting; ``SlurmCluster.sbatch()`` and
  ``.wait_for_job()`` do the same for a job that the test writes itself (``--wrap``).

Jobs are submitted without ``sbatch --wait`` (it polls at 2, 10, 42 s) and followed here
with sacct, up to a bounded time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from plugins.checkout import JOB_STATE, REFRAME, REPO_ROOT, ROOT, clean_env
from plugins.workers import held

CLUSTER_SCRIPT = REPO_ROOT / "site-configs" / "local-slurm" / "cluster"
SLURM_DIR = Path(os.environ.get("COBALT_SLURM_DIR", "/var/tmp/cobalt-bench-slurm"))
# The fleet's cluster (``fleet_cluster``): 8 nodes, its ports 100 above the first's.
FLEET_DIR = Path(os.environ.get("COBALT_SLURM_FLEET_DIR", "/var/tmp/cobalt-bench-slurm-fleet"))
FLEET_NODES = 8
FLEET_PORT_OFFSET = 100
# A crashed node DOWN within a minute, not Slurm's five: the sweeps' lost-node tests wait
# for Slurm to find out, and nothing else there depends on it.
FLEET_SLURMD_TIMEOUT_S = 60
# The faults' cluster (``fault_cluster``): 2 nodes, its ports 500 above the first's (clear
# of the other two's nodes, up to n64), its job ids from 5,000,001.
FAULT_DIR = Path(os.environ.get("COBALT_SLURM_FAULT_DIR", "/var/tmp/cobalt-bench-slurm-faults"))
FAULT_NODES = 2
FAULT_PORT_OFFSET = 500

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

JOB_TIMEOUT = 60  # seconds a trivial job may take from submission to its final state
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def job_record(jobid, env: dict, fields, timeout: float, cluster=None) -> dict:
    """{field: value} of sacct's allocation line for the job once it has reached a final
    state and each of `fields` is filled in (sacct may lag behind the job: for a job that
    ends within a second, slurmdbd may first hold a record without its partition). The
    state is its first word ("CANCELLED by 0" -> "CANCELLED"). The test fails when that
    takes over `timeout` s (the job is then cancelled; `cluster`'s logs are shown)."""
    jobid = str(jobid)
    columns = ["JobID", "State", *[f for f in fields if f != "State"]]
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = subprocess.run(["sacct", "-n", "-P", "-X", "-j", jobid, "-o", ",".join(columns)],
                             env=env, text=True, capture_output=True, timeout=30).stdout
        for line in out.splitlines():
            values = line.split("|")
            if len(values) != len(columns) or values[0] != jobid:
                continue
            rec = dict(zip(columns, values))
            rec["State"] = rec["State"].split()[0] if rec["State"] else ""
            if rec["State"] in FINAL_STATES and all(rec[f] for f in fields):
                return rec
        time.sleep(0.2)
    squeue = subprocess.run(["squeue", "-j", jobid], env=env, text=True,
                            capture_output=True, timeout=30).stdout
    subprocess.run(["scancel", jobid], env=env, capture_output=True, timeout=30)
    logs = cluster.logs() if cluster is not None else ""
    pytest.fail(f"job {jobid} did not finish in {timeout} s; sacct: {out!r}; "
                f"squeue:\n{squeue}\n{logs}")


def sbatch(script, cwd, env, *options) -> str:
    """Submit `script` (sbatch --parsable OPTIONS SCRIPT from `cwd` with `env`); its job id."""
    proc = subprocess.run(["sbatch", "--parsable", *options, str(script)], cwd=cwd, env=env,
                          text=True, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().split(";")[0]


def finished_job(jobid, env, timeout=180, fields=("State", "ExitCode")) -> tuple:
    """The job's sacct `fields` once it has ended and each of them is filled in."""
    rec = job_record(jobid, env, fields, timeout)
    return tuple(rec[f] for f in fields)


@dataclass
class SlurmCluster:
    """A running local-slurm cluster, as the ``slurm_cluster`` fixture hands it out."""

    script: Path  # site-configs/local-slurm/cluster
    state_dir: Path  # $COBALT_SLURM_DIR: configuration, state, logs
    slurm_conf: Path  # export this as SLURM_CONF
    env: dict = field(repr=False)  # os.environ plus SLURM_CONF: pass to subprocess
    started_here: bool = False  # True when this session started it (and stops it)

    def run(self, args, timeout: float = 60, check: bool = False, **kwargs):
        """Run a command (a list) with the cluster's environment (or `env`); text output
        captured."""
        kwargs.setdefault("env", self.env)
        return subprocess.run(
            [str(a) for a in args],
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

    def sbatch(self, tmp_path: Path, *args) -> int:
        """Submit a batch job; return its id. Output goes to tmp_path/slurm-<id>.out."""
        res = self.run(["sbatch", "--parsable", f"--chdir={tmp_path}",
                        f"--output={tmp_path}/slurm-%j.out", *args])
        assert res.returncode == 0, f"sbatch failed: {res.stderr}"
        return int(res.stdout.strip().split(";")[0])

    def wait_for_job(self, job_id, timeout: float = JOB_TIMEOUT) -> dict:
        """The job's sacct record (State, Partition, NodeList, ExitCode, NNodes) once it has
        reached a final state."""
        return job_record(job_id, self.env, ("State", "Partition", "NodeList", "ExitCode",
                                             "NNodes"), timeout, cluster=self)

    @staticmethod
    def job_output(tmp_path: Path, job_id) -> str:
        """What a job submitted with ``sbatch()`` above printed."""
        return (tmp_path / f"slurm-{job_id}.out").read_text()

    def has_arm_node(self) -> bool:
        """Partition arm holds the aarch64 node a1 (the arm64 root was there when the
        cluster started), not n1 and n2 standing in."""
        return "NodeName=a1 " in self.slurm_conf.read_text()


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


def _cluster_up(state_dir: Path, **settings):
    """Start the local-slurm cluster of `state_dir` (unless it already runs) with the
    cluster script's `settings` (COBALT_SLURM_* variables) and yield a SlurmCluster; stop it
    at the end if it was started here."""
    reason = _cannot_run_reason()
    if reason:
        pytest.skip(f"local Slurm cluster unavailable: {reason}")

    state_dir = state_dir.resolve()
    slurm_conf = state_dir / "etc" / "slurm.conf"
    env = dict(os.environ, SLURM_CONF=str(slurm_conf), **settings)
    env.setdefault("COBALT_SLURM_DIR", str(state_dir))
    cluster = SlurmCluster(CLUSTER_SCRIPT, state_dir, slurm_conf, env)

    # One cluster starts at a time: both would start munged, where it does not run yet.
    with held("local Slurm cluster start"):
        was_running = cluster.cluster("status", timeout=60).returncode == 0
        start = None if was_running else cluster.cluster("start")
    if start is not None:
        if start.returncode != 0:
            pytest.fail(
                "`cluster start` failed (exit %d):\n%s\n%s"
                % (start.returncode, start.stdout, start.stderr),
                pytrace=False,
            )
        cluster.started_here = True

    yield cluster

    JOBS_CPU.extend(jobs_cpu(cluster, _SESSION_START))
    if cluster.started_here:
        cluster.cluster("stop", timeout=_STOP_TIMEOUT)


# ---- what the jobs computed (tests/plugins/timing.py) ------------------------------------

# (job id, submit time, CPU seconds of its steps) of every job that a cluster of this process ran
# in the session, read from the cluster's accounting before it is stopped: the kernels run
# under slurmd, no child of the tests, so that their CPU time is nowhere else.
JOBS_CPU: list[tuple[str, float, float]] = []
_SESSION_START = time.time()


def cpu_seconds(total_cpu: str) -> float:
    """sacct's TotalCPU, [D-][HH:]MM:SS[.mmm], in seconds (ValueError if it is none)."""
    days, _, clock = total_cpu.rpartition("-")
    seconds = 0.0
    for part in clock.split(":"):
        seconds = 60 * seconds + float(part)
    return 86400 * int(days or 0) + seconds


def jobs_cpu(cluster: SlurmCluster, since: float) -> list[tuple[str, float, float]]:
    """(job id, submit time, CPU seconds) of each job of `cluster` submitted since `since` (epoch
    seconds): the user and system time of its steps (batch, extern, srun's), as
    jobacct_gather/linux accounts them. None where sacct does not answer."""
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since))
    try:
        out = cluster.run(["sacct", "-a", "-n", "-P", "-S", start, "-E", "now",
                           "-o", "JobID,Submit,TotalCPU"], timeout=60,
                          env=dict(cluster.env, SLURM_TIME_FORMAT="%s")).stdout
    except subprocess.TimeoutExpired:
        return []
    submitted, cpu = {}, {}
    for line in out.splitlines():
        jobid, submit, total = (line.split("|") + ["", ""])[:3]
        job, _, step = jobid.partition(".")
        try:
            if not step:
                submitted[job] = float(submit)
            else:
                cpu[job] = cpu.get(job, 0.0) + cpu_seconds(total)
        except ValueError:
            continue
    return [(job, t, cpu.get(job, 0.0)) for job, t in submitted.items() if t >= since]


@pytest.fixture(scope="session")
def slurm_cluster():
    """Start the local-slurm cluster (unless it already runs) and yield a SlurmCluster.

    A cluster that was already up before the session is left running at the end; one that
    this session started is stopped again.
    """
    yield from _cluster_up(SLURM_DIR)


@pytest.fixture(scope="session")
def fleet_cluster():
    """A second local cluster of FLEET_NODES x86 nodes (n1 ... n8, no aarch64 node) beside
    the first: its own state directory ($COBALT_SLURM_FLEET_DIR) and ports (offset by
    FLEET_PORT_OFFSET), so that the fleet's sweeps and the first cluster's jobs run at the
    same time (tests/plugins/workers.py). Started at that size if it does not run; one
    that runs at another size is restarted at it."""
    cluster_up = _cluster_up(FLEET_DIR, COBALT_SLURM_DIR=str(FLEET_DIR.resolve()),
                             COBALT_SLURM_PORT_OFFSET=str(FLEET_PORT_OFFSET),
                             COBALT_SLURM_NODES=str(FLEET_NODES), COBALT_SLURM_ARM="no",
                             COBALT_SLURM_SLURMD_TIMEOUT=str(FLEET_SLURMD_TIMEOUT_S))
    cluster = next(cluster_up)
    nodes = cluster.run(["sinfo", "-h", "-p", "x86", "-N", "-o", "%N"]).stdout.split()
    if len(set(nodes)) != FLEET_NODES:
        with held("local Slurm cluster start"):
            restart = cluster.cluster("restart", "--nodes", str(FLEET_NODES))
        assert restart.returncode == 0, restart.stdout + restart.stderr
    yield cluster
    next(cluster_up, None)


@pytest.fixture(scope="session")
def fault_cluster():
    """A third local cluster of FAULT_NODES x86 nodes (n1, n2, no aarch64 node) beside the
    other two, its own state directory ($COBALT_SLURM_FAULT_DIR) and ports (offset by
    FAULT_PORT_OFFSET), for the tests of killed, cancelled, timed-out and failed jobs and of
    draining: most of their time is waiting for Slurm (a time limit, a node's failure, a
    health check), which they do beside the first cluster's tests. Their restarts (memory
    limits, a health check, four nodes) end with the cluster as it was."""
    yield from _cluster_up(FAULT_DIR, COBALT_SLURM_DIR=str(FAULT_DIR.resolve()),
                           COBALT_SLURM_PORT_OFFSET=str(FAULT_PORT_OFFSET),
                           COBALT_SLURM_NODES=str(FAULT_NODES), COBALT_SLURM_ARM="no")


# ---- jobs of a test, found and waited for; a ReFrame run of MemTest on the cluster ----

def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f'{what}: not within {timeout} s')


def our_rfm_job(env, tmp_path, states='R'):
    '''The id of the Slurm job of our ReFrame run in one of `states` (squeue's -t; its work
    directory is under tmp_path; other runs may share the cluster).'''
    out = subprocess.run(['squeue', '-h', '-t', states, '-o', '%i|%Z'], env=env, text=True,
                         capture_output=True, timeout=30).stdout
    for line in out.splitlines():
        jobid, _, workdir = line.partition('|')
        if workdir.startswith(str(tmp_path)):
            return jobid
    return None


def reframe_env(tmp_path, slurm_cluster):
    '''The environment of a ReFrame run whose results go to tmp_path/local-slurm/run.'''
    return clean_env(slurm_cluster.env, drop=JOB_STATE, COBALT_BENCH_RESULTS=str(tmp_path),
                     COBALT_BENCH_RUN_ID='run')


def run_reframe_memtest(tmp_path, env, *options, during=None):
    '''A ReFrame run of MemTest on local-slurm:x86 with a 300 s load; `during(jobid)` is
    called once its Slurm job runs. The run's MemTest testcase of report.json.'''
    proc = subprocess.Popen(
        [*REFRAME, '-C', os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py'),
         '-c', os.path.join(ROOT, 'reframe_checks'), '-r', '--system', 'local-slurm:x86',
         '-n', 'MemTest', '--exec-policy', 'serial', '--nocolor', *options,
         '-S', 'kernel_opts=--stations 1 --desired-rate 8 --duration 300'],
        cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # A job killed at once (over its --mem) may run for less than one poll: without
        # `during` any state counts (squeue keeps ended jobs for MinJobAge, 300 s).
        states = 'R' if during else 'all'
        jobid = wait_for(lambda: our_rfm_job(env, tmp_path, states), 180,
                         'the ReFrame job running' if during else 'the ReFrame job')
        if during:
            during(jobid)
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=60)
    assert proc.returncode != 0, out
    with open(tmp_path / 'local-slurm' / 'run' / 'report.json') as fp:
        report = json.load(fp)
    (tc,) = [tc for run in report['runs'] for tc in run['testcases'] if tc['name'] == 'MemTest']
    assert tc['result'] != 'pass' and tc['jobid'] == jobid, tc
    return tc
