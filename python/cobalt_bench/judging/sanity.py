'''The sanity rule of a kernel's result, written once: ReFrame's KernelJsonTest applies it
to the document it just got (cobalt_bench.reframe.kernel), `cobalt-bench judge` and the
report to a job's document (judging.judge), and the verdict reads what it said.

  - the kernel ran: its exit status (store.exit_status, the one reading of it) is 0 or
    1; 2 (usage error) and 3 (cannot run here) are "not run"; a signal or any other
    status is a failure of its node, named;
  - its document is its own (`test`), has every metric the kernel's descriptor declares,
    in the contract's units, and counts its verification errors;
  - it found no corrupted data: a kernel that counted verification errors failed, however
    fast it was.
'''

import re

from ..store.exit_status import ExitStatus, not_run_text
from ..store.metric_entries import MAX_LAYOUTS, MetricEntries


def did_not_run(phase, reason):
    '''Whether a recorded failure (fail_phase, fail_reason) is a kernel that was not run
    (exit status 2 or 3): nothing was measured, so nothing failed a reference.'''
    return phase in ('sanity', 'run') and not_run_text(reason)


def exit_status(code=None, signal=None):
    '''The ExitStatus of a runner's exit code and signal; None where it gave neither (its
    end was not seen).'''
    return None if code is None and not signal else ExitStatus.of(code, signal)


def exit_reason(kernel, status):
    '''Why a kernel that ended with ExitStatus `status` (None: not seen) is no run to judge;
    '' when it is one (0 or 1).'''
    if status is None:
        return f'{kernel} left no exit status: its end was not seen'
    return status.reason(kernel)


def interrupted_reason(doc):
    '''Why a kernel's document is no complete run ('' when it is one): the kernel contract
    marks a run stopped by a signal (scancel, a time limit, Ctrl-C) `"interrupted": true`,
    and an interrupted run is never compliant, whatever its figures say.'''
    if doc.get('interrupted') is True or doc.get('interrupted') not in (None, False):
        return (f"{doc.get('test', 'the kernel')} was interrupted (stopped by a signal "
                'before its planned end: cancelled, time limit or Ctrl-C); its figures cover '
                'only part of the run')
    return ''


#: Slurm job states of a job that did not run to its end (sacct(1), JOB STATE CODES), and
#: what each means to a reader of the report.
UNFINISHED_JOB_STATES = {
    'BOOT_FAIL': 'its node failed to boot',
    'CANCELLED': 'cancelled',
    'DEADLINE': 'past its deadline',
    'NODE_FAIL': 'a node it ran on failed',
    'OUT_OF_MEMORY': 'out of memory: the kernel was killed at its memory limit',
    'PREEMPTED': 'preempted',
    'TIMEOUT': 'it reached its time limit',
}

#: Of those, the states that are a failure of the node (FAIL), not a run cut short by
#: someone (INCOMPLETE: cancelled, time limit, preempted).
NODE_FAULT_JOB_STATES = ('BOOT_FAIL', 'NODE_FAIL', 'OUT_OF_MEMORY')


def _state_word(state):
    if not state:       # most jobs: no state asked of sacct
        return ''
    return str(state).split(' ', 1)[0].split(',', 1)[0].rstrip('+').upper()


def unfinished_job_reason(state):
    '''Why a job with Slurm state `state` (sacct's word; 'CANCELLED by 1000' too) did not
    finish ('' when it did, or the state is unknown): such a job is never a pass, whatever
    its document says.'''
    word = _state_word(state)
    why = UNFINISHED_JOB_STATES.get(word)
    return f'the job did not finish: Slurm job state {word} ({why})' if why else ''


def memory_overrun_reason(overrun):
    '''Why a job whose step used more memory than it requested (`overrun`: (used, requested)
    bytes, or None) was killed; '' when it did not.'''
    if not overrun:
        return ''
    used, requested = (f'{b / 2**20:.0f} MiB' for b in overrun)
    return (f'a step of the job used {used} of the {requested} per node it requested '
            '(--mem): Slurm\'s memory limit kills such a step')


# slurmstepd's word when it could not start a task (srun then exits 2, which is no usage
# error of the kernel's).
_LAUNCH_FAILURE = re.compile(r'^slurmstepd\S*: error: (execve\(\): .*)$')


