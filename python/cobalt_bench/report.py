'''`cobalt-bench report`: one page per run answering "is this machine fit for purpose, and
if not, why", in Markdown (plots beside it as PNG files) and as one self-contained HTML file
(plots inline as data: URIs, styles inline, no script, nothing fetched).

Built generically from the kernel contract and ReFrame's run report: every check x
system:partition x node with each performance variable's value, the site's reference and
its absolute bounds, unit and verdict; plus the plots of plots.py and the preflight
findings (from the run's Preflight checks, or --preflight FILE) next to the failures they
may explain.

`report --compare RUN_A RUN_B` lists what changed beyond a tolerance, as regressions and
improvements where the direction of "better" is known (from the reference bounds, else the
metric's name and unit).
'''

import base64
import datetime
import html
import json
import math
import os
import re
import sys
import urllib.parse
from dataclasses import dataclass, field

from . import CannotRun, UsageError, __version__
from . import loading
from .atomic import atomic_file
from . import preflight as pf
from . import results as rs
from . import verdict as vd
from .plots import make_plots

# Check families, matched against check names, kernel names and ReFrame tags; preflight
# findings name the families they can spoil (preflight.Finding.affects).
FAMILIES = {
    'memory': r'mem|memory|stream|numa',
    'gpu': r'gpu|cuda',
    'ethernet': r'eth|udp|tcp|iperf',
    'interconnect': r'osu|mpi|linktest|infiniband|ib_|ib-|perftest|mad|rdma|dolphin',
}

COMPLIANT, NOT_COMPLIANT, INCOMPLETE, DEMONSTRATION = (
    vd.COMPLIANT, vd.NOT_COMPLIANT, vd.INCOMPLETE, vd.DEMONSTRATION)


def families(case):
    words = ' '.join([case.check, case.kernel] + list(case.tags)).lower()
    return {f for f, patt in FAMILIES.items() if re.search(patt, words)}


def fmt(value):
    '''A number as people read it: 4 significant digits, no exponent for usual sizes.'''
    if value is None:
        return ''
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return str(value)
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    mag = abs(value)
    if mag >= 1e6 or mag < 1e-3:
        return f'{value:.4g}'
    return f'{value:.4g}' if mag < 1000 else f'{value:.1f}'


def fmt_bounds(m):
    if not m.judged:
        return ''
    lo = fmt(m.lower) if m.lower is not None and not math.isinf(m.lower) else None
    hi = fmt(m.upper) if m.upper is not None and not math.isinf(m.upper) else None
    if lo and hi:
        return f'{lo} .. {hi}'
    if lo:
        return f'>= {lo}'
    if hi:
        return f'<= {hi}'
    return 'any'


# ---- the model of one report ------------------------------------------------------------

@dataclass
class Explained:
    case: object
    failing: list                       # metrics outside their bounds
    findings: list                      # (host, Finding) that may explain it
    hints: list = field(default_factory=list)


@dataclass
class Model:
    run: object
    verdict: str
    counts: dict
    preflight: list                     # (label, doc)
    failures: list                      # Explained
    plots: list
    judgement: object = None            # verdict.Verdict: state, reasons, items


def _preflight_docs(run, extra_file):
    docs = []
    for case in run.cases:
        for doc in case.docs:
            if doc.get('test') == 'preflight' and 'findings' in doc:
                docs.append((case, doc))
    if extra_file:
        try:
            doc = loading.load_preflight(extra_file)
        except loading.Damaged as err:
            raise CannotRun(f'--preflight {err}')
        docs.append((None, doc))
    return docs


def damaged_files(run):
    '''[(case or None, loading.Damage)]: every file (or entry) of the run that could not be
    read, with the case it belongs to; the report lists each where the result would be.'''
    out, seen = [], set()
    for c in run.cases:
        for d in c.damaged:
            out.append((c, d))
            seen.add(d)
    return out + [(None, d) for d in run.damaged if d not in seen]


def _is_preflight(case, damage):
    return 'preflight' in (case.check.lower() if case else '') or \
        os.path.basename(damage.path).startswith('preflight')


def _damage_rows(model):
    return [[c.check if c else '-', c.where if c else '-',
             loading.relpath(d.path, model.run.path), d.problem]
            for c, d in damaged_files(model.run)]


