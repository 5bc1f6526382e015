'''The verdict of a run (or of job documents): one answer to "is this machine fit for
purpose?", from the site's compliance definition (compliance.yaml) and references
(references.yaml), never from a kernel's built-in threshold.

States:
  COMPLIANT      every required check ran at its required workload and passed, and every
                 required preflight setting passed;
  NOT COMPLIANT  a required check failed, or a required preflight setting failed;
  INCOMPLETE     a required check was skipped, not run, did not finish, ran at another
                 workload, or could not be judged (damaged result, references that judge
                 nothing); a check that ran is unjudged (the site has no reference for its
                 partition); a required setting could not be determined; the run is partial;
  DEMONSTRATION  the site is not a compliance definition (its compliance.yaml says
                 `demonstration: why`, or it has none): the checks were judged by its
                 references, and what a compliance run would still need is listed.
The reasons list the exact failing or missing items, failures first, then the bad nodes
(judging.fleet: failed cases and outliers against their peers). An outlier does not change
the state by itself (the site's references decide it): it is named, in the reasons and in
verdict.json's `bad_nodes`.
'''

import os
from dataclasses import dataclass, field, replace

from .. import site as site_mod
from ..site.bounds import Bounds
from ..site.loader import installed_site, installed_site_of
from ..store.identity import CheckName
from ..store.model import KIND_JOBS
from ..store.result import Result, RunState, Word
from . import fleet as fl
from . import judge as jd
from . import outcome, sanity
from .items import FAILED, MISSING, NOTE, PASSED, Item, grouped, preflight_items, read_findings


class State(Word):
    '''The verdict of a run: one answer to "is this machine fit for purpose?".'''
    COMPLIANT = 'COMPLIANT'
    NOT_COMPLIANT = 'NOT COMPLIANT'
    INCOMPLETE = 'INCOMPLETE'
    DEMONSTRATION = 'DEMONSTRATION'


COMPLIANT, NOT_COMPLIANT, INCOMPLETE, DEMONSTRATION = State
STATES = tuple(State)


UNJUDGED = Result.UNJUDGED.value    # verdict.json's list of the checks that ran unjudged


