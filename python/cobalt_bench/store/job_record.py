'''A job's end as `cobalt-bench judge` records it beside the document the job meant to
write (mem-test-12.json -> mem-test-12.judged.json): the kernel, the node, its exit status
and the judgement. Every job script hands every exit status to `cobalt-bench judge`
(jobs/lib/cobalt-job.sh cb_judge), so a kernel killed before it wrote its document still
leaves this record: its case is read from it (a failure of its node, named), never lost.
'''

import functools
import os
import re

from .. import kernels
from ..tools import slurm
from . import bulk, confine, documents
from .exit_status import ExitStatus
from .model import KIND_JOBS, Case
from .result import Result

#: Beside a job document, its `cobalt-bench judge` record.
JUDGED_SUFFIX = '.judged.json'

#: A job script's mark beside the document to come (jobs/lib/cobalt-job.sh cb_job_started):
#: <kernel>-<jobid>.started, removed by `cobalt-bench judge` once the job's end is recorded.
#: Left behind: the job was killed before it ended (node failure, time limit, scancel).
STARTED = '.started'
_MARK_LINE = re.compile(r'^(kernel|job|nodes|started) ([\w\[\],.:+-]{1,200})$')
_JOBID = re.compile(r'-(\d+)\.json$')


def judged_path(doc_path):
    '''Where `cobalt-bench judge` records its judgement of a job document:
    mem-test-12.json -> mem-test-12.judged.json.'''
    base = doc_path[:-len('.json')] if doc_path.endswith('.json') else doc_path
    return base + JUDGED_SUFFIX


def started_path(doc_path):
    '''The start mark of the job that writes `doc_path`.'''
    base = doc_path[:-len('.json')] if doc_path.endswith('.json') else doc_path
    return base + STARTED


def document_of(record_path):
    '''The document a record at `record_path` is about.'''
    return record_path[:-len(JUDGED_SUFFIX)] + '.json'


def read_mark(path):
    '''{kernel, job, nodes, started} of a job's start mark; {} when it is not one (a
    bounded read).'''
    try:
        with open(path, encoding='utf-8', errors='replace') as fp:
            text = fp.read(1024)
    except OSError:
        return {}
    found = dict(m.groups() for m in map(_MARK_LINE.match, text.splitlines()) if m)
    return found if found.get('job', '').isdigit() else {}


def jobid_of(doc_path):
    '''The job id in a job document's name (mem-test-12.json -> '12'), or ''.'''
    m = _JOBID.search(doc_path)
    return m.group(1) if m else ''


def kernel_of(doc_path):
    '''The kernel a job document's name says (mem-test-12.json, its mark
    mem-test-12.started -> 'mem-test').'''
    name = os.path.basename(doc_path)
    for suffix in (JUDGED_SUFFIX, STARTED, '.json'):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return re.sub(r'-\d+$', '', name)


def check_of_name(kernel):
    '''The check a job's name of what it ran is: a node pack's capacity run (mem-capacity)
    is its capacity check (MemCapacity), a kernel is itself.'''
    capacity = kernels.capacity_of_test(kernel)
    return capacity.check if capacity else kernel


def lost_case(doc_path, kernel, node, status):
    '''The case of a job whose kernel ended with ExitStatus `status` and left no document at
    `doc_path`: killed or crashed (FAIL, named), interrupted (ABORT: stopped by someone),
    not run (2, 3: SKIP), or ran and wrote nothing (FAIL: a lost result is never a
    pass).'''
    jobid = jobid_of(doc_path)
    case = Case(check=check_of_name(kernel), partition=f'job {jobid}' if jobid else 'job',
                jobid=jobid, nodes=[node] if node else [], node=node, exit_status=status,
                result=Result.FAIL, fail_phase='run', dirs=[os.path.dirname(doc_path)])
    if status.failed:
        case.fail_reason = status.reason(kernel)
    elif status.interrupted:
        case.result, case.fail_reason = Result.ABORT, status.reason(kernel)
    elif status.not_run:
        case.result, case.fail_reason = Result.SKIP, status.reason(kernel)
    else:
        case.fail_phase = 'sanity'
        case.fail_reason = (f'{kernel} ended with {status.text()} and wrote no document '
                            f'({os.path.basename(doc_path)}): its result is lost')
    return case


def read_record(path):
    '''The record at `path` as a dict, or None where it is unreadable or no record.'''
    try:
        rec = documents.read_json(path, share=False)     # read for a few fields
    except (documents.Damaged, OSError):
        return None
    return rec if isinstance(rec, dict) else None


def record_status(rec):
    '''The ExitStatus a record keeps, or None.'''
    status = rec.get('exit_status') if isinstance(rec, dict) else None
    if not isinstance(status, dict):
        return None
    code, signal = status.get('code'), status.get('signal')
    if not isinstance(code, (int, type(None))) or isinstance(code, bool):
        return None
    try:
        return ExitStatus.of(code, signal if isinstance(signal, int) else None)
    except Exception:
        return None