DAMAGE_HEADER = ['check', 'partition', 'file', 'problem']
DAMAGE_TEXT = ('These files could not be read: the checks they belong to are DAMAGED '
               '(their results cannot be vouched for), never passed.')


def _kernel_hints(case):
    hints = []
    for doc in case.docs:
        met = doc.get('metrics', {})
        late = met.get('average_late', {}).get('value')
        if doc.get('test') == 'mem-test' and isinstance(late, (int, float)) and late > 0:
            hints.append(f'mem-test: {late:.3g}% of the blocks finished after their '
                         'deadline: the node does not keep up with the paced workload')
            slow = [d for d in doc.get('domains') or []
                    if (d.get('average_late_percent') or 0) > 0]
            if slow and len(slow) < len(doc.get('domains') or []):
                hints.append('late blocks only on NUMA node(s) '
                             + ', '.join(str(d.get('numa_node')) for d in slow)
                             + ': look at those nodes\' memory population')
        errors = met.get('verification_errors', {}).get('value')
        if isinstance(errors, (int, float)) and errors > 0:
            hints.append(f'{doc.get("test")}: {int(errors)} verification errors: data '
                         'were corrupted, a hardware or driver fault, not a slow machine')
    return hints


def build(run, preflight_file=None, with_plots=True, site=None):
    '''The report's model. `site`: a site name or directory to judge by; None: the run's
    own site (verdict.site_of_run). The verdict is verdict.decide()'s: the site's
    compliance definition and references, never the kernels' own thresholds.'''
    pre = _preflight_docs(run, preflight_file)
    site = site or _job_judgements(run)
    sitedef = vd.site_of_run(run, site)
    judgement = vd.decide(run, sitedef, [(_pre_label(c, d), d) for c, d in pre])
    verdict = judgement.state
    counts = {}
    for c in run.cases:
        counts[c.result] = counts.get(c.result, 0) + 1
    # Failed: measured and not good enough (or not sane). Aborted: not measured.
    failed = [c for c in run.cases if c.result in ('fail', 'abort', 'error', 'xpass')]

    failures = []
    for case in failed:
        fams = families(case)
        candidates = []
        # Prefer the findings of the same partition and node; else any the run has.
        same = [(c, d) for c, d in pre if c is not None and c.where == case.where
                and (not case.nodes or d.get('host') in case.nodes or not d.get('host'))]
        for c, doc in (same or pre):
            for f in pf.findings_of(doc):
                if f.status in (pf.FAIL, pf.WARN, pf.UNKNOWN) and (
                        not fams or fams & set(f.affects)):
                    candidates.append((doc.get('host', '?'), f))
        if case.kernel == 'preflight':
            # A failed preflight is explained by its own failing settings.
            candidates = [(d.get('host', '?'), f) for d in case.docs
                          for f in pf.findings_of(d)
                          if f.status in (pf.FAIL, pf.UNKNOWN) and f.level == pf.REQUIRED]
        order = {pf.FAIL: 0, pf.WARN: 1, pf.UNKNOWN: 2}
        candidates.sort(key=lambda hf: (order[hf[1].status], hf[1].level != pf.REQUIRED))
        failing = [m for m in case.metrics if m.verdict == 'fail']
        failures.append(Explained(case, failing, candidates, _kernel_hints(case)))
    plots = make_plots(run) if with_plots else []
    return Model(run, verdict, counts, [(_pre_label(c, d), d) for c, d in pre], failures,
                 plots, judgement)


JUDGED_SUFFIX = '.judged.json'


def judged_path(doc_path):
    '''Where `cobalt-bench judge` (called by a job script) records its judgement of a job
    document: mem-test-12.json -> mem-test-12.judged.json.'''
    base = doc_path[:-len('.json')] if doc_path.endswith('.json') else doc_path
    return base + JUDGED_SUFFIX


def _job_judgements(run):
    '''For job documents: what the job's `cobalt-bench judge` recorded beside each (the
    site, the partition, the command line), set on the cases (judged_partition, command).
    Returns the site they name when they all name the same one, else None.'''
    if run.kind != 'jobs':
        return None
    sites = set()
    for case in run.cases:
        for path in case.doc_paths:
            try:
                rec = loading.read_json(judged_path(path))
            except (loading.Damaged, OSError):
                continue
            if not isinstance(rec, dict):
                continue
            if isinstance(rec.get('site_dir'), str):
                sites.add(rec['site_dir'])
            if isinstance(rec.get('partition'), str):
                case.judged_partition = rec['partition']
            if isinstance(rec.get('command'), str):
                case.command = rec['command']
    return sites.pop() if len(sites) == 1 else None


