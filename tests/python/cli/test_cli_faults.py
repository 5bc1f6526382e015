'''Faults against the Python tools (issue 14, parts 3, 5 and 6): every damaged input, bad
option or failed write gets a clear message naming the file or option, the documented
exit status, and never a Python traceback; a damaged result never reads as a good one.

Table-driven. The inputs are real: a run of the suite made here by scripts/run-suite
(MemTest and Preflight on the site `local`) and a results file of a real cb-linktest run
under mpirun. Each case damages a copy of one of them the way a disk, a copy or a person
does (cut short, wrong shape, a wrong type in one entry, nested 100,000 deep) and runs the
command the user would. Most cases call the command's main() in this process (a
traceback there is an exception that fails the case); a few run the installed console
scripts to see the same from outside.
'''

import contextlib
import io
import json
import os
import re
import resource
import shutil
import subprocess

import pytest

from cobalt_bench import cli
from cobalt_bench.cli import linktest_report
from plugins.checkout import MPI_ENV, ROOT, clean_env

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
LINKTEST = os.path.join(ROOT, 'bin', 'cb-linktest')
LINKTEST_REPORT = os.path.join(ROOT, 'bin', 'cb-linktest-report')

MEMTEST_DOC = os.path.join('output', 'local', 'default', 'builtin', 'MemTest', 'mem-test.json')
PREFLIGHT_DOC = os.path.join('output', 'local', 'default', 'builtin', 'Preflight',
                             'preflight.json')


@pytest.fixture(autouse=True)
def _no_store_from_environment(monkeypatch):
    # The in-process commands read $COBALT_BENCH_RESULTS: not the caller's.
    monkeypatch.delenv('COBALT_BENCH_RESULTS', raising=False)


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return f'exit {self.rc}\n--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}'


def call(main, *args):
    '''main(argv) in this process: its exit status and output. Any exception but
    SystemExit (argparse's exit) propagates, and fails the case: that would have been a
    traceback.'''
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main([str(a) for a in args])
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    res = Result(rc, out.getvalue(), err.getvalue())
    assert 'Traceback' not in res.err, res
    return res


def cobalt(*args):
    return call(cli.main, *args)


def script(*args, preexec_fn=None, env=None):
    '''A console script as the user runs it: no traceback on stderr.'''
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True,
                          timeout=120, env=clean_env(env), preexec_fn=preexec_fn)
    res = Result(proc.returncode, proc.stdout, proc.stderr)
    assert 'Traceback' not in res.err, res
    return res


def not_compliant(res):
    '''The verdict is not a pass: no "COMPLIANT" on its own in the summary line.'''
    return not re.search(r'(?<!NOT )\bCOMPLIANT\b', res.out)


# ---- the real inputs ---------------------------------------------------------------------

@pytest.fixture(scope='module')
def good_run(tmp_path_factory):
    '''A real run of MemTest and Preflight on the site `local` (scripts/run-suite).'''
    results = tmp_path_factory.mktemp('results')
    proc = subprocess.run([os.path.join(ROOT, 'scripts', 'run-suite'), 'local', '-n',
                           'MemTest', '-n', 'Preflight', '--nocolor'],
                          env=clean_env(COBALT_BENCH_RESULTS=str(results)), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    m = re.search(r'^results: (.+)$', proc.stdout, re.M)
    assert proc.returncode == 0 and m, proc.stdout
    run = m.group(1)
    for name in (MEMTEST_DOC, PREFLIGHT_DOC):
        assert os.path.isfile(os.path.join(run, name)), name
    return run


@pytest.fixture(scope='module')
def npz(tmp_path_factory):
    '''The results file of a real cb-linktest run (2 ranks under mpirun).'''
    if not os.access(LINKTEST, os.X_OK) or not shutil.which('mpirun'):
        pytest.skip('bin/cb-linktest or mpirun missing')
    out = tmp_path_factory.mktemp('linktest') / 'lt.npz'
    proc = subprocess.run(['mpirun', '--oversubscribe', '-n', '2', LINKTEST, '-w', '2', '-n',
                           '10', '-s', '65536', '-o', str(out)], capture_output=True,
                          text=True, timeout=180, env=dict(os.environ, **MPI_ENV))
    assert proc.returncode == 0 and out.is_file(), proc.stdout + proc.stderr
    return str(out)


def copy_run(run, tmp_path, name='run'):
    dest = tmp_path / 'store' / 'local' / name
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns('report'))
    return dest


