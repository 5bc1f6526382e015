'''Reading one run of the store into the model (store.model): a ReFrame run directory
(its report.json; without one, what the perflogs and JSON documents it left say), a
directory of job documents, or one kernel JSON document.

A run without report.json is partial (ReFrame writes it last). Job scripts (jobs/*.slurm)
write results/slurm/<kernel>-<jobid>.json: a directory of kernel JSON documents, or one
document, is read as a run whose cases are the documents, to be judged by a site's
references (cobalt_bench.judging).

Every file is read through store.documents, which checks its shape. What could not be
read is never dropped silently: it is a Damage (file, problem) on the case it belongs to
(Case.damaged; the case's result becomes DAMAGED) and on the run (Run.damaged), for the
report to show and the verdict to count. Nothing here judges: metrics keep what ReFrame
recorded (its reference and fractional thresholds, its result).
'''

import os
import re
from dataclasses import replace

from .. import kernels
from ..errors import CannotRun
from . import bulk, confine, inventory, perflog, sweep
from .documents import (Damage, Damaged, kernel_doc_problems, looks_like_kernel_doc,
                        perf_entry, read_json, relpath, report_testcases, share_strings,
                        testcase_problems)
from .job_record import (JUDGED_SUFFIX, STARTED, case_of_record, document_of, jobid_of,
                         judged_path, judgement_in, kernel_of, take_judgement,
                         unfinished_jobs)
from .metric_entries import MetricEntries, compact
from .model import KIND_JOBS, KIND_REFRAME, Case, Metric, Recorded, Run
from .result import Result, RunState
from .runs import REPORT, is_run_dir, run_state

#: ReFrame's job script in a test's directory: the report shows its kernel command line.
JOB_SCRIPT = 'rfm_job.sh'

def _damage(case, path, problem):
    case.damaged.append(Damage(path, problem))


def _kept(doc):
    '''(what in a kernel document breaks the contract, the document as a run keeps it): its
    metrics held compact (store.metric_entries), then its strings shared: the names and
    units compact metrics share are not walked for it.'''
    doc = compact(doc)      # held compact only where kernel_doc_problems passes them
    problems = kernel_doc_problems(doc)
    return problems, (doc if problems else share_strings(doc))


def _mark_damaged(case, run_path):
    '''A case with damaged files is DAMAGED, with the first damage as its reason; a case
    ReFrame failed stays failed (its damage is still listed).'''
    case.reframe_result = case.reframe_result or case.result
    if not case.damaged or case.result in (Result.FAIL, Result.ABORT, Result.ERROR):
        return
    first = case.damaged[0]
    case.result = Result.DAMAGED
    case.fail_phase = 'damaged result'
    more = f' (and {len(case.damaged) - 1} more)' if len(case.damaged) > 1 else ''
    case.fail_reason = f'could not read {relpath(first.path, run_path)}: {first.problem}{more}'


def _rebase(path, session, run_path):
    '''A path from report.json inside this run directory (which may have been moved or
    copied since ReFrame wrote it): one under the run's recorded prefix_output or
    prefix_stage is the same place in this run; a relative one is relative to the run.
    Whether it stays in the run is store.confine's to say.'''
    if not path:
        return path
    if not os.path.isabs(path):
        return os.path.join(run_path, path)
    for key, sub in (('prefix_output', 'output'), ('prefix_stage', 'stage')):
        old = session.get(key)
        if old and path.startswith(old.rstrip('/') + '/'):
            return os.path.join(run_path, sub, path[len(old.rstrip('/')) + 1:])
    return path


def _confined_dirs(case, dirs, root):
    '''The directories of `dirs` that stay in the run `root`; each other one that exists
    (or has a `..`) is named as damage, refused, and never read.'''
    out = []
    for d in dirs:
        why = confine.escapes(d, root)
        if not why:
            out.append(d)
        elif os.path.lexists(d) or '..' in d.split(os.sep):
            _damage(case, d, why)
    return out