def _pre_label(case, doc):
    host = doc.get('host', '?')
    if case is None:
        return f'{host} (--preflight)'
    return f'{case.where} {host}'


# ---- Markdown -----------------------------------------------------------------------------

def _md_cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def _md_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(_md_cell(c) for c in r) + ' |' for r in rows]
    return '\n'.join(lines)


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


def _case_rows(model):
    rows = []
    for c in model.run.cases:
        reason = c.fail_reason if c.result != 'pass' else ''
        rows.append([c.check, c.where, ', '.join(c.nodes), c.result.upper(),
                     (f'{c.fail_phase}: ' if c.fail_phase else '') + reason, own_verdict(c)])
    return rows


def entry_text(m):
    '''The reference file and entry a metric was judged by.'''
    e = getattr(m, 'entry', None)
    if e is None:
        return ''
    changed = m.ref is not None and e.value != m.ref
    return f'{e.label}' + (' (changed since the run)' if changed else '')


def reproduce_rows(model):
    '''For each judged case: kernel and version, the command line, the references judged
    by: what a second engineer needs to rerun exactly that check.'''
    rows = []
    for c in model.run.cases:
        judged = [m for m in c.metrics if m.judged]
        if not judged and c.result not in ('fail', 'error', 'unjudged'):
            continue
        kernel = ', '.join(f'{d.get("test", "?")} {d.get("version", "?")}' for d in c.docs
                           if isinstance(d, dict)) or '-'
        entries = sorted({m.entry.label.rsplit(' / ', 1)[0] for m in judged
                          if getattr(m, 'entry', None) is not None})
        refs = '; '.join(entries) or (model.judgement.references if model.judgement else '')
        rows.append([c.check, c.where, kernel, command_of(c) or '-', refs])
    return rows


REPRODUCE_HEADER = ['check', 'partition', 'kernel and version', 'command line',
                    'judged by (reference file / entry)']


def command_of(case):
    '''The command line that produced a case's result: the job's `cobalt-bench judge
    --command`, else the line of ReFrame's job script (rfm_job.sh) that runs the kernel.'''
    cmd = getattr(case, 'command', '')
    if cmd:
        return cmd
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


def _metric_rows(model, judged):
    rows = []
    for c in model.run.cases:
        for m in c.metrics:
            if m.judged != judged:
                continue
            rows.append([c.check, c.where, ', '.join(c.nodes), m.name, fmt(m.value),
                         fmt(m.ref) if m.judged else '', fmt_bounds(m), m.unit,
                         m.verdict.upper() if m.judged else 'recorded', entry_text(m)])
    return rows


METRIC_HEADER = ['check', 'partition', 'node(s)', 'metric', 'value', 'reference', 'bounds',
                 'unit', 'verdict', 'judged by (reference file / entry)']


def _summary_lines(model):
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


def _judged_by(j):
    '''The site's files a verdict comes from, as one phrase.'''
    if not j.site:
        return 'no site'
    text = f'site `{j.site}`: references `{j.references}`'
    text += (f', compliance definition `{j.compliance}`' if j.compliance and
             not j.demonstration else
             f', `{j.compliance}` (demonstration)' if j.compliance else
             ' (no compliance definition)')
    return text


def _finding_rows(findings):
    return [[f.status.upper(), f.level, f.setting, f.value, f.expected,
             f.fix if f.status != pf.PASS else ''] for f in findings]


FINDING_HEADER = ['status', 'level', 'setting', 'value', 'expected', 'fix']


def _link_target(path, out_dir):
    '''A file the report links, relative to the report's directory where it is known.'''
    return os.path.relpath(path, out_dir) if out_dir else path