def write_text(path, data):
    path = str(path)
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)
    with open(path, 'wb') as fp:
        fp.write(data if isinstance(data, bytes) else data.encode())


# ---- damages -----------------------------------------------------------------------------
# Each: (id, what it does to the file's text or parsed JSON). `whole` damages leave no
# usable document; `entry` damages break one entry of an otherwise readable one.

def cut(fraction):
    def damage(text):
        return text[:int(len(text) * fraction)] if fraction < 1 else text[:-3]
    return damage


def replace_with(data):
    return lambda text: data


def edit(fn):
    '''A change of the parsed document; the text written back.'''
    def damage(text):
        doc = json.loads(text)
        fn(doc)
        return json.dumps(doc, indent=1)
    return damage


WHOLE_FILE = [
    ('empty', replace_with('')),
    ('cut-1pct', cut(0.01)),
    ('cut-30pct', cut(0.3)),
    ('cut-60pct', cut(0.6)),
    ('cut-end', cut(1)),
    ('list', replace_with('[1, 2]')),
    ('empty-list', replace_with('[]')),
    ('string', replace_with('"report"')),
    ('number', replace_with('42')),
    ('null', replace_with('null')),
    ('nested-lists', replace_with('[' * 100000)),
    ('nested-closed', replace_with('[' * 100000 + ']' * 100000)),
    ('nested-objects', replace_with('{"a":' * 100000)),
    ('not-utf8', replace_with(b'\xff\xfe\x00garbage\x80')),
    ('nul-bytes', replace_with(b'\x00' * 64)),
]

REPORT_WHOLE = WHOLE_FILE + [
    ('no-runs', replace_with('{"session_info": {}}')),
    ('runs-number', replace_with('{"runs": 5}')),
    ('session-list', edit(lambda d: d.__setitem__('session_info', []))),
    ('prefix-number', edit(lambda d: d['session_info'].__setitem__('prefix_output', 5))),
]


def the_case(doc, name='MemTest'):
    return next(tc for r in doc['runs'] for tc in r['testcases'] if tc['name'] == name)


def perf(doc, metric, index, value):
    tc = the_case(doc)
    key = next(k for k in tc['perfvalues'] if k.endswith(':' + metric))
    tc['perfvalues'][key][index] = value


def set_tc(key, value):
    return edit(lambda d: the_case(d).__setitem__(key, value))


REPORT_ENTRY = [
    ('lower-string', edit(lambda d: perf(d, 'percent_of_desired', 2, 'abc'))),
    ('upper-string', edit(lambda d: perf(d, 'desired_speed', 3, '0.1%'))),
    ('ref-string', edit(lambda d: perf(d, 'measured_speed', 1, 'eight'))),
    ('ref-list', edit(lambda d: perf(d, 'measured_speed', 1, [8]))),
    ('lower-bool', edit(lambda d: perf(d, 'measured_speed', 2, True))),
    ('lower-inf', edit(lambda d: perf(d, 'measured_speed', 2, float('inf')))),
    ('value-string', edit(lambda d: perf(d, 'measured_speed', 0, '8 Gbit/s'))),
    ('unit-number', edit(lambda d: perf(d, 'measured_speed', 4, 5))),
    ('entry-string', edit(lambda d: the_case(d)['perfvalues'].__setitem__(
        next(iter(the_case(d)['perfvalues'])), 'x'))),
    ('entry-empty', edit(lambda d: the_case(d)['perfvalues'].__setitem__(
        next(iter(the_case(d)['perfvalues'])), []))),
    ('perfvalues-list', set_tc('perfvalues', [])),
    ('result-number', set_tc('result', 5)),
    ('nodelist-string', set_tc('job_nodelist', 'n1')),
    ('tags-number', set_tc('tags', 5)),
    ('name-list', set_tc('display_name', ['MemTest'])),
    ('outputdir-number', set_tc('outputdir', 5)),
    ('jobid-object', set_tc('jobid', {})),
    ('testcase-string', edit(lambda d: d['runs'][0].__setitem__('testcases', ['x']
                                                                 + d['runs'][0]['testcases']))),
    ('run-string', edit(lambda d: d['runs'].append('x'))),
]

