'''`cobalt-bench judge`: kernel JSON documents judged by a site's references, as ReFrame
would in a run of the site; each result's verdict printed, the judgement written as JSON.'''

import json
import os
import socket
import sys

from .. import site as site_mod
from ..errors import CannotRun, UsageError
from ..fileio import write_atomic
from ..judging import judge as jd
from ..judging import verdict as vd
from ..site.bounds import Bounds
from ..store import documents, job_record, reader
from ..store.exit_status import ExitStatus
from ..store.model import KIND_JOBS, Run
from ..store.result import Result
from .terminal import say


def _metric_line(m):
    e = m.entry
    return (f'    {m.name} = {m.value:g} {m.unit}: {m.verdict.upper()} '
            f'(reference {e.value:g}, bounds {Bounds(m.lower, m.upper).text()}; {e.label})')


def _partition(site, partition):
    '''The site partition the results are judged on.'''
    if partition is not None:
        where = jd.partition_of_job(site, partition)
        if where is None:
            raise UsageError(f'--partition {partition!r}: not a partition of site {site.name} '
                             f'({", ".join(site.partitions)})')
        return where
    # In a job: the Slurm partition where it names a partition of the site (local-slurm's
    # x86 and arm), else the site's only partition.
    where = jd.partition_of_job(site, os.environ.get('SLURM_JOB_PARTITION') or None) or \
        jd.partition_of_job(site)
    if where is None:
        raise UsageError(f'site {site.name} has several partitions '
                         f'({", ".join(site.partitions)}): name the one that ran the '
                         'result (--partition)')
    return where


def _documents(result_paths, command):
    '''The job documents given, as one run of job documents.'''
    run = Run(path=os.path.abspath(result_paths[0]), kind=KIND_JOBS)
    for path in result_paths:
        if not os.path.exists(path):
            raise CannotRun(f'{path}: no such result')
        got = reader.load_run(path)
        if got.kind != KIND_JOBS:
            raise UsageError(f'{path}: a ReFrame run (ReFrame judged it: use '
                             '`cobalt-bench report`); judge takes kernel JSON documents')
        run.cases += got.cases
        run.damaged += got.damaged
        run.sources += got.sources
    if command:
        for case in run.cases:
            case.command = command
    return run


def _job_end(result_paths, status_text, kernel, node, command):
    '''(run, ExitStatus, document path, kernel) of a job's end: the document its kernel was
    to write and the exit status it ended with (`--exit-status`, every status alike). A
    document that is absent or unreadable is a lost result, named, never skipped.'''
    if len(result_paths) != 1:
        raise UsageError('--exit-status judges one job\'s end: name one document')
    status = ExitStatus.of(status_text)
    path = os.path.abspath(result_paths[0])
    mark = job_record.read_mark(job_record.started_path(path))
    kernel = kernel or mark.get('kernel') or job_record.kernel_of(path)
    node = node or os.environ.get('SLURMD_NODENAME') or socket.gethostname().split('.')[0]
    run = Run(path=path, kind=KIND_JOBS)
    if os.path.isfile(path):
        try:
            got = reader.load_run(path)
            run.cases, run.sources = got.cases, got.sources
        except documents.Damaged as err:
            case = job_record.lost_case(path, kernel, node, status)
            if status.ran:
                case.fail_reason = f'{kernel}\'s document cannot be read: {err.problem}'
            run.cases, run.damaged = [case], [err.damage]
    else:
        run.cases = [job_record.lost_case(path, kernel, node, status)]
    for case in run.cases:
        case.exit_status = status
        case.node = node
        case.nodes = case.nodes if any(case.nodes) else [node]
        if command:
            case.command = command
    job_record.slurm_accounting(run.cases)
    return run, status, path, kernel


def _print(cases, v, where, site):
    '''Each result's verdict, then the site's state: every line shown as terminal text
    (cli.terminal: names, reasons and units come from the documents).'''
    where = {None: 'no partition (no site)',
             '*': "any partition (the site's '*' references)"}.get(where, where)
    for case in cases:
        name = os.path.basename(case.doc_paths[0]) if case.doc_paths else 'no document'
        say(f'{case.check} ({name}) judged as {jd.check_class(case)} on {where}: '
            f'{case.result.upper()}'
            + (f': {case.fail_reason}' if case.result is not Result.PASS and case.fail_reason
               else ''))
        for m in case.metrics:
            if m.judged and m.entry is not None:
                say(_metric_line(m))
        for doc in case.docs:
            comp = doc.get('compliance')
            if isinstance(comp, dict) and 'passed' in comp:
                say(f'    ({doc.get("test")}\'s own verdict, by its built-in threshold '
                    f'{comp.get("threshold")}: '
                    f'{"passed" if comp.get("passed") else "failed"}; not the site\'s)')
    say(f'site {site.name}: {v.headline}' if site else f'no site: {v.headline}')
    for r in v.reasons:
        say(f'  - {r}')


