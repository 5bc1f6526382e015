'''The report as one self-contained HTML page: plots inline as data: URIs, styles
inline, no script, nothing fetched.'''

import base64
import datetime
import html
import urllib.parse

from .. import __version__
from .. import preflight as pf
from ..store import documents
from .fleet import (BAD_HEADER, BAD_NODES_FILE, CLASS_HEADER, NODE_HEADER, bad_node_rows,
                    class_rows, left_out_text, node_table_intro, shared_finding_lines)
from .format import fmt, fmt_bounds, visible
from .model import damaged_files
from .rows import (BOLD, CASE_HEADER, CODE, DAMAGE_HEADER, DAMAGE_TEXT, FINDING_HEADER,
                   METRIC_HEADER, REPRODUCE_HEADER, damage_rows, failures_left_out_text,
                   finding_rows, first_screen, is_preflight, judged_by, link_target,
                   preflight_left_out_text, preflight_own, reasons, recorded_rows,
                   shown_case_rows, shown_judged_rows, shown_node_tables, shown_preflight,
                   shown_reproduce_rows, shown_sources, summary_lines)


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
ol.reasons li { margin: 0.15em 0; } ul.first { list-style: none; padding-left: 0; }
.s-pass { background: #e8f5e9; } .s-fail, .s-abort { background: #ffebee; }
.s-warn, .s-unknown, .s-xfail { background: #fff8e1; } .s-skip, .s-recorded { color: #666; }
figure { margin: 1em 0; } figcaption { font-size: 0.85em; color: #555; }
img { max-width: 100%; border: 1px solid #eee; }
code { background: #f5f5f5; padding: 0 3px; }
.small { font-size: 0.85em; color: #555; }
'''


def _e(text):
    # control characters from a document or a perflog shown, never passed to the page
    return html.escape(visible(str(text), keep_lines=True), quote=True)


def _segments(segments):
    '''A line of (kind, text) segments (report.rows) as HTML, every text escaped.'''
    out = []
    for kind, text in segments:
        out.append(f'<code>{_e(text)}</code>' if kind == CODE else
                   f'<b>{_e(text)}</b>' if kind == BOLD else _e(text))
    return ''.join(out)


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


def _nodes(model):
    '''The node table of each partition (judging.fleet), worst first.'''
    tables = shown_node_tables(model)
    if not tables:
        return []
    out = ['<h2>Nodes against their peers</h2>', f'<p>{_e(node_table_intro(model))}</p>',
           f'<p>The bad nodes, as a Slurm hostlist: <code>{_e(BAD_NODES_FILE)}</code>.</p>']
    for part, rows, left in tables:
        out += [f'<h3>{_e(part)}</h3>', _html_table(NODE_HEADER, rows, num_cols=(3, 4, 5))]
        if left:
            out.append(f'<p class="small">{_e(left_out_text(left))}</p>')
    return out


def _answer(model):
    '''The first screen after the verdict: the bad nodes, the configuration classes, the
    findings the nodes share (said once).'''
    out = []
    bad, cls, shared = bad_node_rows(model), class_rows(model), shared_finding_lines(model)
    if bad:
        out += ['<h2>Bad nodes</h2>', _html_table(BAD_HEADER, bad)]
    if cls:
        out += ['<h2>Configuration classes</h2>', _html_table(CLASS_HEADER, cls)]
    if shared:
        out += ['<p>Shared by most nodes (not any one node\'s why):</p><ul>'
                + ''.join(f'<li>{_e(line)}</li>' for line in shared) + '</ul>']
    return out


def render_html(model, out_dir=None):
    run = model.run
    v = model.verdict
    out = ['<!DOCTYPE html>', '<html lang="en"><head><meta charset="utf-8">',
           f'<title>cobalt-bench report {_e(run.label)}</title>',
           f'<style>{CSS}</style></head><body>',
           f'<h1>cobalt-bench compliance report: {_e(run.label)}</h1>',
           f'<p><span class="verdict v-{v.replace(" ", "-")}">{_e(v)}</span></p>']
    j = model.judgement
    if j is not None and j.headline != j.state:
        out.append(f'<p class="headline"><b>{_e(j.headline)}</b></p>')
    out += _answer(model)
    if j is not None:
        # The first screen: one line each (the verdict is above), the details below.
        out.append('<ul class="first">' + ''.join(
            f'<li><b>{_e(label)}:</b> {_segments(segs)}</li>'
            for label, segs in first_screen(model) if label != 'Verdict') + '</ul>')
        out.append('<p>Why:</p><ol class="reasons">'
                   + ''.join(f'<li>{_e(r)}</li>' for r in reasons(model)) + '</ol>')
        out.append(f'<p class="small">Judged by {_segments(judged_by(j))}.</p>')
    out.append('<ul>')
    out += [f'<li>{_segments(line)}</li>' for line in summary_lines(model)]
    out.append('</ul>')
    damage = damage_rows(model)
    if damage:
        out += ['<h2>Damaged results</h2>', f'<p>{_e(DAMAGE_TEXT)}</p>',
                _html_table(DAMAGE_HEADER, damage)]
    cases, left = shown_case_rows(model)
    out += ['<h2>Checks</h2>', _html_table(CASE_HEADER, cases, status_col=3)]
    out += [f'<p>{_e(left)}</p>'] * bool(left)
    judged, left = shown_judged_rows(model)
    out.append('<h2>Judged measurements</h2>')
    out.append(_html_table(METRIC_HEADER, judged, status_col=8, num_cols=(4, 5))
               if judged else '<p>No judged measurements.</p>')
    out += [f'<p>{_e(left)}</p>'] * bool(left)
    repro, left = shown_reproduce_rows(model)
    if repro:
        out += ['<h2>Reproducing a verdict</h2>',
                '<p>For each judged check: the kernel and its version, the command line that '
                'produced the result, and the reference file and entry it was judged by.</p>',
                _html_table(REPRODUCE_HEADER, repro)] + [f'<p>{_e(left)}</p>'] * bool(left)
    out += _nodes(model)
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
                                           finding_rows([f for _, f in e.findings]))],
                                       status_col=1))
            else:
                out.append('<p class="small">No preflight finding of this node explains it'
                           + (' (the run has no preflight results)' if not model.preflight
                              else '') + '.</p>')
        if model.failures_more:
            out.append(f'<p>{_e(failures_left_out_text(model.failures_more))}</p>')
    unplotted = [(c, d) for c, d in damaged_files(run) if d.path.endswith('.json')]
    if model.plots or unplotted:
        out.append('<h2>Plots</h2>')
        for p in model.plots:
            data = base64.b64encode(p.png).decode('ascii')
            out.append((f'<figure><img alt="{_e(p.title)}" src="data:image/png;base64,{data}">'
                        if p.png else f'<figure><p><b>{_e(p.title)}</b></p>')
                       + f'<figcaption>{_e(p.caption)}</figcaption></figure>')
            for label, path in p.links:
                out.append(f'<p><a href="{_e(urllib.parse.quote(link_target(path, out_dir)))}">'
                           f'{_e(label)}</a></p>')
        for c, d in unplotted:
            out.append(f'<p>No plot from <code>{_e(documents.relpath(d.path, run.path))}</code>'
                       + (f' ({_e(c.check)} on {_e(c.where)})' if c else '')
                       + f': could not read it: {_e(d.problem)}</p>')
    preflights, more = shown_preflight(model)
    for label, doc in preflights:
        out.append(f'<h2>Preflight: {_e(label)}: {_e(preflight_own(doc))}</h2>')
        out.append(_html_table(FINDING_HEADER, finding_rows(pf.findings_of(doc)),
                               status_col=0))
    if more:
        out.append(f'<p>{_e(preflight_left_out_text(more))}</p>')
    for c, d in damaged_files(run):
        if is_preflight(c, d):
            out.append(f'<h2>Preflight: {_e(c.where if c else run.label)}: DAMAGED</h2>'
                       f'<p>Could not read <code>{_e(documents.relpath(d.path, run.path))}'
                       f'</code>: {_e(d.problem)}</p>')
    recorded, more = recorded_rows(model)
    if recorded:
        out.append('<h2>Recorded measurements (not judged)</h2><details><summary>'
                   f'{len(recorded) + more} values</summary>')
        out.append(_html_table(METRIC_HEADER[:5] + ['unit'],
                               [r[:5] + [r[7]] for r in recorded], num_cols=(4,)))
        if more:
            out.append(f'<p>... and {more} more recorded values: in the run\'s documents '
                       '(the files read, below).</p>')
        out.append('</details>')
    out.append(f'<hr><p class="small">cobalt-bench {_e(__version__)}, report written '
               f'{_e(datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"))} from:</p><ul '
               'class="small">')
    sources, more_sources = shown_sources(model)
    out += [f'<li><code>{_e(s)}</code></li>' for s in sources]
    if more_sources:
        out.append(f'<li>{_e(more_sources)}</li>')
    out.append('</ul></body></html>')
    return '\n'.join(out) + '\n'
