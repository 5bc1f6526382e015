'''The report as Markdown (report.md, its plots beside it as PNG files).

Every value from the results (check names, fail reasons, hosts, units, paths, a run's
name) goes into the Markdown through one rule, md_text (md_code inside a code span): it
stays text, whatever it holds. No raw HTML (`<script>`), no link or image (`[x](...)`),
no line break (a CR or LF would start a heading or a table row of its own), no cell
break (`|`), no control character (shown as `\\x1b`).'''

import datetime
import re
import urllib.parse

from .. import __version__
from .. import preflight as pf
from ..store import documents
from .fleet import (BAD_HEADER, BAD_NODES_FILE, CLASS_HEADER, NODE_HEADER, bad_node_rows,
                    class_rows, left_out_text, node_table_intro, shared_finding_lines)
from .format import fmt, fmt_bounds, visible
from .model import damaged_files
from .rows import (BOLD, CASE_HEADER, CODE, DAMAGE_HEADER, DAMAGE_TEXT, FINDING_HEADER,
                   METRIC_HEADER, REPRODUCE_HEADER, TEXT, damage_rows, failures_left_out_text,
                   finding_rows, first_screen, is_preflight, judged_by, link_target,
                   preflight_left_out_text, preflight_own, reasons, recorded_rows,
                   shown_case_rows, shown_judged_rows, shown_node_tables, shown_preflight,
                   shown_reproduce_rows, shown_sources, summary_lines)

# Line breaks (CommonMark's, and Unicode's), made spaces.
_BREAK = re.compile('\r\n|[\r\n\t\v\f\x85\u2028\u2029]')
# What Markdown would read as markup that leaves the text: a backslash that escapes the
# next character, the `](` of a link or image (a `]` that ends the value too: the report's
# text after it could start with `(`), code-span backticks, a table cell's end, and `<`
# opening raw HTML or an autolink.
_SPECIAL = re.compile(r'\\(?=[!-/:-@\[-`{-~]|$)|\](?=\(|$)|[`|]|<(?=[A-Za-z/!?])')
# Block markup at the start of a line (a heading, a quote, a list).
_BLOCK_START = re.compile(r'^(\s*)([#>+*=-])')


# Any character the rules above would change (most values have none: they pass as they
# are, fast, which matters for a report of 100,000 documents).
_ANY = re.compile('[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069'
                  '\\\\\\]`|<]')


def md_text(value, line_start=False):
    '''A value from the results as Markdown text: shown exactly, never markup.
    `line_start`: it begins a line (a list item's text), where `#`, `>`, `-` would be
    markup too.'''
    text = value if isinstance(value, str) else str(value)
    if not line_start and not _ANY.search(text):
        return text
    text = _SPECIAL.sub(lambda m: '\\' + m.group(), _BREAK.sub(' ', text))
    if line_start:
        text = _BLOCK_START.sub(r'\1\\\2', text)
    return visible(text)


def md_code(value):
    '''A value from the results as a Markdown code span: its fence longer than any run
    of backticks inside, so that nothing in it ends the span.'''
    text = visible(_BREAK.sub(' ', str(value)))
    if not text.strip():
        return '` `' if not text else f'`{text}`'
    fence = '`' * (max((len(r) for r in re.findall('`+', text)), default=0) + 1)
    pad = ' ' if text.startswith('`') or text.endswith('`') else ''
    return f'{fence}{pad}{text}{pad}{fence}'


def md_segments(segments):
    '''A line of (kind, text) segments (report.rows) as Markdown.'''
    out = []
    for kind, text in segments:
        out.append(text if kind == TEXT else md_code(text) if kind == CODE else
                   f'**{md_text(text)}**' if kind == BOLD else md_text(text))
    return ''.join(out)


def md_cell(text):
    return md_text(text)


def md_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(md_cell(c) for c in r) + ' |' for r in rows]
    return '\n'.join(lines)


def _failure(e, model):
    c, t = e.case, md_text
    out = [f'### {t(c.check)} on {t(c.where)}' + (f' ({t(", ".join(c.nodes))})'
                                                  if c.nodes else ''), '']
    out.append(f'- {t(c.result.upper())} in {t(c.fail_phase or "?")}: {t(c.fail_reason)}')
    for m in e.failing:
        out.append(f'- {md_code(m.name)} = {t(fmt(m.value))} {t(m.unit)}, bounds '
                   f'{t(fmt_bounds(m))} (reference {t(fmt(m.ref))})')
    for h in e.hints:
        out.append(f'- {t(h, line_start=True)}')
    if e.findings:
        out += ['', 'Failing settings:' if c.kernel == 'preflight' else
                'Preflight findings that may explain it:', '',
                md_table(['node'] + FINDING_HEADER,
                         [[h] + r for h, r in zip([h for h, _ in e.findings],
                                                  finding_rows([f for _, f in e.findings]))])]
    else:
        out += ['', '_No preflight finding of this node explains it'
                + (' (the run has no preflight results)' if not model.preflight
                   else '') + '._']
    return out + ['']


def _nodes(model):
    '''The node table of each partition (judging.fleet), worst first.'''
    tables = shown_node_tables(model)
    if not tables:
        return []
    out = ['', '## Nodes against their peers', '', md_text(node_table_intro(model)), '',
           f'The bad nodes, as a Slurm hostlist: {md_code(BAD_NODES_FILE)}.']
    for part, rows, left in tables:
        out += ['', f'### {md_text(part)}', '', md_table(NODE_HEADER, rows)]
        if left:
            out += ['', md_text(left_out_text(left))]
    return out


