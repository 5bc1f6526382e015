'''The report's tables and summary lines, built once for the Markdown and the HTML page.'''

import operator
import os

from .. import preflight as pf
from ..preflight.document import own_summary
from ..judging import fleet as fl
from ..judging import outcome
from ..judging import verdict as vd
from ..store import confine, documents, reader
from ..store.result import Result
from .fleet import node_tables
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


CASE_HEADER = ['check', 'partition', 'node(s)', 'result (site\'s judgement)', 'reason',
               'kernel\'s own verdict (not the site\'s)']


def _case_result(c):
    '''(result word, reason) of a case in the Checks table: its outcome (judging.outcome),
    the one every count is made of.'''
    return c.result.upper(), (c.fail_reason if c.result is not Result.PASS else '')


def shown_node_tables(model):
    '''fleet.node_tables, made once for the Markdown and the HTML page.'''
    return _made_once(model, 'node tables', lambda: node_tables(model))


def _case_row(c, result, reason):
    phase = c.fail_phase and not outcome.decided_by_settings(c)    # its reason says it
    return [c.check, c.where, ', '.join(c.nodes), result,
            (f'{c.fail_phase}: ' if phase else '') + reason, own_verdict(c)]


def case_rows(model):
    return [_case_row(c, *_case_result(c)) for c in model.cases]


#: A report's tables of cases (the checks, their judged measurements, the commands that
#: reproduce them) show every row of a run that fits in this many; beyond, the rows of
#: what did not pass first, then others up to it, and say how many more there are (a
#: sweep of 10,000 nodes has 100,000 cases, 280,000 judged values: a table no one reads).
#: Every case stays in the run's documents, and each result in verdict.json.
TABLE_ROWS_MAX = 2000
#: The preflight documents shown each with its findings (and a summary line); the others
#: are counted (the settings most nodes share are in the fleet's section).
PREFLIGHT_SHOWN_MAX = 20
#: The files read that the report lists at its end; the others are counted, with the
#: directory they are in (a sweep of 1,000 nodes reads 10,000 documents).
SOURCES_SHOWN_MAX = 50


def bounded(pairs, limit):
    '''[(row, notable)] (or any iterable of them) -> (the rows shown, how many notable ones
    and how many others are left out): all of them where they fit in `limit`; else the
    notable ones first, the more notable (a larger number: True is 1) before the less.
    Holds at most `limit` of each kind: the rows of a sweep's 280,000 judged values are
    made (formatted) only for the few shown.'''
    levels, others, n_notable, n = {}, [], 0, 0
    for row, flag in pairs:
        if flag:
            n_notable += 1
            level = levels.setdefault(int(flag), [])
            if len(level) < limit:
                level.append((n, row))
        elif len(others) < limit:
            others.append((n, row))
        n += 1
    notable = [nr for flag in sorted(levels, reverse=True) for nr in levels[flag]][:limit]
    if n <= limit:      # all of them, in their order
        return [r for _, r in sorted(notable + others, key=lambda nr: nr[0])], 0, 0
    shown = [r for _, r in notable] + [r for _, r in others[:limit - len(notable)]]
    left = n_notable - len(notable)
    return shown, left, n - len(shown) - left


def _left_out(what, notable, others):
    '''The line under a bounded table: how many rows it leaves out, and where they are.'''
    if not notable and not others:
        return ''
    bad = f' ({notable} of them not passed)' if notable else ''
    return (f'... and {notable + others} more {what}{bad}, left out of this table: each '
            'in the run\'s documents (the files read, at the end) and verdict.json.')


def shown_sources(model):
    '''(the files read that the report's end lists, the line counting the others: '' when
    all are listed).'''
    sources = model.run.sources
    if len(sources) <= SOURCES_SHOWN_MAX:
        return list(sources), ''
    left = len(sources) - SOURCES_SHOWN_MAX
    return sources[:SOURCES_SHOWN_MAX], f'... and {left} more files, in {model.run.path}'


def _made_once(model, key, make):
    made = model.__dict__.setdefault('_rows', {})
    if key not in made:
        made[key] = make()
    return made[key]


def shown_case_rows(model):
    '''(the Checks table's rows, its left-out line).'''
    def make():
        passed = Result.PASS.upper()
        results = ((c, _case_result(c)) for c in model.cases)
        # What did not pass first; of it, what its required settings failed last (at fleet
        # scale every node's preflight may fail the fleet's MTU alike).
        shown, notable, others = bounded(
            (((c, r), (r[0] != passed) * (1 + (not outcome.decided_by_settings(c))))
             for c, r in results), TABLE_ROWS_MAX)
        return [_case_row(c, *r) for c, r in shown], _left_out('cases', notable, others)
    return _made_once(model, 'cases', make)