@dataclass
class Verdict:
    state: str
    site: str = ''
    title: str = ''
    demonstration: str = ''
    references: str = ''        # the references.yaml judged by
    compliance: str = ''        # the compliance.yaml (or '')
    items: list = field(default_factory=list)
    problems: list = field(default_factory=list)     # judge.Problem
    # The run's cases as judged (each a judged copy: the run read is left as it was).
    cases: list = field(default_factory=list)
    checks_failed: bool = False   # a check that ran failed its references (any site)
    run_incomplete: bool = False  # the run is partial, or some of its results unreadable
    compliance_preflight: list = field(default_factory=list)  # required setting patterns
    fleet: fl.Fleet = field(default_factory=fl.Fleet)   # the nodes against their peers
    counted: dict = None        # counts(), once the cases are judged (decide's last step)

    @property
    def reasons(self):
        '''The lines that explain the state: failures, then what is missing, then notes.'''
        out = []
        if self.state == DEMONSTRATION:
            out.append(f'site {self.site!r} is a demonstration, not a compliance definition: '
                       f'{self.demonstration}')
        order = {FAILED: 0, MISSING: 1, NOTE: 2}
        named = False
        for it in sorted((i for i in grouped(self.items) if i.status != PASSED),
                         key=lambda i: (order[i.status], not i.required)):
            if it.status is not FAILED and not named:
                out += self.bad_node_lines()
                named = True
            tag = {FAILED: 'FAILED', MISSING: 'MISSING', NOTE: 'note'}[it.status]
            if it.unjudged:
                tag = 'UNJUDGED'
            elif not it.required and it.status != NOTE:
                tag += ' (not required)'
            out.append(f'{tag}: {it.line()}')
        if not named:
            out += self.bad_node_lines()
        if self.state == COMPLIANT:
            out.append('every required check ran at its required workload and passed, and '
                       'every required preflight setting passed')
        return out

    def bad_node_lines(self):
        '''The reason line that names the bad nodes (none: no line).'''
        bad = self.fleet.bad_nodes
        if not bad:
            return []
        shown = '; '.join(f'{b.node}: {b.why}' for b in bad[:5])
        more = f'; and {len(bad) - 5} more (bad-nodes.txt)' if len(bad) > 5 else ''
        return [f'BAD NODES ({len(bad)}): {self.fleet.hostlist or "-"}: {shown}{more}']

    @property
    def any_unjudged(self):
        '''A check ran that nothing of the site's references judged.'''
        return any(i.unjudged and not i.by_settings for i in self.items)

    def _settings(self, status):
        return any(i.setting and i.required and i.status is status for i in self.items)

    @property
    def counts(self):
        '''{Result: n} of the judged cases: the run's one count (judging.outcome), counted
        once the cases are judged (a sweep's 100,000 are asked by every output).'''
        if self.counted is None:
            self.counted = outcome.counts(self.cases)
        return self.counted

    @property
    def count_text(self):
        '''"2 pass, 1 fail, 2 recorded": what every output says the run's cases came to.'''
        return outcome.count_text(self.counts)

    @property
    def headline(self):
        if self.state == DEMONSTRATION:
            measured = 'the measurements passed the demonstration references'
            tail = ('checks that ran failed their references' if self.checks_failed else
                    'the run is incomplete: a check did not finish or cannot be read'
                    if self.run_incomplete else
                    'a check ran unjudged: the site has no reference for it'
                    if self.any_unjudged else
                    f'{measured}; required preflight settings failed on this machine '
                    '(a compliance run fails on them)' if self._settings(FAILED) else
                    f'{measured}; required preflight settings could not be determined'
                    if self._settings(MISSING) else
                    'the checks that ran passed the demonstration references')
            return f'{DEMONSTRATION} (not a compliance verdict; {tail})'
        return self.state

    def exit_code(self):
        if self.state == COMPLIANT:
            return 0
        if self.state == DEMONSTRATION:
            # The demonstration worked: every measurement passed the site's references
            # (judged: unjudged is no pass), the run is whole. The machine's required
            # settings are a compliance run's to hold against it: counted and named (a
            # case they failed is FAIL everywhere), they leave this status alone.
            return 1 if self.checks_failed or self.run_incomplete or self.any_unjudged \
                else 0
        return 1

    def to_json(self):
        # `state` first: what a reader (or jq) wants before anything else.
        return {
            'state': self.state.value,
            'headline': self.headline,
            # The judged cases counted by result (judging.outcome), as every output says.
            'cases': len(self.cases),
            'counts': {r.value: n for r, n in self.counts.items()},
            'reasons': self.reasons,
            'site': self.site,
            'title': self.title,
            'demonstration': self.demonstration or None,
            'references': self.references,
            'compliance': self.compliance or None,
            'items': [{'status': i.status.value, 'what': i.what, 'why': i.why,
                       'required': i.required, UNJUDGED: i.unjudged} for i in self.items],
            UNJUDGED: [i.what for i in self.items if i.unjudged],
            'bad_nodes': self.fleet.to_json(),
            'bad_nodes_hostlist': self.fleet.hostlist,
            'outlier_threshold': self.fleet.threshold,
        }


def _case_label(case, memo=None):
    nodes = f' ({", ".join(case.nodes)})' if case.nodes and any(case.nodes) else ''
    # ReFrame's --distribute parameters (.part, .nid) say what `on ... (node)` says.
    check = (memo.name(case.check) if memo else CheckName.of(case.check)).label
    return f'{check} on {case.where}{nodes}'


def _fmt(v):
    return f'{v:g}' if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def _metric_text(m):
    return f'{m.name} = {_fmt(m.value)} {m.unit}, required {Bounds(m.lower, m.upper).text(_fmt)}'


