'''Judging results by a site's references.yaml, with ReFrame's own rule.

ReFrame judges a performance variable in RegressionTest.check_performance
(reframe/core/pipeline.py): its reference tuple (value, lower, upper[, unit]) is looked up
for `system:partition:metric`, and `sn.assert_reference(value, ref, lower, upper)` decides;
a variable without a reference is recorded (ref 0, no bounds), an `$xfail` reference turns
a failure into an expected one (and a pass into an unexpected one, a failure too). This
module applies that same rule (cobalt_bench.site.bounds) to a kernel's JSON document, so
that a result of a Slurm job (jobs/*.slurm, results/slurm/) and a ReFrame run of the same
site get the same verdict from the same references.yaml.

What ReFrame does not do, and cobalt-bench does here: a reference metric that the result
does not have (`measured_sped`) judges nothing, and is an error naming the file, check,
partition and metric, not a silent pass.

Nothing here changes what it judges: each function returns a judged copy of the case
(store.model.replace) with its judgement.
'''

from dataclasses import dataclass, field

from .. import kernels
from .. import site as site_mod
from ..site.bounds import Bounds, meets, within
from ..store.identity import CheckName
from ..store.model import Metric, replace
from ..store.result import Result
from . import sanity


def verdict_of(value, ref):
    '''PASS, FAIL, XFAIL or XPASS: what ReFrame records for a performance variable judged
    by the site.Ref `ref`.'''
    ok = within(value, ref.bounds)      # meets(), with the Ref's bounds worked out once
    if ref.xfail:
        return Result.XPASS if ok else Result.XFAIL
    return Result.PASS if ok else Result.FAIL


@dataclass
class Problem:
    '''Something that makes a judgement impossible: the references judge nothing here.'''
    check: str
    where: str
    text: str


@dataclass(slots=True)      # one per case judged
class CaseJudgement:
    check: str                          # the check class judged as (MemTest)
    partition: str                      # system:partition judged on
    refs: dict = field(default_factory=dict)        # {metric: site.Ref}
    problems: list = field(default_factory=list)    # [Problem]


def check_class(case, checks=None):
    '''The check class a case is judged as: ReFrame's test name, or the check that runs the
    kernel of a job document (mem-test -> MemTest).'''
    checks = site_mod.known_checks() if checks is None else checks
    name = CheckName.of(case.check, checks).check
    if checks is not None and name in checks:
        return name
    # A job document's kernel, or the kernel a case without a document was to run (its
    # job's record, its start mark, a sweep's plan): the check that runs it.
    for kernel in [doc.get('test', '') for doc in case.docs] + [name]:
        found = site_mod.check_of_kernel(kernel, checks)
        if found:
            return found
    return name


class Memo:
    '''What judging asks again for every case of a run, answered once per run: the check a
    case is judged as, a check name parsed, the site's references of a check on a
    partition, the units a check's documents carry. A sweep of 10,000 nodes asks each of
    these 10,000 times with the same few arguments. One Memo serves one run judged by one
    site (judging.verdict.decide); the answers are shared, never to be changed.'''

    def __init__(self):
        self.checks = site_mod.known_checks()
        self._classes, self._names, self._refs, self._units = {}, {}, {}, {}

    def check_class(self, case):
        '''check_class(case) for the suite's checks.'''
        try:
            key = (case.check, tuple(doc.get('test', '') for doc in case.docs))
            return self._classes[key]
        except KeyError:
            found = self._classes[key] = check_class(case, self.checks)
            return found
        except TypeError:       # a document's `test` that is no text: asked, not kept
            return check_class(case, self.checks)

    def name(self, check):
        '''CheckName.of(check) (the kernels' checks).'''
        found = self._names.get(check)
        if found is None:
            found = self._names[check] = CheckName.of(check)
        return found

    def refs(self, site, check, partition, params=None):
        '''site.references.lookup(check, partition, params).'''
        key = (check, partition, tuple(params.items()) if params else ())
        found = self._refs.get(key)
        if found is None:
            found = self._refs[key] = site.references.lookup(check, partition, params)
        return found

    def units(self, check):
        '''kernels.document_units(check), {} for no kernel's check.'''
        found = self._units.get(check)
        if found is None:
            found = self._units[check] = (kernels.document_units(check) if check else
                                          None) or {}
        return found


def as_recorded(metric):
    '''A metric of a ReFrame run with the absolute bounds of the thresholds ReFrame
    recorded, and its verdict where the record keeps none (a perflog).'''
    if not metric.judged:
        return metric
    bounds = Bounds.of(metric.ref, metric.lower_thres, metric.upper_thres)
    verdict = metric.verdict
    if verdict is Result.UNKNOWN:
        verdict = Result.PASS if meets(metric.value, metric.ref, metric.lower_thres,
                                       metric.upper_thres) else Result.FAIL
    return replace(metric, lower=bounds.lower, upper=bounds.upper, verdict=verdict)


