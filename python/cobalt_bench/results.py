'''The results store: results/<site>/<run-id>/, and reading one run into a model the report
works from.

A run directory (scripts/run-suite, or `reframe -C site-configs/<site>/config.py`):
    output/     each test's stdout, stderr, job script, the kernel's JSON document
    stage/      working directories of tests that failed (with their JSON documents)
    perflogs/<system>/<partition>/<Check>.log
    report.json ReFrame's run report, written when the run ends
    INCOMPLETE  written by scripts/run-suite when the run starts, removed when it finished:
                still there = the run was interrupted (or is running)
A run without report.json is partial too (ReFrame writes it last); its results are read
from the perflogs and the JSON documents it left.

Job scripts (jobs/*.slurm) write results/slurm/<kernel>-<jobid>.json: a directory of kernel
JSON documents, or one document, is read as a run whose cases are the documents, judged by
their own `compliance` verdicts.

Every file is read through cobalt_bench.loading, which checks its shape. What could not be
read is never dropped silently: it is a Damage (file, problem) on the case it belongs to
(Case.damaged; the case's result becomes DAMAGED) and on the run (Run.damaged), for the
report to show and the verdict to count.
'''

import math
import os
import re
import socket
import sys
from dataclasses import dataclass, field

from . import CannotRun, UsageError, paths
from .loading import (Damage, Damaged, kernel_doc_problems, looks_like_kernel_doc,
                      perf_entry, read_json, relpath, report_testcases, testcase_problems)

MARKER = 'INCOMPLETE'
REPORT = 'report.json'

COMPLETE, PARTIAL, RUNNING = 'complete', 'partial', 'running'
# The state of a run in `cobalt-bench runs` whose report.json cannot be read at all.
DAMAGED_RUN = 'damaged'

# Case.result of a check whose result files could not be read (Case.damaged says which and
# why): it was measured, but what it measured cannot be vouched for, so it never counts as
# a pass (ReFrame's own result is kept in Case.reframe_result).
DAMAGED = 'damaged'


def results_base(explicit=None):
    '''The results store: --results, $COBALT_BENCH_RESULTS, the tree's results/ (the
    checkout's, or PREFIX/results of an install tree) if it exists, else ./results: where
    the site configs put runs (cobalt_bench.reframe.site).'''
    for base in (explicit, os.environ.get('COBALT_BENCH_RESULTS')):
        if base:
            return os.path.abspath(base)
    own = paths.results_dir()
    if own and os.path.isdir(own):
        return own
    return os.path.abspath('results')


def is_run_dir(path):
    return (os.path.isfile(os.path.join(path, REPORT)) or
            os.path.exists(os.path.join(path, MARKER)) or
            os.path.isdir(os.path.join(path, 'output')) or
            os.path.isdir(os.path.join(path, 'perflogs')))


def _marker_pid(path):
    '''(pid, host) from an INCOMPLETE marker, or (None, None).'''
    try:
        with open(os.path.join(path, MARKER)) as fp:
            text = fp.read()
    except OSError:
        return None, None
    m = re.search(r'^pid:\s*(\d+)', text, re.M)
    h = re.search(r'^host:\s*(\S+)', text, re.M)
    return (int(m.group(1)) if m else None), (h.group(1) if h else None)


def run_state(path):
    '''(state, why) of a run directory: complete, partial or running.'''
    marker = os.path.join(path, MARKER)
    if os.path.exists(marker):
        pid, host = _marker_pid(path)
        if pid and host == socket.gethostname():
            try:
                os.kill(pid, 0)
                return RUNNING, f'in progress (run-suite pid {pid})'
            except ProcessLookupError:
                pass
            except PermissionError:
                return RUNNING, f'in progress (run-suite pid {pid})'
        try:
            with open(marker) as fp:
                last = [line for line in fp.read().splitlines() if line.strip()]
        except OSError:
            last = []
        # run-suite's last word: 'interrupted: ...' or 'empty: ...' (ReFrame ran 0/0).
        why = next((line for line in reversed(last)
                    if line.startswith(('interrupted', 'empty'))), 'the run did not finish')
        return PARTIAL, f'{MARKER} marker present: {why}'
    if not os.path.isfile(os.path.join(path, REPORT)):
        return PARTIAL, f'no {REPORT}: ReFrame did not finish the run'
    return COMPLETE, ''


