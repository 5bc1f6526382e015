'''The `cobalt-bench` command line: report, judge, preflight, inventory, runs, nodes,
references, options, linktest-report (the console script `cobalt-bench`, pyproject.toml; also `python -m cobalt_bench`).

Exit status (as the kernels'): 0 compliant / nothing to flag, 1 not compliant (a failed
check, a failed or unknown setting, a regression), 2 usage error, 3 could not run (no
such run, unreadable results, a missing Python module).
'''

import os
import signal


def _interrupted_while_starting(signum, frame):
    # Ctrl-C while the command's modules load: one line, the contract's 130, no traceback
    # of an import half done (nothing is written yet). main's own handling takes over once
    # they are loaded.
    os.write(2, b'cobalt-bench: interrupted\n')
    os._exit(130)


# Before any other import: on a loaded machine even argparse's took long enough for a
# Ctrl-C 50 ms after the start to land in it, as a traceback (a CI run, 2026-12-03).
_SIGINT = signal.signal(signal.SIGINT, _interrupted_while_starting)

import argparse  # noqa: E402
import gc  # noqa: E402
import sys  # noqa: E402
from functools import partial  # noqa: E402

from .. import __version__  # noqa: E402
from .argtypes import (add_results_option, formats, nonempty_path, percent,  # noqa: E402
                       positive, run_spec)
from .status import catch_interrupts, exit_status  # noqa: E402

signal.signal(signal.SIGINT, _SIGINT)

EPILOG_REPORT = '''\
RUN is a run directory (results/<site>/<run-id>), <site>/<run-id>, a run id, <site>/latest
or latest (the newest complete run; the default). A directory of kernel JSON documents
without a ReFrame report (results/slurm, from the jobs/ scripts) or one such document is a
run too. The report goes to RUN/report/ (report.md, report.html, plots/*.png) unless -o.

The verdict comes first: COMPLIANT, NOT COMPLIANT, INCOMPLETE or DEMONSTRATION, with its
reasons, from the site's compliance.yaml and references.yaml (never a kernel's own
threshold); also in REPORT_DIR/verdict.json.

exit status: 0 COMPLIANT, or DEMONSTRATION with every check that ran passed; 1 NOT
COMPLIANT, INCOMPLETE, or DEMONSTRATION with a failed check or a partial run; 2 usage
error; 3 the run cannot be read, or the site's files judge nothing. With --compare: 0 no
regression, 1 regressions or damaged results (named), 3 a run cannot be read (a damaged
report.json) or the two runs share no check.'''

EPILOG_JUDGE = '''\
A reference metric that the result does not have, or a result whose check has no
reference on the partition, judges nothing: that is an error (exit 1, named), never a
pass. The kernel's own verdict (its built-in threshold, its exit code) is shown beside,
labelled as such.

With --exit-status (what every job script does, whatever the kernel's status): a
kernel killed by a signal or ended by a status the kernel contract does not define
failed, named ("killed by SIGKILL"); 2 and 3 are "not run"; a document that is absent or
unreadable after 0 or 1 is a lost result, a failure. The record is written in every case.

exit status: 0 every result met its references (or, a capacity check such as MemCapacity,
ran and is recorded for the report to compare with its peers), 1 one did not or could not
be judged (a kernel killed or crashed too), 2 usage error (with --exit-status 2: the kernel's), 3
cannot run (no such site or result; references.yaml or compliance.yaml that judge
nothing, with the file, check, partition and metric named; with --exit-status 3: the
kernel could not run here).'''

EPILOG_PREFLIGHT = '''\
Each setting is printed with its value, what is expected and the command that fixes it.
A setting whose file is absent (no cpufreq in a VM) is `unknown`, not a pass.

exit status: 0 every setting passes, 1 a setting fails or is unknown, 2 usage error,
3 cannot run.'''


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse exits 2 on usage errors; keep its message, add where to look.
        self.print_usage(sys.stderr)
        self.exit(2, f'{self.prog}: error: {message} (try --help)\n')



