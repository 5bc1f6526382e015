'''A case's outcome: one model from which every count and word of a run is derived (the
last line of `cobalt-bench report`, report.md and report.html, verdict.json, the Prometheus
export, `nodes drain`).

A case's outcome is its judged copy (judging.verdict.Verdict.cases). Three things decide it:
  the check's own result     what ReFrame or `cobalt-bench judge` recorded by the site's
                             references (kept in the copy's reframe_result);
  the site's judgement       a metric outside its reference's bounds, a case no reference
                             judges, a capacity case its peers judge;
  required settings          a setting of compliance.yaml's `preflight` list that failed
                             (or could not be determined) on the case's hosts: the case is
                             FAIL (UNJUDGED), whatever the check itself said, and its
                             failed_settings name them.
A case is counted once, by its outcome's result: counts() and count_text() are the only
counts any output gives. What a kernel or preflight says of itself (its own threshold, its
own summary) is shown beside, labelled, and never counted.
'''

from ..store.model import replace
from ..store.result import Result
from .items import FAILED, MISSING

#: The fail_phase of a case whose outcome its hosts' required settings decided.
SETTINGS_PHASE = 'required settings'


def required_settings_by_host(items):
    '''{host: [the verdict's items of a setting the site requires, on that host]}: built
    once per verdict (a sweep has a few required settings per node).'''
    out = {}
    for i in items:
        if i.setting and i.required and i.host:
            out.setdefault(i.host, []).append(i)
    return out


def preflight_hosts(case):
    '''The hosts a case's preflight documents were taken on (empty: not a preflight case).'''
    return {d.get('host') for d in case.docs if d.get('test') == 'preflight'}


def by_settings(case, by_host):
    '''(the case as its hosts' required settings decide it, its item's status, why), or
    None where they do not change it: a case that passed (the check itself: PASS) whose
    host failed a required setting is FAIL; one whose required setting could not be
    determined is UNJUDGED (unjudged is never a pass). `by_host`:
    required_settings_by_host() of the verdict's items.'''
    if not case.result.passed:
        return None
    hosts = preflight_hosts(case)
    if not hosts:       # not a preflight case: 9 of a sweep's 10
        return None
    mine = [i for h in sorted(hosts, key=str) for i in by_host.get(h, ())]
    failed = tuple(dict.fromkeys(i.setting for i in mine if i.status is FAILED))
    missing = tuple(dict.fromkeys(i.setting for i in mine if i.status is MISSING))
    itself = f' (the check itself: {case.result.upper()})'
    if failed:
        why = 'required preflight setting(s) failed: ' + ', '.join(failed) + itself
        return (replace(case, result=Result.FAIL, fail_phase=SETTINGS_PHASE, fail_reason=why,
                        failed_settings=failed), FAILED, why)
    if missing:
        why = 'required preflight setting(s) not determined: ' + ', '.join(missing) + itself
        return (replace(case, result=Result.UNJUDGED, fail_phase=SETTINGS_PHASE,
                        fail_reason=why), MISSING, why)
    return None


def decided_by_settings(case):
    '''Whether a case's outcome is its required settings' (by_settings), not its check's.'''
    return case.fail_phase == SETTINGS_PHASE


def counts(cases):
    '''{Result: how many of `cases` have it}, in the vocabulary's order: the run's one count.'''
    found = {}
    for c in cases:
        found[c.result] = found.get(c.result, 0) + 1
    return {r: found[r] for r in Result if r in found}


def count_text(counted):
    '''"2 pass, 1 fail, 2 recorded" of counts(); "no cases" where there are none.'''
    return ', '.join(f'{n} {r}' for r, n in counted.items()) or 'no cases'


def passed(counted):
    '''How many of the counted cases passed (an expected failure counts as a pass).'''
    return sum(n for r, n in counted.items() if r.passed)