def list_runs(base, site=None):
    '''[(site, run_id, path)] of every run directory, oldest first per site.'''
    runs = []
    if not os.path.isdir(base):
        return runs
    for s in sorted(os.listdir(base)):
        site_dir = os.path.join(base, s)
        if site and s != site or not os.path.isdir(site_dir):
            continue
        for r in sorted(os.listdir(site_dir)):
            path = os.path.join(site_dir, r)
            if os.path.isdir(path) and is_run_dir(path):
                runs.append((s, r, path))
    return runs


def _run_time_key(run):
    # Run ids start with the start time (YYYYmmddTHHMMSS); order by that, then by mtime.
    site, run_id, path = run
    m = re.match(r'\d{8}T\d{6}', run_id)
    return (m.group(0) if m else '', os.path.getmtime(path))


def resolve_run(spec, base=None):
    '''A run directory (or job-document directory/file) from what a user typed.'''
    base = results_base(base)
    if os.path.exists(spec):
        return os.path.abspath(spec)
    parts = spec.strip('/').split('/')
    if parts[-1] == 'latest' and len(parts) <= 2:
        site = parts[0] if len(parts) == 2 else None
        runs = [r for r in list_runs(base, site) if run_state(r[2])[0] == COMPLETE]
        if not runs:
            where = f'site {site!r} of ' if site else ''
            raise CannotRun(f'no complete run in {where}the results store {base}')
        return max(runs, key=_run_time_key)[2]
    if len(parts) == 2:
        path = os.path.join(base, *parts)
        if os.path.isdir(path):
            return path
    if len(parts) == 1:
        found = [r[2] for r in list_runs(base) if r[1] == parts[0]]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UsageError(f'run id {spec!r} exists for several sites: '
                             + ', '.join(os.path.relpath(f, base) for f in found)
                             + '; say SITE/RUN_ID')
    raise CannotRun(f'no run {spec!r}: not a path, and not in the results store {base} '
                    '(`cobalt-bench runs` lists them)')


# ---- the model -------------------------------------------------------------------------

def reference_bounds(ref, lower, upper):
    '''Absolute bounds from ReFrame's fractional thresholds (as ReFrame applies them:
    ref * (1 + threshold), sign inverted for a negative reference; for a reference of 0 the
    thresholds are absolute). None: no bound.'''
    def bound(thres):
        if thres is None:
            return None
        if ref == 0:
            return thres
        return ref * (1 - thres if ref < 0 else 1 + thres)
    return bound(lower), bound(upper)


@dataclass
class Metric:
    name: str
    value: object
    unit: str
    ref: object = None          # reference value, None when not judged
    lower: object = None        # absolute lower bound
    upper: object = None        # absolute upper bound
    verdict: str = 'recorded'   # pass, fail, xfail, xpass, recorded (no reference)
    # The references.Ref (file, check, partition key, metric) it was judged by, set by
    # cobalt_bench.judge when the site's references are known (the report shows it).
    entry: object = None

    @property
    def judged(self):
        return self.verdict != 'recorded'


@dataclass
class Case:
    '''One test case: a check on a system:partition (and node list), or a job document.'''
    check: str
    system: str = ''
    partition: str = ''
    environ: str = ''
    nodes: list = field(default_factory=list)
    result: str = 'unknown'     # pass, fail, abort, skip, unknown
    fail_phase: str = ''
    fail_reason: str = ''
    jobid: str = ''
    tags: list = field(default_factory=list)
    metrics: list = field(default_factory=list)
    docs: list = field(default_factory=list)     # kernel JSON documents (dicts)
    doc_paths: list = field(default_factory=list)
    stdout: str = ''            # path of the job's stdout, if kept
    dirs: list = field(default_factory=list)     # output/stage directories found
    # What of this case could not be read: [loading.Damage(path, problem)] (a truncated
    # kernel document, a perfvalues entry with a non-numeric bound, ...). Non-empty: the
    # result is DAMAGED unless ReFrame already failed the case.
    damaged: list = field(default_factory=list)
    reframe_result: str = ''    # the result as ReFrame (or the document) gave it

    @property
    def where(self):
        return f'{self.system}:{self.partition}' if self.system else self.partition or '-'

    @property
    def kernel(self):
        return next((d.get('test') for d in self.docs if d.get('test')), '')

    def metric(self, name):
        return next((m for m in self.metrics if m.name == name), None)