def launch_failure(kernel, stderr_lines):
    '''Why `kernel` was never started on its node, read from Slurm's messages on stderr (a
    binary missing there, or built for another architecture): a failure of the deployment
    on that node; '' when nothing says so.'''
    for line in stderr_lines:
        m = _LAUNCH_FAILURE.match(line)
        if m:
            return (f'{kernel} could not be started on its node (Slurm: {m.group(1)}): it is '
                    'not installed there, or not for that node\'s architecture')
    return ''


def node_fault_state(state):
    '''Whether Slurm's state of a job is a failure of its node (out of memory, node
    failure): the case FAILS, it is not merely incomplete.'''
    return _state_word(state) in NODE_FAULT_JOB_STATES


def _finite(value):
    # JSON gives exact ints and floats: those answered first (a sweep asks this of every
    # metric of 100,000 documents); any other type by the general rule.
    kind = value.__class__
    if kind is float:
        return value - value == 0.0         # NaN and infinities give NaN
    if kind is int:
        return True
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and value == value and value not in (float('inf'), float('-inf')))


def document_problems(doc, kernel, metric_units):
    '''What makes `doc` no result of `kernel` with `metric_units` ({metric: unit}): a list
    of sanity messages, empty when it is one (an interrupted run is not one). Every declared
    metric must be there with a finite value in the contract's unit; a kernel that declares
    `verification_errors` must count none.'''
    problems = [reason for reason in [interrupted_reason(doc)] if reason]
    if doc.get('test') != kernel:
        problems.append(f'JSON result is not from {kernel}: test={doc.get("test")!r}')
    metrics = doc.get('metrics')
    if metrics.__class__ is MetricEntries:
        entries, counted = _layout_problems(metrics, metric_units)
    else:
        entries, counted = _entry_problems(metrics if isinstance(metrics, dict) else {},
                                           metric_units)
    problems += entries
    if counted:
        errors = verification_errors(doc)
        if errors:
            problems.append(verification_reason(kernel, errors))
    return problems


def _entry_problems(metrics, metric_units):
    '''(the messages on the declared metrics of `metrics`, whether its verification_errors
    is to be counted): each declared metric there, finite, in its unit.'''
    missing, valueless, wrong = [], [], []
    for m, u in metric_units.items():       # one pass: each list in the declared order
        entry = metrics.get(m)
        if not isinstance(entry, dict):
            missing.append(m)
            continue
        if not _finite(entry.get('value')):
            valueless.append(m)
        if entry.get('unit') != u:
            wrong.append(f'{m} ({entry.get("unit")!r}, expected {u!r})')
    problems = []
    if missing:
        problems.append(f'JSON result lacks metrics {missing}')
    if valueless:
        problems.append(f'JSON metrics without a finite value: {valueless}')
    if wrong:
        problems.append(f'JSON metrics in unexpected units: {wrong}')
    counted = 'verification_errors' in metric_units and \
        'verification_errors' not in missing + valueless
    return tuple(problems), counted


#: {layout of compact metrics: (the metric units asked, _entry_problems)}, at most
#: metric_entries.MAX_LAYOUTS of them.
_BY_LAYOUT = {}


def _layout_problems(metrics, metric_units):
    '''_entry_problems of compact metrics (store.metric_entries), whose every value is
    finite: what it says depends on their names and units alone, which a sweep's 100,000
    documents share, so it is worked out once for them.'''
    found = _BY_LAYOUT.get(metrics.layout)
    if found is None or found[0] is not metric_units:
        found = (metric_units, _entry_problems(metrics, metric_units))
        if len(_BY_LAYOUT) < MAX_LAYOUTS:
            _BY_LAYOUT[metrics.layout] = found
    return found[1]


def verification_errors(doc):
    '''The verification errors a kernel's document counts (0: none, or not counted; whether
    the kernel must count them is document_problems' question).'''
    m = (doc.get('metrics') or {}).get('verification_errors')
    value = m.get('value') if isinstance(m, dict) else None
    return value if _finite(value) else 0


def verification_reason(kernel, errors):
    return f'{kernel} found {errors:g} verification errors'
