'''`cobalt-bench export prometheus`: a run's judgement as a node_exporter textfile
(report.prometheus), written whole.'''

import os

from ..errors import CannotRun, UsageError
from ..fileio import atomic_file
from ..report.model import judge
from ..report.prometheus import render_prometheus
from ..store import reader, runs
from .argtypes import add_results_option
from .terminal import say

DESCRIPTION = ('Write the judgement of a run (its verdict, bad nodes, each case\'s result '
               'and each metric per node, check and partition) in Prometheus\'s text '
               'format into a directory that node_exporter\'s textfile collector reads '
               '(--collector.textfile.directory).')

EPILOG = '''\
The file is written to a temporary name that does not end in .prom and renamed into
place, so the collector never reads half of it; an earlier file stays as it was when the
export fails. Its labels are a fixed set (site, node, partition, check, metric, unit,
result, state) with no free text; the run's id is one series, cobalt_bench_run_info.
Alert on staleness with node_exporter's own node_textfile_mtime_seconds, or on
cobalt_bench_run_timestamp_seconds (docs/prometheus.md has rules and a dashboard).

exit status: 0 written, 2 usage error, 3 the run or the directory cannot be read or
written. The run's verdict does not change it: the file says what it is.'''

#: The default file name: node_exporter reads every *.prom of the directory.
FILE_NAME = 'cobalt_bench.prom'


def add_arguments(parser, nonempty_path, run_spec):
    parser.add_argument('run', nargs='?', default='latest', metavar='RUN', type=run_spec,
                        help='the run (a run directory, a sweep\'s or jobs\' directory, '
                             'SITE/RUN_ID, or latest: the default)')
    parser.add_argument('--textfile-dir', metavar='DIR', type=nonempty_path, required=True,
                        help='node_exporter\'s --collector.textfile.directory')
    parser.add_argument('--file-name', metavar='NAME', default=FILE_NAME,
                        help=f'the file written there (default: {FILE_NAME})')
    parser.add_argument('--site', metavar='SITE', type=nonempty_path,
                        help='judge by this site (default: as cobalt-bench report does)')
    add_results_option(parser)


def prometheus_command(spec, textfile_dir, file_name, site=None, base=None):
    if os.sep in file_name or not file_name.endswith('.prom') or file_name.startswith('.'):
        raise UsageError(f'--file-name {file_name!r}: a plain file name ending in .prom '
                         '(node_exporter reads no other)')
    if not os.path.isdir(textfile_dir):
        raise CannotRun(f'{textfile_dir} is not a directory: create it, or name '
                        'node_exporter\'s --collector.textfile.directory')
    path = runs.resolve_run(spec, base)
    run = reader.load_run(path)
    judged = judge(run, site=site)
    text = render_prometheus(judged.run, judged.judgement, judged.judgement.site)
    dest = os.path.join(textfile_dir, file_name)
    try:
        with atomic_file(dest, 'w', prefix='.', suffix='.tmp') as fp:
            fp.write(text)
    except OSError as err:
        raise CannotRun(f'cannot write {dest}: {err}')
    say(f'{run.label}: {judged.judgement.headline} ({judged.judgement.count_text}); wrote {dest} '
        f'({text.count(chr(10))} lines)')
    return 0
