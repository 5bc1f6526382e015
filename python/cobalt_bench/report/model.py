'''The model of one report: the run, its verdict (judging.verdict, from the site's
compliance definition and references, never the kernels' own thresholds), its judged
cases, the failures with the preflight findings and hints that may explain them, and the
plots.'''

import re
from dataclasses import dataclass, field, replace

from .. import kernels
from .. import preflight as pf
from ..errors import CannotRun
from ..judging import sanity
from ..judging.outcome import decided_by_settings
from ..judging import verdict as vd
from ..store import documents, job_record
from ..store import history as hist
from ..store.result import Result
from . import compute_plots  # noqa: F401  (registers cpu-test's plotters with plots)
from .drawing import draw_aside
from .fleet import flaky_in, fleet_plots, run_history
from .plots import make_plots

# Check families, matched against check names, kernel names and ReFrame tags; preflight
# findings name the families they can spoil (preflight.Finding.affects).
FAMILIES = {
    'memory': r'mem|memory|stream|numa',
    'compute': r'cpu|flops|dgemm|hpl|compute',
    'gpu': r'gpu|cuda',
    'ethernet': r'eth|udp|tcp|iperf',
    'interconnect': r'osu|mpi|linktest|infiniband|ib_|ib-|perftest|mad|rdma|dolphin',
}


def families(case):
    '''The families a case belongs to: its kernel's (kernels' descriptors), else those
    its check name, kernel name and tags match.'''
    own = {k.family for k in map(kernels.of_document, case.docs) if k}
    if own:
        return own
    words = ' '.join([case.check, case.kernel] + list(case.tags)).lower()
    return {f for f, patt in FAMILIES.items() if re.search(patt, words)}


#: The failed cases the report explains each in a section of its own (the failing metrics,
#: the findings that may explain it); the others are counted there, and listed in the
#: Checks table and verdict.json (a sweep of 10,000 nodes with 50 slow ones has 450).
FAILURES_EXPLAINED_MAX = 500


@dataclass
class Explained:
    case: object
    failing: list                       # metrics outside their bounds
    findings: list                      # (host, Finding) that may explain it
    hints: list = field(default_factory=list)


@dataclass
class Model:
    run: object
    verdict: str
    counts: dict
    preflight: list                     # (label, doc)
    failures: list                      # Explained
    plots: list
    judgement: object = None            # verdict.Verdict: state, reasons, items
    cases: list = field(default_factory=list)   # the run's cases as judged
    flaky: list = field(default_factory=list)   # fleet.Flaky: by the store's node history
    flaky_note: str = ''                        # why the node history was not read
    failures_more: int = 0                      # failed cases beyond those explained


def _preflight_docs(run, extra_file):
    docs = []
    for case in run.cases:
        for doc in case.docs:
            if doc.get('test') == 'preflight' and 'findings' in doc:
                docs.append((case, doc))
    if extra_file:
        try:
            doc = documents.load_preflight(extra_file)
        except documents.Damaged as err:
            raise CannotRun(f'--preflight {err}')
        docs.append((None, doc))
    return docs


def damaged_files(run):
    '''[(case or None, documents.Damage)]: every file (or entry) of the run that could not be
    read, with the case it belongs to; the report lists each where the result would be.'''
    out, seen = [], set()
    for c in run.cases:
        for d in c.damaged:
            out.append((c, d))
            seen.add(d)
    return out + [(None, d) for d in run.damaged if d not in seen]


def _kernel_hints(case):
    '''What a failure may mean: the kernel's own hints (its descriptor), then corrupted
    data, for any kernel.'''
    hints = []
    for doc in case.docs:
        kernel = kernels.of_document(doc)
        if kernel and kernel.hints:
            hints += kernel.hints(doc)
        errors = sanity.verification_errors(doc)
        if errors > 0:
            hints.append(f'{doc.get("test")}: {int(errors)} verification errors: data '
                         'were corrupted, a hardware or driver fault, not a slow machine')
    return hints


@dataclass
class Judged:
    '''A run as judged: what the report and the exports are made from.'''
    run: object                         # with its job documents' judgement records
    judgement: object                   # verdict.Verdict
    preflight: list                     # (case or None, doc)
    flaky: list                         # fleet.Flaky: by the store's node history
    flaky_note: str                     # why the node history was not read