def _outcome(case, required, judgement):
    '''(status, why) of one case.'''
    if judgement is not None and judgement.problems:
        return MISSING, '; '.join(p.text for p in judgement.problems)
    r = case.result
    known = [m for m in case.metrics if m.verdict is Result.XFAIL]
    if required and (r is Result.XFAIL or known) and not r.failed:
        # A known failure is a failure: shown as one, never part of a compliant verdict.
        return FAILED, 'known failure ($xfail) of a required check, not a pass: ' + (
            '; '.join(f'{_metric_text(m)} ({m.entry.xfail if m.entry else Result.XFAIL})'
                      for m in known) or case.fail_reason)
    if r.passed:
        if required and judgement is not None and not judgement.refs:
            return MISSING, (f'no reference for {judgement.check} on {judgement.partition}:'
                             ' a required check that nothing judges is not a pass')
        return PASSED, ''
    if r is Result.SKIP:
        return MISSING, 'skipped' + (f': {case.fail_reason}' if case.fail_reason else '')
    if r is Result.UNJUDGED:
        # Measured, judged by nothing of the site's: never part of a compliant verdict.
        return MISSING, case.fail_reason
    if r is Result.RECORDED:
        # A capacity check: its peers judge it once the fleet is analysed (_by_peers).
        return NOTE, case.fail_reason
    if r.failed:
        failing = [m for m in case.metrics if m.verdict.failed]
        workload = [m for m in failing if required and m.name in required.workload]
        if workload:
            return MISSING, ('ran at another workload than the required one: '
                             + '; '.join(_metric_text(m) for m in workload))
        if failing:
            return FAILED, '; '.join(_metric_text(m) for m in failing)
        if sanity.did_not_run(case.fail_phase, case.fail_reason):
            # KernelJsonTest: the kernel exited 2 (usage) or 3 (cannot run, e.g. no GPU):
            # nothing was measured, so nothing failed a reference; it was not run.
            return MISSING, case.fail_reason
        return FAILED, (f'{case.fail_phase}: ' if case.fail_phase else '') + (
            case.fail_reason or 'failed')
    if r is Result.DAMAGED:
        damage = '; '.join(str(d) for d in case.damaged[:2])
        return MISSING, 'its result cannot be read' + (f': {damage}' if damage else '')
    why = case.fail_reason or 'did not run to the end'
    return MISSING, f'{r}' + (f' in {case.fail_phase}' if case.fail_phase else '') + f': {why}'


def _judge_case(run, case, site, partition, memo):
    '''(judged case, CaseJudgement or None) of one case of `run` by `site`.'''
    if run.kind != KIND_JOBS:
        return jd.annotate(case, site, memo=memo)
    where = partition or case.judged_partition or jd.partition_of_job(site)
    if where is None:
        return jd.unjudged(case, f'which partition of site {site.name} '
                                 f'({", ".join(site.partitions)}) ran it is unknown: '
                                 'name it (--partition)'), None
    # Its peers are the nodes judged on the same partition (store.history.peer_partition).
    case = case if case.judged_partition else replace(case, judged_partition=where)
    return jd.judge_doc_case(case, site, where, memo)


def _unjudged(run, noise=None):
    '''The Verdict of a run without a site to judge it by.'''
    v = Verdict(INCOMPLETE)
    for case in run.cases:
        case = (jd.unjudged(case, 'no site named to judge it by') if run.kind == KIND_JOBS
                else jd.recorded_case(case))
        v.cases.append(case)
        status, why = _outcome(case, None, None)
        if case.result.failed or case.result is Result.ERROR:
            v.checks_failed = True
        v.items.append(Item(status, _case_label(case), why,
                            unjudged=case.result is Result.UNJUDGED))
    v.fleet = fl.analyse(v.cases, run.kind, inventories=run.inventories, noise=noise)
    v.items.append(Item(MISSING, 'site', 'no site to judge these results by: name one '
                        '(cobalt-bench report --site SITE, or COBALT_BENCH_SITE for the job '
                        'scripts)', True))
    return v


