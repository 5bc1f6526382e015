'''The verdict's items: one line for each thing a run was required to do or did (a case, a
required preflight setting on one host, a check not run), with what it contributes to the
verdict (judging.verdict), and the run's preflight findings made items.
'''

import fnmatch
from dataclasses import dataclass, replace

from .. import preflight as pf
from ..store.result import Word
from . import fleet as fl


class Status(Word):
    '''What one required (or merely run) thing contributes to the verdict.'''
    FAILED = 'failed'
    MISSING = 'incomplete'
    PASSED = 'passed'
    NOTE = 'note'


FAILED, MISSING, PASSED, NOTE = Status.FAILED, Status.MISSING, Status.PASSED, Status.NOTE


@dataclass(slots=True)      # one per case and per host's setting: 230,000 in a 10,000-node run
class Item:
    status: str                 # failed, incomplete, passed, note
    what: str                   # 'MemTest on local:default (vm)', 'preflight net.eth0.mtu'
    why: str = ''
    required: bool = False
    unjudged: bool = False      # ran, but the site has no reference for it
    host: str = ''              # a preflight setting's: the host it was read on
    setting: str = ''           # a preflight setting's name ('' : not a setting)
    # A case's item whose status its hosts' required settings decided (judging.outcome):
    # those settings' own items say why, so it is not said again (grouped).
    by_settings: bool = False

    def line(self):
        return f'{self.what}: {self.why}' if self.why else self.what


def grouped(items):
    '''`items` with each preflight setting that fails (or is missing) the same way on several
    hosts said once, its hosts as one hostlist ('preflight net.eth0.mtu on n[1-8]'): a
    finding repeated per node is one line naming the nodes. A case's item that its required
    settings decided is left out: their items say it. Order kept (first of a group).'''
    groups, out = {}, []
    for it in items:
        if it.by_settings:
            continue
        key = (it.status, it.setting, it.why, it.required, it.unjudged) if it.setting and \
            it.host else None
        if key is None:
            out.append([it])
        elif key in groups:
            groups[key].append(it)
        else:
            groups[key] = [it]
            out.append(groups[key])
    return [g[0] if len(g) == 1 else replace(
        g[0], what=f'preflight {g[0].setting} on {fl.hostlist([i.host for i in g])}',
        host='') for g in out]


def read_findings(preflight_docs):
    '''[(doc, its Findings)] of (label, doc) preflight documents: each read once for the
    items and the fleet's likely whys (judging.fleet.analyse's `findings`).'''
    return [(doc, pf.findings_of(doc)) for _, doc in preflight_docs]


def preflight_items(compliance, findings):
    '''Items for the required preflight settings (compliance.yaml `preflight`), from every
    preflight document of the run (`findings`: read_findings'): each matching finding must
    pass, on every host.'''
    items = []
    patterns = compliance.preflight
    if not patterns:
        return items
    if not findings:
        items.append(Item(MISSING, 'preflight', 'no preflight results: the required settings '
                          f'({", ".join(patterns)}) were not checked', True))
        return items
    # Each finding matched once against every pattern, each setting's matches worked out
    # once (a fleet has a few settings on 10,000 hosts): hits[i] are the (doc, finding)
    # that patterns[i] matches, in the documents' order.
    matching, hits = {}, [[] for _ in patterns]
    for doc, found in findings:
        for f in found:
            which = matching.get(f.setting)
            if which is None:
                which = matching[f.setting] = [i for i, p in enumerate(patterns)
                                               if fnmatch.fnmatchcase(f.setting, p)]
            for i in which:
                hits[i].append((doc, f))
    for pattern, hit in zip(patterns, hits):
        for doc, f in hit:
            host = doc.get('host', '?')
            what = f'preflight {f.setting} on {host}'
            on = (host if isinstance(host, str) else '?', f.setting)     # (host, setting)
            if f.status == pf.PASS:
                items.append(Item(PASSED, what, '', True, False, *on))
            elif f.status == pf.FAIL:
                items.append(Item(FAILED, what, f'{f.value} (expected {f.expected})'
                                  + (f'; fix: {f.fix}' if f.fix else ''), True, False, *on))
            else:
                items.append(Item(MISSING, what, f'{f.status}: {f.value}'
                                  + (f' ({f.note})' if f.note else ''), True, False, *on))
        if not hit:
            items.append(Item(MISSING, f'preflight {pattern}', 'no such setting was checked '
                              '(no finding matches it)', True))
    # The other settings that fail (the document's recommendations): named, not counted.
    for doc, found in findings:
        for f in found:
            if f.status == pf.FAIL and not matching[f.setting]:
                host = doc.get('host')
                items.append(Item(NOTE, f'preflight {f.setting} on {host or "?"}',
                                  f'{f.value} (recommended: {f.expected}), not required '
                                  'by the site', host=host if isinstance(host, str) else '',
                                  setting=f.setting))
    return items