def shown_judged_rows(model):
    '''(the Judged measurements table's rows, its left-out line).'''
    def make():
        shown, notable, others = bounded(
            (((c, m), m.verdict is not Result.PASS) for c, m in _judged_metrics(model)),
            TABLE_ROWS_MAX)
        return [_metric_row(c, m) for c, m in shown], _left_out('judged values', notable,
                                                                 others)
    return _made_once(model, 'judged', make)


def shown_reproduce_rows(model):
    '''(the Reproducing a verdict table's rows, its left-out line).'''
    def make():
        shown, notable, others = bounded(((c, c.result is not Result.PASS)
                                          for c in _reproduced(model)), TABLE_ROWS_MAX)
        return [_reproduce_row(model, c) for c in shown], _left_out('judged cases', notable,
                                                                   others)
    return _made_once(model, 'reproduce', make)


def shown_preflight(model):
    '''(the preflight documents shown each with its findings: [(label, doc)], how many
    more): those the tool itself did not call compliant first.'''
    def make():
        shown, notable, others = bounded(
            [((label, doc), doc.get('verdict') != 'COMPLIANT')
             for label, doc in model.preflight], PREFLIGHT_SHOWN_MAX)
        return shown, notable + others
    return _made_once(model, 'preflight', make)


def failures_left_out_text(more):
    return (f'... and {more} more failed cases, not explained each here: verdict.json lists '
            'them all (those their required settings failed, alike at fleet scale, come '
            'last)')


def preflight_own(doc):
    '''What a preflight document's settings came to by preflight's own list, labelled as
    its own (never a run's verdict word).'''
    return own_summary(pf.summary(pf.findings_of(doc)))


def preflight_left_out_text(more):
    return (f'... and {more} more preflight documents, each with its findings in its '
            'file (listed at the end); the settings most nodes share are in the fleet\'s '
            'section.') if more else ''


def _some(texts, limit, width=90):
    '''A few of `texts` on one line (each cut to `width`), with how many more there are.'''
    cut = [t if len(t) <= width else t[:width - 1] + '\u2026' for t in texts[:limit]]
    more = f'; and {len(texts) - limit} more (below)' if len(texts) > limit else ''
    return '; '.join(cut) + more


def first_screen(model):
    '''The report's first lines, one each: the verdict; what ran and passed; what failed
    (with the node); what was not judged and why; the bad nodes. (label, segments).
    Made once for the Markdown and the HTML page.'''
    return _made_once(model, 'first screen', lambda: _first_screen(model))


def _first_screen(model):
    j = model.judgement
    cases = model.cases
    passed = {}
    names = {}      # a check's name without its node, found once per check and partition
    for c in cases:
        if c.result.passed:
            key = names.get((c.check, c.where))
            if key is None:
                key = names[(c.check, c.where)] = f'{fl.check_name(c)} on {c.where}'
            passed[key] = passed.get(key, 0) + 1
    ran = [k + (f' x{n}' if n > 1 else '') for k, n in passed.items()]
    settings = [i for i in (j.items if j else []) if i.setting and i.status is vd.PASSED]
    if settings:
        ran.append(f'{len(settings)} required preflight setting(s)')
    items = vd.grouped(j.items) if j else []
    failed = [i.what + (f' ({i.why.split(";")[0]})' if i.setting else '') for i in items
              if i.status is vd.FAILED]
    missing = [i.line() for i in items if i.status is vd.MISSING]
    fleet = getattr(j, 'fleet', None) or fl.Fleet()
    compared = [d for d in fleet.distributions if d.judged]
    if fleet.bad_nodes:
        bad = [(CODE, fleet.hostlist or '-'),
               (VALUE, f' ({len(fleet.bad_nodes)}: '
                + _some([f'{b.node}: {b.summary}' for b in fleet.bad_nodes], 5) + ')')]
    else:
        bad = [(VALUE, 'none' + ('' if compared else
                                 f' found (no check ran on {fl.MIN_NODES} or more nodes to '
                                 'compare them; failed cases name none)'))]
    flaky = getattr(model, 'flaky', None) or []
    if flaky:
        bad.append((VALUE, '; flaky: '
                    + _some([f.text() for f in flaky], 5)))
    if getattr(model, 'flaky_note', ''):
        bad.append((VALUE, f'; {model.flaky_note}'))
    counted = j.counts if j else outcome.counts(cases)
    lines = [('Verdict', [(BOLD, j.headline if j else model.verdict)]),
             ('Ran and passed', [(VALUE, f'{outcome.passed(counted)} of {len(cases)} check '
                                         f'case(s) ({outcome.count_text(counted)})'
                                         + (': ' + _some(ran, 8) if ran else ''))]),
             ('Failed', [(VALUE, _some(failed, 6) if failed else 'nothing')]),
             ('Not judged', [(VALUE, _some(missing, 4) if missing else 'nothing')]),
             ('Bad nodes', bad)]
    return lines