def _by_peers(item, case, index):
    '''(item, case) of a capacity case (judge.by_peers) as its peers judged it: FAILED
    (never required: a node that stands out is a bad node, not a failed compliance check;
    the case FAIL in phase 'peers') where the fleet names its node for this check, PASSED
    where the node was compared with enough peers and does not stand out, a NOTE saying
    why (the case left RECORDED) where it could not be compared. `index`: the fleet's
    fleet.NodeIndex.'''
    node, check = fl.node_of(case), fl.check_name(case)
    causes = index.causes.get((node, check), ())
    if causes:
        why = '; '.join(c.why for c in causes)
        return (replace(item, status=FAILED, why=why),
                replace(case, result=Result.FAIL, fail_phase='peers', fail_reason=why))
    dists = index.distributions.get((node, check), ())
    if dists and all(d.judged for d in dists):
        why = 'within its peers (' + ', '.join(
            f'{d.metric}: median {d.median:g} {d.unit}'.rstrip() for d in dists) + ')'
        return (replace(item, status=PASSED, why=why),
                replace(case, result=Result.PASS, fail_phase='', fail_reason=''))
    note = dists[0].note if dists else 'no peer ran it'
    return replace(item, why=f'{jd.PEERS_JUDGE}; not compared: {note}'), case


def _apply_settings(v, case_items):
    '''Each case of `v` whose hosts' required settings decide it (judging.outcome.
    by_settings) made so, case and item: counted once, as that, everywhere.'''
    by_host = outcome.required_settings_by_host(v.items)
    if not by_host:
        return
    for i, k in case_items:
        decided = outcome.by_settings(v.cases[k], by_host)
        if decided:
            v.cases[k], status, why = decided
            v.items[i] = replace(v.items[i], status=status, why=why, required=True,
                                 unjudged=status is MISSING, by_settings=True)


def _state(comp, items):
    if comp.demonstration:
        return DEMONSTRATION
    if any(i.status is FAILED and i.required for i in items):
        return NOT_COMPLIANT
    if any(i.status is MISSING and (i.required or i.unjudged) for i in items):
        return INCOMPLETE
    return COMPLIANT


def decide(run, site, preflight_docs=(), partition=None, noise=None):
    '''The Verdict of a store.Run judged by a site.SiteDef (None: no site known). Job
    documents (run.kind == 'jobs') are judged here by the site's references; a ReFrame
    run's cases keep ReFrame's verdicts (the same rule), annotated with the reference
    entries and checked for references that judge nothing. The judged cases are in
    Verdict.cases; the run is left as it was. `noise`: each metric's noise from the
    partition's clean history (store.history.metric_noise), the peer rule's scale.'''
    if site is None:
        return _unjudged(run, noise)
    comp = site.compliance
    v = Verdict(INCOMPLETE, site=site.name, title=comp.title,
                demonstration=comp.demonstration, references=site.references.path,
                compliance=comp.path, compliance_preflight=list(comp.preflight))
    required = {r.check: r for r in comp.required}

    if run.state is not RunState.COMPLETE:
        v.run_incomplete = True
        v.items.append(Item(MISSING, 'run', f'the run is {run.state}'
                            + (f': {run.state_why}' if run.state_why else ''), True))
    in_cases = {d for c in run.cases for d in c.damaged}    # one set: not a scan per damage
    for d in run.damaged:
        v.run_incomplete = True
        if d not in in_cases:
            v.items.append(Item(MISSING, 'results', f'cannot be read: {d}', True))

    seen = set()
    peers = []      # (item, case index) of the capacity cases: judged by the fleet below
    case_items = []     # (item, case index) of every case
    memo = jd.Memo()
    for case in run.cases:
        case, j = _judge_case(run, case, site, partition, memo)
        v.cases.append(case)
        check = j.check if j else memo.check_class(case)
        req = required.get(check)
        status, why = _outcome(case, req, j)
        if j is not None:
            v.problems.extend(j.problems)
        if case.result.failed or case.result is Result.ERROR or (j is not None and j.problems):
            v.checks_failed = True
        if case.result in (Result.ABORT, Result.DAMAGED, Result.UNKNOWN):
            v.run_incomplete = True
        seen.add(check)
        # What a job was to produce and lost (a kernel killed before its document, a node
        # of a sweep that wrote nothing): counted as required, whatever the check.
        lost = run.kind == KIND_JOBS and case.result is Result.FAIL and not case.docs
        if case.result is Result.RECORDED:
            peers.append((len(v.items), len(v.cases) - 1))
        case_items.append((len(v.items), len(v.cases) - 1))
        v.items.append(Item(status, _case_label(case, memo), why, req is not None or lost,
                            unjudged=case.result is Result.UNJUDGED))

    for name, req in required.items():
        if name not in seen:
            v.items.append(Item(MISSING, name, 'not run' + (f' ({req.what})' if req.what
                                                               else ''), True))
    findings = read_findings(preflight_docs)
    v.items += preflight_items(comp, findings)
    _apply_settings(v, case_items)
    if not run.cases:
        v.items.append(Item(MISSING, 'results', 'no check ran', True))
    v.fleet = fl.analyse(v.cases, run.kind, list(preflight_docs), comp.outlier_threshold,
                         inventories=run.inventories, noise=noise, findings=findings)
    index = fl.NodeIndex(v.fleet)
    for i, k in peers:
        v.items[i], v.cases[k] = _by_peers(v.items[i], v.cases[k], index)
    v.state = _state(comp, v.items)
    return v