def render_markdown(model, plot_dir_rel='plots', out_dir=None):
    run = model.run
    out = [f'# cobalt-bench compliance report: {run.label}', '',
           f'**Verdict: {model.verdict}**', '']
    j = model.judgement
    if j is not None:
        if j.headline != j.state:
            out += [f'_{j.headline}_', '']
        out += ['Why:', ''] + [f'1. {r}' for r in j.reasons] + ['']
        out += [f'Judged by {_judged_by(j)}.', '']
    out += [f'- {line}' for line in _summary_lines(model)]
    damage = _damage_rows(model)
    if damage:
        out += ['', '## Damaged results', '', DAMAGE_TEXT, '',
                _md_table(DAMAGE_HEADER, damage)]
    out += ['', '## Checks', '',
            _md_table(CASE_HEADER, _case_rows(model))]
    judged = _metric_rows(model, True)
    out += ['', '## Judged measurements', '',
            'Each performance variable with a reference of the site: value, reference, '
            'absolute bounds, unit and verdict.', '']
    out.append(_md_table(METRIC_HEADER, judged) if judged else '_No judged measurements._')
    repro = reproduce_rows(model)
    if repro:
        out += ['', '## Reproducing a verdict', '',
                'For each judged check: the kernel and its version, the command line that '
                'produced the result, and the reference file and entry it was judged by.', '',
                _md_table(REPRODUCE_HEADER, repro)]
    if model.failures:
        out += ['', '## Failures and likely causes', '']
        for e in model.failures:
            c = e.case
            out.append(f'### {c.check} on {c.where}' + (f' ({", ".join(c.nodes)})'
                                                          if c.nodes else ''))
            out.append('')
            out.append(f'- {c.result.upper()} in {c.fail_phase or "?"}: {c.fail_reason}')
            for m in e.failing:
                out.append(f'- `{m.name}` = {fmt(m.value)} {m.unit}, bounds '
                           f'{fmt_bounds(m)} (reference {fmt(m.ref)})')
            for h in e.hints:
                out.append(f'- {h}')
            if e.findings:
                out += ['', 'Failing settings:' if c.kernel == 'preflight' else
                        'Preflight findings that may explain it:', '',
                        _md_table(['node'] + FINDING_HEADER,
                                  [[h] + r for h, r in zip(
                                      [h for h, _ in e.findings],
                                      _finding_rows([f for _, f in e.findings]))])]
            else:
                out += ['', '_No preflight finding of this node explains it'
                        + (' (the run has no preflight results)' if not model.preflight
                           else '') + '._']
            out.append('')
    unplotted = [(c, d) for c, d in damaged_files(run) if d.path.endswith('.json')]
    if model.plots or unplotted:
        out += ['', '## Plots', '']
        for p in model.plots:
            out += [f'### {p.title}', '', f'![{p.title}]({plot_dir_rel}/{p.name}.png)', '',
                    p.caption, '']
            # files that go with the plot (the PDF report of a cb-linktest run)
            for label, path in p.links:
                out += [f'[{label}](<{_link_target(path, out_dir)}>)', '']
        for c, d in unplotted:
            out += [f'- No plot from `{loading.relpath(d.path, run.path)}`'
                    + (f' ({c.check} on {c.where})' if c else '')
                    + f': could not read it: {d.problem}']
    for label, doc in model.preflight:
        out += ['', f'## Preflight: {label}: {doc.get("verdict", "")}', '',
                _md_table(FINDING_HEADER, _finding_rows(pf.findings_of(doc)))]
    for c, d in damaged_files(run):
        if _is_preflight(c, d):
            out += ['', f'## Preflight: {c.where if c else run.label}: DAMAGED', '',
                    f'Could not read `{loading.relpath(d.path, run.path)}`: {d.problem}']
    recorded = _metric_rows(model, False)
    if recorded:
        out += ['', '## Recorded measurements (not judged)', '',
                _md_table(METRIC_HEADER[:5] + ['unit'],
                          [r[:5] + [r[7]] for r in recorded])]
    out += ['', '---', f'cobalt-bench {__version__}, report written '
            f'{datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")} from:', '']
    out += [f'- `{s}`' for s in model.run.sources]
    return '\n'.join(out) + '\n'


# ---- HTML ---------------------------------------------------------------------------------