def recorded_case(case):
    '''A ReFrame case as ReFrame judged it (no site at hand): its metrics' bounds; a pass
    that no reference judged is UNJUDGED, never a pass.'''
    metrics = [as_recorded(m) for m in case.metrics]
    if case.result.passed and metrics and not any(m.judged for m in metrics):
        return by_peers(replace(case, metrics=metrics), check_class(case)) or replace(
            case, metrics=metrics, result=Result.UNJUDGED, fail_phase='',
                       fail_reason='unjudged: ReFrame recorded no reference for any of its '
                                   'metrics')
    return replace(case, metrics=metrics)


def _stopped(case):
    '''The case as a run that did not finish when it did not, None otherwise: FAIL where
    it is the node's failure (a signal, a crash, Slurm's OUT_OF_MEMORY or NODE_FAIL, a step
    over the job's memory), NOT
    RUN (SKIP) for exit status 2 or 3, else ABORT (cancelled, time limit, interrupted), the
    cause named. The one rule of judging.exit_status and judging.sanity.'''
    ended = case.exit_status
    unfinished = sanity.unfinished_job_reason(case.job_state)
    over_memory = sanity.memory_overrun_reason(case.memory_overrun)
    node_fault = sanity.node_fault_state(case.job_state) or bool(over_memory)
    # The kernel's name only where the status has something to say (a run to judge: '').
    reasons = [ended.reason(case.kernel or CheckName.of(case.check).check)
               if ended is not None and not ended.ran else '',
               case.fail_reason if case.result is Result.ABORT else '',
               sanity.interrupted_reason(case.docs[0]) if case.docs else '',
               unfinished, over_memory]
    stopped = '; '.join(dict.fromkeys(r for r in reasons if r))
    if not stopped:
        return None
    # Someone stopped it (cancelled, time limit: Slurm says so): incomplete, even where
    # the kernel died of the SIGKILL that follows; a node's fault or a crash: FAIL.
    someone = bool(unfinished) and not node_fault
    if (ended is not None and ended.failed and not someone) or node_fault:
        result = Result.FAIL
    elif ended is not None and ended.not_run and not case.docs:
        result = Result.SKIP
    else:
        result = Result.ABORT
    return replace(case, result=result, fail_phase='run', fail_reason=stopped)


#: Why a capacity check (mem-test --max) has no verdict of its own.
PEERS_JUDGE = ('capacity: judged against its peers (the fleet analysis), no reference of the '
               'site')


def by_peers(case, check):
    '''The case of a check its peers judge (kernels.BY_PEERS: a capacity check, cpu-test)
    that no reference judges and that ran to the end: RECORDED, its verdict the fleet's
    (judging.verdict); else None.'''
    if check in kernels.BY_PEERS and case.result is Result.PASS:
        return replace(case, result=Result.RECORDED, fail_phase='', fail_reason=PEERS_JUDGE)
    return None


def no_reference(check, partition, site):
    '''Why a case is unjudged: the site has no reference for its partition.'''
    return f'unjudged: no reference for {partition} (check {check}, {site.references.path})'


def annotate(case, site, partition=None, memo=None):
    '''(judged case, CaseJudgement) of a ReFrame case: ReFrame's own verdicts (from
    report.json) kept, each judged metric carrying the site.Ref it was judged by, and the
    references that judge nothing named (a metric the result lacks). `memo`: the run's
    Memo (None: a new one).'''
    memo = memo or Memo()
    check = memo.check_class(case)
    params = memo.name(case.check).param_dict
    partition = partition or case.where
    j = CaseJudgement(check, partition)
    j.refs = memo.refs(site, check, partition, params)
    metrics = []
    for m in case.metrics:
        m = as_recorded(m)
        ref = j.refs.get(m.name)
        metrics.append(replace(m, entry=ref) if ref is not None else m)
    if case.result is Result.PASS and metrics and not j.refs and not any(
            m.judged for m in metrics):
        # ReFrame passes what nothing judges; the site's verdict must not.
        return by_peers(replace(case, metrics=metrics), check) or replace(
            case, metrics=metrics, result=Result.UNJUDGED, fail_phase='',
            fail_reason=no_reference(check, partition, site)), j
    if case.result.judged and case.metrics:
        have = {m.name for m in case.metrics}
        for name, ref in sorted(j.refs.items()):
            if name not in have:
                j.problems.append(Problem(check, partition, (
                    f'{ref.file}: check {check}, partition {ref.key[0]!r}, metric {name!r}: '
                    f'{check} on {partition} has no metric {name!r}, so this reference '
                    'judges nothing')))
    return replace(case, metrics=metrics), j


def _judged_metric(m, ref):
    b = ref.bounds      # a cached property: worked out once per reference
    # Every field given, by position (a sweep judges 280,000 metrics: a third of the cost
    # of replace()); tests/python/judging/test_judge.py holds it to replace()'s copy.
    return Metric(m.name, m.value, m.unit, ref.value, ref.lower, ref.upper,
                  verdict_of(m.value, ref), b.lower, b.upper, ref)


