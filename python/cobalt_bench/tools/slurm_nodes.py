'''What Slurm says of nodes, and the two changes cobalt-bench makes to them: drain with a
reason, resume. `scontrol` is run as a program with node names checked here (a name
Slurm reads as one host, never a host list or an option), never through a shell.

`scontrol show node -o NAME` prints one line per node: `State=BASE[+FLAG...]` (IDLE,
ALLOCATED, MIXED, DOWN, FUTURE, UNKNOWN; flags DRAIN, FAIL, MAINT, RESERVED,
REBOOT_REQUESTED, REBOOT_ISSUED, NOT_RESPONDING, POWERED_DOWN, COMPLETING, ...; a DRAIN
flag on a node with jobs is Slurm's "draining") and, where one is set, `Reason=TEXT
[USER@TIME]` last on the line (Slurm 22.05).'''

import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import CannotRun

TIMEOUT_S = 30
#: A node name Slurm reads as one host (not a host list such as n[1-3], not an option).
NODE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,99}')
_STATE = re.compile(r'(?:^| )State=(\S+)')
_NAME = re.compile(r'^NodeName=(\S+)')
_REASON = re.compile(r' Reason=(.*?)(?: \[([^@\]]*)@([^\]]*)\])?\s*$')


@dataclass(frozen=True)
class NodeState:
    '''A node's state as Slurm has it.'''
    node: str
    base: str                   # IDLE, ALLOCATED, MIXED, DOWN, ...
    flags: frozenset            # DRAIN, FAIL, MAINT, RESERVED, REBOOT_REQUESTED, ...
    reason: str = ''            # the reason set with the drain or down ('' : none)
    reason_user: str = ''       # who set it
    reason_time: str = ''       # when ('2026-11-27T21:04:05')

    @property
    def text(self):
        return '+'.join([self.base, *sorted(self.flags)])

    @property
    def drained(self):
        '''DRAIN set: "drained" when idle, "draining" while jobs still run.'''
        return 'DRAIN' in self.flags


def parse_show_node(text):
    '''{node: NodeState} of `scontrol show node -o` output.'''
    states = {}
    for line in text.splitlines():
        name, state = _NAME.search(line), _STATE.search(line)
        if not name or not state:
            continue
        base, *flags = state.group(1).split('+')
        reason = _REASON.search(line)
        states[name.group(1)] = NodeState(
            name.group(1), base.rstrip('*~#!%$@^-'), frozenset(flags),
            *(reason.group(1).strip(), reason.group(2) or '', reason.group(3) or '')
            if reason else ('', '', ''))
    return states


def _scontrol(*args):
    scontrol = shutil.which('scontrol')
    if not scontrol:
        raise CannotRun('scontrol not found: this is no Slurm client (load Slurm\'s module, '
                        'or run it where scontrol is)')
    try:
        return subprocess.run([scontrol, *args], capture_output=True, text=True,
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as err:
        raise CannotRun(f'scontrol {" ".join(args[:2])}: {err}')


def checked(nodes):
    '''The node names, each one Slurm reads as one host; CannotRun naming the first that
    is not (nothing is asked of Slurm then).'''
    for node in nodes:
        if not NODE_NAME.fullmatch(node):
            raise CannotRun(f'{node!r} is not a node name Slurm reads as one host')
    return list(nodes)


def node_states(nodes):
    '''{node: NodeState} of `nodes` that Slurm knows (a node it does not know is absent).'''
    states = {}
    for node in checked(nodes):
        proc = _scontrol('show', 'node', '-o', node)
        if proc.returncode == 0:
            states.update(parse_show_node(proc.stdout))
    return states


def all_node_states():
    '''{node: NodeState} of every node Slurm knows.'''
    proc = _scontrol('show', 'node', '-o')
    if proc.returncode != 0:
        raise CannotRun(f'scontrol show node: {(proc.stderr or proc.stdout).strip()}')
    return parse_show_node(proc.stdout)


def drain(node, reason):
    '''Drain `node` with `reason`: '' done, else scontrol's error.'''
    proc = _scontrol('update', f'NodeName={checked([node])[0]}', 'State=DRAIN',
                     f'Reason={reason}')
    return '' if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()


def resume(node):
    '''Resume `node`: '' done, else scontrol's error.'''
    proc = _scontrol('update', f'NodeName={checked([node])[0]}', 'State=RESUME')
    return '' if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()