def preflight_docs_of(run):
    '''(label, doc) of the preflight documents a run's cases carry.'''
    docs = []
    for case in run.cases:
        for doc in case.docs:
            if doc.get('test') == 'preflight' and 'findings' in doc:
                docs.append((case.where, doc))
    return docs


def site_of_run(run, explicit=None, recorded=()):
    '''The SiteDef a run is judged by, from a site the user names or installed, never
    from a path found in the results (a site's config.py is Python: loading it runs it):
    the site named (`explicit`: --site, a name or a directory); for job documents the
    installed site their jobs' judgements name (`recorded`: the judged.json's site_dir,
    taken only when it is this tree's site-configs/<name>), else $COBALT_BENCH_SITE; for a
    ReFrame run the installed site-configs/<run's site>. None when none is found. What
    the results say the run was made with, where it differs, is site_note's.'''
    if explicit:
        return site_mod.load_site(explicit)
    if run.kind == KIND_JOBS:
        installed = [installed_site_of(d) for d in recorded]
        if len(installed) == 1 and installed[0]:
            return site_mod.load_site(installed[0])
        named = os.environ.get('COBALT_BENCH_SITE')
        if named:
            return site_mod.load_site(named)
        return None
    directory = installed_site(run.site)
    return site_mod.load_site(directory) if directory else None


def run_site_dirs(run, recorded=()):
    '''The site directories the results say a run was made with (report.json's
    session_info.config_files) or judged by (`recorded`: the judged.json's site_dir of
    job documents): what the store says, never loaded.'''
    if run.kind == KIND_JOBS:
        return [d for d in recorded if isinstance(d, str) and d]
    files = (run.session or {}).get('config_files')
    return [os.path.dirname(c) for c in (files if isinstance(files, list) else [])
            if isinstance(c, str) and c.endswith('.py')]


def site_note(run, sitedef, recorded=()):
    '''A note for the verdict where the site directory the results name is not the
    one the run is judged by ('' where they agree or the results name none): the
    results are never a reason to run a site's configuration.'''
    judged = os.path.realpath(sitedef.dir) if sitedef else None
    others = [d for d in dict.fromkeys(run_site_dirs(run, recorded))
              if os.path.realpath(d) != judged]
    if not others:
        return ''
    if run.kind == KIND_JOBS:
        said = f'the jobs were judged (judged.json) by site directory {", ".join(others)}'
    else:
        files = [c for c in (run.session or {}).get('config_files') or []
                 if isinstance(c, str) and c.endswith('.py') and os.path.dirname(c) in others]
        said = 'the run was made with site configuration ' + ', '.join(files)
    if sitedef:
        return (f'{said}; judged by {sitedef.dir} (what the results name is not executed: '
                'a site is loaded only as named with --site, $COBALT_BENCH_SITE or '
                'installed in site-configs/)')
    return (f'{said}: not executed, it is not a site installed in site-configs/ (name '
            'the site to judge by: --site SITE)')
