'''Whether one node is healthy, in a few seconds, as Slurm's HealthCheckProgram, a prolog
or an epilog asks (docs/health.md): three checks, each a list of Problems (none: passed).

  preflight      every setting the site requires (compliance.yaml `preflight` patterns)
                 passes on the node: a failing or undetermined one is a problem (the same
                 rule as the verdict's required settings);
  configuration  the node is what its peers are: its inventory now against the usual
                 configuration of its partition in the last sweep (judging.classes, this
                 node's inventory of then replaced by today's): each item where it
                 differs from the majority is a problem;
  memory         a short unpaced mem-test verified its data: killed, crashed, or a
                 verification error is a problem (its speed is for the sweeps' peers to
                 judge, not for one node alone).
'''

import fnmatch
from dataclasses import dataclass, replace

from .. import kernels
from .. import preflight as pf
from ..store.exit_status import ExitStatus
from . import classes, sanity


@dataclass(frozen=True)
class Problem:
    check: str                  # preflight, configuration, memory
    item: str                   # the setting, the inventory key, or what of the kernel
    text: str

    @property
    def line(self):
        return f'{self.check}: {self.text}'


def preflight_problems(findings, patterns):
    '''The required settings (`patterns`) that do not pass among `findings`; a pattern no
    finding matches is a problem too (it was not checked).'''
    out = []
    for pattern in patterns:
        matched = [f for f in findings if fnmatch.fnmatchcase(f.setting, pattern)]
        if not matched:
            out.append(Problem('preflight', pattern, f'{pattern}: no such setting checked'))
        for f in matched:
            if f.status == pf.FAIL:
                out.append(Problem('preflight', f.setting, f'{f.setting} {f.value} '
                                   f'(required {f.expected})'))
            elif f.status not in (pf.PASS, pf.SKIP):
                out.append(Problem('preflight', f.setting, f'{f.setting} {f.status}: '
                                   f'{f.value}'))
    return out


def configuration_problems(node, inventory, peers, partition=''):
    '''Where `inventory` (the node's, now) differs from the usual configuration of its
    `peers` (the Inventories of its partition's last sweep; the node's own of then is
    replaced by today's). Fewer than classes.MIN_NODES peers: nothing to compare.'''
    others = [p for p in peers if p.name != node]
    if len(others) + 1 < classes.MIN_NODES:
        return []
    now = replace(inventory, node=node)
    result = classes.classify_partition(partition, [*others, now])
    return [Problem('configuration', d.key, d.text) for d in result.differences(node)]


def memory_problems(exit_code, doc):
    '''What a short mem-test run says of the node: killed or crashed (by its exit code),
    no document, or a document that fails the sanity rule (verification errors).'''
    status = ExitStatus.of(exit_code)
    if status.failed or status.interrupted:
        return [Problem('memory', 'exit', status.reason('mem-test'))]
    if status.not_run:
        return [Problem('memory', 'exit', f'mem-test could not run ({status.text()})')]
    if doc is None:
        return [Problem('memory', 'document', 'mem-test wrote no document')]
    units = kernels.document_units(kernels.check_of_document(doc) or 'MemTest') or {}
    return [Problem('memory', 'sanity', p)
            for p in sanity.document_problems(doc, 'mem-test', units)]