def _answer(model):
    '''The first screen after the verdict: the bad nodes, the configuration classes, the
    findings the nodes share (said once).'''
    out = []
    bad, cls, shared = bad_node_rows(model), class_rows(model), shared_finding_lines(model)
    if bad:
        out += ['## Bad nodes', '', md_table(BAD_HEADER, bad), '']
    if cls:
        out += ['## Configuration classes', '', md_table(CLASS_HEADER, cls), '']
    if shared:
        out += ['Shared by most nodes (not any one node\'s why):', '']
        out += [f'- {md_text(line)}' for line in shared] + ['']
    return out


def _plots(model, plot_dir_rel, out_dir):
    run, t = model.run, md_text
    out = []
    unplotted = [(c, d) for c, d in damaged_files(run) if d.path.endswith('.json')]
    if model.plots or unplotted:
        out += ['', '## Plots', '']
        for p in model.plots:
            out += [f'### {t(p.title)}', '']
            if p.png:
                out += [f'![{t(p.title)}]({plot_dir_rel}/{p.name}.png)', '']
            out += [t(p.caption), '']
            # files that go with the plot (the PDF report of a cb-linktest run)
            for label, path in p.links:
                out += [f'[{t(label)}](<{urllib.parse.quote(link_target(path, out_dir))}>)',
                        '']
        for c, d in unplotted:
            out += [f'- No plot from {md_code(documents.relpath(d.path, run.path))}'
                    + (f' ({t(c.check)} on {t(c.where)})' if c else '')
                    + f': could not read it: {t(d.problem)}']
    return out


def render_markdown(model, plot_dir_rel='plots', out_dir=None):
    run, t = model.run, md_text
    j = model.judgement
    out = [f'# cobalt-bench compliance report: {t(run.label)}', '',
           f'**Verdict: {t(model.verdict)}**'
           + (f' _{t(j.headline[len(j.state):].strip() or j.headline)}_'
              if j is not None and j.headline != j.state else ''), '']
    out += _answer(model)
    if j is not None:
        # One line each (the verdict is above, the bad nodes first), details below.
        out += [f'- **{label}:** {md_segments(segs)}' for label, segs in first_screen(model)
                if label != 'Verdict'] + ['']
        out += ['Why:', ''] + [f'1. {t(r, line_start=True)}' for r in reasons(model)] + ['']
        out += [f'Judged by {md_segments(judged_by(j))}.', '']
    out += [f'- {md_segments(line)}' for line in summary_lines(model)]
    damage = damage_rows(model)
    if damage:
        out += ['', '## Damaged results', '', DAMAGE_TEXT, '',
                md_table(DAMAGE_HEADER, damage)]
    cases, left = shown_case_rows(model)
    out += ['', '## Checks', '', md_table(CASE_HEADER, cases)] + ['', t(left)] * bool(left)
    judged, left = shown_judged_rows(model)
    out += ['', '## Judged measurements', '',
            'Each performance variable with a reference of the site: value, reference, '
            'absolute bounds, unit and verdict.', '']
    out.append(md_table(METRIC_HEADER, judged) if judged else '_No judged measurements._')
    out += ['', t(left)] * bool(left)
    repro, left = shown_reproduce_rows(model)
    if repro:
        out += ['', '## Reproducing a verdict', '',
                'For each judged check: the kernel and its version, the command line that '
                'produced the result, and the reference file and entry it was judged by.', '',
                md_table(REPRODUCE_HEADER, repro)] + ['', t(left)] * bool(left)
    out += _nodes(model)
    if model.failures:
        out += ['', '## Failures and likely causes', '']
        for e in model.failures:
            out += _failure(e, model)
        if model.failures_more:
            out += [t(failures_left_out_text(model.failures_more)), '']
    out += _plots(model, plot_dir_rel, out_dir)
    preflights, more = shown_preflight(model)
    for label, doc in preflights:
        out += ['', f'## Preflight: {t(label)}: {t(preflight_own(doc))}', '',
                md_table(FINDING_HEADER, finding_rows(pf.findings_of(doc)))]
    if more:
        out += ['', t(preflight_left_out_text(more))]
    for c, d in damaged_files(run):
        if is_preflight(c, d):
            out += ['', f'## Preflight: {t(c.where if c else run.label)}: DAMAGED', '',
                    f'Could not read {md_code(documents.relpath(d.path, run.path))}: '
                    f'{t(d.problem)}']
    recorded, more = recorded_rows(model)
    if recorded:
        out += ['', '## Recorded measurements (not judged)', '',
                md_table(METRIC_HEADER[:5] + ['unit'],
                          [r[:5] + [r[7]] for r in recorded])]
        if more:
            out += ['', f'... and {more} more recorded values: in the run\'s documents '
                        '(the files read, below).']
    out += ['', '---', f'cobalt-bench {__version__}, report written '
            f'{datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")} from:', '']
    sources, more_sources = shown_sources(model)
    out += [f'- {md_code(s)}' for s in sources]
    if more_sources:
        out.append(f'- {more_sources}')
    return '\n'.join(out) + '\n'