def reasons(model):
    '''The verdict's reasons (judging.verdict's, made anew each time they are asked: at
    10,000 nodes, 0.6 s), made once for the Markdown and the HTML page.'''
    return _made_once(model, 'reasons', lambda: model.judgement.reasons)


def entry_text(m):
    '''The reference file and entry a metric was judged by.'''
    e = m.entry
    if e is None:
        return ''
    changed = m.ref is not None and e.value != m.ref
    return f'{e.label}' + (' (changed since the run)' if changed else '')


def _reproduced(model):
    '''The cases "Reproducing a verdict" is about: judged ones, and those that failed or
    could not be judged.'''
    recorded, unjudged = Result.RECORDED, (Result.FAIL, Result.ERROR, Result.UNJUDGED)
    for c in model.cases:
        if c.result in unjudged or any(m.verdict is not recorded for m in c.metrics):
            yield c


def _reproduce_row(model, c):
    '''A judged case's kernel and version, the command line, the references judged by:
    what a second engineer needs to rerun exactly that check.'''
    judged = [m for m in c.metrics if m.judged]
    kernel = ', '.join(f'{d.get("test", "?")} {d.get("version", "?")}' for d in c.docs
                       if isinstance(d, dict)) or '-'
    entries = sorted({m.entry.label.rsplit(' / ', 1)[0] for m in judged
                      if m.entry is not None})
    refs = '; '.join(entries) or (model.judgement.references if model.judgement else '')
    return [c.check, c.where, kernel, command_of(c, model.run.path) or '-', refs]


REPRODUCE_HEADER = ['check', 'partition', 'kernel and version', 'command line',
                    'judged by (reference file / entry)']


def command_of(case, run_path):
    '''The command line that produced a case's result: the job's `cobalt-bench judge
    --command`, else the line of ReFrame's job script (rfm_job.sh) that runs the kernel
    (a script that leaves the run directory `run_path` is not read: store.confine).'''
    if case.command:
        return case.command
    kernels = [d.get('test') for d in case.docs if isinstance(d, dict) and d.get('test')]
    for d in case.dirs:
        text = confine.read_text(os.path.join(d, reader.JOB_SCRIPT), confine.run_root(run_path))
        if text is None:
            continue
        for line in text.splitlines():
            text = line.strip()
            if not text or text.startswith(('#', 'export ', 'module ', 'cd ')):
                continue
            if any(k and (k in text) for k in kernels) and '--json' in text:
                return text
    return ''


#: The recorded (not judged) values a report lists; beyond, it says how many more there
#: are. They stay in the run's documents and report.json, which the report lists: a sweep
#: of 1,000 nodes records 200,000 diagnostics, a table no one reads (32 MB of HTML).
RECORDED_ROWS_MAX = 2000


def recorded_rows(model):
    '''(the recorded metrics' rows the report shows, how many more it leaves out).'''
    def make():
        shown, more, recorded = [], 0, Result.RECORDED
        for c in model.cases:
            if len(shown) < RECORDED_ROWS_MAX:
                shown += [_metric_row(c, m) for m in c.metrics if m.verdict is recorded]
            else:       # only counted: 1.2 million at 10,000 nodes
                more += _verdicts(c).count(recorded)
        return shown[:RECORDED_ROWS_MAX], more + max(0, len(shown) - RECORDED_ROWS_MAX)
    return _made_once(model, 'recorded rows', make)


def _verdicts(case, _verdict=operator.attrgetter('verdict')):
    '''[Result] of a case's metrics, listed without a Python step a metric.'''
    return list(map(_verdict, case.metrics))


def _judged_metrics(model):
    '''(case, metric) of the judged metrics, in the run's order, one at a time (a sweep of
    10,000 nodes has 280,000 of them). Metric.judged's test written out: a property call
    a metric cost more than the test.'''
    recorded = Result.RECORDED
    return ((c, m) for c in model.cases for m in c.metrics if m.verdict is not recorded)