def case_of_record(path):
    '''The case of a record whose document is absent (None where the record cannot say
    whose it is): a kernel killed before it wrote one.'''
    rec = read_record(path)
    status = record_status(rec)
    kernel = rec.get('kernel') if rec else None
    if status is None or not isinstance(kernel, str) or not kernel:
        return None
    node = rec.get('node') if isinstance(rec.get('node'), str) else ''
    case = lost_case(document_of(path), kernel, node, status)
    if isinstance(rec.get('partition'), str):
        case.judged_partition = rec['partition']
    if isinstance(rec.get('command'), str):
        case.command = rec['command']
    return case


def unfinished_jobs(run, marks, documented):
    '''The cases of the jobs that left a start mark but no document, and the Slurm state of
    those and of the interrupted documents' jobs (what ended them).'''
    for path in marks:
        if path[:-len(STARTED)] + '.json' in documented:
            continue
        mark = read_mark(path)
        name = os.path.basename(path)[:-len(STARTED)]
        jobid = mark.get('job', '')
        check = check_of_name(mark.get('kernel') or kernel_of(path))
        when = f' at {mark["started"]}' if 'started' in mark else ''
        run.cases.append(Case(
            check=check, partition=f'job {jobid}' if jobid else 'job', jobid=jobid,
            nodes=[mark['nodes']] if mark.get('nodes') else [], result=Result.ABORT,
            dirs=[os.path.dirname(path)],
            fail_phase='run',
            fail_reason=(f'{name}: the job started{when} on {mark.get("nodes", "?")} and left '
                         'no document: it was ended before the kernel wrote one')))
        run.sources.append(path)
    slurm_accounting(run.cases)


def slurm_accounting(cases):
    '''Slurm's word on the jobs of `cases` that did not end well (left no document or lost
    it, were interrupted, or their kernel was killed): the job's state (OUT_OF_MEMORY where a cgroup
    memory limit killed it, CANCELLED, NODE_FAIL...) and, where OverMemoryKill polls, a
    step's MaxRSS over the job's --mem. Set on each case.'''
    asked = [c for c in cases if c.jobid and (
        c.result is Result.ABORT or any(d.get('interrupted') for d in c.docs) or
        (c.result is Result.FAIL and not c.docs) or
        (c.exit_status is not None and c.exit_status.failed))]
    accounts = slurm.job_accounts(c.jobid for c in asked)
    for c in asked:
        account = accounts.get(c.jobid)
        c.job_state = account.state if account else ''
        if account and account.over_memory:
            c.memory_overrun = (account.max_rss_bytes, account.requested_bytes)


def _judgement_of(doc_path, root):
    '''judgement_in of the record beside the job document `doc_path`, or None where it
    leaves the run `root` (store.confine). Run in a worker (store.bulk): a sweep has as
    many records as documents.'''
    path = judged_path(doc_path)
    if confine.file_problem(path, root):
        return None
    return judgement_in(path)


def judgement_in(path):
    '''What a case takes of the record at `path`, which the caller found in the run
    (store.confine): (site_dir, partition, command: each a string or None, ExitStatus or
    None), or None where it is unreadable or no record.'''
    rec = read_record(path)
    if rec is None:
        return None
    site_dir, partition, command = (
        v if isinstance(v, str) else None
        for v in (rec.get('site_dir'), rec.get('partition'), rec.get('command')))
    return site_dir, partition, command, record_status(rec)


def take_judgement(case, judgement, sites):
    '''`case` completed in place by what judgement_in read of its record (None: no record):
    the partition it was judged on, its command line, its exit status; the site directory
    the record names is added to `sites`.'''
    if judgement is None:
        return
    site_dir, partition, command, status = judgement
    if site_dir is not None:
        sites.add(site_dir)
    if partition is not None:
        case.judged_partition = partition
    if command is not None:
        case.command = command
    if status is not None:
        case.exit_status = status


def with_job_judgements(run):
    '''(run, sites) for job documents: the run, its cases given what each job's `cobalt-bench
    judge` recorded beside its document (the partition, the command line, the exit status),
    and the site directories they name (what they say: verdict.site_of_run decides what is
    loaded). The cases are the reader's, still being made: they are completed in place
    (a copy each cost a 10,000-node sweep seconds). A record that leaves the run
    (store.confine) is not read. A directory of job documents had its records read with
    them (store.reader, one pass over a sweep's files: Run.recorded); the rest are read
    here.'''
    if run.kind != KIND_JOBS:
        return run, []
    sites = set(run.recorded.sites)
    root = confine.run_root(run.path)
    owners = [] if run.recorded.every else [
        (case, path) for case in run.cases for path in case.doc_paths]
    judgements = bulk.map_items(functools.partial(_judgement_of, root=root),
                                [path for _, path in owners])
    for (case, _), found in zip(owners, judgements):
        take_judgement(case, found, sites)
    for path in run.sources:    # the records of jobs that left no document
        rec = read_record(path) if path.endswith(JUDGED_SUFFIX) else None
        if rec is not None and isinstance(rec.get('site_dir'), str):
            sites.add(rec['site_dir'])
    return run, sorted(sites)
