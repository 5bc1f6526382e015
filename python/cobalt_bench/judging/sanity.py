'''The sanity rule of a kernel's result, written once: ReFrame's KernelJsonTest applies it
to the document it just got (cobalt_bench.reframe.kernel), `cobalt-bench judge` and the
report to a job's document (judging.judge), and the verdict reads what it said.

  - the kernel ran: it exited 0 (compliant) or 1 (not compliant), the contract's statuses
    of a run to judge; 2 (usage error), 3 (cannot run: no GPU) or any other is "did not
    run": nothing was measured, so nothing failed a reference;
  - its document is its own (`test`), has every metric the kernel's descriptor declares,
    in the contract's units;
  - it found no corrupted data: a kernel that counted verification errors failed, however
    fast it was.
'''

import re

#: The kernel contract's exit statuses of a run to judge (docs/kernel-contract.md).
RAN_EXIT_CODES = (0, 1)

_NOT_RUN = ' did not run: exit code '
_NOT_RUN_RE = re.compile(re.escape(_NOT_RUN) + r'-?\d+')


def not_run_reason(kernel, exitcode):
    '''What a check says of a kernel that exited with a status that is no run.'''
    return f'{kernel}{_NOT_RUN}{exitcode}'


def did_not_run(phase, reason):
    '''Whether a failure (ReFrame's fail_phase and fail_reason) is not_run_reason's.'''
    return phase == 'sanity' and bool(_NOT_RUN_RE.search(reason or ''))


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
    'OUT_OF_MEMORY': 'out of memory',
    'PREEMPTED': 'preempted',
    'TIMEOUT': 'it reached its time limit',
}


def unfinished_job_reason(state):
    '''Why a job with Slurm state `state` (sacct's word; 'CANCELLED by 1000' too) did not
    finish ('' when it did, or the state is unknown): such a job is never a pass, whatever
    its document says.'''
    word = str(state or '').split(' ', 1)[0].rstrip('+').upper()
    why = UNFINISHED_JOB_STATES.get(word)
    return f'the job did not finish: Slurm job state {word} ({why})' if why else ''


def document_problems(doc, kernel, metric_units):
    '''What makes `doc` no result of `kernel` with `metric_units` ({metric: unit}): a list
    of ReFrame sanity messages, empty when it is one (an interrupted run is not one).'''
    problems = [reason for reason in [interrupted_reason(doc)] if reason]
    if doc.get('test') != kernel:
        problems.append(f'JSON result is not from {kernel}: test={doc.get("test")!r}')
    metrics = doc.get('metrics', {})
    missing = [m for m in metric_units if m not in metrics]
    if missing:
        problems.append(f'JSON result lacks metrics {missing}')
    wrong = [f'{m} ({metrics[m].get("unit")!r}, expected {u!r})'
             for m, u in metric_units.items() if m in metrics and metrics[m].get('unit') != u]
    if wrong:
        problems.append(f'JSON metrics in unexpected units: {wrong}')
    return problems


def verification_errors(doc):
    '''The verification errors a kernel's document counts (0: none, or not counted).'''
    m = (doc.get('metrics') or {}).get('verification_errors')
    value = m.get('value') if isinstance(m, dict) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def verification_reason(kernel, errors):
    return f'{kernel} found {errors:g} verification errors'
