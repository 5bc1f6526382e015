'''Judging results by a site's references.yaml, with ReFrame's own rule.

ReFrame judges a performance variable in RegressionTest.check_performance
(reframe/core/pipeline.py): its reference tuple (value, lower, upper[, unit]) is looked up
for `system:partition:metric`, and `sn.assert_reference(value, ref, lower, upper)` decides;
a variable without a reference is recorded (ref 0, no bounds), an `$xfail` reference turns
a failure into an expected one (and a pass into an unexpected one, a failure too). This
module calls those same functions of ReFrame (reframe.utility.sanity) on a kernel's JSON
document, so that a result of a Slurm job (jobs/*.slurm, results/slurm/) and a ReFrame run
of the same site get the same verdict from the same references.yaml.

What ReFrame does not do, and cobalt-bench does here: a reference metric that the result
does not have (`measured_sped`) judges nothing, and is an error naming the file, check,
partition and metric, not a silent pass.
'''

import math
import re
from dataclasses import dataclass, field

try:
    import reframe.utility.sanity as _sn
    from reframe.core.exceptions import SanityError as _SanityError
except ImportError:                     # pragma: no cover - the checkout's .venv has ReFrame
    _sn = None

    class _SanityError(Exception):
        pass

from . import references as refs_mod


def bounds(ref):
    '''(lower, upper) absolute bounds of a references.Ref, as ReFrame computes them
    (reframe.utility.sanity.reference_bounds); None for an open side.'''
    if _sn is not None:
        lo, hi = _sn.reference_bounds(ref.value, ref.lower, ref.upper)
    else:                               # pragma: no cover
        def calc(t):
            if t is None:
                return None
            return ref.value * (1 + (-t if ref.value < 0 else t)) if ref.value else t
        lo, hi = calc(ref.lower), calc(ref.upper)
    lo = None if lo is None or (isinstance(lo, float) and math.isinf(lo)) else lo
    hi = None if hi is None or (isinstance(hi, float) and math.isinf(hi)) else hi
    return lo, hi


def meets(value, ref):
    '''Whether `value` meets the reference: ReFrame's sn.assert_reference.'''
    if _sn is not None:
        try:
            return bool(_sn.evaluate(_sn.assert_reference(value, ref.value, ref.lower,
                                                          ref.upper)))
        except _SanityError:
            return False
    lo, hi = bounds(ref)                # pragma: no cover
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def verdict_of(value, ref):
    '''pass, fail, xfail or xpass: what ReFrame records for a performance variable.'''
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return 'fail'
    ok = meets(value, ref)
    if ref.xfail:
        return 'xpass' if ok else 'xfail'
    return 'pass' if ok else 'fail'


_PARAM = re.compile(r'%(\w+)=(\S+)')


def check_and_params(display_name):
    '''('EthTest', {'interface': 'lo'}) of ReFrame's display name
    'EthTest %interface=lo'.'''
    name = (display_name or '').split(' %')[0].split()[0] if display_name else ''
    return name, dict(_PARAM.findall(display_name or ''))


@dataclass
class Problem:
    '''Something that makes a judgement impossible: the references judge nothing here.'''
    check: str
    where: str
    text: str


@dataclass
class CaseJudgement:
    check: str                          # the check class judged as (MemTest)
    partition: str                      # system:partition judged on
    refs: dict = field(default_factory=dict)        # {metric: references.Ref}
    problems: list = field(default_factory=list)    # [Problem]


def check_class(case, checks=None):
    '''The check class a case is judged as: ReFrame's test name, or the check that runs the
    kernel of a job document (mem-test -> MemTest).'''
    name, _ = check_and_params(case.check)
    checks = refs_mod.known_checks() if checks is None else checks
    if checks is not None and name in checks:
        return name
    for doc in case.docs:
        found = refs_mod.check_of_kernel(doc.get('test', ''), checks)
        if found:
            return found
    return name


