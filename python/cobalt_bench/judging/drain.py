'''When cobalt-bench drains a node and when it resumes one: the rule, on Slurm's node
states (tools.slurm_nodes.NodeState), decided here and acted on by `cobalt-bench nodes
drain|resume` and `cobalt-bench health --drain` (docs/drain.md).

The reason is coded, `cobalt-bench:<check>:<metric>:<run-id>` (at most REASON_MAX
characters, each part of [A-Za-z0-9._-], so that `sinfo -R`, an exporter or a script can
split it), and it is the mark of what cobalt-bench drained: a node whose reason does not
start with REASON_PREFIX is someone else's, and cobalt-bench never drains over it nor
resumes it (LBNL NHC resumed a node an operator had drained: mej/nhc issue 134).

Drain, per bad node of a run:
  a node Slurm does not know                  left alone, named
  DOWN, or FAIL, or DRAIN with another reason  left alone: someone else's (their reason)
  DRAIN with our reason                        left as it is (already drained)
  RESERVED or MAINT (in a reservation)         left alone: the reservation's owner decides
                                               (NHC mishandled reserved nodes, issue 82)
  REBOOT_REQUESTED/ISSUED, NOT_RESPONDING,     left alone: Slurm is changing its state;
  POWERED_DOWN/POWERING_*, FUTURE, UNKNOWN     test it again after
  IDLE, ALLOCATED, MIXED, COMPLETING           drained (running jobs finish: "draining")
Resume, per node Slurm has drained with our reason (and nothing else: no DOWN, no FAIL):
only after `needed` clean re-tests recorded since the drain (compliance.yaml
`fleet: {resume_after: K}`); a re-test that failed since then starts the count again.
'''

import re
from dataclasses import dataclass

from ..store.result import Word

REASON_PREFIX = 'cobalt-bench:'
#: Slurm keeps a longer reason; `sinfo -R -o '%128E %N'` shows one of this length whole.
REASON_MAX = 128
_PART = re.compile(r'[^A-Za-z0-9._-]+')
#: Flags under which Slurm (or someone) is changing the node's state: not ours to touch.
_IN_CHANGE = {'REBOOT_REQUESTED', 'REBOOT_ISSUED', 'NOT_RESPONDING', 'POWERED_DOWN',
              'POWERING_DOWN', 'POWERING_UP', 'POWER_DOWN', 'REBOOT'}
_RESERVED = {'RESERVED', 'MAINT'}
_WORKING = {'IDLE', 'ALLOCATED', 'MIXED', 'COMPLETING', 'ALLOC', 'MIX'}


class Act(Word):
    DRAIN = 'drain'
    RESUME = 'resume'
    KEEP = 'keep'               # already as it should be
    LEAVE = 'leave'             # not ours to change


@dataclass(frozen=True)
class Decision:
    node: str
    act: Act
    reason: str                 # the coded reason (drain), or the node's current one
    why: str                    # what decided it, for the user and the action log

    @property
    def changes(self):
        return self.act in (Act.DRAIN, Act.RESUME)


def _part(text):
    return _PART.sub('_', str(text or '-')).strip('_') or '-'


def coded_reason(check, metric, run_id):
    '''`cobalt-bench:<check>:<metric>:<run-id>`, each part reduced to [A-Za-z0-9._-], cut
    to REASON_MAX characters (the run id last, so a cut keeps what failed).'''
    reason = ':'.join([REASON_PREFIX.rstrip(':'), _part(check), _part(metric), _part(run_id)])
    return reason[:REASON_MAX]


def is_ours(reason):
    return bool(reason) and reason.startswith(REASON_PREFIX)


def drain_decision(node, state, reason):
    '''The Decision for a bad node in `state` (None: Slurm does not know it).'''
    if state is None:
        return Decision(node, Act.LEAVE, '', 'Slurm does not know this node')
    held = f'{state.text}, reason "{state.reason}"' + (
        f' set by {state.reason_user}' if state.reason_user else '') if state.reason \
        else state.text
    if state.drained and is_ours(state.reason) and not ({'FAIL'} & state.flags) and \
            state.base != 'DOWN':
        return Decision(node, Act.KEEP, state.reason, f'already drained by cobalt-bench '
                        f'({held})')
    if state.base == 'DOWN' or {'FAIL', 'DRAIN'} & state.flags:
        return Decision(node, Act.LEAVE, state.reason, f'someone else\'s: {held}')
    if _RESERVED & state.flags:
        return Decision(node, Act.LEAVE, state.reason, f'in a reservation ({state.text}): '
                        'the reservation\'s owner decides')
    if _IN_CHANGE & state.flags or state.base not in _WORKING:
        return Decision(node, Act.LEAVE, state.reason, f'Slurm is changing its state '
                        f'({state.text}): test it again after')
    return Decision(node, Act.DRAIN, reason, f'{state.text}: drain' + (
        ' (its jobs finish first)' if state.base != 'IDLE' else ''))


def resume_decision(node, state, clean, needed):
    '''The Decision for a node cobalt-bench drained, with `clean` clean re-tests recorded
    since (`needed` required).'''
    if state is None:
        return Decision(node, Act.LEAVE, '', 'Slurm does not know this node')
    if not state.drained or not is_ours(state.reason):
        return Decision(node, Act.LEAVE, state.reason, f'not drained by cobalt-bench '
                        f'({state.text}' + (f', reason "{state.reason}"' if state.reason
                                            else '') + ')')
    if state.base == 'DOWN' or 'FAIL' in state.flags:
        return Decision(node, Act.LEAVE, state.reason, f'{state.text}: down or failed '
                        'besides: someone else\'s to resume')
    if clean < needed:
        return Decision(node, Act.KEEP, state.reason, f'{clean} clean re-test(s) since its '
                        f'drain, {needed} needed')
    return Decision(node, Act.RESUME, state.reason, f'{clean} clean re-test(s) since its '
                    f'drain ({needed} needed)')