DOC_DAMAGE = WHOLE_FILE + [
    ('missing', None),
    ('directory', 'dir'),
    ('object-empty', replace_with('{}')),
    ('test-number', edit(lambda d: d.__setitem__('test', 5))),
    ('metrics-list', edit(lambda d: d.__setitem__('metrics', []))),
    ('metric-number', edit(lambda d: d['metrics'].__setitem__(next(iter(d['metrics'])), 5))),
    ('metric-value-string', edit(lambda d: d['metrics'][next(iter(d['metrics']))]
                                 .__setitem__('value', '8'))),
    ('metric-unit-list', edit(lambda d: d['metrics'][next(iter(d['metrics']))]
                              .__setitem__('unit', ['%']))),
    ('compliance-list', edit(lambda d: d.__setitem__('compliance', []))),
    ('passed-string', edit(lambda d: d['compliance'].__setitem__('passed', 'yes'))),
    ('host-number', edit(lambda d: d.__setitem__('host', 7))),
    ('config-list', edit(lambda d: d.__setitem__('config', []))),
]
MEMTEST_ONLY = [
    ('domains-string', edit(lambda d: d.__setitem__('domains', 'x'))),
    ('domain-string', edit(lambda d: d['domains'].__setitem__(0, 'x'))),
    ('domain-late-string', edit(lambda d: d['domains'][0].__setitem__('average_late_percent',
                                                                       'x'))),
]
PREFLIGHT_ONLY = [
    ('findings-number', edit(lambda d: d.__setitem__('findings', 5))),
    ('finding-string', edit(lambda d: d['findings'].__setitem__(0, 'x'))),
    ('finding-status-number', edit(lambda d: d['findings'][0].__setitem__('status', 7))),
    ('finding-status-unknown', edit(lambda d: d['findings'][0].__setitem__('status', 'ok'))),
    ('finding-no-fix', edit(lambda d: d['findings'][0].pop('fix'))),
    ('finding-affects-string', edit(lambda d: d['findings'][0].__setitem__('affects', 'mem'))),
]


def damage_file(path, damage):
    if damage is None:
        os.remove(path)
    elif damage == 'dir':
        os.remove(path)
        os.mkdir(path)
    else:
        with open(path, encoding='utf-8') as fp:
            text = fp.read()
        write_text(path, damage(text))


# ---- report.json ---------------------------------------------------------------------------