CSS = '''
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.88em; }
th, td { border: 1px solid #ccc; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { display: inline-block; padding: 0.3em 0.8em; font-size: 1.3em; font-weight: bold;
           border-radius: 4px; color: #fff; }
.v-COMPLIANT { background: #2e7d32; } .v-NOT-COMPLIANT { background: #c62828; }
.v-INCOMPLETE { background: #ef6c00; } .v-DEMONSTRATION { background: #1565c0; }
ol.reasons li { margin: 0.15em 0; }
.s-pass { background: #e8f5e9; } .s-fail, .s-abort { background: #ffebee; }
.s-warn, .s-unknown, .s-xfail { background: #fff8e1; } .s-skip, .s-recorded { color: #666; }
figure { margin: 1em 0; } figcaption { font-size: 0.85em; color: #555; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 3px; }
.small { font-size: 0.85em; color: #555; }
'''


def _e(text):
    return html.escape(str(text), quote=True)


def _inline(text):
    '''The little Markdown the summary lines use (`code`, **bold**) as HTML.'''
    text = _e(text)
    text = re.sub(r'`([^`]*)`', r'<code>\1</code>', text)
    return re.sub(r'\*\*([^*]*)\*\*', r'<b>\1</b>', text)


def _html_table(header, rows, status_col=None, num_cols=()):
    out = ['<table><tr>' + ''.join(f'<th>{_e(h)}</th>' for h in header) + '</tr>']
    for r in rows:
        cls = ''
        if status_col is not None:
            cls = f' class="s-{_e(str(r[status_col]).lower())}"'
        cells = ''.join(f'<td class="num">{_e(c)}</td>' if i in num_cols else f'<td>{_e(c)}</td>'
                        for i, c in enumerate(r))
        out.append(f'<tr{cls}>{cells}</tr>')
    out.append('</table>')
    return '\n'.join(out)


