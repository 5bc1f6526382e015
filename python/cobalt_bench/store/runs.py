'''Where runs live: the results store results/<site>/<run-id>/, the state of a run
directory, and finding a run from what a user typed.

A run directory (scripts/run-suite, or `reframe -C site-configs/<site>/config.py`):
    output/     each test's stdout, stderr, job script, the kernel's JSON document
    stage/      working directories of tests that failed (with their JSON documents)
    perflogs/<system>/<partition>/<Check>.log
    report.json ReFrame's run report, written when the run ends
    INCOMPLETE  written by scripts/run-suite when the run starts, removed when it finished:
                still there = the run was interrupted (or is running)
'''

import os
import re
import socket

from .. import paths
from ..errors import CannotRun, UsageError
from . import confine
from .result import RunState

MARKER = 'INCOMPLETE'
REPORT = 'report.json'


def results_base(explicit=None):
    '''The results store (paths.results_dir: the one rule for writing and reading).'''
    return paths.results_dir(explicit)


def is_run_dir(path):
    return (os.path.isfile(os.path.join(path, REPORT)) or
            os.path.exists(os.path.join(path, MARKER)) or
            os.path.isdir(os.path.join(path, 'output')) or
            os.path.isdir(os.path.join(path, 'perflogs')))


def _marker_text(path):
    '''The INCOMPLETE marker's text (its first 64 KiB: run-suite writes a few lines); None
    when it cannot be read or leaves the run (store.confine: a link to a device, a
    pipe, another user's file).'''
    return confine.read_text(os.path.join(path, MARKER), path, limit=1 << 16)


def _marker_pid(path):
    '''(pid, host) from an INCOMPLETE marker, or (None, None).'''
    text = _marker_text(path)
    if text is None:
        return None, None
    m = re.search(r'^pid:\s*(\d+)', text, re.M)
    h = re.search(r'^host:\s*(\S+)', text, re.M)
    return (int(m.group(1)) if m else None), (h.group(1) if h else None)


def run_state(path):
    '''(state, why) of a run directory: complete, partial or running.'''
    marker = os.path.join(path, MARKER)
    if os.path.exists(marker):
        pid, host = _marker_pid(path)
        if pid and host == socket.gethostname():
            try:
                os.kill(pid, 0)
                return RunState.RUNNING, f'in progress (run-suite pid {pid})'
            except (ProcessLookupError, OverflowError):     # gone, or no pid at all
                pass
            except PermissionError:
                return RunState.RUNNING, f'in progress (run-suite pid {pid})'
        last = [line for line in (_marker_text(path) or '').splitlines() if line.strip()]
        # run-suite's last word: 'interrupted: ...' or 'empty: ...' (ReFrame ran 0/0).
        why = next((line for line in reversed(last)
                    if line.startswith(('interrupted', 'empty'))), 'the run did not finish')
        return RunState.PARTIAL, f'{MARKER} marker present: {why}'
    if not os.path.isfile(os.path.join(path, REPORT)):
        return RunState.PARTIAL, (f'no {REPORT}: ReFrame did not finish the run, or wrote its '
                                  'report elsewhere (--report-file, the configuration\'s '
                                  'report_file, ~/.reframe/reports/): report that file')
    return RunState.COMPLETE, ''


def list_runs(base, site=None, refused=None):
    '''[(site, run_id, path)] of every run directory, oldest first per site. A site or
    run directory that is a symbolic link leading out of the store is not a run of it
    (store.confine): it is left out, and added to `refused` (a list, when given) as
    (site, run_id, path, why).'''
    runs = []
    if not os.path.isdir(base):
        return runs
    for s in sorted(os.listdir(base)):
        site_dir = os.path.join(base, s)
        if site and s != site or not os.path.isdir(site_dir):
            continue
        why = confine.escapes(site_dir, base)
        if why:
            if refused is not None:
                refused.append((s, '', site_dir, why.replace('run directory', 'results store')))
            continue
        for r in sorted(os.listdir(site_dir)):
            path = os.path.join(site_dir, r)
            if not (os.path.isdir(path) and is_run_dir(path)):
                continue
            why = confine.escapes(path, base)
            if why:
                if refused is not None:
                    refused.append((s, r, path, why.replace('run directory', 'results store')))
                continue
            runs.append((s, r, path))
    return runs


def _run_time_key(run):
    # Run ids start with the start time (YYYYmmddTHHMMSS); order by that, then by mtime.
    site, run_id, path = run
    m = re.match(r'\d{8}T\d{6}', run_id)
    return (m.group(0) if m else '', os.path.getmtime(path))


def resolve_run(spec, base=None):
    '''A run directory (or job-document directory/file) from what a user typed.'''
    base = results_base(base)
    if os.path.exists(spec):
        return os.path.abspath(spec)
    parts = spec.strip('/').split('/')
    if parts[-1] == 'latest' and len(parts) <= 2:
        site = parts[0] if len(parts) == 2 else None
        runs = [r for r in list_runs(base, site) if run_state(r[2])[0] is RunState.COMPLETE]
        if not runs:
            where = f'site {site!r} of ' if site else ''
            raise CannotRun(f'no complete run in {where}the results store {base}')
        return max(runs, key=_run_time_key)[2]
    if len(parts) == 2:
        path = os.path.join(base, *parts)
        if os.path.isdir(path):
            return path
    if len(parts) == 1:
        found = [r[2] for r in list_runs(base) if r[1] == parts[0]]
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise UsageError(f'run id {spec!r} exists for several sites: '
                             + ', '.join(os.path.relpath(f, base) for f in found)
                             + '; say SITE/RUN_ID')
    raise CannotRun(f'no run {spec!r}: not a path, and not in the results store {base} '
                    '(`cobalt-bench runs` lists them)')
