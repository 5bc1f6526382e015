'''`cobalt-bench judge`: kernel JSON documents judged by a site's references, as ReFrame
would in a run of the site; each result's verdict printed, the judgement written as JSON.'''

import json
import os
import sys

from .. import site as site_mod
from ..errors import CannotRun, UsageError
from ..fileio import write_atomic
from ..judging import judge as jd
from ..judging import verdict as vd
from ..site.bounds import Bounds
from ..store import reader
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


def _print(cases, v, where, site):
    '''Each result's verdict, then the site's state: every line shown as terminal text
    (cli.terminal: names, reasons and units come from the documents).'''
    for case in cases:
        name = os.path.basename(case.doc_paths[0]) if case.doc_paths else '?'
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
    say(f'site {site.name}: {v.headline}')
    for r in v.reasons:
        say(f'  - {r}')


def _judgement_json(v, where, site, command, cases):
    return {**v.to_json(), 'partition': where, 'site_dir': site.dir,
            'command': command or None,
            'results': [{'document': p, 'check': jd.check_class(c), 'kernel': c.kernel,
                         'result': c.result, 'reason': c.fail_reason,
                         'judged': [{'metric': m.name, 'value': m.value, 'unit': m.unit,
                                     'reference': m.entry.value, 'lower': m.lower,
                                     'upper': m.upper, 'verdict': m.verdict,
                                     'entry': m.entry.label}
                                    for m in c.metrics if m.entry is not None]}
                        for c in cases for p in c.doc_paths[:1]]}


def command(site_spec, result_paths, partition=None, json_dest=None, command_line=None,
            quiet=False):
    '''Judge kernel JSON documents (or directories of them) by a site's references, as
    ReFrame would in a run of the site. Prints each result's verdict and the site's state
    of what was given; with json_dest writes the judgement (state first) atomically.
    Exit status: 0 every result met its references, 1 one did not (or could not be
    judged), 2 usage error, 3 cannot run (no such site or result, bad references).'''
    site = site_mod.load_site(site_spec)
    where = _partition(site, partition)
    run = _documents(result_paths, command_line)
    v = vd.decide(run, site, vd.preflight_docs_of(run), partition=where)
    ok = all(c.result.passed for c in v.cases) and v.cases and not v.problems
    if not quiet:
        _print(v.cases, v, where, site)
    if json_dest:
        text = json.dumps(_judgement_json(v, where, site, command_line, v.cases),
                          indent=2) + '\n'
        if json_dest == '-':
            sys.stdout.write(text)
        else:
            try:
                write_atomic(os.path.abspath(json_dest), text)
            except OSError as err:
                raise CannotRun(f'cannot write {json_dest}: {err}')
    return 0 if ok else 1