@dataclass
class Run:
    path: str
    kind: str                   # reframe, jobs
    site: str = ''
    run_id: str = ''
    state: str = COMPLETE
    state_why: str = ''
    session: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    sources: list = field(default_factory=list)   # what was read, for the report's footer
    # Every loading.Damage(path, problem) met while reading the run, the cases' included
    # (a damaged report.json too: then the cases come from the perflogs, the run is
    # PARTIAL and report_damage names it). Empty: every file read was whole.
    damaged: list = field(default_factory=list)
    report_damage: object = None  # loading.Damage of an unusable report.json, or None

    @property
    def label(self):
        if self.site and self.run_id:
            return f'{self.site}/{self.run_id}'
        return self.site or self.run_id or os.path.basename(self.path)


def _damage(case, path, problem):
    case.damaged.append(Damage(path, problem))


def _mark_damaged(case, run_path):
    '''A case with damaged files is DAMAGED, with the first damage as its reason; a case
    ReFrame failed stays failed (its damage is still listed).'''
    case.reframe_result = case.reframe_result or case.result
    if not case.damaged or case.result in ('fail', 'abort', 'error'):
        return
    first = case.damaged[0]
    case.result = DAMAGED
    case.fail_phase = 'damaged result'
    more = f' (and {len(case.damaged) - 1} more)' if len(case.damaged) > 1 else ''
    case.fail_reason = f'could not read {relpath(first.path, run_path)}: {first.problem}{more}'


def _rebase(path, session, run_path):
    '''A path from report.json inside this run directory (which may have been moved or
    copied since ReFrame wrote it).'''
    if not path:
        return path
    for key, sub in (('prefix_output', 'output'), ('prefix_stage', 'stage')):
        old = session.get(key)
        if old and path.startswith(old.rstrip('/') + '/'):
            here = os.path.join(run_path, sub, os.path.relpath(path, old))
            if os.path.exists(here):
                return here
    return path


def _collect_docs(case, dirs, expected=None):
    '''The kernel documents in a test's directories. `expected`: the document the check
    names (report.json's json_file), which a passed case must have.'''
    seen = set()
    for d in dirs:
        if not os.path.isdir(d):
            continue
        case.dirs.append(d)
        try:
            names = sorted(os.listdir(d))
        except OSError as err:
            _damage(case, d, f'cannot list the directory: {err.strerror or err}')
            continue
        for name in names:
            if not name.endswith('.json') or name in seen:
                continue
            path = os.path.join(d, name)
            try:
                doc = read_json(path)
            except Damaged as err:
                seen.add(name)
                _damage(case, path, err.problem)
                continue
            if not looks_like_kernel_doc(doc) and name != expected:
                continue    # a JSON file of somebody else's, not a result
            seen.add(name)
            problems = kernel_doc_problems(doc)
            if problems:
                _damage(case, path, '; '.join(problems[:3]))
                continue
            case.docs.append(doc)
            case.doc_paths.append(path)
    if expected and expected not in seen and case.result == 'pass' and case.dirs:
        _damage(case, os.path.join(case.dirs[0], expected),
                'missing: the check passed, but its document is not there')


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
        judged = not (ref in (0, None) and lower is None and upper is None)
        if judged:
            lo, hi = reference_bounds(ref, lower, upper)
            verdict = result or 'pass'
        else:
            lo = hi = ref = None
            verdict = 'recorded'
        metrics.append(Metric(name, value, unit or '', ref, lo, hi, verdict))
    return metrics


_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_SKIP = re.compile(r'SKIP\s*\]\s*\(\s*\d+/\d+\)\s+.+?\s+/(?P<hash>[0-9a-f]+)\s+@(?P<where>\S+)'
                   r'\s+\[(?P<reason>.*)\]\s*$')


