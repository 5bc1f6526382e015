'''`cobalt-bench references derive`: references.yaml entries from known-good runs, shown
as a diff and written atomically (site.derive).'''

import difflib
import os
import statistics
import sys
import textwrap
from dataclasses import replace

from .. import fileio
from ..errors import CannotRun
from ..judging import fleet as fl
from ..judging import verdict
from ..site import derive as dv
from ..site.loader import load_site
from ..store.job_record import with_job_judgements
from ..store.reader import load_run
from ..store.runs import resolve_run
from .terminal import say, say_lines

DESCRIPTION = textwrap.fill(
    'Derive references.yaml entries from known-good runs: per check, partition '
    'and metric, the median of the values across the runs and nodes as the '
    'reference, and a tolerance from their observed spread (or the percentage '
    'given), each entry preceded by a comment with its provenance (runs, dates, '
    'node and value counts, spread). Shows the unified diff against the site\'s '
    'references.yaml; writes only with --write.', 88)

_RULE, _MIN = f'{dv.MAD_K:g} x {dv.MAD_SCALE} x MAD', f'{dv.MIN_FRACTION:.1%}'

EPILOG = f'''\
RUN is a run directory, <site>/<run-id>, a run id, <site>/latest or a directory of kernel
JSON documents, as for `cobalt-bench report`. Give several to derive from all of them.

The tolerance, on each side the site's current entry judges (a lower bound for a rate,
an upper one for a time; without an entry, the sides ReFrame recorded, else both): with
--tolerance PCT, PCT percent of the reference; else the widest of {_RULE}
(the median absolute deviation), the farthest value observed on that side, and {_MIN}:
rounded up, so that every value it was derived from meets it. A reference of 0 gets
absolute bounds. The metrics derived are those the site's references judge for the
check and partition, those ReFrame judged in the runs, and any --metric. Indexed
entries ($index: OSU) are not derived; they are kept as written.

Known-good runs only: a partial run is refused; so is a run with a failed case (a
reference not met, a sanity failure, an unexpected pass, an abort, a damaged result, a
failure a retry hid) unless --allow-bad-nodes, which uses the run and leaves those cases'
values out (named). The derived file is the current one with the derived partition
entries in place of the old ones; every other entry is kept as written. It is read back
with the site's loader before it is shown. --write replaces the file atomically: a
failed write leaves the old file as it was.

exit status: 0 derived (the diff shown, and written with --write); 1 a run was refused
(named; nothing written); 2 usage error; 3 cannot run (no such run or site, nothing to
derive, the derived file does not read back, the file cannot be written).'''


def add_arguments(parser, nonempty_path, run_spec, percent):
    parser.add_argument('runs', nargs='+', metavar='RUN', type=run_spec,
                        help='a known-good run')
    parser.add_argument('--site', required=True, metavar='SITE', type=nonempty_path,
                        help='the site whose references.yaml is derived (a name under '
                             'site-configs/, or a site directory)')
    parser.add_argument('--tolerance', type=percent, metavar='PCT',
                        help='the tolerance in percent of the reference (default: from '
                             'the observed spread)')
    parser.add_argument('--metric', action='append', default=[], metavar='NAME',
                        type=run_spec, help='derive this metric too (repeatable)')
    parser.add_argument('--allow-bad-nodes', action='store_true',
                        help='use runs with failed cases or flagged nodes, leaving those '
                             'cases\' values out')
    parser.add_argument('--write', action='store_true',
                        help='write the derived file (atomically); without it only the '
                             'diff is shown')
    parser.add_argument('--output', metavar='FILE', type=nonempty_path,
                        help='where --write writes (default: the site\'s references.yaml)')
    parser.add_argument('--results', metavar='DIR', type=nonempty_path,
                        help='the results store RUN names are looked up in')


def _read(path):
    try:
        with open(path, encoding='utf-8') as fp:
            return fp.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise CannotRun(f'{path}: cannot read: {getattr(err, "strerror", None) or err}')


def _standing_out(d, site):
    '''({node}, [why]): the nodes that stand out from their peers in a metric about to be
    derived (a metric without a reference yet is compared too, by the fleet rule).'''
    nodes, whys = set(), []
    for e in d.entries:
        by_node = {}
        for smp in e.samples:
            by_node.setdefault(smp.node, []).append(smp.value)
        direction = (fl.Direction.LOWER if e.upper is None else
                     fl.Direction.HIGHER if e.lower is None else fl.Direction.EITHER)
        out = fl.peer_outliers({n: statistics.median(v) for n, v in by_node.items()},
                               e.unit or '', direction, site.compliance.outlier_threshold)
        if out:
            nodes |= {v.node for v in out}
            whys.append(f'{e.check} on {e.partition}, {e.metric}: ' + ', '.join(
                f'{v.node} at {v.value:g}' + (f' ({v.percent:+.0f} % of the peers\' median)'
                                              if v.percent is not None else '')
                for v in out) + ' stand(s) out from the peers')
    return nodes, whys


def derive_command(specs, site_spec, tolerance=None, metrics=(), allow_bad=False,
                   write=False, output=None, results=None):
    '''Exit status 0 derived, 1 a run refused.'''
    site = load_site(site_spec)
    # As the site judges them (job documents carry only their kernel's own verdict until
    # then: a preflight document's "not compliant" is a finding, not a failed case).
    # The verdict's fleet analysis (judging.fleet, the site's threshold) names the nodes
    # that failed or stand out from their peers.
    runs, flagged = [], set()
    for spec in specs:
        run = with_job_judgements(load_run(resolve_run(spec, results)))[0]
        judged = verdict.decide(run, site)
        runs.append(replace(run, cases=judged.cases))
        flagged.update((run.label, b.node) for b in judged.fleet.bad_nodes)
    d = dv.derive(runs, site, tolerance, allow_bad, flagged, metrics)
    # Every metric about to be derived is judged against the peers first.
    out, whys = _standing_out(d, site)
    if out and not allow_bad:
        d.refused += [('the runs', why) for why in whys]
    elif out:
        d = dv.derive(runs, site, tolerance, allow_bad, flagged | out, metrics)
        d.left_out += whys
    for run, why in d.refused:
        say(f'refused {run}: {why}', sys.stderr)
    if d.refused:
        say('nothing derived: references come from known-good runs only '
            '(--allow-bad-nodes uses them, leaving the bad cases\' values out)', sys.stderr)
        return 1
    for line in d.left_out:
        say(f'left out: {line}', sys.stderr)
    for note in d.notes:
        say(f'note: {note}', sys.stderr)
    if not d.entries:
        raise CannotRun('nothing to derive: the runs have no metric the site judges '
                        '(--metric NAME derives one)')
    current = _read(site.references_path)
    text = dv.merged_text(current, d)
    dv.read_back(text, site, d)
    dest = os.path.abspath(output) if output else site.references_path
    diff = list(difflib.unified_diff((current or '').splitlines(True),
                                     text.splitlines(True), site.references_path,
                                     f'{dest} (derived)'))
    if diff:
        say_lines(''.join(diff))
    else:
        say(f'{site.references_path}: no change')
    say(f'{len(d.entries)} reference(s) derived from {len(runs)} run(s)', sys.stderr)
    if not write:
        return 0
    before = _read(dest) if dest != site.references_path else current
    if before == text:
        say(f'{dest}: unchanged')
        return 0
    try:
        fileio.write_atomic(dest, text)
    except OSError as err:
        raise CannotRun(f'cannot write {dest}: {err.strerror or err} (the old file is as '
                        'it was)')
    say(f'wrote {dest}')
    return 0
