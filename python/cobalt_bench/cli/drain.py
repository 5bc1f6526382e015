'''`cobalt-bench nodes drain RUN` and `cobalt-bench nodes resume`: a run's bad nodes
drained through scontrol with a coded reason, and the nodes cobalt-bench drained resumed
once they have passed enough re-tests; both by the rule of judging.drain, dry runs unless
--apply, every action printed and logged (store.node_actions).'''

import os

from .. import site as site_mod
from ..judging import drain as dr
from ..judging import fleet as fl
from ..report.model import judge
from ..store import node_actions, reader, runs
from ..tools import slurm_nodes
from .argtypes import add_results_option
from .terminal import say

DRAIN_EPILOG = '''\
Each bad node of the run (the report's bad-nodes.txt: failed, lost, standing out from its
peers, or of a minority configuration) is drained with the reason
cobalt-bench:<check>:<metric>:<run-id> (its first cause). A node Slurm holds for another
reason is left alone and named: drained or down by someone else (their reason is never
overwritten), in a reservation (RESERVED, MAINT), rebooting, not responding, powered
down. A node already drained by cobalt-bench stays as it is.

Without --apply nothing changes: each node's decision is printed ("would drain"). With
--apply each drain is done with `scontrol update NodeName=N State=DRAIN Reason=...` and
every decision is appended to the results store's node-actions.jsonl. Draining needs
Slurm's operator rights (root, SlurmUser, or an AdminLevel of Operator).

exit status: 0 done (or nothing to do), 1 a drain scontrol refused (named), 2 usage
error, 3 cannot run (no scontrol, no such run).'''

RESUME_EPILOG = '''\
Only nodes Slurm has drained with a cobalt-bench reason are candidates; one drained,
down or failed for another reason is never resumed. A candidate is resumed once the
results store holds K clean re-tests of it since its drain (K: compliance.yaml
`fleet: {resume_after: K}`, default 2): `cobalt-bench health` records (results/health/),
which run on a drained node (Slurm's HealthCheckProgram, or by hand) where jobs cannot;
a failed re-test starts the count again. The drain's time is that of its line in
node-actions.jsonl.

Without --apply nothing changes ("would resume"). With --apply each resume is done with
`scontrol update NodeName=N State=RESUME` and every decision is logged.

exit status: 0 done (or nothing to do), 1 a resume scontrol refused, 2 usage error, 3
cannot run (no scontrol, no such site).'''


def add_arguments(sub, parser_class, nonempty_path, run_spec):
    drain = sub.add_parser('drain', help='drain the bad nodes of a run (dry run unless '
                                         '--apply)',
                           description='Drain the bad nodes of a run through scontrol, '
                                       'with a coded reason.',
                           epilog=DRAIN_EPILOG, formatter_class=parser_class)
    drain.add_argument('run', nargs='?', default='latest', metavar='RUN', type=run_spec)
    resume = sub.add_parser('resume', help='resume the nodes cobalt-bench drained that '
                                           'passed their re-tests (dry run unless --apply)',
                            description='Resume the nodes cobalt-bench drained, once they '
                                        'passed enough re-tests.',
                            epilog=RESUME_EPILOG, formatter_class=parser_class)
    resume.add_argument('nodes', nargs='*', metavar='NODE', type=run_spec,
                        help='only these nodes')
    # dest names of their own: the listing's --site and --results are the parent's
    for p in (drain, resume):
        p.add_argument('--apply', action='store_true', help='act (default: a dry run)')
        p.add_argument('--site', metavar='SITE', type=nonempty_path, dest='action_site',
                       help='judge by (drain) or read resume_after from (resume) this site')
        add_results_option(p, dest='action_results')


def _cause(bad):
    '''(check, metric) of a bad node's first cause, for its coded reason.'''
    cause = bad.causes[0]
    if cause.check == fl.CONFIGURATION and bad.differences:
        return cause.check, bad.differences[0].key
    if cause.metric:
        return cause.check, cause.metric
    return cause.check, 'lost' if 'did not finish' in cause.why or 'left no' in cause.why \
        else 'failed'