def annotate(case, site, partition=None):
    '''Attach to each judged metric of a ReFrame case the references.Ref it was judged by,
    and say which references judge nothing (a metric the result lacks, no entry at all for
    the partition). ReFrame's own verdicts (from report.json) are left as they are.'''
    check = check_class(case)
    _, params = check_and_params(case.check)
    partition = partition or case.where
    j = CaseJudgement(check, partition)
    j.refs = site.references.lookup(check, partition, params)
    for m in case.metrics:
        ref = j.refs.get(m.name)
        if ref is not None:
            m.entry = ref
    measured = case.result in ('pass', 'fail', 'xfail', 'xpass') and bool(case.metrics)
    if measured:
        have = {m.name for m in case.metrics}
        for name, ref in sorted(j.refs.items()):
            if name not in have:
                j.problems.append(Problem(check, partition, (
                    f'{ref.file}: check {check}, partition {ref.key[0]!r}, metric {name!r}: '
                    f'{check} on {partition} has no metric {name!r}, so this reference '
                    'judges nothing')))
    return j


def judge_doc_case(case, site, partition):
    '''Judge a job document's case (results/slurm/) by the site's references, exactly as
    ReFrame would judge the same document in a run of the site: sets each metric's
    reference, bounds and verdict, and the case's result (pass, fail, or 'unjudged' when
    the references have nothing for it).'''
    check = check_class(case)
    j = CaseJudgement(check, partition)
    if not case.docs:
        return j
    j.refs = site.references.lookup(check, partition)
    if case.result in ('damaged',):
        return j
    if not j.refs:
        case.result = 'unjudged'
        case.fail_phase = ''
        case.fail_reason = (f'no reference for {check} on {partition} in '
                            f'{site.references.path}')
        return j
    have = {m.name: m for m in case.metrics}
    failed = []
    for name, ref in sorted(j.refs.items()):
        m = have.get(name)
        if m is None:
            j.problems.append(Problem(check, partition, (
                f'{ref.file}: check {check}, partition {ref.key[0]!r}, metric {name!r}: '
                f'the {case.kernel or check} document has no metric {name!r}, so this '
                'reference judges nothing')))
            continue
        m.ref = ref.value
        m.lower, m.upper = bounds(ref)
        m.verdict = verdict_of(m.value, ref)
        m.entry = ref
        if m.verdict in ('fail', 'xpass'):
            failed.append(m)
    # The sanity part of KernelJsonTest: a kernel that found corrupted data failed.
    errors = have.get('verification_errors')
    if j.problems:
        case.result = 'error'
        case.fail_phase = 'references'
        case.fail_reason = '; '.join(p.text for p in j.problems)
    elif errors is not None and errors.value:
        case.result = 'fail'
        case.fail_phase = 'sanity'
        case.fail_reason = f'{case.kernel} found {errors.value:g} verification errors'
    elif failed:
        case.result = 'fail'
        case.fail_phase = 'performance'
        case.fail_reason = 'failed to meet reference(s): ' + ', '.join(
            f'{m.name}={m.value:g} {m.unit} (bounds {_fmt_bounds(m)})' for m in failed)
    else:
        case.result = 'xfail' if any(m.verdict == 'xfail' for m in case.metrics) else 'pass'
        case.fail_phase = case.fail_reason = ''
    return j


def _fmt_bounds(m):
    lo, hi = m.lower, m.upper
    if lo is not None and hi is not None:
        return f'{lo:g}..{hi:g}'
    if lo is not None:
        return f'>= {lo:g}'
    if hi is not None:
        return f'<= {hi:g}'
    return 'any'


def partition_of_job(site, slurm_partition=None):
    '''The site partition (system:partition) a job document is judged on: the one named
    (a full name or a partition's name, which for the local-slurm site is the Slurm
    partition), else the site's only partition; None when that does not decide it.'''
    parts = site.partitions
    if slurm_partition:
        if slurm_partition in parts:
            return slurm_partition
        named = [p for p in parts if p.split(':', 1)[1] == slurm_partition]
        if len(named) == 1:
            return named[0]
        return None
    return parts[0] if len(parts) == 1 else None


# ---- `cobalt-bench judge` ----------------------------------------------------------------

