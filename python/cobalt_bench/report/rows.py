'''The report's tables and summary lines, built once for the Markdown and the HTML page.'''

import os

from .. import preflight as pf
from ..store import documents
from ..store.result import Result
from .format import fmt, fmt_bounds
from .model import damaged_files


def is_preflight(case, damage):
    return 'preflight' in (case.check.lower() if case else '') or \
        os.path.basename(damage.path).startswith('preflight')


DAMAGE_HEADER = ['check', 'partition', 'file', 'problem']
DAMAGE_TEXT = ('These files could not be read: the checks they belong to are DAMAGED '
               '(their results cannot be vouched for), never passed.')


def damage_rows(model):
    return [[c.check if c else '-', c.where if c else '-',
             documents.relpath(d.path, model.run.path), d.problem]
            for c, d in damaged_files(model.run)]


def own_verdict(case):
    '''What the kernel itself said, with its built-in threshold (its exit code for
    standalone use): shown beside the site's verdict, never instead of it.'''
    out = []
    for doc in case.docs:
        comp = doc.get('compliance')
        if not isinstance(comp, dict) or 'passed' not in comp:
            continue
        said = {True: 'passed', False: 'failed'}.get(comp.get('passed'), 'undecided')
        thr = comp.get('threshold')
        out.append(f'{doc.get("test", "?")}: {said}'
                   + (f' (its threshold {fmt(thr)})' if thr is not None else ''))
    return '; '.join(out)


CASE_HEADER = ['check', 'partition', 'node(s)', 'result (site\'s references)', 'reason',
               'kernel\'s own verdict (not the site\'s)']


def case_rows(model):
    rows = []
    for c in model.cases:
        reason = c.fail_reason if c.result is not Result.PASS else ''
        rows.append([c.check, c.where, ', '.join(c.nodes), c.result.upper(),
                     (f'{c.fail_phase}: ' if c.fail_phase else '') + reason, own_verdict(c)])
    return rows


def entry_text(m):
    '''The reference file and entry a metric was judged by.'''
    e = m.entry
    if e is None:
        return ''
    changed = m.ref is not None and e.value != m.ref
    return f'{e.label}' + (' (changed since the run)' if changed else '')


def reproduce_rows(model):
    '''For each judged case: kernel and version, the command line, the references judged
    by: what a second engineer needs to rerun exactly that check.'''
    rows = []
    for c in model.cases:
        judged = [m for m in c.metrics if m.judged]
        if not judged and c.result not in (Result.FAIL, Result.ERROR, Result.UNJUDGED):
            continue
        kernel = ', '.join(f'{d.get("test", "?")} {d.get("version", "?")}' for d in c.docs
                           if isinstance(d, dict)) or '-'
        entries = sorted({m.entry.label.rsplit(' / ', 1)[0] for m in judged
                          if m.entry is not None})
        refs = '; '.join(entries) or (model.judgement.references if model.judgement else '')
        rows.append([c.check, c.where, kernel, command_of(c) or '-', refs])
    return rows


REPRODUCE_HEADER = ['check', 'partition', 'kernel and version', 'command line',
                    'judged by (reference file / entry)']


def command_of(case):
    '''The command line that produced a case's result: the job's `cobalt-bench judge
    --command`, else the line of ReFrame's job script (rfm_job.sh) that runs the kernel.'''
    if case.command:
        return case.command
    kernels = [d.get('test') for d in case.docs if isinstance(d, dict) and d.get('test')]
    for d in case.dirs:
        script = os.path.join(d, 'rfm_job.sh')
        try:
            with open(script, errors='replace') as fp:
                lines = fp.read().splitlines()
        except OSError:
            continue
        for line in lines:
            text = line.strip()
            if not text or text.startswith(('#', 'export ', 'module ', 'cd ')):
                continue
            if any(k and (k in text) for k in kernels) and '--json' in text:
                return text
    return ''


def metric_rows(model, judged):
    rows = []
    for c in model.cases:
        for m in c.metrics:
            if m.judged != judged:
                continue
            rows.append([c.check, c.where, ', '.join(c.nodes), m.name, fmt(m.value),
                         fmt(m.ref) if m.judged else '', fmt_bounds(m), m.unit,
                         m.verdict.upper() if m.judged else Result.RECORDED.value, entry_text(m)])
    return rows


METRIC_HEADER = ['check', 'partition', 'node(s)', 'metric', 'value', 'reference', 'bounds',
                 'unit', 'verdict', 'judged by (reference file / entry)']


def summary_lines(model):
    run, s = model.run, model.run.session
    lines = []
    if run.kind == 'reframe':
        lines.append(f'Site `{run.site}`, run `{run.run_id}`, state: **{run.state}**'
                     + (f' ({run.state_why})' if run.state_why else ''))
        if s:
            lines.append(f'Started {s.get("time_start", "?")}, ended {s.get("time_end", "?")}'
                         f' on {s.get("hostname", "?")}; ReFrame {s.get("version", "?")}; '
                         f'`{s.get("cmdline", "")}`')
    else:
        j = model.judgement
        lines.append(f'Job documents in `{run.path}`, judged by '
                     + (f'site `{j.site}` (`{j.references}`)' if j and j.site else
                        'no site (none named: `cobalt-bench report --site SITE`)'))
    n = len(run.cases)
    parts = [f'{v} {k}' for k, v in sorted(model.counts.items())]
    lines.append(f'{n} check case(s): ' + (', '.join(parts) if parts else 'none'))
    for label, doc in model.preflight:
        s = pf.summary(pf.findings_of(doc))
        lines.append(f'Preflight {label}: the tool\'s own summary (not the site\'s '
                     f'verdict) {doc.get("verdict", s["verdict"])} '
                     f'({s[pf.FAIL]} failed, {s[pf.UNKNOWN]} unknown, {s[pf.WARN]} warnings '
                     f'of {len(doc.get("findings", []))} settings); the site requires '
                     + (', '.join(f'`{p}`' for p in model.judgement.compliance_preflight)
                        if model.judgement and model.judgement.compliance_preflight
                        else 'none of them'))
    return lines


def judged_by(j):
    '''The site's files a verdict comes from, as one phrase.'''
    if not j.site:
        return 'no site'
    text = f'site `{j.site}`: references `{j.references}`'
    text += (f', compliance definition `{j.compliance}`' if j.compliance and
             not j.demonstration else
             f', `{j.compliance}` (demonstration)' if j.compliance else
             ' (no compliance definition)')
    return text


def finding_rows(findings):
    return [[f.status.upper(), f.level, f.setting, f.value, f.expected,
             f.fix if f.status != pf.PASS else ''] for f in findings]


FINDING_HEADER = ['status', 'level', 'setting', 'value', 'expected', 'fix']


def link_target(path, out_dir):
    '''A file the report links, relative to the report's directory where it is known.'''
    return os.path.relpath(path, out_dir) if out_dir else path