def _skip_reasons(run_path):
    '''{(hashcode, 'system:partition+environ'): reason} from ReFrame's log in output/:
    the run report does not keep why a test was skipped.'''
    reasons = {}
    out = os.path.join(run_path, 'output')
    for name in sorted(os.listdir(out)) if os.path.isdir(out) else []:
        if not (name.startswith('rfm-') and name.endswith('.log')):
            continue
        try:
            with open(os.path.join(out, name), errors='replace') as fp:
                for line in fp:
                    m = _SKIP.search(_ANSI.sub('', line))
                    if m:
                        reasons[(m.group('hash'), m.group('where'))] = m.group('reason')
        except OSError:
            continue
    return reasons


def _from_report(run, report, path):
    '''The cases of a parsed report.json (`path`); Damaged if it is not a run report.'''
    session, testcases, damage = report_testcases(report, path)
    run.session = session
    skipped = _skip_reasons(run.path)
    # With --reruns / --max-retries a case appears in several runs: the last one counts.
    latest = {}
    for where, raw in testcases:
        tc, problems = testcase_problems(raw)
        latest[(tc['unique_name'] or tc['name'], tc['system'], tc['partition'],
                tc['environ'])] = (where, tc, problems)
    for where, tc, problems in latest.values():
        case = Case(check=tc['display_name'] or tc['name'] or where,
                    system=tc['system'] or '', partition=tc['partition'] or '',
                    environ=tc['environ'] or '', nodes=tc['job_nodelist'],
                    result=tc['result'] or 'unknown',
                    fail_phase=tc['fail_phase'] or '',
                    fail_reason=tc['fail_reason'] or '',
                    jobid=tc['jobid'], tags=sorted(tc['tags']))
        label = f'{where} ({case.check} on {case.where})'
        for problem in problems:
            _damage(case, path, f'{label}: {problem}')
        if case.result == 'skip':
            case.fail_reason = skipped.get(
                (tc['hashcode'], f'{case.system}:{case.partition}+{case.environ}'), '')
        prefix = f'{case.system}:{case.partition}:'
        case.metrics = _perf_metrics(tc['perfvalues'], prefix, case, label, path)
        outdir = _rebase(tc['outputdir'], run.session, run.path)
        stagedir = _rebase(tc['stagedir'], run.session, run.path)
        _collect_docs(case, [d for d in (outdir, stagedir) if d], tc['json_file'])
        for d in case.dirs:
            out = os.path.join(d, tc['job_stdout'] or 'rfm_job.out')
            if os.path.isfile(out):
                case.stdout = out
                break
        run.cases.append(case)
    for d in damage:
        if d.problem.startswith('runs['):
            # A test case that is not one: a check whose result is lost, which must not
            # let the run read as whole.
            case = Case(check=d.problem.split(' ', 1)[0], result='unknown', damaged=[d])
            _mark_damaged(case, run.path)
            run.cases.append(case)
        else:
            run.damaged.append(d)


def _num(text):
    '''A number of a perflog field; None for none; a str for anything else.'''
    if text in (None, '', 'None', 'null'):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def _from_perflogs(run):
    '''Cases from the performance logs (a run without report.json): the last record of
    each check's log, with its references.'''
    base = os.path.join(run.path, 'perflogs')
    for dirpath, _, files in sorted(os.walk(base)):
        for name in sorted(f for f in files if f.endswith('.log')):
            rel = os.path.relpath(dirpath, base).split(os.sep)
            system, partition = (rel + ['', ''])[:2]
            log = os.path.join(dirpath, name)
            try:
                with open(log, encoding='utf-8') as fp:
                    lines = [line.rstrip('\n') for line in fp if line.strip()]
            except (OSError, UnicodeDecodeError) as err:
                run.damaged.append(Damage(log, f'cannot read: {err}'))
                continue
            header = next((line.split('|') for line in lines if line.startswith('result|')),
                          None)
            records = [line.split('|') for line in lines if not line.startswith('result|')]
            if not header or not records:
                continue
            fields = dict(zip(header, records[-1]))
            case = Case(check=fields.get('name', name[:-4]), system=system,
                        partition=partition, result=fields.get('result', 'unknown'),
                        jobid=fields.get('jobid', ''))
            for key in header:
                if not key.endswith('_value'):
                    continue
                metric = key[:-len('_value')]
                value = _num(fields.get(key))
                ref = _num(fields.get(f'{metric}_ref'))
                lower = _num(fields.get(f'{metric}_lower_thres'))
                upper = _num(fields.get(f'{metric}_upper_thres'))
                unit = fields.get(f'{metric}_unit', '')
                bad = [(label, v) for label, v in (('reference', ref),
                                                   ('lower threshold', lower),
                                                   ('upper threshold', upper))
                       if isinstance(v, str) or (v is not None and not math.isfinite(v))]
                if bad:
                    _damage(case, log, f'{case.check}, {metric}: {bad[0][0]} '
                                       f'{bad[0][1]!r} is not a number (from the site\'s '
                                       'references.yaml)')
                    continue
                judged = not (ref in (0, None) and lower is None and upper is None)
                if judged:
                    lo, hi = reference_bounds(ref, lower, upper)
                    ok = ((lo is None or value >= lo) and (hi is None or value <= hi)
                          if isinstance(value, float) else False)
                    case.metrics.append(Metric(metric, value, unit, ref, lo, hi,
                                               'pass' if ok else 'fail'))
                else:
                    case.metrics.append(Metric(metric, value, unit))
            # The test's directory: output/ if it passed, else stage/.
            dirs = [os.path.join(run.path, sub, system, partition, env, case.check)
                    for sub in ('output', 'stage')
                    for env in (os.listdir(os.path.join(run.path, sub, system, partition))
                                if os.path.isdir(os.path.join(run.path, sub, system,
                                                              partition)) else [])]
            _collect_docs(case, dirs)
            # The environment is the directory the documents were in: a case of the
            # perflogs keys (compare) as the same case of a report.json.
            if case.dirs:
                case.environ = os.path.basename(os.path.dirname(case.dirs[0]))
            _mark_damaged(case, run.path)
            run.cases.append(case)
        run.sources.append(base)


