'''Writing a report: every file whole or not at all (cobalt_bench.fileio): a reader never
sees half a report, and a failed write leaves the earlier one as it was.'''

import json
import os

from ..errors import CannotRun
from ..fileio import write_atomic
from .html import render_html
from .markdown import render_markdown


def write_report(model, out_dir, formats):
    try:
        os.makedirs(out_dir, exist_ok=True)
        written = []
        if 'md' in formats:
            plot_dir = os.path.join(out_dir, 'plots')
            if model.plots:
                os.makedirs(plot_dir, exist_ok=True)
            for p in model.plots:
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
            write_atomic(doc, json.dumps(model.judgement.to_json(), indent=2) + '\n')
            written.append(doc)
    except OSError as err:
        raise CannotRun(f'cannot write the report in {out_dir}: {err}')
    return written