def _outcome(case, metrics, problems):
    '''(result, phase, reason) of a job document's case judged by its references.'''
    if problems:
        return Result.ERROR, 'references', '; '.join(p.text for p in problems)
    failed = [m for m in metrics if m.verdict.failed]
    if failed:
        return Result.FAIL, 'performance', 'failed to meet reference(s): ' + ', '.join(
            f'{m.name}={m.value:g} {m.unit} (bounds {Bounds(m.lower, m.upper).text()})'
            for m in failed)
    xfail = Result.XFAIL        # looked up once, not once per metric
    known = [m for m in metrics if m.verdict is xfail]
    if known:
        return Result.XFAIL, 'performance', 'known failure ($xfail): ' + ', '.join(
            f'{m.name}={m.value:g} {m.unit} ({m.entry.xfail})' for m in known)
    return Result.PASS, '', ''


def _sanity_problems(case, memo):
    '''The sanity rule (judging.sanity) of a job document, as ReFrame's checks apply it:
    its own kernel, every metric its descriptor declares, finite and in the contract's
    units, its data verified.'''
    doc = case.docs[0]
    kernel = doc.get('test') if isinstance(doc.get('test'), str) else ''
    units = memo.units(kernels.check_of_document(doc))
    return sanity.document_problems(doc, kernel, units)


def _unit_problems(check, partition, case, refs):
    '''A reference whose unit is not its metric's judges a number in another unit: an
    error naming both, never a silent judgement.'''
    out = []
    for m in case.metrics:
        ref = refs.get(m.name)
        if ref is not None and ref.unit and m.unit and ref.unit != m.unit:
            out.append(Problem(check, partition, (
                f'{ref.file}: check {check}, partition {ref.key[0]!r}, metric {m.name!r}: '
                f'the reference is in {ref.unit!r}, the {case.kernel or check} document '
                f'gives {m.unit!r}: not comparable')))
    return out


def judge_doc_case(case, site, partition, memo=None):
    '''(judged case, CaseJudgement) of a job document's case (results/slurm/) judged by the
    site's references, exactly as ReFrame would judge the same document in a run of the
    site: the exit status and Slurm's state first (a signal, a crash, a node fault: FAIL),
    the sanity rule, then each metric's reference, bounds and verdict (PASS, FAIL, XFAIL,
    ERROR, or UNJUDGED when the references have nothing for it). `memo`: the run's Memo
    (None: a new one).'''
    memo = memo or Memo()
    check = memo.check_class(case)
    j = CaseJudgement(check, partition)
    stopped = _stopped(case)
    if not case.docs:       # a job that left no document (store.reader) or a damaged one
        return stopped or case, j
    j.refs = memo.refs(site, check, partition)
    if case.result is Result.DAMAGED:
        return case, j
    if stopped:             # never a pass, judged or not: the run did not finish
        return stopped, j
    insane = ([case.foreign] if case.foreign else []) + _sanity_problems(case, memo)
    if insane:
        return replace(case, result=Result.FAIL, fail_phase='sanity',
                       fail_reason='; '.join(insane)), j
    if not j.refs:
        return by_peers(replace(case, result=Result.PASS), check) or replace(
            case, result=Result.UNJUDGED, fail_phase='',
            fail_reason=no_reference(check, partition, site)), j
    refs = j.refs
    j.problems += _unit_problems(check, partition, case, refs)
    metrics = [_judged_metric(m, refs[m.name]) if m.name in refs else m
               for m in case.metrics]
    have = {m.name for m in case.metrics}
    for name, ref in sorted(refs.items()):
        if name not in have:
            j.problems.append(Problem(check, partition, (
                f'{ref.file}: check {check}, partition {ref.key[0]!r}, metric {name!r}: '
                f'the {case.kernel or check} document has no metric {name!r}, so this '
                'reference judges nothing')))
    result, phase, reason = _outcome(case, metrics, j.problems)
    return replace(case, metrics=metrics, result=result, fail_phase=phase,
                   fail_reason=reason), j


def unjudged(case, reason):
    '''A job document's case that nothing of a site judges (the kernel's own verdict is no
    judgement of the site's: shown apart by the report, never as the case's result). An
    interrupted run is no unjudged one: it stopped, whatever judges it (issue 27).'''
    if case.result is Result.DAMAGED:
        return case     # unreadable: never a pass
    if case.result is Result.FAIL and not case.docs:
        # lost (store.sweep, store.job_record): never a pass, Slurm's word on why added
        return _stopped(case) or case
    return _stopped(case) or replace(case, result=Result.UNJUDGED, fail_phase='',
                                     fail_reason=reason)


def partition_of_job(site, slurm_partition=None):
    '''The site partition (system:partition) a job document is judged on: the one named
    (a full name or a partition's name, which for the local-slurm site is the Slurm
    partition), else the site's only partition; None when that does not decide it. A site
    of references only (no partitions) judges by the partition named in full, else by its
    '*' entries.'''
    parts = site.partitions
    if not parts:
        return slurm_partition if slurm_partition and ':' in slurm_partition else '*'
    if slurm_partition:
        if slurm_partition in parts:
            return slurm_partition
        named = [p for p in parts if p.split(':', 1)[1] == slurm_partition]
        if len(named) == 1:
            return named[0]
        return None
    return parts[0] if len(parts) == 1 else None