def _case_from_doc(doc, path):
    passed = (doc.get('compliance') or {}).get('passed')
    m = re.search(r'-(\d+)\.json$', path)
    jobid = m.group(1) if m else ''
    case = Case(check=doc.get('test', '?'), partition=f'job {jobid}' if jobid else 'job',
                nodes=[doc.get('host', '')], jobid=jobid,
                result='pass' if passed else 'fail' if passed is False else 'unknown',
                docs=[doc], doc_paths=[path])
    if passed is False:
        case.fail_phase = 'compliance'
        case.fail_reason = (f'{doc.get("test")} reported not compliant '
                            f'(threshold {doc["compliance"].get("threshold")})')
    for name, m in doc['metrics'].items():
        if isinstance(m, dict) and isinstance(m.get('value'), (int, float)):
            case.metrics.append(Metric(name, m['value'], m.get('unit') or ''))
    return case


def load_run(path):
    '''Read a run directory, a directory of job JSON documents, or one JSON document.
    Raises CannotRun (loading.Damaged: with .path and .problem) when nothing usable is
    there; what is damaged in a usable run is in Run.damaged and Case.damaged.'''
    path = os.path.abspath(path)
    if os.path.isfile(path):
        doc = read_json(path)
        if not looks_like_kernel_doc(doc):
            raise Damaged(path, 'not a run directory nor a kernel JSON document')
        problems = kernel_doc_problems(doc)
        if problems:
            raise Damaged(path, 'not a valid kernel JSON document: ' + '; '.join(problems[:3]))
        run = Run(path=path, kind='jobs', run_id=os.path.basename(path))
        run.cases.append(_case_from_doc(doc, path))
        run.sources.append(path)
        return run
    if not os.path.isdir(path):
        raise CannotRun(f'{path}: no such run')

    parent = os.path.dirname(path)
    if is_run_dir(path):
        run = Run(path=path, kind='reframe', site=os.path.basename(parent),
                  run_id=os.path.basename(path))
        run.state, run.state_why = run_state(path)
        report_path = os.path.join(path, REPORT)
        have_report = os.path.lexists(report_path)
        try:
            if have_report:
                _from_report(run, read_json(report_path), report_path)
                run.sources.append(report_path)
        except Damaged as err:
            # Not a run report: what ReFrame logged as it went (the perflogs) still is;
            # the run reads as partial, and report_damage says why.
            run.cases = []
            run.report_damage = err.damage
            run.damaged.append(err.damage)
            run.state, run.state_why = PARTIAL, f'{REPORT} is damaged: {err.problem}'
            have_report = False
        if not have_report:
            _from_perflogs(run)
        for c in run.cases:
            _mark_damaged(c, run.path)
            run.damaged.extend(d for d in c.damaged if d not in run.damaged)
            run.sources.extend(c.doc_paths)
        run.cases.sort(key=lambda c: (c.check.lower(), c.where, c.environ))
        return run

    docs, damaged = [], []
    for dirpath, _, files in os.walk(path):
        for name in sorted(files):
            if name.endswith('.json'):
                p = os.path.join(dirpath, name)
                try:
                    doc = read_json(p)
                except Damaged as err:
                    damaged.append(err.damage)
                    continue
                if not looks_like_kernel_doc(doc):
                    continue
                problems = kernel_doc_problems(doc)
                if problems:
                    damaged.append(Damage(p, '; '.join(problems[:3])))
                else:
                    docs.append((p, doc))
    if not docs and not damaged:
        raise CannotRun(f'{path}: neither a run directory (report.json, output/, perflogs/) '
                        'nor a directory of kernel JSON documents')
    run = Run(path=path, kind='jobs', site=os.path.basename(path), run_id='')
    for p, doc in sorted(docs):
        run.cases.append(_case_from_doc(doc, p))
        run.sources.append(p)
    for d in sorted(damaged, key=lambda d: d.path):
        # A job's document that cannot be read: its job's result is lost, not absent.
        m = re.match(r'(.+?)(?:-(\d+))?\.json$', os.path.basename(d.path))
        case = Case(check=m.group(1), partition=f'job {m.group(2)}' if m.group(2) else 'job',
                    jobid=m.group(2) or '', result='unknown', damaged=[d])
        _mark_damaged(case, path)
        run.cases.append(case)
        run.damaged.append(d)
    return run


