'''What cobalt-bench did to nodes and what their health checks found, in the results store:

  STORE/node-actions.jsonl          one JSON object a line per drain, resume or decision
                                    not to (`cobalt-bench nodes drain|resume`, `health
                                    --drain`): time, node, act, reason, why, run, applied
  STORE/health/<node>/health-<stamp>-<pid>.json   one `cobalt-bench health` of the node: its
                                    time, whether it passed, and its problems

A line is appended with one write (O_APPEND, far below PIPE_BUF): two writers never
interleave within a line. A health record is written whole (fileio.write_atomic). A line
or a record that cannot be read is skipped, never a pass: the re-tests counted for a
resume are those whose record says `passed: true`.'''

import datetime
import glob
import json
import os

from ..fileio import write_atomic
from ..tools.slurm_nodes import NODE_NAME
from .documents import Damaged, read_json

ACTIONS = 'node-actions.jsonl'
HEALTH = 'health'


def now():
    '''The time of a record: UTC, 'YYYY-mm-ddTHH:MM:SSZ'.'''
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


def append_action(base, record):
    '''Append `record` (a dict) as one line to STORE/node-actions.jsonl.'''
    os.makedirs(base, exist_ok=True)
    line = (json.dumps(record, sort_keys=True) + '\n').encode()
    fd = os.open(os.path.join(base, ACTIONS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def log_decision(base, decision, run, applied, refused, by):
    '''Append one decision (judging.drain.Decision) with what became of it: `applied`
    (Slurm changed the node), `refused` (scontrol's error, or ''), `by` (the command).'''
    append_action(base, {'time': now(), 'node': decision.node, 'act': str(decision.act),
                         'reason': decision.reason, 'why': decision.why, 'run': run,
                         'applied': applied, 'scontrol_refused': refused or None, 'by': by})


def actions(base):
    '''The readable records of STORE/node-actions.jsonl, oldest first.'''
    out = []
    try:
        with open(os.path.join(base, ACTIONS), encoding='utf-8', errors='replace') as fp:
            for line in fp:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get('node'), str):
                    out.append(rec)
    except OSError:
        pass
    return out


def last_drain(base, node):
    '''The last applied drain of `node` in the action log (a dict), or None.'''
    return next((r for r in reversed(actions(base))
                 if r['node'] == node and r.get('act') == 'drain' and r.get('applied')),
                None)


def write_health(base, node, record):
    '''Record one health check of `node`; returns the path.'''
    if not NODE_NAME.fullmatch(node):
        raise ValueError(f'{node!r} is no node name')
    # The time is to the second: the process id tells two checks of one second apart.
    stamp = record['time'].replace('-', '').replace(':', '')
    path = os.path.join(base, HEALTH, node, f'health-{stamp}-{os.getpid()}.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomic(path, json.dumps(record, indent=2) + '\n')
    return path


def health_records(base, node, since=''):
    '''[(time, passed)] of the node's readable health records at or after `since` (a
    record time), oldest first.'''
    if not NODE_NAME.fullmatch(node):
        return []
    out = []
    for path in glob.glob(os.path.join(base, HEALTH, node, 'health-*.json')):
        try:
            rec = read_json(path)       # the strict reader: a key twice is no record
        except (Damaged, OSError):
            continue
        when = rec.get('time') if isinstance(rec, dict) else None
        if isinstance(when, str) and when >= since and rec.get('node') == node:
            out.append((when, rec.get('passed') is True))
    return sorted(out)