def _report_parser(sub, name, help):
    rep = sub.add_parser(name, help=help,
                         description='Write the compliance report of a run: summary verdict, '
                                     'every check x partition/node with value, reference '
                                     'bounds, unit and verdict, plots, and the preflight '
                                     'findings next to the failures they may explain.',
                         epilog=EPILOG_REPORT,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    rep.add_argument('run', nargs='?', default='latest', metavar='RUN', type=run_spec)
    rep.add_argument('--compare', nargs=2, metavar=('RUN_A', 'RUN_B'), type=run_spec,
                     help='list the regressions and improvements of RUN_B against RUN_A '
                          '(no report is written)')
    rep.add_argument('--tolerance', type=percent, default=5.0, metavar='PCT',
                     help='with --compare: changes within PCT percent are noise '
                          '(default: 5)')
    rep.add_argument('-o', '--output', metavar='DIR', type=nonempty_path,
                     help='where to write the report (default: RUN/report); with '
                          '--compare: a Markdown file for the comparison')
    rep.add_argument('--format', default='md,html', metavar='LIST', type=formats,
                     help='md, html or both (default: md,html)')
    rep.add_argument('--preflight', metavar='FILE', type=nonempty_path,
                     help='a preflight JSON document (cobalt-bench preflight --json) to use '
                          'besides those of the run\'s Preflight checks')
    add_results_option(rep)
    rep.add_argument('--site', metavar='SITE', type=nonempty_path,
                     help='judge by this site (a name under site-configs/, or a site '
                          'directory); default: the run\'s own site, for job documents '
                          'the site their job judged them by, else $COBALT_BENCH_SITE')


def _judge_parser(sub, name, help):
    jdg = sub.add_parser(name, help=help,
                         description='Judge kernel JSON documents (a Slurm job\'s result, '
                                     'results/slurm/) by a site\'s references.yaml, with '
                                     'ReFrame\'s own rule, as a ReFrame run of the site '
                                     'would: each result\'s verdict, the reference entry of '
                                     'every judged number, and the site\'s state of what was '
                                     'given (COMPLIANT, NOT COMPLIANT, INCOMPLETE, '
                                     'DEMONSTRATION).',
                         epilog=EPILOG_JUDGE,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    jdg.add_argument('results', nargs='+', metavar='RESULT', type=nonempty_path,
                     help='a kernel JSON document, or a directory of them')
    jdg.add_argument('--site', metavar='SITE', type=nonempty_path,
                     help='a site name (site-configs/<SITE>) or a site directory (required '
                          'but with --exit-status, where none records the job\'s end '
                          'unjudged)')
    jdg.add_argument('--exit-status', metavar='N',
                     help='the kernel\'s exit status as the job script got it ($?: 0, 1, 2, '
                          '3, 128+N for signal N, any other): one job\'s end, judged by the '
                          'one rule; RESULT is the document it was to write, which may be '
                          'absent; the record goes beside it (NAME.judged.json) unless '
                          '--json says where')
    jdg.add_argument('--kernel', metavar='NAME', type=nonempty_path,
                     help='with --exit-status: the kernel the job ran (default: its start '
                          'mark\'s, else the document\'s name)')
    jdg.add_argument('--node', metavar='NODE', type=nonempty_path,
                     help='with --exit-status: the node it ran on (default: '
                          '$SLURMD_NODENAME, else this host)')
    jdg.add_argument('--partition', metavar='PARTITION', type=nonempty_path,
                     help='the site partition that ran it (system:partition or partition; '
                          'default: $SLURM_JOB_PARTITION, else the site\'s only one)')
    jdg.add_argument('--json', metavar='FILE', type=nonempty_path,
                     help='also write the judgement as JSON (- for stdout only)')
    jdg.add_argument('--command', metavar='CMD', dest='command_line',
                     help='the command line that produced the result (recorded with the '
                          'judgement, shown by the report)')


def _preflight_parser(sub, name, help):
    pre = sub.add_parser(name, help=help,
                         description='Check the system settings the COBALT2 compliance '
                                     'document requires and recommends (CPU governor, turbo, '
                                     'jumbo frames, network buffers, NUMA layout, GPU/NIC '
                                     'PCIe links, real-time priority), from sysfs/procfs.',
                         epilog=EPILOG_PREFLIGHT,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    pre.add_argument('--root', default='/', metavar='DIR',
                     help='read a recorded tree (DIR/sys, DIR/proc) instead of this machine')
    pre.add_argument('-i', '--interface', action='append', metavar='IFACE',
                     help='an Ethernet interface under test (repeatable; default: every '
                          'physical Ethernet interface)')
    pre.add_argument('--json', metavar='FILE',
                     help='write the findings as a JSON document (- for stdout)')
    pre.add_argument('--record', metavar='DIR',
                     help='copy every sysfs/procfs file read into DIR (for --root elsewhere)')
    pre.add_argument('--no-probe', action='store_true',
                     help='do not run `chrt -f 1 true`; judge real-time priority from '
                          'procfs only')
    pre.add_argument('-q', '--quiet', action='store_true', help='print nothing')


def _inventory_parser(sub, name, help):
    from . import inventory
    inv = sub.add_parser(name, help=help,
                         description=inventory.DESCRIPTION, epilog=inventory.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    inventory.add_arguments(inv)


def _runs_parser(sub, name, help):
    runs = sub.add_parser(name, help=help,
                          description='List the runs of the results store: site, run id, '
                                      'state (complete, partial, running, damaged), checks '
                                      'passed/failed/damaged, and what could not be read.',
                          epilog='exit status: 0 listed, 1 a run listed has damaged results '
                                 '(named), 2 usage error, 3 the results store cannot be '
                                 'read (a --results or $COBALT_BENCH_RESULTS that is not a '
                                 'directory).')
    runs.add_argument('site', nargs='?', type=run_spec, help='only this site')
    runs.add_argument('--results', metavar='DIR', type=nonempty_path, help='the results store')


def _nodes_parser(sub, name, help):
    from . import drain, nodes
    nod = sub.add_parser(name, help=help,
                         description=nodes.DESCRIPTION, epilog=nodes.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    nodes.add_arguments(nod, nonempty_path, run_spec, positive)
    nod_sub = nod.add_subparsers(dest='nodes_action', metavar='ACTION', parser_class=_Parser)
    drain.add_arguments(nod_sub, argparse.RawDescriptionHelpFormatter, nonempty_path,
                        run_spec)


def _references_parser(sub, name, help):
    from . import references
    ref = sub.add_parser(name, help=help,
                         description='Work on a site\'s references.yaml: `derive` writes '
                                     'entries from known-good runs.')
    ref_sub = ref.add_subparsers(dest='references_command', metavar='ACTION',
                                 parser_class=_Parser, required=True)
    der = ref_sub.add_parser('derive', help='references from known-good runs, with their '
                                            'provenance; a diff, written with --write',
                             description=references.DESCRIPTION, epilog=references.EPILOG,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    references.add_arguments(der, nonempty_path, run_spec, percent)


def _health_parser(sub, name, help):
    from . import health
    hlt = sub.add_parser(name, help=help,
                         description=health.DESCRIPTION, epilog=health.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    health.add_arguments(hlt, nonempty_path, run_spec)


def _export_parser(sub, name, help):
    from . import export
    exp = sub.add_parser(name, help=help,
                         description='Write a run\'s judgement for the site\'s monitoring.')
    exp_sub = exp.add_subparsers(dest='export_command', metavar='FORMAT',
                                 parser_class=_Parser, required=True)
    prom = exp_sub.add_parser('prometheus', help='a node_exporter textfile (*.prom)',
                              description=export.DESCRIPTION, epilog=export.EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    export.add_arguments(prom, nonempty_path, run_spec)


def _options_parser(sub, name, help):
    from . import options
    opt = sub.add_parser(name, help=help,
                         description=options.DESCRIPTION, epilog=options.EPILOG,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_arguments(opt)


def _linktest_report_parser(sub, name, help):
    from . import linktest_report
    lt = sub.add_parser(name, help=help,
                        description=linktest_report.DESCRIPTION + ' Also installed as '
                                    '`cb-linktest-report`.',
                        epilog=linktest_report.EPILOG)
    linktest_report.add_arguments(lt)


# The commands, in the order `cobalt-bench --help` lists them: name, help line, the
# builder of its parser. Only the command run has its parser built (the others are
# listed by name and help): each command's module imports what that command needs,
# and a job step on a node (`cobalt-bench judge`, `--version`) loads no more, where
# a node held to 1 % of a CPU took a minute a command (tests/integration/slurm).
COMMANDS = {
    'report': ('write the compliance report of a run (md, html)', _report_parser),
    'judge': ('judge kernel JSON documents by a site\'s references', _judge_parser),
    'preflight': ('check the system settings the compliance document requires '
                  'and recommends', _preflight_parser),
    'inventory': ('record what this node is (CPU, memory, firmware, kernel, '
                  'drivers, packages) as JSON', _inventory_parser),
    'runs': ('list the runs in the results store and their state', _runs_parser),
    'nodes': ('list each node\'s last runs across the results store, flaky '
              'nodes marked', _nodes_parser),
    'references': ('derive references.yaml entries from known-good runs', _references_parser),
    'health': ('check this node in a few seconds (Slurm\'s '
               'HealthCheckProgram, a prolog, an epilog)', _health_parser),
    'export': ('write a run\'s judgement where the site\'s monitoring reads '
               'it (Prometheus)', _export_parser),
    'options': ('a kernel\'s options by name and value, checked, as its '
                'command line (for job scripts)', _options_parser),
    'linktest-report': ('show the slow links of a cb-linktest results file (text, '
                        'heat map, histogram)', _linktest_report_parser),
}


def command_word(argv):
    '''The command argv names: its first word that is not an option (cobalt-bench's own
    options, --version and --help, take no value); None without one.'''
    return next((word for word in argv if not word.startswith('-')), None)


def build_parser(command=None):
    '''The command line's parser, with the parser of `command` (a name of COMMANDS) built
    in full.'''
    parser = _Parser(prog='cobalt-bench',
                     description='cobalt-bench: compliance report, preflight settings check, '
                                 'node inventory, results store and cb-linktest report of '
                                 'the cobalt-bench suite.')
    parser.add_argument('--version', action='version',
                        version=f'cobalt-bench {__version__}')
    sub = parser.add_subparsers(dest='command', metavar='COMMAND', parser_class=_Parser)
    for name, (help, build) in COMMANDS.items():
        if name == command:
            build(sub, name, help)
        else:
            sub.add_parser(name, help=help)
    return parser


def _command(args, reexec):
    '''The call that runs the command `args` names, with its module imported; `reexec`: the
    command may run itself again from sys.argv (linktest-report's, for numpy).'''
    if args.command == 'preflight':
        from . import preflight
        return partial(preflight.command, root=args.root, interfaces=args.interface,
                       json_dest=args.json, record=args.record, probe=not args.no_probe,
                       quiet=args.quiet)
    if args.command == 'inventory':
        from . import inventory
        return partial(inventory.command, root=args.root, record=args.record,
                       json_dest=args.json, quiet=args.quiet)
    if args.command == 'linktest-report':
        from . import linktest_report
        return partial(linktest_report.run, args, reexec=['cobalt_bench', *sys.argv[1:]]
                       if reexec else None)
    if args.command == 'judge':
        from . import judge
        return partial(judge.command, args.site, args.results, args.partition, args.json,
                       args.command_line, quiet=args.json == '-',
                       exit_status=args.exit_status, kernel=args.kernel, node=args.node)
    if args.command == 'options':
        from . import options
        return partial(options.command, args.kernel, args.options, args.env)
    if args.command == 'runs':
        from . import runs
        return partial(runs.command, args.results, args.site)
    if args.command == 'nodes':
        from . import drain, nodes
        if args.nodes_action == 'drain':
            return partial(drain.drain_command, args.run, args.apply,
                           args.action_site or args.site, args.action_results or args.results)
        if args.nodes_action == 'resume':
            return partial(drain.resume_command, args.nodes, args.apply,
                           args.action_site or args.site, args.action_results or args.results)
        return partial(nodes.command, args.results, args.site, args.last, args.fails,
                       args.node, args.flaky)
    if args.command == 'references':
        from . import references
        return partial(references.derive_command, args.runs, args.site, args.tolerance,
                       args.metric, args.allow_bad_nodes, args.write, args.output,
                       args.results)
    if args.command == 'health':
        from . import health
        return partial(health.command, args.site, args.node, args.against, args.root,
                       not args.no_memory, args.drain, args.results, args.quiet)
    if args.command == 'export':
        from . import export
        return partial(export.prometheus_command, args.run, args.textfile_dir,
                       args.file_name, args.site, args.results)
    from . import report
    if args.compare:
        return partial(report.compare_command, args.compare[0], args.compare[1],
                       args.tolerance, args.output, args.results)
    return partial(report.command, args.run, args.output, args.format, args.preflight,
                   args.results, args.site)


def main(argv=None):
    # A command builds many small objects that live until it ends (a sweep's documents,
    # cases, rows): the cyclic collector's default passes over them cost about 15 % of a
    # 1,000-node report (bench/fleet-scale); collected less often, memory stays the same.
    gc.set_threshold(50_000, 20, 20)
    # The command's modules load under the start-up handler too: a Ctrl-C raised inside a
    # C extension's initialisation (orjson's) crashed the interpreter (SIGSEGV).
    previous = signal.signal(signal.SIGINT, _interrupted_while_starting)
    try:
        words = sys.argv[1:] if argv is None else argv
        parser = build_parser(command_word(words))
        args = parser.parse_args(words)
        if args.command is None:
            parser.print_help(sys.stderr)
            return 2
        call = _command(args, reexec=argv is None)
    finally:
        signal.signal(signal.SIGINT, previous)
    prog = f'cobalt-bench {args.command}'
    catch_interrupts(prog)
    return exit_status(prog, call)


if __name__ == '__main__':
    sys.exit(main())