def render_html(model, out_dir=None):
    run = model.run
    v = model.verdict
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           f'<title>cobalt-bench report {_e(run.label)}</title>',
           f'<style>{CSS}</style></head><body>',
           f'<h1>cobalt-bench compliance report: {_e(run.label)}</h1>',
           f'<p><span class="verdict v-{v.replace(" ", "-")}">{_e(v)}</span></p>']
    j = model.judgement
    if j is not None:
        if j.headline != j.state:
            out.append(f'<p class="headline"><b>{_e(j.headline)}</b></p>')
        out.append('<p>Why:</p><ol class="reasons">'
                   + ''.join(f'<li>{_e(r)}</li>' for r in j.reasons) + '</ol>')
        out.append(f'<p class="small">Judged by {_inline(_judged_by(j))}.</p>')
    out.append('<ul>')
    out += [f'<li>{_inline(line)}</li>' for line in _summary_lines(model)]
    out.append('</ul>')
    damage = _damage_rows(model)
    if damage:
        out += ['<h2>Damaged results</h2>', f'<p>{_e(DAMAGE_TEXT)}</p>',
                _html_table(DAMAGE_HEADER, damage)]
    out += ['<h2>Checks</h2>',
            _html_table(CASE_HEADER, _case_rows(model), status_col=3)]
    judged = _metric_rows(model, True)
    out.append('<h2>Judged measurements</h2>')
    out.append(_html_table(METRIC_HEADER, judged, status_col=8, num_cols=(4, 5))
               if judged else '<p>No judged measurements.</p>')
    repro = reproduce_rows(model)
    if repro:
        out += ['<h2>Reproducing a verdict</h2>',
                '<p>For each judged check: the kernel and its version, the command line that '
                'produced the result, and the reference file and entry it was judged by.</p>',
                _html_table(REPRODUCE_HEADER, repro)]
    if model.failures:
        out.append('<h2>Failures and likely causes</h2>')
        for e in model.failures:
            c = e.case
            out.append(f'<h3>{_e(c.check)} on {_e(c.where)}'
                       + (f' ({_e(", ".join(c.nodes))})' if c.nodes else '') + '</h3><ul>')
            out.append(f'<li><b>{_e(c.result.upper())}</b> in {_e(c.fail_phase or "?")}: '
                       f'{_e(c.fail_reason)}</li>')
            for m in e.failing:
                out.append(f'<li><code>{_e(m.name)}</code> = {_e(fmt(m.value))} {_e(m.unit)}, '
                           f'bounds {_e(fmt_bounds(m))} (reference {_e(fmt(m.ref))})</li>')
            out += [f'<li>{_e(h)}</li>' for h in e.hints]
            out.append('</ul>')
            if e.findings:
                out.append('<p>Failing settings:</p>' if c.kernel == 'preflight' else
                           '<p>Preflight findings that may explain it:</p>')
                out.append(_html_table(['node'] + FINDING_HEADER,
                                       [[h] + r for h, r in zip(
                                           [h for h, _ in e.findings],
                                           _finding_rows([f for _, f in e.findings]))],
                                       status_col=1))
            else:
                out.append('<p class="small">No preflight finding of this node explains it'
                           + (' (the run has no preflight results)' if not model.preflight
                              else '') + '.</p>')
    unplotted = [(c, d) for c, d in damaged_files(run) if d.path.endswith('.json')]
    if model.plots or unplotted:
        out.append('<h2>Plots</h2>')
        for p in model.plots:
            data = base64.b64encode(p.png).decode('ascii')
            out.append(f'<figure><img alt="{_e(p.title)}" src="data:image/png;base64,{data}">'
                       f'<figcaption>{_e(p.caption)}</figcaption></figure>')
            for label, path in p.links:
                out.append(f'<p><a href="{_e(urllib.parse.quote(_link_target(path, out_dir)))}">'
                           f'{_e(label)}</a></p>')
        for c, d in unplotted:
            out.append(f'<p>No plot from <code>{_e(loading.relpath(d.path, run.path))}</code>'
                       + (f' ({_e(c.check)} on {_e(c.where)})' if c else '')
                       + f': could not read it: {_e(d.problem)}</p>')
    for label, doc in model.preflight:
        out.append(f'<h2>Preflight: {_e(label)}: {_e(doc.get("verdict", ""))}</h2>')
        out.append(_html_table(FINDING_HEADER, _finding_rows(pf.findings_of(doc)),
                               status_col=0))
    for c, d in damaged_files(run):
        if _is_preflight(c, d):
            out.append(f'<h2>Preflight: {_e(c.where if c else run.label)}: DAMAGED</h2>'
                       f'<p>Could not read <code>{_e(loading.relpath(d.path, run.path))}'
                       f'</code>: {_e(d.problem)}</p>')
    recorded = _metric_rows(model, False)
    if recorded:
        out.append('<h2>Recorded measurements (not judged)</h2><details><summary>'
                   f'{len(recorded)} values</summary>')
        out.append(_html_table(METRIC_HEADER[:5] + ['unit'],
                               [r[:5] + [r[7]] for r in recorded], num_cols=(4,)))
        out.append('</details>')
    out.append(f'<hr><p class="small">cobalt-bench {_e(__version__)}, report written '
               f'{_e(datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"))} from:</p><ul '
               'class="small">')
    out += [f'<li><code>{_e(s)}</code></li>' for s in model.run.sources]
    out.append('</ul></body></html>')
    return '\n'.join(out) + '\n'


# ---- writing ------------------------------------------------------------------------------

def _write(path, data):
    '''Whole or not at all (cobalt_bench.atomic): a reader never sees half a report, and a
    failed write leaves the earlier one as it was.'''
    with atomic_file(path, 'wb' if isinstance(data, bytes) else 'w') as fp:
        fp.write(data)


def write_report(model, out_dir, formats):
    try:
        os.makedirs(out_dir, exist_ok=True)
        written = []
        if 'md' in formats:
            plot_dir = os.path.join(out_dir, 'plots')
            if model.plots:
                os.makedirs(plot_dir, exist_ok=True)
            for p in model.plots:
                _write(os.path.join(plot_dir, p.name + '.png'), p.png)
            md = os.path.join(out_dir, 'report.md')
            _write(md, render_markdown(model, out_dir=out_dir))
            written.append(md)
        if 'html' in formats:
            page = os.path.join(out_dir, 'report.html')
            _write(page, render_html(model, out_dir=out_dir))
            written.append(page)
        if model.judgement is not None:
            # The verdict for programs: state first, then the reasons and items.
            doc = os.path.join(out_dir, 'verdict.json')
            _write(doc, json.dumps(model.judgement.to_json(), indent=2) + '\n')
            written.append(doc)
    except OSError as err:
        raise CannotRun(f'cannot write the report in {out_dir}: {err}')
    return written