def _collect_docs(case, dirs, root, expected=None):
    '''The kernel documents in a test's directories, which must stay in the run `root`
    (store.confine). `expected`: the document the check names (report.json's json_file),
    which a passed case must have. Returns the node inventories found beside them
    (store.inventory: the Preflight check records one), which are no results.'''
    seen, inventories = set(), []
    for d in _confined_dirs(case, dirs, root):
        if not os.path.isdir(d):
            continue
        case.dirs.append(d)
        try:
            names = sorted(os.listdir(d))
        except OSError as err:
            _damage(case, d, f'cannot list the directory: {err.strerror or err}')
            continue
        for name in names:
            path = os.path.join(d, name)
            if name == JOB_SCRIPT:
                # The report reads the kernel's command line from it (report.rows).
                refused = confine.file_problem(path, root)
                if refused:
                    _damage(case, path, refused)
            if not name.endswith('.json') or name in seen:
                continue
            refused = confine.file_problem(path, root)
            if refused:
                seen.add(name)
                _damage(case, path, refused)
                continue
            try:
                doc = read_json(path, share=False)      # shared as kept (_kept)
            except Damaged as err:
                seen.add(name)
                _damage(case, path, err.problem)
                continue
            if inventory.is_inventory(doc):
                seen.add(name)
                try:
                    inventories.append(inventory.parse(share_strings(doc), path))
                except Damaged as err:
                    _damage(case, path, err.problem)
                continue
            if not looks_like_kernel_doc(doc) and name != expected:
                continue    # a JSON file of somebody else's, not a result
            seen.add(name)
            problems, doc = _kept(doc)
            if problems:
                _damage(case, path, '; '.join(problems[:3]))
                continue
            case.docs.append(doc)
            case.doc_paths.append(path)
    if expected and expected not in seen and case.result is Result.PASS and case.dirs:
        _damage(case, os.path.join(case.dirs[0], expected),
                'missing: the check passed, but its document is not there')
    return inventories


def _metric(name, value, unit, ref, lower, upper, verdict):
    '''A metric as ReFrame recorded it: its reference and fractional thresholds (the
    absolute bounds are the judges', cobalt_bench.judging.bounds); no reference (ReFrame's
    0 and no thresholds) is RECORDED.'''
    if ref in (0, None) and lower is None and upper is None:
        return Metric(name, value, unit or '')
    return Metric(name, value, unit or '', ref, lower_thres=lower, upper_thres=upper,
                  verdict=verdict)


def _perf_metrics(perfvalues, prefix, case=None, where='', path=''):
    metrics = []
    for key, entry in perfvalues.items():
        name = key[len(prefix):] if key.startswith(prefix) else key.rsplit(':', 1)[-1]
        fields = perf_entry(key, entry)
        if isinstance(fields, str):
            if case is not None:
                _damage(case, path, f'{where}: {fields}')
            continue
        value, ref, lower, upper, unit, result = fields
        metrics.append(_metric(name, value, unit, ref, lower, upper,
                               Result.of(result, Result.UNKNOWN) if result else Result.PASS))
    return metrics


_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_SKIP = re.compile(r'SKIP\s*\]\s*\(\s*\d+/\d+\)\s+.+?\s+/(?P<hash>[0-9a-f]+)\s+@(?P<where>\S+)'
                   r'\s+\[(?P<reason>.*)\]\s*$')
_RUN = re.compile(r'RUN\s*\]\s+.+?\s+/(?P<hash>[0-9a-f]+)\s+@(?P<where>\S+)\s*$')
_SKIP_BARE = re.compile(r'SKIP\s*\]\s*\(\s*\d+/\d+\)\s+(?P<reason>.+?)\s*$')


def _skip_reasons(run):
    '''{(hashcode, 'system:partition+environ'): reason} from ReFrame's log in output/:
    the run report does not keep why a test was skipped. A log that leaves the run
    (store.confine) is not read: it is named in run.damaged.'''
    reasons = {}
    out = os.path.join(run.path, 'output')
    if confine.escapes(out, run.path) or not os.path.isdir(out):
        return reasons
    for name in sorted(os.listdir(out)):
        if not (name.startswith('rfm-') and name.endswith('.log')):
            continue
        path = os.path.join(out, name)
        refused = confine.file_problem(path, run.path)
        if refused:
            run.damaged.append(Damage(path, refused))
            continue
        try:
            with open(path, errors='replace') as fp:
                last_run = None
                for line in fp:
                    line = _ANSI.sub('', line)
                    m = _SKIP.search(line)
                    if m:
                        reasons[(m.group('hash'), m.group('where'))] = m.group('reason')
                        continue
                    started = _RUN.search(line)
                    if started:
                        last_run = (started.group('hash'), started.group('where'))
                        continue
                    # ReFrame before 4.8 says only the reason: the test it just started.
                    bare = _SKIP_BARE.search(line)
                    if bare and last_run:
                        reasons.setdefault(last_run, bare.group('reason'))
                        last_run = None
        except OSError:
            continue
    return reasons