def _metric_row(c, m):
    '''A metric's row of the report's tables (formatted only for the rows shown: a sweep
    of 10,000 nodes has 280,000 judged values). A metric of a case its required settings
    decided says so beside its own verdict: the case is counted as they made it.'''
    said = m.verdict.upper() if m.judged else Result.RECORDED.value
    if outcome.decided_by_settings(c):
        said += f' (the case: {c.result.upper()}, by required settings)'
    return [c.check, c.where, ', '.join(c.nodes), m.name, fmt(m.value),
            fmt(m.ref) if m.judged else '', fmt_bounds(m), m.unit, said, entry_text(m)]


METRIC_HEADER = ['check', 'partition', 'node(s)', 'metric', 'value', 'reference', 'bounds',
                 'unit', 'verdict', 'judged by (reference file / entry)']


# The summary lines and the "judged by" phrase are lists of segments, (kind, text), that
# the Markdown and the HTML render each by its own escaping rule: TEXT is the report's own
# words, VALUE a value from the results, CODE a value shown as code, BOLD a value in bold.
TEXT, VALUE, CODE, BOLD = 'text', 'value', 'code', 'bold'


def summary_lines(model):
    '''The report's summary: a list of lines, each a list of (kind, text) segments.'''
    run, s = model.run, model.run.session
    lines = []
    if run.kind == 'reframe':
        lines.append([(TEXT, 'Site '), (CODE, run.site), (TEXT, ', run '), (CODE, run.run_id),
                      (TEXT, ', state: '), (BOLD, run.state)]
                     + ([(VALUE, f' ({run.state_why})')] if run.state_why else []))
        if s:
            lines.append([(TEXT, 'Started '), (VALUE, s.get('time_start', '?')),
                          (TEXT, ', ended '), (VALUE, s.get('time_end', '?')),
                          (TEXT, ' on '), (VALUE, s.get('hostname', '?')),
                          (TEXT, '; ReFrame '), (VALUE, s.get('version', '?')),
                          (TEXT, '; '), (CODE, s.get('cmdline', ''))])
    else:
        j = model.judgement
        lines.append([(TEXT, 'Job documents in '), (CODE, run.path), (TEXT, ', judged by ')]
                     + ([(TEXT, 'site '), (CODE, j.site), (TEXT, ' ('), (CODE, j.references),
                         (TEXT, ')')] if j and j.site else
                        [(TEXT, 'no site (none named: '),
                         (CODE, 'cobalt-bench report --site SITE'), (TEXT, ')')]))
    lines.append([(TEXT, f'{len(model.cases)} check case(s), as judged: '),
                  (VALUE, outcome.count_text(model.counts))])
    shown, more = shown_preflight(model)
    for label, doc in shown:
        s = pf.summary(pf.findings_of(doc))
        required = model.judgement.compliance_preflight if model.judgement else []
        line = [(TEXT, 'Preflight '), (VALUE, label),
                (TEXT, ': its own summary, not the site\'s verdict: '),
                (VALUE, f'{s[pf.FAIL]} failed ({s["required_failed"]} of its required), '
                        f'{s[pf.UNKNOWN]} unknown, {s[pf.WARN]} warnings of '
                        f'{len(doc.get("findings", []))} settings'),
                (TEXT, '; the site requires ')]
        for i, p in enumerate(required):
            line += [(TEXT, ', ')] * bool(i) + [(CODE, p)]
        lines.append(line + ([] if required else [(TEXT, 'none of them')]))
    if more:
        lines.append([(TEXT, preflight_left_out_text(more))])
    return lines


def judged_by(j):
    '''The site's files a verdict comes from, as one phrase (segments, as the summary
    lines).'''
    if not j.site:
        return [(TEXT, 'no site')]
    out = [(TEXT, 'site '), (CODE, j.site), (TEXT, ': references '), (CODE, j.references)]
    if j.compliance and not j.demonstration:
        out += [(TEXT, ', compliance definition '), (CODE, j.compliance)]
    elif j.compliance:
        out += [(TEXT, ', '), (CODE, j.compliance), (TEXT, ' (demonstration)')]
    else:
        out += [(TEXT, ' (no compliance definition)')]
    return out


def finding_rows(findings):
    return [[f.status.upper(), f.level, f.setting, f.value, f.expected,
             f.fix if f.status != pf.PASS else ''] for f in findings]


FINDING_HEADER = ['status', 'level', 'setting', 'value', 'expected', 'fix']


def link_target(path, out_dir):
    '''A file the report links, relative to the report's directory where it is known.'''
    return os.path.relpath(path, out_dir) if out_dir else path