def _store(explicit):
    '''The results store to list: one that was named (--results, $COBALT_BENCH_RESULTS)
    must exist; the default one may not yet (no run made).'''
    base = results_base(explicit)
    named = ('--results', explicit) if explicit else (
        ('COBALT_BENCH_RESULTS', os.environ['COBALT_BENCH_RESULTS'])
        if os.environ.get('COBALT_BENCH_RESULTS') else None)
    if named and not os.path.isdir(base):
        what = 'not a directory' if os.path.exists(base) else 'no such directory'
        raise CannotRun(f'{named[0]} {named[1]}: {what} (the results store is a directory '
                        'of <site>/<run-id>/ run directories)')
    return base


def _listing(path, run_path):
    '''(state or None, checks, why) of a run with a report.json, read by load_run.'''
    try:
        run = load_run(path)
    except CannotRun as err:
        return DAMAGED_RUN, '-', str(err)
    counts = {}
    for c in run.cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    checks = ', '.join(f'{v} {k}' for k, v in sorted(counts.items())) or 'none'
    if run.report_damage:
        d = run.report_damage
        return DAMAGED_RUN, checks, f'{relpath(d.path, run_path)}: {d.problem}'
    if run.damaged:
        d = run.damaged[0]
        more = f' (and {len(run.damaged) - 1} more)' if len(run.damaged) > 1 else ''
        return None, checks, f'damaged: {relpath(d.path, run_path)}: {d.problem}{more}'
    return None, checks, ''


def list_command(base, site):
    '''`cobalt-bench runs`: 0, or 1 when a run listed is damaged (listed with why).'''
    base = _store(base)
    try:
        runs = list_runs(base, site)
    except OSError as err:
        raise CannotRun(f'cannot read the results store {base}: {err.strerror or err}')
    if not runs:
        print(f'no runs in {base}' + (f' for site {site}' if site else ''))
        return 0
    print(f'results store: {base}')
    print(f'{"SITE":<14} {"RUN ID":<24} {"STATE":<9} CHECKS')
    damaged = 0
    for s, r, path in runs:
        state, why = run_state(path)
        checks = '-'
        if os.path.lexists(os.path.join(path, REPORT)):
            bad_state, checks, bad_why = _listing(path, path)
            if bad_why:
                damaged += 1
                state = bad_state or state
                why = f'{why}; {bad_why}' if why else bad_why
        print(f'{s:<14} {r:<24} {state:<9} {checks}' + (f'  ({why})' if why else ''))
    if damaged:
        print(f'{damaged} run(s) with damaged results: their files are named above',
              file=sys.stderr)
    return 1 if damaged else 0