def _from_report(run, report, path):
    '''The cases of a parsed report.json (`path`); Damaged if it is not a run report.'''
    session, testcases, damage = report_testcases(report, path)
    run.session = session
    skipped = _skip_reasons(run)
    # With --reruns / --max-retries a case appears in several runs: the last one counts.
    latest, failed_tries = {}, {}
    for where, raw in testcases:
        tc, problems = testcase_problems(raw)
        key = (tc['unique_name'] or tc['name'], tc['system'], tc['partition'], tc['environ'])
        if key in latest and Result.of(latest[key][1]['result'] or '', Result.UNKNOWN).failed:
            failed_tries[key] = failed_tries.get(key, 0) + 1
        latest[key] = (where, tc, problems)
    for key, (where, tc, problems) in latest.items():
        case = Case(check=tc['display_name'] or tc['name'] or where,
                    system=tc['system'] or '', partition=tc['partition'] or '',
                    environ=tc['environ'] or '', nodes=tc['job_nodelist'],
                    result=Result.of(tc['result'] or '', Result.UNKNOWN),
                    fail_phase=tc['fail_phase'] or '',
                    fail_reason=tc['fail_reason'] or '',
                    jobid=tc['jobid'], tags=sorted(tc['tags']),
                    failed_tries=failed_tries.get(key, 0))
        label = f'{where} ({case.check} on {case.where})'
        for problem in problems:
            _damage(case, path, f'{label}: {problem}')
        if case.result is Result.SKIP:
            case.fail_reason = skipped.get(
                (tc['hashcode'], f'{case.system}:{case.partition}+{case.environ}'), '')
        prefix = f'{case.system}:{case.partition}:'
        case.metrics = _perf_metrics(tc['perfvalues'], prefix, case, label, path)
        outdir = _rebase(tc['outputdir'], run.session, run.path)
        stagedir = _rebase(tc['stagedir'], run.session, run.path)
        found = _collect_docs(case, [d for d in (outdir, stagedir) if d], run.path,
                              tc['json_file'])
        node = case.nodes[0] if len(case.nodes) == 1 and case.nodes[0] else ''
        run.inventories += [replace(inv, node=node) for inv in found]
        for d in case.dirs:
            out = os.path.join(d, tc['job_stdout'] or 'rfm_job.out')
            refused = confine.file_problem(out, run.path)
            if refused:
                _damage(case, out, f'job_stdout: {refused}')
                break
            if os.path.isfile(out):
                case.stdout = out
                break
        run.cases.append(case)
    for d in damage:
        if d.problem.startswith('runs['):
            # A test case that is not one: a check whose result is lost, which must not
            # let the run read as whole.
            case = Case(check=d.problem.split(' ', 1)[0], result=Result.UNKNOWN, damaged=[d])
            _mark_damaged(case, run.path)
            run.cases.append(case)
        else:
            run.damaged.append(d)


def _case_from_doc(doc, path):
    passed = (doc.get('compliance') or {}).get('passed')
    jobid = jobid_of(path)
    # A capacity run (mem-test --max) is its own check, compared with peers, not a run of
    # the kernel's compliance check at another workload.
    capacity = kernels.check_of_document(doc)
    check = capacity if capacity in kernels.CAPACITY else doc.get('test', '?')
    case = Case(check=check, partition=f'job {jobid}' if jobid else 'job',
                nodes=[doc.get('host', '')], jobid=jobid,
                result=(Result.PASS if passed else Result.FAIL if passed is False
                        else Result.UNKNOWN),
                docs=[doc], doc_paths=[path])
    if passed is False:
        case.fail_phase = 'compliance'
        case.fail_reason = (f'{doc.get("test")} reported not compliant '
                            f'(threshold {doc["compliance"].get("threshold")})')
    metrics = doc['metrics']
    if metrics.__class__ is MetricEntries:      # every value a number (compact)
        case.metrics = [Metric(name, value, unit) for name, value, unit in metrics.triples()]
        return case
    for name, m in metrics.items():
        if isinstance(m, dict) and isinstance(m.get('value'), (int, float)):
            case.metrics.append(Metric(name, m['value'], m.get('unit') or ''))
    return case