def _judgement_json(v, where, site, command, cases, job=None):
    '''The judgement record; `job`: (ExitStatus, document path, kernel, node) of a job's
    end, recorded for the report even where the document is absent.'''
    rec = {**v.to_json(), 'partition': where, 'site_dir': site.dir if site else None,
           'command': command or None,
           'results': [{'document': p, 'check': jd.check_class(c), 'kernel': c.kernel,
                        'result': c.result, 'reason': c.fail_reason,
                        'judged': [{'metric': m.name, 'value': m.value, 'unit': m.unit,
                                    'reference': m.entry.value, 'lower': m.lower,
                                    'upper': m.upper, 'verdict': m.verdict,
                                    'entry': m.entry.label}
                                   for m in c.metrics if m.entry is not None]}
                       for c in cases for p in (c.doc_paths[:1] or [None])]}
    if job is not None:
        status, path, kernel, node = job
        rec.update({'document': path, 'kernel': kernel, 'node': node,
                    'exit_status': status.to_json()})
    return rec


def _write(json_dest, record):
    text = json.dumps(record, indent=2) + '\n'
    if json_dest == '-':
        sys.stdout.write(text)
        return
    try:
        write_atomic(os.path.abspath(json_dest), text)
    except OSError as err:
        raise CannotRun(f'cannot write {json_dest}: {err}')


def command(site_spec, result_paths, partition=None, json_dest=None, command_line=None,
            quiet=False, exit_status=None, kernel=None, node=None):
    '''Judge kernel JSON documents (or directories of them) by a site's references, as
    ReFrame would in a run of the site. Prints each result's verdict and the site's state
    of what was given; with json_dest writes the judgement (state first) atomically.

    With `exit_status` (a job script's `$?`, whatever it is): one job's end, judged by the
    one rule (store.exit_status): the document the kernel was to write may be absent
    (killed before it wrote one); the record (json_dest, default beside the document) is
    written even then, and the job's start mark removed once it is. Without a site the
    job's end is recorded unjudged.

    Exit status: 0 every result met its references (a capacity result, which its peers
    judge in the report: recorded), 1 one did not (or could not be
    judged, or a kernel was killed or crashed), 2 usage error (a kernel's own usage error
    too), 3 cannot run (no such site or result, bad references; a kernel that could not
    run here).'''
    job = None
    if exit_status is not None:
        run, status, path, kernel = _job_end(result_paths, exit_status, kernel, node,
                                             command_line)
        json_dest = json_dest or job_record.judged_path(path)
        job = (status, path, kernel, run.cases[0].node if run.cases else node)
    elif not site_spec:
        raise UsageError('name the site to judge by: --site SITE (or $COBALT_BENCH_SITE)')
    site = site_mod.load_site(site_spec) if site_spec else None
    where = _partition(site, partition) if site else None
    if job is None:
        run = _documents(result_paths, command_line)
    v = vd.decide(run, site, vd.preflight_docs_of(run), partition=where)
    # A capacity result (RECORDED) is its peers' to judge, in the report: here it ran.
    ok = all(c.result.passed or c.result is Result.RECORDED for c in v.cases) and v.cases \
        and not v.problems
    if not quiet:
        _print(v.cases, v, where, site)
    if json_dest:
        _write(json_dest, _judgement_json(v, where, site, command_line, v.cases, job))
    if job is None:
        return 0 if ok else 1
    status = job[0]
    try:    # the job's end is recorded: its start mark has done its work
        os.unlink(job_record.started_path(job[1]))
    except OSError:
        pass
    if status.not_run:
        return status.code
    if status.failed or status.interrupted:
        return 1
    if site is None:        # unjudged: the kernel's own verdict, labelled as such
        return status.code if v.cases and not v.cases[0].result.failed else 1
    return 0 if ok else 1
