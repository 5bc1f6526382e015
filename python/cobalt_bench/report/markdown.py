'''The report as Markdown (report.md, its plots beside it as PNG files).'''

import datetime

from .. import __version__
from .. import preflight as pf
from ..store import documents
from .format import fmt, fmt_bounds
from .model import damaged_files
from .rows import (CASE_HEADER, DAMAGE_HEADER, DAMAGE_TEXT, FINDING_HEADER, METRIC_HEADER,
                   REPRODUCE_HEADER, case_rows, damage_rows, finding_rows, is_preflight,
                   judged_by, link_target, metric_rows, reproduce_rows, summary_lines)


def md_cell(text):
    return str(text).replace('|', '\\|').replace('\n', ' ')


def md_table(header, rows):
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(md_cell(c) for c in r) + ' |' for r in rows]
    return '\n'.join(lines)




def render_markdown(model, plot_dir_rel='plots', out_dir=None):
    run = model.run
    out = [f'# cobalt-bench compliance report: {run.label}', '',
           f'**Verdict: {model.verdict}**', '']
    j = model.judgement
    if j is not None:
        if j.headline != j.state:
            out += [f'_{j.headline}_', '']
        out += ['Why:', ''] + [f'1. {r}' for r in j.reasons] + ['']
        out += [f'Judged by {judged_by(j)}.', '']
    out += [f'- {line}' for line in summary_lines(model)]
    damage = damage_rows(model)
    if damage:
        out += ['', '## Damaged results', '', DAMAGE_TEXT, '',
                md_table(DAMAGE_HEADER, damage)]
    out += ['', '## Checks', '',
            md_table(CASE_HEADER, case_rows(model))]
    judged = metric_rows(model, True)
    out += ['', '## Judged measurements', '',
            'Each performance variable with a reference of the site: value, reference, '
            'absolute bounds, unit and verdict.', '']
    out.append(md_table(METRIC_HEADER, judged) if judged else '_No judged measurements._')
    repro = reproduce_rows(model)
    if repro:
        out += ['', '## Reproducing a verdict', '',
                'For each judged check: the kernel and its version, the command line that '
                'produced the result, and the reference file and entry it was judged by.', '',
                md_table(REPRODUCE_HEADER, repro)]
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
                        md_table(['node'] + FINDING_HEADER,
                                  [[h] + r for h, r in zip(
                                      [h for h, _ in e.findings],
                                      finding_rows([f for _, f in e.findings]))])]
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
                out += [f'[{label}](<{link_target(path, out_dir)}>)', '']
        for c, d in unplotted:
            out += [f'- No plot from `{documents.relpath(d.path, run.path)}`'
                    + (f' ({c.check} on {c.where})' if c else '')
                    + f': could not read it: {d.problem}']
    for label, doc in model.preflight:
        out += ['', f'## Preflight: {label}: {doc.get("verdict", "")}', '',
                md_table(FINDING_HEADER, finding_rows(pf.findings_of(doc)))]
    for c, d in damaged_files(run):
        if is_preflight(c, d):
            out += ['', f'## Preflight: {c.where if c else run.label}: DAMAGED', '',
                    f'Could not read `{documents.relpath(d.path, run.path)}`: {d.problem}']
    recorded = metric_rows(model, False)
    if recorded:
        out += ['', '## Recorded measurements (not judged)', '',
                md_table(METRIC_HEADER[:5] + ['unit'],
                          [r[:5] + [r[7]] for r in recorded])]
    out += ['', '---', f'cobalt-bench {__version__}, report written '
            f'{datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")} from:', '']
    out += [f'- `{s}`' for s in model.run.sources]
    return '\n'.join(out) + '\n'