def judge(run, preflight_file=None, site=None):
    '''The run judged: verdict.decide() by the site's compliance definition and references
    (`site`: a site name or directory; None: the run's own, verdict.site_of_run), with the
    noise of each metric from the partition's clean history (the peer rule's scale).'''
    pre = _preflight_docs(run, preflight_file)
    history, flaky_note = run_history(run)
    noise = hist.metric_noise(history, exclude={run.label}) if history else {}
    run, recorded = job_record.with_job_judgements(run)
    sitedef = vd.site_of_run(run, site, recorded)
    judgement = vd.decide(run, sitedef, [(_pre_label(c, d), d) for c, d in pre], noise=noise)
    note = vd.site_note(run, sitedef, recorded)
    if note:
        judgement.items.append(vd.Item(vd.NOTE, 'site', note))
    return Judged(run, judgement, pre, flaky_in(history), flaky_note)


def build(run, preflight_file=None, with_plots=True, site=None, drawer=None):
    '''The report's model: the run judged (judge()), its failures explained, its plots
    (their images drawn by `drawer`, a drawing.Drawer, while the report is written; None:
    each drawn when asked for).'''
    judged = judge(run, preflight_file, site)
    run, judgement, pre = judged.run, judged.judgement, judged.preflight
    flaky, flaky_note = judged.flaky, judged.flaky_note
    verdict = judgement.state
    counts = judgement.counts       # judging.outcome's: the one count of the run
    # Failed: measured and not good enough (or not sane). Aborted: not measured. Those its
    # required settings failed come last: at fleet scale a setting every node fails (the
    # MTU) fails every node's preflight, alike, and the Checks table lists them all.
    failed = [c for c in judgement.cases
              if c.result.failed or c.result in (Result.ABORT, Result.ERROR)]
    failed.sort(key=decided_by_settings)
    failed, more = failed[:FAILURES_EXPLAINED_MAX], max(0, len(failed) - FAILURES_EXPLAINED_MAX)

    failures = []
    findings = {}       # id(document): its findings, each document read once, when asked
    by_host = {}
    for c, d in pre:
        by_host.setdefault(d.get('host'), []).append((c, d))
    for case in failed:
        fams = families(case)
        candidates = []
        for c, doc in _explaining(case, pre, by_host):
            if id(doc) not in findings:     # a sweep's 10,000 documents: most never asked
                findings[id(doc)] = pf.findings_of(doc)
            for f in findings[id(doc)]:
                if f.status in (pf.FAIL, pf.WARN, pf.UNKNOWN) and (
                        not fams or fams & set(f.affects)):
                    candidates.append((doc.get('host', '?'), f))
        if case.kernel == 'preflight':
            # A failed preflight is explained by its own failing settings.
            candidates = [(d.get('host', '?'), f) for d in case.docs
                          for f in pf.findings_of(d)
                          if f.status in (pf.FAIL, pf.UNKNOWN) and f.level == pf.REQUIRED]
        order = {pf.FAIL: 0, pf.WARN: 1, pf.UNKNOWN: 2}
        candidates.sort(key=lambda hf: (order[hf[1].status], hf[1].level != pf.REQUIRED))
        failing = [m for m in case.metrics if m.verdict is Result.FAIL]
        failures.append(Explained(case, failing, candidates, _kernel_hints(case)))
    # Drawn from the judged cases: the reference curves need their bounds.
    plots = make_plots(replace(run, cases=judgement.cases)) if with_plots else []
    if with_plots:
        plots += fleet_plots(judgement.fleet)
        draw_aside(plots, drawer)
    return Model(run, verdict, counts, [(_pre_label(c, d), d) for c, d in pre], failures,
                 plots, judgement, judgement.cases, flaky, flaky_note, more)



def _explaining(case, pre, by_host):
    '''The preflight documents that may explain a failed case: those of its nodes (any
    partition: a sweep's preflight and mem-test are separate jobs); else those of its
    partition; else one given with --preflight, or the run's only host's. Never every
    node's: at 10,000 nodes that made every failure list 20,000 findings (bench/fleet-scale).'''
    own = [cd for host in case.nodes for cd in by_host.get(host, ())]
    if own:
        return own
    same = [(c, d) for c, d in pre if c is not None and c.where == case.where]
    if same:
        return same
    given = [(c, d) for c, d in pre if c is None]
    return given or (pre if len(by_host) == 1 else [])


def _pre_label(case, doc):
    host = doc.get('host', '?')
    if case is None:
        return f'{host} (--preflight)'
    return f'{case.where} {host}'
