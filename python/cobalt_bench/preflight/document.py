'''The findings as they leave the check: the JSON document (`--json`, read back by the
report and the verdict: load, findings_of) and the text of the findings table and the
results block. Strings only: cobalt_bench.cli.preflight prints them.'''

import json
import os
from dataclasses import asdict

from .. import __version__
from ..errors import CannotRun, UsageError
from ..fileio import atomic_file
from ..store.result import SettingStatus
from .finding import FAIL, PASS, SKIP, UNKNOWN, WARN, Finding, summary

TEST_VERSION = '1.0'


def document(findings, host, started, duration, config):
    s = summary(findings)
    metrics = {
        'settings_passed': s[PASS], 'settings_failed': s[FAIL], 'settings_warned': s[WARN],
        'settings_unknown': s[UNKNOWN], 'settings_skipped': s[SKIP],
        'required_failed': s['required_failed'], 'required_unknown': s['required_unknown'],
    }
    return {
        'test': 'preflight',
        'version': __version__,
        'test_version': TEST_VERSION,
        'host': host,
        'started': started,
        'duration_s': duration,
        'config': config,
        'metrics': {k: {'value': v, 'unit': 'settings'} for k, v in metrics.items()},
        'findings': [asdict(f) for f in findings],
        'verdict': s['verdict'],
        # Compliant: no setting failed and none unknown (unknown is not a pass).
        'compliance': {'threshold': 0, 'passed': s['verdict'] == 'COMPLIANT'},
    }


def check_json_dest(dest):
    '''--json FILE before anything is checked (as the kernels' --json): a FILE that is a
    directory, or whose directory is absent or not writable, is a usage error.'''
    if dest == '-':
        return
    if not dest.strip():
        raise UsageError('--json: empty file name')
    directory = os.path.dirname(os.path.abspath(dest))
    if os.path.isdir(dest):
        raise UsageError(f'--json {dest}: is a directory')
    if not os.path.isdir(directory):
        raise UsageError(f'--json {dest}: no such directory {directory}')
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f'--json {dest}: directory {directory} is not writable')


def json_text(doc):
    return json.dumps(doc, indent=2) + '\n'


def write_json(doc, dest):
    '''The document into the file `dest` (`--json -` is printed by the command line); also
    the inventory's (cobalt_bench.inventory).'''
    # Flushed to disk before the rename (cobalt_bench.fileio): a reader never sees half a
    # document, and a failure leaves an earlier one whole and no temporary file behind.
    try:
        with atomic_file(dest, 'w', prefix=f'.{doc["test"]}-', sync=True) as fp:
            fp.write(json_text(doc))
    except OSError as err:
        raise CannotRun(f'cannot write {dest}: {err.strerror or err}')


def format_findings(findings):
    '''The findings as an aligned text table, each non-pass one with its fix below.'''
    rows = [(f.status.upper(), f.setting, f.value, f.expected) for f in findings]
    widths = [max(len(r[i]) for r in rows + [('STATUS', 'SETTING', '', '')])
              for i in range(2)]
    lines = [f'{"STATUS":<{widths[0]}}  {"SETTING":<{widths[1]}}  VALUE  [EXPECTED]']
    for f, (st, setting, value, expected) in zip(findings, rows):
        lines.append(f'{st:<{widths[0]}}  {setting:<{widths[1]}}  {value}  [{expected}]')
        pad = ' ' * (widths[0] + widths[1] + 4)
        if f.note and f.status != PASS:
            lines.append(f'{pad}why: {f.note}')
        if f.fix and f.status in (FAIL, WARN, UNKNOWN):
            lines.append(f'{pad}fix: {f.fix}')
    return '\n'.join(lines)


def results_block(findings):
    s = summary(findings)
    return '\n'.join([
        '----- Test results -----',
        f'Test version:      {TEST_VERSION}',
        f'Settings checked:  {len(findings) - s[SKIP]}',
        f'Passed:            {s[PASS]}',
        f'Failed:            {s[FAIL]} ({s["required_failed"]} required)',
        f'Warnings:          {s[WARN]}',
        f'Unknown:           {s[UNKNOWN]} ({s["required_unknown"]} required)',
        f'Own summary:       {own_summary(s)}',
    ])


def own_summary(s):
    '''What the settings came to by preflight's own list, in words that are not a run's
    verdict (COMPLIANT, NOT COMPLIANT, ...: a site's compliance.yaml and references decide
    that, judging.verdict), labelled as preflight's own. `s`: finding.summary().'''
    said = (f'{s[FAIL]} failed' + (f', {s[UNKNOWN]} unknown' if s[UNKNOWN] else '')
            if s[FAIL] else f'{s[UNKNOWN]} unknown' if s[UNKNOWN] else 'all passed')
    return f'{said} (by preflight\'s own list; not the run\'s verdict)'


def load(path):
    '''A preflight JSON document (as written by --json), or None if `path` is not one.'''
    try:
        with open(path) as fp:
            doc = json.load(fp)
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and doc.get('test') == 'preflight' and 'findings' in doc:
        return doc
    return None


def _status(text):
    # A document's word becomes the enum; any other text (a document read without
    # cobalt_bench.store.documents' checks) stays as written: shown, and never counted as a pass.
    try:
        return SettingStatus(text)
    except ValueError:
        return text


def findings_of(doc):
    '''The Finding objects of a document (as load() returns it).'''
    findings = []
    for f in doc.get('findings', []):
        finding = Finding(**{k: v for k, v in f.items() if k in Finding.__dataclass_fields__})
        finding.status = _status(finding.status)
        findings.append(finding)
    return findings
