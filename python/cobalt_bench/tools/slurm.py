'''What Slurm's accounting says of jobs: the state of a job whose kernel document is
marked interrupted, or that left no document at all, names why the run did not finish
(cancelled, time limit, node failure). sacct is run as a program with job ids as its
arguments (digits only, checked here), never through a shell; where there is no sacct,
or it fails, nothing is known and nothing is said.'''

import shutil
import subprocess

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


def job_states(jobids):
    '''{job id: state} for the numeric `jobids` (sacct's State of each job's allocation,
    e.g. 'NODE_FAIL', 'CANCELLED by 0'); {} for what sacct does not answer.'''
    ids = sorted({str(j) for j in jobids if str(j).isdigit()}, key=int)
    states = {}
    for i in range(0, len(ids), _CHUNK):
        out = _sacct('--allocations', '--format', 'JobIDRaw,State', '--jobs',
                     ','.join(ids[i:i + _CHUNK]))
        if out is None:
            return states
        for line in out.splitlines():
            jobid, _, state = line.partition('|')
            if jobid in ids and state:
                states[jobid] = state
    return states


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
