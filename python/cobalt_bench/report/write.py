'''Writing a report: every file whole or not at all (cobalt_bench.fileio): a reader never
sees half a report, and a failed write leaves the earlier one as it was.

The report directory (RUN/report by default) and its plots/ are never symbolic links: in
a shared store a link planted there would have the report written wherever it points.
A link is refused (CannotRun, nothing written); the files themselves are replaced by a
rename, which never follows a link.'''

import json
import os

from ..errors import CannotRun
from ..fileio import write_atomic
from .fleet import BAD_NODES_FILE, bad_nodes_text
from .html import render_html
from .markdown import render_markdown


def _own_dir(path):
    '''Make the directory `path` (and its parents); CannotRun if it is a symbolic link
    or something else than a directory.'''
    if os.path.islink(path):
        raise CannotRun(f'{path} is a symbolic link (to {os.readlink(path)}): the report is '
                        'not written through it; remove it, or name another directory (-o)')
    os.makedirs(path, exist_ok=True)
    if os.path.islink(path) or not os.path.isdir(path):
        raise CannotRun(f'{path} is not a directory: the report is not written there')


def write_report(model, out_dir, formats):
    try:
        _own_dir(out_dir)
        written = []
        if 'md' in formats:
            plot_dir = os.path.join(out_dir, 'plots')
            drawn = [p for p in model.plots if p.png]
            if drawn:
                _own_dir(plot_dir)
            for p in drawn:
                write_atomic(os.path.join(plot_dir, p.name + '.png'), p.png)
            md = os.path.join(out_dir, 'report.md')
            write_atomic(md, render_markdown(model, out_dir=out_dir))
            written.append(md)
        if 'html' in formats:
            page = os.path.join(out_dir, 'report.html')
            write_atomic(page, render_html(model, out_dir=out_dir))
            written.append(page)
        if model.judgement is not None:
            # The verdict for programs: state first, then the reasons and items.
            doc = os.path.join(out_dir, 'verdict.json')
            # The flaky nodes (the store's node history), apart from this run's bad nodes.
            verdict = {**model.judgement.to_json(),
                       'flaky_nodes': [f.to_json() for f in model.flaky]}
            write_atomic(doc, json.dumps(verdict, indent=2) + '\n')
            written.append(doc)
            # Always written (a comment only when no node is bad): a list of an earlier
            # report is never left behind to be drained.
            bad = os.path.join(out_dir, BAD_NODES_FILE)
            write_atomic(bad, bad_nodes_text(model))
            written.append(bad)
    except OSError as err:
        raise CannotRun(f'cannot write the report in {out_dir}: {err}')
    return written