def _act(base, d, apply, action, run_id, by):
    '''Do (with `apply`) and log a Decision; '' or scontrol's error.'''
    error = ''
    if apply and d.changes:
        error = action(d.node) if d.act is dr.Act.RESUME else action(d.node, d.reason)
    verb = {dr.Act.DRAIN: 'drain', dr.Act.RESUME: 'resume'}.get(d.act)
    if verb:
        done = (f'{verb}ed' if verb == 'drain' else 'resumed') if apply else f'would {verb}'
        say(f'{d.node}: {"FAILED to " + verb if error else done}: {d.reason} ({d.why})'
            + (f': {error}' if error else ''))
    else:
        say(f'{d.node}: {d.act.value}: {d.why}')
    if apply:
        node_actions.log_decision(base, d, run_id, d.changes and not error, error, by)
    return error


def drain_command(spec, apply=False, site=None, results=None):
    base = runs.results_base(results)
    path = runs.resolve_run(spec, results)
    run = reader.load_run(path)
    judgement = judge(run, site=site).judgement
    bad = judgement.fleet.bad_nodes
    run_id = run.run_id or os.path.basename(os.path.normpath(run.path))
    say(f'{run.label}: {judgement.headline} ({judgement.count_text}); {len(bad)} bad node(s)'
        + ('' if apply else ' (dry run: --apply to act)'))
    names = [b.node for b in bad if slurm_nodes.NODE_NAME.fullmatch(b.node)]
    for b in bad:
        if b.node not in names:
            say(f'{b.node!r}: leave: not a node name Slurm reads as one host')
    if not names:
        return 0
    states = slurm_nodes.node_states(names)
    errors = 0
    for b in bad:
        if b.node in names:
            d = dr.drain_decision(b.node, states.get(b.node), dr.coded_reason(
                *_cause(b), run_id))
            errors += bool(_act(base, d, apply, slurm_nodes.drain, run_id,
                                'cobalt-bench nodes drain'))
    return 1 if errors else 0


def resume_command(nodes=(), apply=False, site=None, results=None):
    base = runs.results_base(results)
    site_spec = site or os.environ.get('COBALT_BENCH_SITE')
    needed = site_mod.load_site(site_spec).compliance.resume_after if site_spec else \
        site_mod.compliance.DEFAULT_RESUME_AFTER
    states = slurm_nodes.node_states(nodes) if nodes else slurm_nodes.all_node_states()
    ours = {n: s for n, s in states.items() if s.drained and dr.is_ours(s.reason)}
    for n in nodes:
        if n not in ours:
            say(f'{n}: leave: ' + (f'not drained by cobalt-bench ({states[n].text}'
                                    + (f', reason "{states[n].reason}")' if states[n].reason
                                       else ')') if n in states else 'Slurm does not know it'))
    say(f'{len(ours)} node(s) drained by cobalt-bench; {needed} clean re-test(s) needed'
        + ('' if apply else ' (dry run: --apply to act)'))
    errors = 0
    for node, state in sorted(ours.items(), key=lambda ns: fl.host_key(ns[0])):
        drained = node_actions.last_drain(base, node)
        since = drained['time'] if drained else None
        if since is None:
            d = dr.Decision(node, dr.Act.KEEP, state.reason, 'no drain of it in '
                            f'{os.path.join(base, node_actions.ACTIONS)}: its re-tests '
                            'cannot be counted')
        else:
            records = node_actions.health_records(base, node, since)
            clean = 0
            for _, passed in reversed(records):
                if not passed:
                    break
                clean += 1
            d = dr.resume_decision(node, state, clean, needed)
        errors += bool(_act(base, d, apply, slurm_nodes.resume, '',
                            'cobalt-bench nodes resume'))
    return 1 if errors else 0