def report_command(spec, output, formats, preflight_file, base, site=None):
    path = rs.resolve_run(spec, base)
    run = rs.load_run(path)
    model = build(run, preflight_file, site=site)
    if output:
        out_dir = output
    elif os.path.isdir(path) and run.kind == 'reframe':
        out_dir = os.path.join(path, 'report')
    else:
        out_dir = os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                               'report')
    written = write_report(model, out_dir, formats)
    for c, d in damaged_files(run):
        print(f'cobalt-bench report: {run.label}: could not read '
              f'{loading.relpath(d.path, run.path)}: {d.problem}'
              + (f' ({c.check} on {c.where}: DAMAGED)' if c else ''), file=sys.stderr)
    counts = ', '.join(f'{v} {k}' for k, v in sorted(model.counts.items())) or 'no cases'
    j = model.judgement
    # The answer first: the verdict line, its reasons, then where the report is.
    print(f'verdict: {j.headline}')
    for r in j.reasons:
        print(f'  - {r}')
    print(f'{run.label}: {model.verdict} ({counts}'
          + (f'; run {run.state}: {run.state_why}' if run.state != rs.COMPLETE else '') + ')')
    # The failed cases again, last, one line each: the end of a long log (a CI tail, a
    # Slurm output) still says which check failed and why.
    for e in model.failures:
        c = e.case
        why = '; '.join(f'{m.name} {m.value} {m.unit} (bounds {m.lower}..{m.upper})'
                        for m in e.failing) or c.fail_reason or c.result
        print(f'  {c.result}: {c.check} on {c.where}: {why}'[:600])
    for w in written:
        print(f'wrote {w}')
    return j.exit_code()


# ---- compare ------------------------------------------------------------------------------

LOWER_IS_BETTER = re.compile(r'late|loss|lost|latency|error|missed|drop|time|duration|'
                             r'_us$|_ms$|failed|unknown')
HIGHER_IS_BETTER = re.compile(r'speed|bandwidth|_bw|bw_|rate|throughput|percent_of|gbit|'
                              r'flops|msg|passed')
LOWER_UNITS = {'us', 'ms', 'ns', 's', 'usec', 'errors'}
HIGHER_UNITS = re.compile(r'(bit|B|byte|msg|pkt|pps|op)s?/s$|^Mpps$|^GT/s$', re.I)


def better_direction(name, unit, metrics):
    '''+1 higher is better, -1 lower is better, 0 unknown: from the reference bounds (a
    lower bound only: higher is better), else the name, else the unit.'''
    for m in metrics:
        if m is not None and m.judged:
            lo = m.lower is not None and not math.isinf(m.lower)
            hi = m.upper is not None and not math.isinf(m.upper)
            if lo and not hi:
                return 1
            if hi and not lo:
                return -1
    if LOWER_IS_BETTER.search(name):
        return -1
    if HIGHER_IS_BETTER.search(name):
        return 1
    if unit in LOWER_UNITS:
        return -1
    if HIGHER_UNITS.search(unit or ''):
        return 1
    return 0


@dataclass
class Change:
    check: str
    where: str
    metric: str
    a: object
    b: object
    unit: str
    change: object          # relative change (fraction), None if not defined
    kind: str               # regression, improvement, changed, only in A, only in B


def _key(case):
    # Job documents have no partition: the same kernel on the same node compares.
    if not case.system and case.partition.startswith('job'):
        return (case.check, ','.join(case.nodes), '')
    return (case.check, case.where, case.environ)