def _metric_line(m):
    e = m.entry
    return (f'    {m.name} = {m.value:g} {m.unit}: {m.verdict.upper()} '
            f'(reference {e.value:g}, bounds {_fmt_bounds(m)}; {e.label})')


def judge_command(site_spec, result_paths, partition=None, json_dest=None, command=None,
                  quiet=False):
    '''Judge kernel JSON documents (or directories of them) by a site's references, as
    ReFrame would in a run of the site. Prints each result's verdict and the site's state
    of what was given; with json_dest writes the judgement (state first) atomically.
    Exit status: 0 every result met its references, 1 one did not (or could not be
    judged), 2 usage error, 3 cannot run (no such site or result, bad references).'''
    import json
    import os
    import sys

    from . import UsageError, CannotRun
    from . import results as rs
    from . import verdict as vd
    from .report import _write

    site = refs_mod.load_site(site_spec)
    if partition is not None:
        where = partition_of_job(site, partition)
        if where is None:
            raise UsageError(f'--partition {partition!r}: not a partition of site {site.name} '
                             f'({", ".join(site.partitions)})')
    else:
        # In a job: the Slurm partition where it names a partition of the site (local-slurm's
        # x86 and arm), else the site's only partition.
        where = partition_of_job(site, os.environ.get('SLURM_JOB_PARTITION') or None) or \
            partition_of_job(site)
        if where is None:
            raise UsageError(f'site {site.name} has several partitions '
                             f'({", ".join(site.partitions)}): name the one that ran the '
                             'result (--partition)')
    run = rs.Run(path=os.path.abspath(result_paths[0]), kind='jobs', site=site.name)
    for path in result_paths:
        if not os.path.exists(path):
            raise CannotRun(f'{path}: no such result')
        got = rs.load_run(path)
        if got.kind != 'jobs':
            raise UsageError(f'{path}: a ReFrame run (ReFrame judged it: use '
                             '`cobalt-bench report`); judge takes kernel JSON documents')
        run.cases += got.cases
        run.damaged += getattr(got, 'damaged', [])
        run.sources += got.sources
    for case in run.cases:
        if command:
            case.command = command
    v = vd.decide(run, site, vd.preflight_docs_of(run), partition=where)
    ok = all(c.result in ('pass', 'xfail') for c in run.cases) and run.cases and \
        not v.problems
    if not quiet:
        for case in run.cases:
            print(f'{case.check} ({os.path.basename(case.doc_paths[0]) if case.doc_paths else "?"}'
                  f') judged as {check_class(case)} on {where}: {case.result.upper()}'
                  + (f': {case.fail_reason}' if case.result not in ('pass',) and
                     case.fail_reason else ''))
            for m in case.metrics:
                if m.judged and m.entry is not None:
                    print(_metric_line(m))
            for doc in case.docs:
                comp = doc.get('compliance')
                if isinstance(comp, dict) and 'passed' in comp:
                    print(f'    ({doc.get("test")}\'s own verdict, by its built-in threshold '
                          f'{comp.get("threshold")}: '
                          f'{"passed" if comp.get("passed") else "failed"}; not the site\'s)')
        print(f'site {site.name}: {v.headline}')
        for r in v.reasons:
            print(f'  - {r}')
    if json_dest:
        doc = {**v.to_json(), 'partition': where, 'site_dir': site.dir,
               'command': command or None,
               'results': [{'document': p, 'check': check_class(c), 'kernel': c.kernel,
                            'result': c.result, 'reason': c.fail_reason,
                            'judged': [{'metric': m.name, 'value': m.value, 'unit': m.unit,
                                        'reference': m.entry.value, 'lower': m.lower,
                                        'upper': m.upper, 'verdict': m.verdict,
                                        'entry': m.entry.label}
                                       for m in c.metrics if m.entry is not None]}
                           for c in run.cases for p in c.doc_paths[:1]]}
        text = json.dumps(doc, indent=2) + '\n'
        if json_dest == '-':
            sys.stdout.write(text)
        else:
            try:
                _write(os.path.abspath(json_dest), text)
            except OSError as err:
                raise CannotRun(f'cannot write {json_dest}: {err}')
    return 0 if ok else 1