def _job_file(item):
    '''(what, value, judgement) of one JSON file of a directory of job documents, `item`
    (its path, the path of the `cobalt-bench judge` record beside it or None): (dict,
    document, job_record.judgement_in of its record or None), (Damage, why it cannot be
    used, None), (inventory.Inventory, a node's inventory, None), or (None, None, None) for
    somebody else's JSON. Run in a worker (store.bulk): a sweep has 100,000 documents, and
    as many records.'''
    path, record = item
    kind, value = _job_json(path)
    return kind, value, (judgement_in(record) if record and kind is dict else None)


def _job_json(path):
    try:
        doc = read_json(path, share=False)      # shared as kept (_kept)
    except Damaged as err:
        return Damage, err.damage
    if inventory.is_inventory(doc):
        try:
            return inventory.Inventory, inventory.parse(share_strings(doc), path)
        except Damaged as err:
            return Damage, err.damage
    if not looks_like_kernel_doc(doc):
        return None, None
    problems, doc = _kept(doc)
    if problems:
        return Damage, Damage(path, '; '.join(problems[:3]))
    return dict, doc


_SITE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}')


def is_reframe_report(doc):
    '''Whether a parsed JSON file is ReFrame's run report (wherever ReFrame wrote it:
    --report-file, a configuration's `report_file`, ~/.reframe/reports/).'''
    return isinstance(doc, dict) and 'runs' in doc and isinstance(
        doc.get('session_info'), dict)


def site_of_session(session, default=''):
    '''The name a ReFrame run's site is known by: its configuration file's own name (its
    directory's for a `config.py`), 'generic' for ReFrame's builtin one.'''
    files = [f for f in (session.get('config_files') or []) if isinstance(f, str)]
    own = [f for f in files if f != '<builtin>']
    if not own:
        return 'generic' if files else default
    stem = os.path.splitext(os.path.basename(own[-1]))[0]
    if stem in ('config', 'settings', 'site'):
        stem = os.path.basename(os.path.dirname(own[-1])) or stem
    # A name read from the results: a plain one, or the default.
    return stem if _SITE_NAME.fullmatch(stem) else default


def _report_file_run(path, report):
    '''A ReFrame run read from its report file, wherever it is: the run's root is where
    ReFrame put its output (session_info.prefix_output's parent, ReFrame's --prefix), else
    the file's directory; the site is the configuration file's name.'''
    session = report['session_info']
    output = session.get('prefix_output')
    root = (os.path.dirname(output.rstrip('/')) if isinstance(output, str) and output
            else os.path.dirname(path))
    run = Run(path=root, kind=KIND_REFRAME, site=site_of_session(session, 'reframe'),
              run_id=str(session.get('uuid') or os.path.splitext(os.path.basename(path))[0]))
    _from_report(run, report, path)
    run.sources.append(path)
    return _finished(run)


def _finished(run):
    '''A ReFrame run once read: each case's damage marked and counted, its sources listed,
    its cases in order.'''
    listed = set(run.damaged)
    for c in run.cases:
        _mark_damaged(c, run.path)
        for d in c.damaged:
            if d not in listed:     # a set: a run of many damaged files is not quadratic
                listed.add(d)
                run.damaged.append(d)
        run.sources.extend(c.doc_paths)
    run.cases.sort(key=lambda c: (c.check.lower(), c.where, c.environ))
    return run


