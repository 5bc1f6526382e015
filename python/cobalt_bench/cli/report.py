'''`cobalt-bench report`: the compliance report of a run (the verdict first, then where the
report is), and `report --compare RUN_A RUN_B`.'''

import os
import sys

from ..errors import CannotRun
from ..fileio import write_atomic
from ..report import compare as cmp
from ..report import fleet as nodes
from ..report.drawing import Drawer
from ..report.model import build, damaged_files
from ..report.write import write_report
from ..site.bounds import Bounds
from ..store import bulk, documents, reader, runs
from ..store.model import KIND_REFRAME
from ..store.result import RunState
from .terminal import say, say_lines


def _report_dir(path, run, output):
    if output:
        return output
    if os.path.isdir(path) and run.kind == KIND_REFRAME:
        return os.path.join(path, 'report')
    return os.path.join(path if os.path.isdir(path) else os.path.dirname(path), 'report')


#: Lines of one kind (reasons, failures, damaged files) printed before the rest are
#: counted: the report lists them all.
MAX_LINES = 50


def _capped(items, what):
    '''The first MAX_LINES of `items`, and the line that counts the rest ('' if none).'''
    items = list(items)
    more = len(items) - MAX_LINES
    return items[:MAX_LINES], (f'  ... and {more} more {what} (the report lists them all)'
                               if more > 0 else '')


def _say_damaged(run, name=''):
    damaged, more = _capped(damaged_files(run), 'files that could not be read')
    for c, d in damaged:
        say(f'cobalt-bench report: {name}{run.label}: could not read '
            f'{documents.relpath(d.path, run.path)}: {d.problem}'
            + (f' ({c.check} on {c.where}: DAMAGED)' if c and not name else ''), sys.stderr)
    if more:
        say(more, sys.stderr)


def command(spec, output, formats, preflight_file, base, site=None):
    '''Exit status: the verdict's (judging.verdict.Verdict.exit_code).'''
    path = runs.resolve_run(spec, base)
    # The plots' images are drawn by a child process while the report's text is made; it
    # is forked first, while this process is small (report.drawing).
    with Drawer() as drawer:
        with bulk.paused_gc():
            run = reader.load_run(path)
            model = build(run, preflight_file, site=site, drawer=drawer)
        written = write_report(model, _report_dir(path, run, output), formats)
    _say_damaged(run)
    j = model.judgement
    # The answer first: the verdict line, the bad nodes and the configuration classes, its
    # reasons, then where the report is.
    say(f'verdict: {j.headline}')
    bad, more = _capped(nodes.bad_node_rows(model), 'bad nodes')
    for node, what, against, likely, drain in bad:
        say(f'  bad node {node}: {what}' + (f' ({against})' if against != '-' else '')
            + (f'; likely why: {likely}' if likely != '-' else ''))
        say(f'    {drain}')
    if more:
        say(more)
    for part, members, what in nodes.class_rows(model):
        say(f'  configuration class of {part}: {members}: {what}')
    for line in nodes.shared_finding_lines(model):
        say(f'  shared by most nodes: {line}')
    reasons, more = _capped(j.reasons, 'reasons')
    for r in reasons:
        say(f'  - {r}')
    if more:
        say(more)
    if model.flaky:
        flaky, more = _capped(model.flaky, 'flaky nodes')
        say('flaky node(s), by the store\'s node history: '
            + ', '.join(f.text() for f in flaky) + (f' {more.strip()}' if more else ''))
    say(f'{run.label}: {model.verdict} ({j.count_text}'
        + (f'; run {run.state}: {run.state_why}' if run.state is not RunState.COMPLETE
           else '') + ')')
    # The failed cases again, last, one line each: the end of a long log (a CI tail, a
    # Slurm output) still says which check failed and why.
    failures, more = _capped(model.failures, 'failed cases')
    if model.failures_more:
        more = f'  ... and {len(model.failures) + model.failures_more - len(failures)} more ' \
               'failed cases (verdict.json lists them all)'
    for e in failures:
        c = e.case
        why = '; '.join(f'{m.name} {m.value} {m.unit} (bounds '
                        f'{Bounds(m.lower, m.upper).text()})'
                        for m in e.failing) or c.fail_reason or c.result
        say(f'  {c.result}: {c.check} on {c.where}: {why}'[:600])
    if more:
        say(more)
    for w in written:
        say(f'wrote {w}')
    return j.exit_code()


def compare_command(spec_a, spec_b, tolerance, output, base):
    '''Exit status 0 no regression, 1 regressions or damaged results (named), 3 a run
    that cannot be read or two runs that share no check.'''
    run_a, run_b = cmp.runs_to_compare(spec_a, spec_b, base)
    for name, run in (('RUN_A ', run_a), ('RUN_B ', run_b)):
        _say_damaged(run, name)
    changes = cmp.compare(run_a, run_b, tolerance)
    text = cmp.render_compare(run_a, run_b, changes, tolerance)
    say_lines(text)
    if output:
        try:
            os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
            write_atomic(os.path.abspath(output), text)
        except OSError as err:
            raise CannotRun(f'cannot write {output}: {err}')
    # A damaged result of either run is not "no regression": it could not be compared.
    damaged = run_a.damaged or run_b.damaged
    return 1 if damaged or any(c.kind == 'regression' for c in changes) else 0
