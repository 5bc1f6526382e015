'''What Slurm's accounting says of jobs: the state of a job whose kernel document is
marked interrupted, or that left no document at all, or whose kernel was killed, names why
the run did not finish (cancelled, time limit, node failure, a step over its memory). sacct is run as a program with job ids as its
arguments (digits only, checked here), never through a shell; where there is no sacct,
or it fails, nothing is known and nothing is said.'''

import shutil
import subprocess
from dataclasses import dataclass, replace

#: sacct's answer waits at most this long (a cluster without a database answers slowly).
TIMEOUT_S = 20
#: Job ids asked per sacct call (its command line stays short).
_CHUNK = 500


def _sacct(*args):
    """sacct's stdout for `args` (run as a program, no shell), or None where there is no
    sacct or it fails."""
    sacct = shutil.which('sacct')
    if not sacct:
        return None
    try:
        out = subprocess.run([sacct, '--noheader', '--parsable2', *args], capture_output=True,
                             text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


@dataclass(frozen=True)
class JobAccount:
    """What sacct says of one job: its state ('NODE_FAIL', 'CANCELLED by 0'), the memory
    it requested per node (--mem) and the most any of its steps used (MaxRSS), in bytes
    (None: not known, or requested per CPU)."""
    state: str
    requested_bytes: int | None = None
    max_rss_bytes: int | None = None

    @property
    def over_memory(self):
        """A step used more memory than the job requested: Slurm's memory limit killed it
        (OUT_OF_MEMORY under cgroups; FAILED and SIGKILL where OverMemoryKill polls)."""
        return (self.requested_bytes is not None and self.max_rss_bytes is not None and
                self.max_rss_bytes > self.requested_bytes)


_UNITS = {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}


def _bytes(text):
    """sacct's size ('160884K', '100M', '4000Mn' per node) in bytes; None for an empty
    field or a size per CPU ('2Gc')."""
    text = text.strip().removesuffix('n')
    unit = text[-1:] if text[-1:] in ('K', 'M', 'G', 'T') else ''
    number = text[:len(text) - len(unit)]
    try:
        return int(float(number) * _UNITS[unit]) if number else None
    except ValueError:
        return None


def job_accounts(jobids):
    """{job id: JobAccount} for the numeric `jobids`; {} for what sacct does not answer."""
    ids = sorted({str(j) for j in jobids if str(j).isdigit()}, key=int)
    accounts = {}
    for i in range(0, len(ids), _CHUNK):
        out = _sacct('--format', 'JobIDRaw,State,ReqMem,MaxRSS', '--jobs',
                     ','.join(ids[i:i + _CHUNK]))
        if out is None:
            return accounts
        rows = [line.split('|') for line in out.splitlines()]
        for jobid, state, req_mem, _ in (r for r in rows if len(r) == 4):
            if jobid in ids and state:
                accounts[jobid] = JobAccount(state, _bytes(req_mem))
        for step, state, _, max_rss in (r for r in rows if len(r) == 4):
            jobid = step.partition('.')[0]
            if step == jobid or jobid not in accounts:
                continue
            rss = _bytes(max_rss)
            if rss is not None:
                known = accounts[jobid].max_rss_bytes or 0
                accounts[jobid] = replace(accounts[jobid], max_rss_bytes=max(known, rss))
            # The cgroup's OOM killer ended a step (the kernel's) of a job that went on:
            # the job is FAILED, the step OUT_OF_MEMORY, and that is what happened to it.
            if state.startswith('OUT_OF_ME') and not accounts[jobid].state.startswith(
                    'OUT_OF_ME'):
                accounts[jobid] = replace(accounts[jobid],
                                          state=f'OUT_OF_MEMORY (step {step})')
    return accounts


def step_signal(jobid):
    """The signal that ended a step of job `jobid` (sacct's ExitCode 'code:signal' of its
    steps, the batch step's included), or None: a runner that reports a killed job's
    signal as its exit code (ReFrame's Slurm scheduler: 9 for SIGKILL) is read here."""
    jobid = str(jobid)
    out = _sacct('--format', 'JobIDRaw,ExitCode', '--jobs', jobid) if jobid.isdigit() \
        else None
    for line in (out or '').splitlines():
        step, _, code = line.partition('|')
        _, _, signal = code.partition(':')
        if step.startswith(jobid) and signal.isdigit() and int(signal) > 0:
            return int(signal)
    return None