def load_run(path):
    '''Read a run directory, a directory of job JSON documents, or one JSON document.
    Raises CannotRun (documents.Damaged: with .path and .problem) when nothing usable is
    there; what is damaged in a usable run is in Run.damaged and Case.damaged.'''
    path = os.path.abspath(path)
    if os.path.isfile(path):
        doc = read_json(path)
        if is_reframe_report(doc):
            return _report_file_run(path, doc)
        if not looks_like_kernel_doc(doc):
            raise Damaged(path, 'not a run directory nor a kernel JSON document')
        problems, doc = _kept(doc)
        if problems:
            raise Damaged(path, 'not a valid kernel JSON document: ' + '; '.join(problems[:3]))
        run = Run(path=path, kind=KIND_JOBS, run_id=os.path.basename(path))
        run.cases.append(_case_from_doc(doc, path))
        run.sources.append(path)
        return run
    if not os.path.isdir(path):
        raise CannotRun(f'{path}: no such run')

    parent = os.path.dirname(path)
    if is_run_dir(path):
        run = Run(path=path, kind=KIND_REFRAME, site=os.path.basename(parent),
                  run_id=os.path.basename(path))
        run.state, run.state_why = run_state(path)
        report_path = os.path.join(path, REPORT)
        have_report = os.path.lexists(report_path)
        try:
            if have_report:
                refused = confine.file_problem(report_path, path)
                if refused:
                    raise Damaged(report_path, refused)
                _from_report(run, read_json(report_path, finite=False), report_path)
                run.sources.append(report_path)
        except Damaged as err:
            # Not a run report: what ReFrame logged as it went (the perflogs) still is;
            # the run reads as partial, and report_damage says why.
            run.cases = []
            run.report_damage = err.damage
            run.damaged.append(err.damage)
            run.state, run.state_why = RunState.PARTIAL, f'{REPORT} is damaged: {err.problem}'
            have_report = False
        if not have_report:
            perflog.read_run(run, _collect_docs, _mark_damaged)
        return _finished(run)

    docs, damaged, marks, records, inventories, parsed = [], [], [], [], [], []
    for p, refused in confine.run_files(path):
        name = os.path.basename(p)
        if name.endswith(STARTED) and not refused:
            marks.append(p)
        if name.endswith(JUDGED_SUFFIX):
            if not refused:
                records.append(p)
            continue
        if name.endswith('.json'):
            if refused:
                damaged.append(Damage(p, refused))
            else:
                parsed.append(p)
    # Each document is read with its record, where the walk found one it may read.
    readable = set(records)
    items = [(p, judged_path(p) if judged_path(p) in readable else None) for p in parsed]
    sites = set()
    for p, (kind, value, judgement) in zip(parsed, bulk.map_items(_job_file, items)):
        if kind is Damage:
            damaged.append(value)
        elif kind is inventory.Inventory:
            inventories.append(value)
        elif kind is dict:
            # Made as it comes: the workers parse the next documents meanwhile.
            case = _case_from_doc(value, p)
            take_judgement(case, judgement, sites)
            docs.append((p, case))
    if not docs and not damaged and not marks and not records and not inventories:
        raise CannotRun(f'{path}: neither a run directory (report.json, output/, perflogs/) '
                        'nor a directory of kernel JSON documents')
    run = Run(path=path, kind=KIND_JOBS, site=os.path.basename(path), run_id='',
              recorded=Recorded(every=True, sites=sites))
    run.inventories = sorted(inventories, key=lambda i: i.path)
    docs.sort(key=lambda item: item[0])
    for p, case in docs:
        run.cases.append(case)
        run.sources.append(p)
    for d in sorted(damaged, key=lambda d: d.path):
        # A job's document that cannot be read: its job's result is lost, not absent.
        jobid = jobid_of(d.path)
        case = Case(check=kernel_of(d.path), partition=f'job {jobid}' if jobid else 'job',
                    jobid=jobid, result=Result.UNKNOWN, damaged=[d])
        _mark_damaged(case, path)
        run.cases.append(case)
        run.damaged.append(d)
    documented = {p for p, _ in docs} | {d.path for d in damaged}
    for rec in records:
        # A job whose kernel left no document but whose end was recorded (killed, crashed,
        # not run): its case comes from the record, never lost.
        if document_of(rec) in documented:
            continue
        case = case_of_record(rec)
        if case is not None:
            run.cases.append(case)
            run.sources.append(rec)
            documented.add(document_of(rec))
    unfinished_jobs(run, marks, documented)
    sweep.account(run, path)
    return run