@pytest.mark.parametrize('name, damage', REPORT_WHOLE, ids=[c[0] for c in REPORT_WHOLE])
def test_damaged_report_json_whole(name, damage, good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    damage_file(run / 'report.json', damage)
    # report: says the run report is damaged (file named), reads the perflogs, never
    # COMPLIANT.
    res = cobalt('report', run, '-o', tmp_path / 'rep', '--format', 'md')
    assert res.rc in (1, 3), res
    assert 'report.json' in res.err and not_compliant(res), res
    # compare: refuses, naming the file, instead of matching none of the checks.
    res = cobalt('report', '--compare', good_run, run)
    assert res.rc == 3, res
    assert re.search(r'cannot compare: .*report\.json', res.err), res
    res = cobalt('report', '--compare', run, good_run)
    assert res.rc == 3 and 'report.json' in res.err, res
    # runs: this run damaged, with why; the good run listed as before.
    shutil.copytree(good_run, tmp_path / 'store' / 'local' / 'good')
    res = cobalt('runs', '--results', tmp_path / 'store')
    assert res.rc == 1, res
    assert re.search(r'^local\s+good\s+complete\s+2 pass$', res.out, re.M), res
    line = re.search(r'^local\s+run\s+(\S+)\s+.*$', res.out, re.M)
    assert line and line.group(1) == 'damaged' and 'report.json' in line.group(0), res


@pytest.mark.parametrize('name, damage', REPORT_ENTRY, ids=[c[0] for c in REPORT_ENTRY])
def test_damaged_report_json_entry(name, damage, good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    damage_file(run / 'report.json', damage)
    res = cobalt('report', run, '-o', tmp_path / 'rep', '--format', 'md')
    assert res.rc == 1, res
    assert 'report.json' in res.err and not_compliant(res), res
    md = (tmp_path / 'rep' / 'report.md').read_text()
    assert 'DAMAGED' in md and '## Damaged results' in md
    assert '**Verdict: COMPLIANT**' not in md
    # Named down to the entry.
    assert re.search(r'runs\[\d+\]', res.err), res
    # compare: the damage is said, and the exit status is not "no regression".
    res = cobalt('report', '--compare', good_run, run)
    assert res.rc != 0 and 'report.json' in res.err, res
    res = cobalt('runs', '--results', tmp_path / 'store')
    assert res.rc == 1 and re.search(r'^local\s+run\s+.*damaged: report\.json: runs\[',
                                     res.out, re.M), res


# ---- the kernels' JSON documents -------------------------------------------------------------

# The preflight document with fewer of the generic damages: the same loader reads both,
# and each of these reports draws the mem-test plot (a third of a second).
PREFLIGHT_SOME = ('empty', 'cut-30pct', 'cut-end', 'list', 'nested-lists', 'not-utf8',
                  'missing', 'object-empty', 'metrics-list')
DOC_CASES = ([('mem-test', MEMTEST_DOC, n, d) for n, d in DOC_DAMAGE + MEMTEST_ONLY]
             + [('preflight', PREFLIGHT_DOC, n, d) for n, d in DOC_DAMAGE + PREFLIGHT_ONLY
                if n in PREFLIGHT_SOME or (n, d) in PREFLIGHT_ONLY])


@pytest.mark.parametrize('kernel, doc, name, damage', DOC_CASES,
                         ids=[f'{c[0]}-{c[2]}' for c in DOC_CASES])
def test_damaged_kernel_document(kernel, doc, name, damage, good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    damage_file(run / doc, damage)
    res = cobalt('report', run, '-o', tmp_path / 'rep', '--format', 'md')
    assert res.rc == 1 and not_compliant(res), res
    assert doc in res.err, res
    md = (tmp_path / 'rep' / 'report.md').read_text()
    assert '**Verdict: COMPLIANT**' not in md
    check = 'MemTest' if kernel == 'mem-test' else 'Preflight'
    # The check's row of the Checks table: check, partition, node(s), result, ...
    checks = md.split('## Checks')[1].split('\n## ')[0]
    rows = [[c.strip() for c in line.strip('|').split(' | ')] for line in checks.splitlines()
            if line.startswith(f'| {check} | local:default |')]
    assert rows and rows[0][3] == 'DAMAGED', checks
    damaged = md.split('## Damaged results')[1].split('\n## ')[0]
    assert doc in damaged
    # Neither the preflight section nor the plot drops out silently.
    if kernel == 'preflight':
        assert '## Preflight: local:default: DAMAGED' in md
        assert f'Could not read `{doc}`' in md
    else:
        assert f'No plot from `{doc}`' in md
    res = cobalt('runs', '--results', tmp_path / 'store')
    assert res.rc == 1, res
    assert re.search(rf'^local\s+run\s+complete\s+.*1 damaged.*damaged: {re.escape(doc)}',
                     res.out, re.M), res


def test_truncated_documents_issue_example(good_run, tmp_path):
    '''The issue's case: every document under output/ truncated. It used to say COMPLIANT
    without the preflight section and the plot.'''
    run = copy_run(good_run, tmp_path)
    for doc in (MEMTEST_DOC, PREFLIGHT_DOC):
        damage_file(run / doc, cut(0.5))
    res = script(COBALT_BENCH, 'report', run)
    assert res.rc == 1 and not_compliant(res), res
    md = (run / 'report' / 'report.md').read_text()
    html = (run / 'report' / 'report.html').read_text()
    for doc in (MEMTEST_DOC, PREFLIGHT_DOC):
        assert doc in res.err and doc in md and doc in html
    assert 'mem-test per NUMA domain' not in md and f'No plot from `{MEMTEST_DOC}`' in md
    assert '## Preflight: local:default: DAMAGED' in md


def test_job_documents_damaged(good_run, tmp_path):
    # A directory of job documents (results/slurm) with one cut short: that job is listed
    # as damaged, the other read.
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    shutil.copy(os.path.join(good_run, MEMTEST_DOC), jobs / 'mem-test-41.json')
    shutil.copy(os.path.join(good_run, MEMTEST_DOC), jobs / 'mem-test-42.json')
    damage_file(jobs / 'mem-test-42.json', cut(0.5))
    res = cobalt('report', jobs, '-o', tmp_path / 'rep', '--format', 'md')
    assert res.rc == 1 and 'mem-test-42.json' in res.err and not_compliant(res), res
    md = (tmp_path / 'rep' / 'report.md').read_text()
    checks = md.split('## Checks')[1].split('\n## ')[0]
    assert re.search(r'^\| mem-test \| job 42 \| [^|]* \| DAMAGED \|', checks, re.M), md
    # One document given as RUN: an error naming it.
    res = cobalt('report', jobs / 'mem-test-42.json', '-o', tmp_path / 'rep2')
    assert res.rc == 3 and 'mem-test-42.json' in res.err, res


# ---- a non-numeric bound in references.yaml --------------------------------------------------
# ReFrame 4.10 writes a reference's bound into report.json and the perflog as it found it
# in references.yaml. The site configs now refuse such a file when ReFrame loads them
# (cobalt_bench.references), but runs made before, or with another configuration, hold
# it: recorded from such a run, a lower bound 'abc' of MemTest's percent_of_desired:
#   report.json  perfvalues 'local:default:percent_of_desired':
#                [99.99999999999997, 100.0, 'abc', None, '%', None], result 'fail'
#   perflog      ...|percent_of_desired_ref|percent_of_desired_lower_thres|...
#                ...|100.0|abc|...

def bad_bound_as_reframe_wrote_it(doc):
    tc = the_case(doc)
    key = next(k for k in tc['perfvalues'] if k.endswith(':percent_of_desired'))
    tc['perfvalues'][key][1:] = [100.0, 'abc', None, '%', None]
    tc['result'], tc['fail_phase'] = 'fail', 'performance'
    tc['fail_reason'] = ("TypeError: '>=' not supported between instances of 'str' and "
                         "'int'")


def test_non_numeric_reference_bound(good_run, tmp_path):
    run = copy_run(good_run, tmp_path)
    damage_file(run / 'report.json', edit(bad_bound_as_reframe_wrote_it))
    res = cobalt('report', run, '-o', tmp_path / 'rep', '--format', 'md')
    assert res.rc == 1 and not_compliant(res), res
    assert re.search(r"report\.json: .*MemTest on local:default.*percent_of_desired.*"
                     r"'abc' is not a number", res.err), res
    res = cobalt('runs', '--results', tmp_path / 'store')
    assert res.rc == 1 and "'abc' is not a number" in res.out, res
    res = script(COBALT_BENCH, 'runs', '--results', tmp_path / 'store')
    assert res.rc == 1 and "'abc' is not a number" in res.out, res
    # The same run without its report.json: the perflog holds the bound as written.
    os.remove(run / 'report.json')
    log = run / 'perflogs' / 'local' / 'default' / 'MemTest.log'
    header, *records = log.read_text().splitlines()
    col = header.split('|').index('percent_of_desired_lower_thres')
    fields = records[-1].split('|')
    fields[col] = 'abc'
    log.write_text('\n'.join([header, *records[:-1], '|'.join(fields)]) + '\n')
    res = cobalt('report', run, '-o', tmp_path / 'rep2', '--format', 'md')
    assert res.rc == 1 and not_compliant(res), res
    assert re.search(r"MemTest\.log: MemTest, percent_of_desired: lower threshold 'abc'",
                     res.err), res


# ---- compare ---------------------------------------------------------------------------------

def keep_only(check):
    return edit(lambda d: [r.__setitem__('testcases', [tc for tc in r['testcases']
                                                        if tc['name'] == check])
                           for r in d['runs']])


def test_compare_runs_sharing_no_check(good_run, tmp_path):
    a = copy_run(good_run, tmp_path, 'A')
    b = copy_run(good_run, tmp_path, 'B')
    damage_file(a / 'report.json', keep_only('MemTest'))
    damage_file(b / 'report.json', keep_only('Preflight'))
    res = cobalt('report', '--compare', a, b)
    assert res.rc == 3, res
    assert 'share no check' in res.err and 'MemTest' in res.err and 'Preflight' in res.err
    # A run against job documents of another kind: nothing in common either.
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    shutil.copy(os.path.join(good_run, MEMTEST_DOC), jobs / 'mem-test-7.json')
    res = cobalt('report', '--compare', good_run, jobs)
    assert res.rc == 3 and 'share no check' in res.err, res


# ---- options -----------------------------------------------------------------------------------

USAGE = [
    (['report', '--format=md,,html'], '--format'),
    (['report', '--format=md,'], '--format'),
    (['report', '--format=,'], '--format'),
    (['report', '--format='], '--format'),
    (['report', '--format', 'md,pdf'], '--format'),
    (['report', '-o', ''], '-o/--output'),
    (['report', '--output='], '-o/--output'),
    (['report', '-o', ' '], '-o/--output'),
    (['report', '--results', ''], '--results'),
    (['report', '--preflight', ''], '--preflight'),
    (['report', ''], 'RUN'),
    (['report', '--compare', '', 'x'], '--compare'),
    (['report', '--compare', 'x', ''], '--compare'),
    (['report', '--tolerance', 'nan'], '--tolerance'),
    (['runs', '--results', ''], '--results'),
    (['runs', ''], 'site'),
    (['preflight', '--json', ''], '--json'),
    (['preflight', '--record', ''], '--record'),
    (['linktest-report', 'x.npz', '--factor', 'nan'], '--factor'),
    (['linktest-report', 'x.npz', '--factor', 'inf'], '--factor'),
    (['linktest-report', 'x.npz', '--factor', '-inf'], '--factor'),
    (['linktest-report', 'x.npz', '--factor', 'NaN'], '--factor'),
    (['linktest-report', 'x.npz', '--factor', '1e999'], '--factor'),
    (['linktest-report', 'x.npz', '--factor', ''], '--factor'),
    (['linktest-report', 'x.npz', '--min-bandwidth', 'nan'], '--min-bandwidth'),
    (['linktest-report', 'x.npz', '--min-bandwidth', 'inf'], '--min-bandwidth'),
    (['linktest-report', 'x.npz', '--min-bandwidth', '-Infinity'], '--min-bandwidth'),
    (['linktest-report', 'x.npz', '--prefix', ''], '--prefix'),
    (['linktest-report', ''], 'file'),
]


@pytest.mark.parametrize('args, option', USAGE, ids=[' '.join(map(repr, a)) for a, _ in USAGE])
def test_usage_errors_exit_2(args, option, tmp_path):
    res = cobalt(*args)
    assert res.rc == 2, res
    assert option in res.err, res
    if args[0] == 'linktest-report':
        # The same options of cb-linktest-report.
        res = call(linktest_report.main, *args[1:])
        assert res.rc == 2 and option in res.err, res


def test_usage_errors_of_the_console_scripts():
    res = script(COBALT_BENCH, 'report', '--format=md,,html')
    assert res.rc == 2 and '--format' in res.err, res
    res = script(LINKTEST_REPORT, 'x.npz', '--factor', 'nan')
    assert res.rc == 2 and '--factor' in res.err, res


def test_runs_store_that_is_not_there(tmp_path, monkeypatch):
    res = cobalt('runs', '--results', '/nonexistent')
    assert res.rc == 3 and '--results /nonexistent: no such directory' in res.err, res
    (tmp_path / 'file').write_text('')
    res = cobalt('runs', '--results', tmp_path / 'file')
    assert res.rc == 3 and 'not a directory' in res.err, res
    monkeypatch.setenv('COBALT_BENCH_RESULTS', '/nonexistent')
    res = cobalt('runs')
    assert res.rc == 3 and 'COBALT_BENCH_RESULTS /nonexistent' in res.err, res
    # An empty store that exists: nothing to list, and that is no error.
    res = cobalt('runs', '--results', tmp_path)
    assert res.rc == 0 and 'no runs in' in res.out, res
    res = script(COBALT_BENCH, 'runs', '--results', '/nonexistent')
    assert res.rc == 3 and '/nonexistent' in res.err, res


PREFLIGHT_DAMAGE = [(n, d) for n, d in WHOLE_FILE + [
    ('other-kernel', replace_with('{"test": "mem-test", "metrics": {}}')),
    ('findings-string', edit(lambda d: d.__setitem__('findings', 'x')))]]


@pytest.mark.parametrize('name, damage', PREFLIGHT_DAMAGE,
                         ids=[c[0] for c in PREFLIGHT_DAMAGE])
def test_report_preflight_file_damaged(name, damage, good_run, tmp_path):
    pre = tmp_path / 'pre.json'
    shutil.copy(os.path.join(good_run, PREFLIGHT_DOC), pre)
    damage_file(pre, damage)
    res = cobalt('report', good_run, '--preflight', pre, '-o', tmp_path / 'rep')
    assert res.rc == 3 and f'--preflight {pre}' in res.err, res


# ---- preflight --record and --json ---------------------------------------------------------

SYSFS = os.path.join(ROOT, 'tests', 'data', 'sysfs', 'compliant')


@pytest.mark.parametrize('where, status, message', [
    ('under-a-file/rec', 2, 'cannot write there'),
    ('a-file', 2, 'exists and is not a directory'),
    ('/proc/cb-record', 2, 'cannot write there'),
    ('full', 2, 'not empty'),
])
def test_preflight_record_where_it_cannot(where, status, message, tmp_path):
    (tmp_path / 'under-a-file').write_text('')
    (tmp_path / 'a-file').write_text('')
    (tmp_path / 'full').mkdir()
    (tmp_path / 'full' / 'x').write_text('')
    dest = where if where.startswith('/') else str(tmp_path / where)
    res = cobalt('preflight', '--record', dest, '--no-probe', '-q')
    assert res.rc == status and f'--record {dest}' in res.err and message in res.err, res


def test_preflight_record_as_a_user_runs_it(tmp_path):
    (tmp_path / 'f').write_text('')
    res = script(COBALT_BENCH, 'preflight', '--record', tmp_path / 'f' / 'rec', '--no-probe')
    assert res.rc == 2 and str(tmp_path / 'f' / 'rec') in res.err, res


@pytest.mark.parametrize('where, message', [
    ('dir', 'is a directory'),
    ('nodir/p.json', 'no such directory'),
])
def test_preflight_json_bad_destination(where, message, tmp_path):
    (tmp_path / 'dir').mkdir()
    res = cobalt('preflight', '--root', SYSFS, '--json', tmp_path / where, '-q')
    assert res.rc == 2 and message in res.err and str(tmp_path / where) in res.err, res
    assert sorted(os.listdir(tmp_path)) == ['dir']


def test_preflight_json_failed_write_leaves_no_temporary_file(tmp_path):
    '''A write that fails half way (the file size limit, as a full disk would) keeps the
    earlier document whole and leaves no temporary file.'''
    dest = tmp_path / 'pre.json'
    dest.write_text('{"earlier": true}\n')

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
    res = script(COBALT_BENCH, 'preflight', '--root', SYSFS, '--json', dest, '-q',
                 preexec_fn=small_files)
    assert res.rc == 3 and f'cannot write {dest}' in res.err, res
    assert os.listdir(tmp_path) == ['pre.json']
    assert dest.read_text() == '{"earlier": true}\n'
    # Without the limit: written whole, readable by all (as the kernels' documents).
    res = script(COBALT_BENCH, 'preflight', '--root', SYSFS, '--json', dest, '-q')
    assert res.rc == 0, res
    assert json.loads(dest.read_text())['test'] == 'preflight'
    assert os.stat(dest).st_mode & 0o777 == 0o644 and os.listdir(tmp_path) == ['pre.json']


# ---- cb-linktest-report on damaged results files ------------------------------------------

def npz_cuts(size):
    return sorted({0, 1, 10, 22, 30, 64, 100, 200, 400} |
                  {size * k // 24 for k in range(1, 24)} | {size - 22, size - 1})


def test_linktest_report_truncated_npz(npz, tmp_path):
    data = open(npz, 'rb').read()
    assert len(data) > 1000
    for n in npz_cuts(len(data)):
        path = tmp_path / f'cut-{n}.npz'
        path.write_bytes(data[:n])
        res = call(linktest_report.main, path, '--no-png')
        assert res.rc == 3, (n, res)
        assert str(path) in res.err, (n, res)
        res = cobalt('linktest-report', path, '--no-png')
        assert res.rc == 3 and str(path) in res.err, (n, res)
    # The issue's case: the file cut in the middle (ZIP's directory at its end is gone).
    half = npz_cuts(len(data))[len(npz_cuts(len(data))) // 2]
    res = script(LINKTEST_REPORT, tmp_path / f'cut-{half}.npz', '--no-png')
    assert res.rc == 3 and f'cut-{half}.npz' in res.err and 'cut short' in res.err, res


def test_linktest_report_flipped_bytes(npz, tmp_path):
    # Any byte changed: a report or an error naming the file, never a traceback.
    data = open(npz, 'rb').read()
    for pos in range(0, len(data), max(1, len(data) // 60)):
        path = tmp_path / f'flip-{pos}.npz'
        path.write_bytes(data[:pos] + bytes([data[pos] ^ 0x5a]) + data[pos + 1:])
        res = call(linktest_report.main, path, '--no-png')
        assert res.rc in (0, 1, 3), (pos, res)
        if res.rc == 3:
            assert str(path) in res.err, (pos, res)


def rewrite_npz(src, dest, change):
    import numpy as np
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    np.savez(dest, **arrays)


def _meta(text):
    import numpy as np
    return lambda a: a.__setitem__('meta', np.array(text))


def _array(key, value):
    import numpy as np
    return lambda a: a.__setitem__(key, np.array(value))


NPZ_DAMAGE = [
    ('meta-not-json', _meta('{"options": ')),
    ('meta-list', _meta('[1, 2]')),
    ('meta-nested', _meta('[' * 100000)),
    ('options-list', _meta('{"options": [1]}')),
    ('size-string', _meta('{"options": {"size_messages": "64k"}}')),
    ('size-zero', _meta('{"options": {"size_messages": 0}}')),
    ('meta-two', _array('meta', ['{}', '{}'])),
    ('time-1d', _array('time', [1.0, 2.0])),
    ('time-strings', _array('time', [['a', 'b'], ['c', 'd']])),
    ('time-negative', _array('time', [[float('nan'), -1.0], [-1.0, float('nan')]])),
    ('time-zero', _array('time', [[float('nan'), 0.0], [0.0, float('nan')]])),
    ('hosts-one', _array('hosts', ['a'])),
    ('hosts-2d', _array('hosts', [['a', 'b']])),
    ('pairs-out-of-range', _array('slowest_pairs', [[0, 5]])),
    ('pairs-shape', _array('slowest_pairs', [0, 1, 2])),
    ('pairs-float', _array('slowest_pairs', [[0.5, 1.0]])),
    ('retest-missing', lambda a: a.pop('retest_time')),
    ('retest-short', _array('retest_time', [])),
    ('error-pairs-negative', _array('error_pairs', [[-1, 0]])),
    ('no-time', lambda a: a.pop('time')),
    ('no-meta', lambda a: a.pop('meta')),
]


@pytest.mark.parametrize('name, change', NPZ_DAMAGE, ids=[c[0] for c in NPZ_DAMAGE])
def test_linktest_report_malformed_npz(name, change, npz, tmp_path):
    path = tmp_path / 'bad.npz'
    rewrite_npz(npz, path, change)
    res = call(linktest_report.main, path, '--no-png')
    assert res.rc == 3 and str(path) in res.err, res


@pytest.mark.parametrize('content', [b'', b'not a zip file\n', 'dir'])
def test_linktest_report_not_a_results_file(content, tmp_path):
    path = tmp_path / 'x.npz'
    if content == 'dir':
        path.mkdir()
    else:
        path.write_bytes(content)
    res = call(linktest_report.main, path, '--no-png')
    assert res.rc == 3 and str(path) in res.err, res