def compare(run_a, run_b, tolerance):
    '''Changes of run_b against run_a beyond `tolerance` percent (and every change of a
    case's result).'''
    tol = tolerance / 100.0
    cases_a = {_key(c): c for c in run_a.cases}
    cases_b = {_key(c): c for c in run_b.cases}
    changes = []
    for key in sorted(set(cases_a) | set(cases_b)):
        ca, cb = cases_a.get(key), cases_b.get(key)
        check, where = key[0], key[1]
        if ca is None or cb is None:
            changes.append(Change(check, where, '(check)', ca and ca.result,
                                  cb and cb.result, '', None,
                                  'only in B' if ca is None else 'only in A'))
            continue
        if ca.result != cb.result:
            kind = ('regression' if ca.result == 'pass' else
                    'improvement' if cb.result == 'pass' else 'changed')
            changes.append(Change(check, where, '(result)', ca.result, cb.result, '', None,
                                  kind))
        ma = {m.name: m for m in ca.metrics}
        mb = {m.name: m for m in cb.metrics}
        for name in sorted(set(ma) | set(mb)):
            a, b = ma.get(name), mb.get(name)
            if a is None or b is None:
                changes.append(Change(check, where, name, a and a.value, b and b.value,
                                      (a or b).unit, None,
                                      'only in B' if a is None else 'only in A'))
                continue
            if not all(isinstance(x, (int, float)) for x in (a.value, b.value)):
                continue
            if a.value == b.value:
                continue
            rel = (b.value - a.value) / abs(a.value) if a.value else None
            if rel is not None and abs(rel) <= tol:
                continue
            d = better_direction(name, b.unit or a.unit, (a, b))
            if d == 0:
                kind = 'changed'
            else:
                kind = 'improvement' if (b.value - a.value) * d > 0 else 'regression'
            changes.append(Change(check, where, name, a.value, b.value, b.unit or a.unit,
                                  rel, kind))
    return changes


def render_compare(run_a, run_b, changes, tolerance):
    order = {'regression': 0, 'improvement': 1, 'changed': 2, 'only in A': 3,
             'only in B': 4}
    changes = sorted(changes, key=lambda c: (order[c.kind], c.check, c.where, c.metric))
    n_reg = sum(c.kind == 'regression' for c in changes)
    n_imp = sum(c.kind == 'improvement' for c in changes)
    lines = [f'# cobalt-bench compare: {run_a.label} (A) -> {run_b.label} (B)', '',
             f'Tolerance {fmt(tolerance)}%: {n_reg} regression(s), {n_imp} improvement(s), '
             f'{len(changes) - n_reg - n_imp} other change(s).', '']
    if changes:
        rows = [[c.kind.upper() if c.kind in ('regression', 'improvement') else c.kind,
                 c.check, c.where, c.metric, fmt(c.a), fmt(c.b),
                 f'{c.change * 100:+.1f}%' if c.change is not None else '', c.unit]
                for c in changes]
        lines.append(_md_table(['kind', 'check', 'partition', 'metric', 'A', 'B', 'change',
                                'unit'], rows))
    else:
        lines.append('No change beyond the tolerance.')
    return '\n'.join(lines) + '\n'


def _comparable(name, run):
    '''A run whose run report is damaged has other cases (from its perflogs) than it
    had: compared, it would match none of the other run's checks and read as "no
    regression".'''
    if run.report_damage:
        raise CannotRun(f'{name} {run.label}: cannot compare: {run.report_damage}')
    return run


def compare_command(spec_a, spec_b, tolerance, output, base):
    run_a = _comparable('RUN_A', rs.load_run(rs.resolve_run(spec_a, base)))
    run_b = _comparable('RUN_B', rs.load_run(rs.resolve_run(spec_b, base)))
    if run_a.path == run_b.path:
        raise UsageError(f'RUN_A and RUN_B are the same run ({run_a.path})')
    common = {_key(c) for c in run_a.cases} & {_key(c) for c in run_b.cases}
    if not common:
        def names(run):
            return ', '.join(sorted({f'{c.check} on {c.where}' for c in run.cases})) or 'none'
        raise CannotRun(f'{run_a.label} and {run_b.label} share no check: nothing to '
                        f'compare (RUN_A has {names(run_a)}; RUN_B has {names(run_b)})')
    for name, run in (('RUN_A', run_a), ('RUN_B', run_b)):
        for c, d in damaged_files(run):
            print(f'cobalt-bench report: {name} {run.label}: could not read '
                  f'{loading.relpath(d.path, run.path)}: {d.problem}', file=sys.stderr)
    changes = compare(run_a, run_b, tolerance)
    text = render_compare(run_a, run_b, changes, tolerance)
    print(text, end='')
    if output:
        try:
            d = os.path.dirname(os.path.abspath(output))
            os.makedirs(d, exist_ok=True)
            _write(os.path.abspath(output), text)
        except OSError as err:
            raise CannotRun(f'cannot write {output}: {err}')
    # A damaged result of either run is not "no regression": it could not be compared.
    damaged = run_a.damaged or run_b.damaged
    return 1 if damaged or any(c.kind == 'regression' for c in changes) else 0
