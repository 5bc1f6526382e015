'''`cobalt-bench report`: built from real runs of the suite (scripts/run-suite on the site
`local`, and on `local-slurm` through the running Slurm cluster), a failing reference, a
compare with an injected regression, the plots of the other families from real or recorded
documents, and the HTML page rendered by headless Chromium.'''

import base64
import copy
import json
import os
import re
import shutil
import subprocess

import pytest

from cobalt_bench.judging import verdict as cb_verdict
from cobalt_bench.report import markdown as cb_markdown
from cobalt_bench.report import model as cb_report
from cobalt_bench.report import plots as cb_plots
from cobalt_bench.site.bounds import Bounds
from cobalt_bench.store import model as cb_results
from cobalt_bench.store import reader as cb_reader
from cobalt_bench.store.result import Result
from plugins.checkout import REFRAME, ROOT, clean_env


SPEC = os.path.join(os.path.dirname(ROOT), 'shared', 'spec', 'osu-benchmarks-sjtu.rst')
CHECKS = ['-n', 'MemTest', '-n', 'Preflight']     # the suite's checks this test is about


def run_suite(site, results, env=None, timeout=600):
    '''scripts/run-suite SITE (only this test's checks); the run directory it made.'''
    env = clean_env(env, COBALT_BENCH_RESULTS=str(results))
    proc = subprocess.run([os.path.join(ROOT, 'scripts', 'run-suite'), site, *CHECKS,
                           '--nocolor'], env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    m = re.search(r'^results: (.+)$', proc.stdout, re.M)
    assert m, proc.stdout
    return proc, m.group(1)


def cobalt_bench(*args, env=None, timeout=120):
    return subprocess.run([os.path.join(ROOT, 'bin', 'cobalt-bench'), *map(str, args)],
                          text=True, capture_output=True, timeout=timeout,
                          env=clean_env(env))


@pytest.fixture(scope='module')
def local_run(tmp_path_factory):
    results = tmp_path_factory.mktemp('results')
    proc, run_dir = run_suite('local', results)
    assert proc.returncode == 0, proc.stdout
    return run_dir


@pytest.fixture(scope='module')
def slurm_run(tmp_path_factory, slurm_cluster):
    results = tmp_path_factory.mktemp('results-slurm')
    proc, run_dir = run_suite('local-slurm', results, env=slurm_cluster.env)
    assert proc.returncode == 0, proc.stdout
    return run_dir


def md_rows(md, check, section=None):
    '''The Markdown table rows of a check (in the section `## <section>` only, if
    given): lists of cells.'''
    if section is not None:
        md = md.split(f'\n## {section}\n')[1].split('\n## ')[0]
    return [[c.strip() for c in line.strip('|').split(' | ')]
            for line in md.splitlines() if line.startswith(f'| {check} |')]


def mem_test_doc(run_dir, partition_dir):
    path = os.path.join(run_dir, 'output', partition_dir, 'builtin', 'MemTest', 'mem-test.json')
    with open(path) as fp:
        return json.load(fp)


def test_report_of_a_local_run(local_run, tmp_path):
    proc = cobalt_bench('report', local_run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = os.path.join(local_run, 'report')
    assert f'wrote {out}/report.md' in proc.stdout
    with open(os.path.join(out, 'report.md')) as fp:
        md = fp.read()
    # The site `local` is a demonstration: never COMPLIANT, and the verdict says why first.
    assert '**Verdict: DEMONSTRATION**' in md
    assert md.index('**Verdict: DEMONSTRATION**') < md.index('Why:') < md.index('## Checks')
    assert "1. site 'local' is a demonstration" in md
    assert proc.stdout.startswith('verdict: DEMONSTRATION (not a compliance verdict')
    doc = mem_test_doc(local_run, 'local/default')
    rows = {r[3]: r for r in md_rows(md, 'MemTest') if len(r) == 10}
    # value, reference, bounds, unit, verdict of the judged metrics; values from the run;
    # and the reference file and entry each was judged by.
    value, ref, bounds, unit, verdict, entry = rows['percent_of_desired'][4:10]
    assert (ref, bounds, unit, verdict) == ('100', '>= 99.75', '%', 'PASS')
    assert entry == "local/references.yaml: MemTest / 'local:default' / percent_of_desired"
    # What reproduces it: kernel version and the command line ReFrame ran.
    (repro,) = md_rows(md, 'MemTest', 'Reproducing a verdict')
    assert repro[2] == f'mem-test {doc["version"]}'
    assert repro[3] == 'mem-test --stations 1 --desired-rate 8 --duration 3 --json mem-test.json'
    # The kernel's own verdict is there, labelled, apart from the site's.
    (checks,) = md_rows(md, 'MemTest', 'Checks')
    assert checks[3] == 'PASS' and checks[5] == 'mem-test: passed (its threshold 99.75)'
    verdict_doc = json.loads(open(os.path.join(out, 'verdict.json')).read())
    assert list(verdict_doc)[0] == 'state' and verdict_doc['state'] == 'DEMONSTRATION'
    assert float(value) == pytest.approx(doc['metrics']['percent_of_desired']['value'],
                                         rel=1e-3)
    assert rows['desired_speed'][6] == '7.992 .. 8.008'
    assert rows['measured_speed'][2] == doc['host']
    # Recorded metrics too, and the preflight findings of the node.
    assert md_rows(md, 'MemTest') and any(r[3] == 'average_late' for r in md_rows(md, 'MemTest'))
    assert '## Preflight: local:default' in md
    assert '| cpu.governor |' in md
    # The mem-test plot: one bar pair per NUMA domain.
    png = os.path.join(out, 'plots', 'mem-test-numa.png')
    with open(png, 'rb') as fp:
        assert fp.read(8) == b'\x89PNG\r\n\x1a\n'
    assert '![mem-test per NUMA domain](plots/mem-test-numa.png)' in md
    # `latest` finds the same run; `runs` lists it as complete.
    proc = cobalt_bench('report', '--results', os.path.dirname(os.path.dirname(local_run)),
                        '-o', tmp_path / 'latest', 'latest')
    assert proc.returncode == 0 and os.path.basename(local_run) in proc.stdout
    proc = cobalt_bench('runs', '--results', os.path.dirname(os.path.dirname(local_run)))
    assert re.search(rf'local\s+{os.path.basename(local_run)}\s+complete', proc.stdout)


def test_report_of_a_slurm_run(slurm_run):
    # run-suite wrote the whole report already; --format md rewrites the Markdown only
    html = os.path.join(slurm_run, 'report', 'report.html')
    html_before = os.stat(html).st_mtime_ns if os.path.exists(html) else None
    proc = cobalt_bench('report', slurm_run, '--format', 'md')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(os.path.join(slurm_run, 'report', 'report.md')) as fp:
        md = fp.read()
    assert (os.stat(html).st_mtime_ns if os.path.exists(html) else None) == html_before
    rows = md_rows(md, 'MemTest')
    checks = md_rows(md, 'MemTest', 'Checks')
    assert sorted(r[1] for r in checks) == ['local-slurm:arm', 'local-slurm:x86']
    for part in ('x86', 'arm'):
        doc = mem_test_doc(slurm_run, f'local-slurm/{part}')
        # The node the job ran on (n1 or n2, Slurm's choice) is the document's host.
        measured = [r for r in rows if len(r) == 10 and r[1] == f'local-slurm:{part}'
                    and r[3] == 'measured_speed']
        # arm: the emulated aarch64 node a1 when its root is built (scripts/arm64-root)
        nodes = ('n1', 'n2', 'a1') if part == 'arm' else ('n1', 'n2')
        assert measured and measured[0][2] == doc['host'] and doc['host'] in nodes
    # Preflight runs where cobalt-bench's Python runs: on a1 it is skipped, saying why
    preflight = md_rows(md, 'Preflight', 'Checks')
    ran = [r[1] for r in preflight if 'SKIP' not in r]
    assert 'local-slurm:x86' in ran
    assert md.count('## Preflight: local-slurm:') == len(ran)


def test_failing_reference_shows_fail_with_bounds(repo_root, tmp_path):
    # A copy of the site whose mem-test reference no machine meets; a real run with it.
    sites = tmp_path / 'site-configs'
    shutil.copytree(repo_root / 'site-configs', sites,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    import yaml
    path = sites / 'local' / 'references.yaml'
    refs = yaml.safe_load(path.read_text())
    refs['MemTest']['local:default']['measured_speed'] = [1000.0, -0.05, None, 'Gbit/s']
    path.write_text(yaml.safe_dump(refs))
    env = clean_env(COBALT_BENCH_ROOT=str(repo_root), COBALT_BENCH_RESULTS=str(tmp_path),
                    COBALT_BENCH_RUN_ID='failing')
    proc = subprocess.run([*REFRAME, '-C', str(sites / 'local' / 'config.py'),
                           '-c', str(repo_root / 'reframe_checks'), *CHECKS, '-r',
                           '--exec-policy', 'serial', '--nocolor'], cwd=str(tmp_path),
                          env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600)
    assert proc.returncode == 1, proc.stdout
    run_dir = tmp_path / 'local' / 'failing'
    # Without --site the run is judged by the installed `local`: the copy report.json
    # names is named, never executed (issue 27).
    rep = cobalt_bench('report', run_dir, '-o', tmp_path / 'by-installed')
    assert (f'the run was made with site configuration {sites / "local" / "config.py"}; '
            f'judged by {repo_root / "site-configs" / "local"}') in rep.stdout, rep.stdout
    rep = cobalt_bench('report', run_dir, '--site', sites / 'local')
    # A demonstration site (a copy of `local`): the verdict stays DEMONSTRATION, says that a
    # check failed its references, and exits 1.
    assert rep.returncode == 1
    assert 'checks that ran failed their references' in rep.stdout
    md = (run_dir / 'report' / 'report.md').read_text()
    assert '**Verdict: DEMONSTRATION**' in md
    assert re.search(r'^1\. FAILED: MemTest on local:default .*measured_speed = .* required '
                     r'>= 950', md, re.M)
    row = [r for r in md_rows(md, 'MemTest') if len(r) == 10 and r[3] == 'measured_speed'][0]
    assert row[5:9] == ['1000', '>= 950', 'Gbit/s', 'FAIL']
    # The copy's file is named: the reference the run was judged by.
    assert row[9] == "local/references.yaml: MemTest / 'local:default' / measured_speed"
    assert str(sites / 'local' / 'references.yaml') in md
    assert md_rows(md, 'MemTest', 'Checks')[0][3] == 'FAIL'
    # The failure with its bounds, and the preflight findings that may explain it (this
    # VM's: no cpufreq, so the governor is unknown) beside it.
    failures = md.split('## Failures and likely causes')[1].split('\n## ')[0]
    assert '`measured_speed` =' in failures and 'bounds >= 950' in failures
    assert 'Preflight findings that may explain it' in failures
    assert '| cpu.governor |' in failures or '| cpu.turbo |' in failures
    assert '| net.core.rmem_max |' not in failures     # a network setting: not mem-test's
    html = (run_dir / 'report' / 'report.html').read_text()
    assert 'v-DEMONSTRATION' in html and '&gt;= 950' in html


def inject(run_dir, dest, change):
    '''A copy of a run with its report.json changed by change(testcases).'''
    shutil.copytree(run_dir, dest)
    path = os.path.join(dest, 'report.json')
    with open(path) as fp:
        report = json.load(fp)
    change([tc for r in report['runs'] for tc in r['testcases']])
    with open(path, 'w') as fp:
        json.dump(report, fp)
    return dest


def scale(metric, factor):
    def change(testcases):
        for tc in testcases:
            for key, entry in tc['perfvalues'].items():
                if key.endswith(f':{metric}'):
                    entry[0] *= factor
    return change


def test_compare_flags_an_injected_regression(local_run, tmp_path):
    site_dir = tmp_path / 'results' / 'local'
    site_dir.mkdir(parents=True)
    a = shutil.copytree(local_run, site_dir / 'A')
    b = inject(local_run, site_dir / 'B', scale('measured_speed', 0.7))
    proc = cobalt_bench('report', '--compare', a, b, '-o', tmp_path / 'cmp.md')
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = [x for x in proc.stdout.splitlines() if '| measured_speed |' in x]
    assert line and line[0].startswith('| REGRESSION | MemTest | local:default |')
    assert '-30.0%' in line[0]
    assert (tmp_path / 'cmp.md').read_text() == proc.stdout
    # By site/run id through the store, and the other way round an improvement.
    proc = cobalt_bench('report', '--results', tmp_path / 'results', '--compare',
                        'local/B', 'local/A')
    assert proc.returncode == 0
    assert '| IMPROVEMENT | MemTest | local:default | measured_speed |' in proc.stdout
    # Lower is better for lateness: more late blocks is a regression.
    c = inject(local_run, site_dir / 'C', lambda tcs: [
        e.__setitem__(0, 5.0) for tc in tcs for k, e in tc['perfvalues'].items()
        if k.endswith(':average_late')])
    proc = cobalt_bench('report', '--compare', a, c)
    assert proc.returncode == 1
    assert '| REGRESSION | MemTest | local:default | average_late |' in proc.stdout


def test_compare_tolerance_and_identical_runs(local_run, tmp_path):
    a = shutil.copytree(local_run, tmp_path / 'A')
    b = inject(local_run, tmp_path / 'B', scale('measured_speed', 0.97))
    same = cobalt_bench('report', '--compare', a, local_run)
    assert same.returncode == 0 and 'No change beyond the tolerance' in same.stdout
    within = cobalt_bench('report', '--compare', a, b)          # 3% < 5% default
    assert within.returncode == 0 and 'measured_speed' not in within.stdout
    beyond = cobalt_bench('report', '--compare', a, b, '--tolerance', '1')
    assert beyond.returncode == 1 and '| measured_speed |' in beyond.stdout


def test_result_change_is_a_regression(local_run, tmp_path):
    def fail(testcases):
        for tc in testcases:
            if tc['name'] == 'MemTest':
                tc['result'], tc['fail_phase'] = 'fail', 'performance'
    b = inject(local_run, tmp_path / 'B', fail)
    proc = cobalt_bench('report', '--compare', local_run, b)
    assert proc.returncode == 1
    assert '| REGRESSION | MemTest | local:default | (result) | pass | fail |' in proc.stdout


def test_html_renders_in_headless_chromium(local_run, tmp_path):
    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    if chromium is None:
        pytest.skip('headless Chromium not installed (Debian: chromium)')
    proc = cobalt_bench('report', local_run, '-o', tmp_path / 'rep')
    assert proc.returncode == 0
    page = tmp_path / 'rep' / 'report.html'
    html = page.read_text()
    # Self-contained: nothing but data: URIs and in-page anchors.
    refs = re.findall(r'(?:src|href)\s*=\s*["\']([^"\']*)', html)
    assert refs and all(r.startswith('data:') or r.startswith('#') for r in refs), refs
    assert not re.search(r'<script|<link|@import|url\(', html)
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', html)
    assert images and all(base64.b64decode(i)[:8] == b'\x89PNG\r\n\x1a\n' for i in images)

    shot = tmp_path / 'shot.png'
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
             '--host-resolver-rules=MAP * ~NOTFOUND',      # nothing may come from a network
             f'--user-data-dir={tmp_path / "profile"}']
    run = subprocess.run([chromium, *flags, '--window-size=1280,3000',
                          f'--screenshot={shot}', page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr
    dom = subprocess.run([chromium, *flags, '--dump-dom', page.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert 'cobalt-bench compliance report' in dom
    # The headline, as the browser has it: the first thing after the title is the verdict
    # and its reasons, and it is not COMPLIANT.
    body = re.sub(r'<[^>]+>', ' ', dom.split('<h1>', 1)[1])
    words = ' '.join(body.split())
    assert re.match(r'cobalt-bench compliance report: \S+ DEMONSTRATION DEMONSTRATION \(not a '
                    r'compliance verdict; .*\) Why: site \'local\' is a demonstration', words), \
        words[:400]
    assert '>COMPLIANT<' not in dom

    # The screenshot shows the page: the verdict's green, and the plot's bars (the mem-test
    # plot draws measured speed in #1f77b4), which only an image that loaded can show.
    import matplotlib.image
    pixels = (matplotlib.image.imread(str(shot))[:, :, :3] * 255).round()
    assert pixels.shape[:2] == (3000, 1280)

    def count(rgb, tol=8):
        return int((abs(pixels - rgb).max(axis=2) <= tol).sum())
    assert count((0x15, 0x65, 0xc0)) > 500         # verdict badge (DEMONSTRATION, blue)
    assert count((0x2e, 0x7d, 0x32)) < 50          # no green COMPLIANT badge
    assert count((0x1f, 0x77, 0xb4)) > 2000        # measured bars of the plot
    assert count((255, 255, 255)) < pixels.shape[0] * pixels.shape[1]


# ---- plug-in points of the other families, from real or recorded documents -----------------

def test_linktest_heat_map_from_a_real_run(repo_root, tmp_path):
    linktest = repo_root / 'bin' / 'cb-linktest'
    if not os.access(linktest, os.X_OK) or not shutil.which('mpirun'):
        pytest.skip('cb-linktest or mpirun not built/installed')
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT='1', OMPI_ALLOW_RUN_AS_ROOT_CONFIRM='1')
    run = subprocess.run(['mpirun', '--oversubscribe', '--bind-to', 'none', '-np', '4',
                          str(linktest), '-w', '2', '-n', '20', '-s', '65536',
                          '--json', 'cb-linktest-7.json', '--output', 'lt.npz'],
                         cwd=str(jobs), env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stdout + run.stderr
    proc = cobalt_bench('report', jobs, '-o', tmp_path / 'rep')
    assert proc.returncode in (0, 1), proc.stderr
    md = (tmp_path / 'rep' / 'report.md').read_text()
    assert '| cb-linktest | job 7 |' in md
    assert 'cb-linktest pair bandwidth' in md
    assert list((tmp_path / 'rep' / 'plots').glob('linktest-*.png'))


def osu_spec_table(column):
    '''The SJTU document's recorded osu_latency table, one cluster's column, as OSU prints
    it.'''
    with open(SPEC, encoding='utf-8') as fp:
        text = fp.read()
    block = text.split('# OSU MPI Latency Test')[1].split('OSU MPI Multiple')[0]
    rows = [line.split() for line in block.splitlines() if line.strip()[:1].isdigit()]
    return ('# OSU MPI Latency Test v5.7.1\n# Size          Latency (us)\n'
            + '\n'.join(f'{r[0]:<10}{r[column]:>18}' for r in rows) + '\n'), rows


@pytest.mark.skipif(not os.path.exists(SPEC), reason=f'{SPEC} not present')
def test_osu_curve_with_reference(tmp_path):
    # A case as the OSU checks make it: latency_<size> against the site's per-size
    # references (here: the document's 思源一号 column as reference, π2.0's as measured).
    text, rows = osu_spec_table(2)
    case = cb_results.Case(check='OsuPt2Pt %benchmark=osu_latency', system='sjtu',
                           partition='cpu', nodes=['n1', 'n2'], result=Result.FAIL)
    for r in rows:
        ref = float(r[1])
        bounds = Bounds.of(ref, None, 0.25)
        value = float(r[2])
        # As the report draws it: judged, with its absolute bounds.
        case.metrics.append(cb_results.Metric(
            f'latency_{r[0]}', value, 'us', ref, lower_thres=None, upper_thres=0.25,
            verdict=Result.PASS if value <= bounds.upper else Result.FAIL,
            lower=bounds.lower, upper=bounds.upper))
    run = cb_results.Run(path=str(tmp_path), kind='reframe', site='sjtu', run_id='x',
                         cases=[case])
    (plot,) = cb_plots.osu_curves(run)
    assert plot.name == 'osu-osu_latency' and plot.png[:4] == b'\x89PNG'
    # Without metrics the table in the job's stdout is read (a recorded output).
    stdout = tmp_path / 'rfm_job.out'
    stdout.write_text(text)
    case2 = cb_results.Case(check='OsuPt2Pt %benchmark=osu_latency', partition='cpu',
                            stdout=str(stdout))
    assert cb_plots.osu_table(text)[1][:2] == [(0, float(rows[0][2])), (1, float(rows[1][2]))]
    run2 = cb_results.Run(path=str(tmp_path), kind='reframe', cases=[case2])
    assert len(cb_plots.osu_curves(run2)) == 1
    # The report puts it among its plots.
    model = cb_report.build(run)
    assert [p.name for p in model.plots] == ['osu-osu_latency']
    assert '![osu_latency against message size]' in cb_markdown.render_markdown(model)


@pytest.mark.parametrize('name, column, first, last', [
    ('osu-7.4-latency.txt', 'Avg Latency(us)', (1, 6.51), (4194304, 715.39)),
    ('osu-5.3-mbw_mr.txt', 'MB/s', None, None),
])
def test_osu_table_of_real_outputs(name, column, first, last):
    # Real OSU outputs recorded by the OSU checks' author (tests/data/osu/README.md).
    path = os.path.join(ROOT, 'tests', 'data', 'osu', name)
    if not os.path.exists(path):
        pytest.skip(f'{path} not present')
    with open(path) as fp:
        col, rows = cb_plots.osu_table(fp.read())
    assert col == column
    sizes = [s for s, _ in rows]
    assert sizes == sorted(sizes) and len(rows) > 10
    if first:
        assert rows[0] == first and rows[-1] == last


def test_gpu_copy_per_gpu(tmp_path):
    # No GPU here: a document with the fields src/gpu-copy/report.c writes, two GPUs,
    # the second behind a x8 link.
    doc = {'test': 'gpu-copy', 'version': '0.1.0', 'host': 'g1', 'config': {
        'threshold_per_gpu_gbits': None},
        'metrics': {'total_write_speed': {'value': 290.0, 'unit': 'Gbit/s'},
                    'total_read_speed': {'value': 300.0, 'unit': 'Gbit/s'},
                    'theoretical_link_speed': {'value': 378.0, 'unit': 'Gbit/s'},
                    'gpus': {'value': 2, 'unit': 'GPUs'},
                    'degraded_links': {'value': 0, 'unit': 'links'},
                    'verification_errors': {'value': 0, 'unit': 'errors'}},
        'gpus': [{'cuda_device': 0, 'name': 'GPU', 'pci_bus_id': '0000:3b:00.0',
                  'write_speed_gbits': 196.0, 'read_speed_gbits': 200.0,
                  'link_theoretical_gbits': 252.0},
                 {'cuda_device': 1, 'name': 'GPU', 'pci_bus_id': '0000:d8:00.0',
                  'write_speed_gbits': 94.0, 'read_speed_gbits': 100.0,
                  'link_theoretical_gbits': 126.0}],
        'compliance': {'threshold': 180.0, 'passed': True}}
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    (jobs / 'gpu-copy-12.json').write_text(json.dumps(doc))
    run = cb_reader.load_run(str(jobs))
    (plot,) = cb_plots.gpu_copy_per_gpu(run)
    assert plot.png[:4] == b'\x89PNG' and 'sum over GPUs >= 180' in plot.caption
    # Judged by cobalt2's references: the gpu-copy result passes them, and the other
    # required checks are missing, so the verdict is INCOMPLETE.
    model = cb_report.build(run, site='cobalt2')
    assert model.verdict == cb_verdict.INCOMPLETE
    assert run.cases[0].result == 'pass'
    assert any(r.startswith('MISSING: MemTest: not run') for r in model.judgement.reasons)


# ---- results the report reads, beyond a finished ReFrame run -------------------------------

def test_report_of_job_documents(local_run, tmp_path):
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    doc = mem_test_doc(local_run, 'local/default')
    (jobs / 'mem-test-41.json').write_text(json.dumps(doc))
    bad = copy.deepcopy(doc)
    bad['compliance']['passed'] = False
    bad['host'] = 'n2'
    (jobs / 'mem-test-42.json').write_text(json.dumps(bad))
    # Without a site nothing judges them: the kernels' own verdicts are shown, labelled,
    # and no case passes.
    proc = cobalt_bench('report', jobs)
    assert proc.returncode == 1
    md = (jobs / 'report' / 'report.md').read_text()
    assert '**Verdict: INCOMPLETE**' in md and 'no site to judge' in md
    checks = md_rows(md, 'mem-test', 'Checks')
    assert [r[1:4] + r[5:] for r in checks] == [
        ['job 41', doc['host'], 'UNJUDGED', 'mem-test: passed (its threshold 99.75)'],
        ['job 42', 'n2', 'UNJUDGED', 'mem-test: failed (its threshold 99.75)']]
    assert 'mem-test per NUMA domain' in md
    # Judged by the site: both documents' numbers meet its references, whatever the
    # kernel said of itself (job 42's own verdict was edited to "failed").
    proc = cobalt_bench('report', jobs, '--site', 'local', '-o', tmp_path / 'rep')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    md = (tmp_path / 'rep' / 'report.md').read_text()
    checks = md_rows(md, 'mem-test', 'Checks')
    assert [r[1:4] + r[5:] for r in checks] == [
        ['job 41', doc['host'], 'PASS', 'mem-test: passed (its threshold 99.75)'],
        ['job 42', 'n2', 'PASS', 'mem-test: failed (its threshold 99.75)']]


def test_partial_run_from_perflogs(local_run, tmp_path):
    # A run ReFrame did not finish: no report.json. The report reads the perflogs.
    run = shutil.copytree(local_run, tmp_path / 'local' / 'partial')
    os.remove(run / 'report.json')
    shutil.rmtree(run / 'report', ignore_errors=True)
    proc = cobalt_bench('report', run)
    assert proc.returncode == 1
    md = (run / 'report' / 'report.md').read_text()
    assert '**Verdict: DEMONSTRATION**' in md and 'state: **partial**' in md
    assert re.search(r'^1\. MISSING: run: the run is partial', md, re.M)
    row = [r for r in md_rows(md, 'MemTest') if len(r) == 10 and r[3] == 'percent_of_desired']
    assert row and row[0][5:9] == ['100', '>= 99.75', '%', 'PASS']
    assert 'mem-test per NUMA domain' in md


def test_skip_reason_from_reframes_log(local_run, tmp_path):
    # ReFrame's run report does not keep why a check was skipped; its log (saved in
    # output/) does, in this form. (Under local/: judged by the installed site `local`.)
    run = shutil.copytree(local_run, tmp_path / 'local' / 'run')

    def add_skip(testcases):
        tc = copy.deepcopy(testcases[0])
        tc.update(name='IbWriteBw', display_name='IbWriteBw', unique_name='IbWriteBw',
                  hashcode='aaec76c1', result='skip', perfvalues={}, outputdir=None)
        testcases.append(tc)
    with open(run / 'report.json') as fp:
        report = json.load(fp)
    add_skip(report['runs'][0]['testcases'])
    (run / 'report.json').write_text(json.dumps(report))
    tc = report['runs'][0]['testcases'][-1]
    log = next((run / 'output').glob('rfm-*.log'))
    with open(log, 'a') as fp:
        fp.write('[2026-11-22T12:04:37.783341] info: reframe: [ \x1b[33m    SKIP\x1b[0m ] '
                 f'(1/9) IbWriteBw /aaec76c1 @{tc["system"]}:{tc["partition"]}+'
                 f'{tc["environ"]} [no InfiniBand devices in /sys/class/infiniband]\n')
    loaded = cb_reader.load_run(str(run))
    (skip,) = [c for c in loaded.cases if c.result == 'skip']
    assert skip.fail_reason == 'no InfiniBand devices in /sys/class/infiniband'
    model = cb_report.build(loaded, with_plots=False)
    assert model.verdict == cb_verdict.DEMONSTRATION
    assert any(re.fullmatch(r'MISSING \(not required\): IbWriteBw on local:default( \(.*\))?: '
                            r'skipped: no InfiniBand devices in /sys/class/infiniband', r)
               for r in model.judgement.reasons), model.judgement.reasons


# ---- the command line ------------------------------------------------------------------

@pytest.mark.parametrize('args, status, message', [
    ([], 2, 'usage: cobalt-bench'),
    (['report', '--format', 'pdf'], 2, '--format'),
    (['report', '--compare', 'a'], 2, 'expected 2 arguments'),
    (['report', '--tolerance', 'lots'], 2, 'not a percentage'),
    (['report', '/nonexistent/run'], 3, "no run '/nonexistent/run'"),
    (['nosuchcommand'], 2, 'invalid choice'),
])
def test_cli_errors(args, status, message, tmp_path):
    proc = cobalt_bench(*args, env=dict(os.environ, COBALT_BENCH_RESULTS=str(tmp_path)))
    assert proc.returncode == status, proc.stderr
    assert message in proc.stderr


def test_cli_no_runs_yet(tmp_path):
    proc = cobalt_bench('report', '--results', tmp_path)
    assert proc.returncode == 3
    assert 'no complete run' in proc.stderr


def test_cli_help_and_version():
    top = cobalt_bench('--help')
    assert top.returncode == 0
    for cmd in ('report', 'preflight', 'runs'):
        assert cmd in top.stdout
    rep = cobalt_bench('report', '--help')
    assert rep.returncode == 0 and '--compare' in rep.stdout and 'exit status' in rep.stdout
    with open(os.path.join(ROOT, 'VERSION')) as fp:
        version = fp.read().strip()
    assert cobalt_bench('--version').stdout.strip() == f'cobalt-bench {version}'


def test_installed_tree(repo_root, tmp_path, local_run, request):
    '''`make install` gives a PREFIX/bin/cobalt-bench that works without the checkout's
    python/ (the package in PREFIX/lib/cobalt-bench/python).'''
    with open(repo_root / 'Makefile') as fp:
        makefile = fp.read()
    install = makefile.split('\ninstall:')[1].split('\n\n')[0]
    if 'pip install' not in install:
        pytest.skip('the Makefile\'s install target does not install the package yet')
    prefix = request.getfixturevalue('installed_tree')
    installed = str(prefix / 'bin' / 'cobalt-bench')
    assert os.path.isdir(prefix / 'lib' / 'cobalt-bench' / 'python' / 'cobalt_bench')
    env = clean_env()
    ver = subprocess.run([installed, '--version'], text=True, capture_output=True, env=env)
    assert ver.returncode == 0 and ver.stdout.startswith('cobalt-bench ')
    pre = subprocess.run([installed, 'preflight', '--root',
                          os.path.join(ROOT, 'tests', 'data', 'sysfs', 'compliant')],
                         text=True, capture_output=True, env=env, timeout=60)
    assert pre.returncode == 0, pre.stderr
    # A run of the site `local`: judged by the installed tree's site-configs/local.
    run = shutil.copytree(local_run, tmp_path / 'local' / 'run')
    rep = subprocess.run([installed, 'report', str(run), '-o', str(tmp_path / 'rep')],
                         text=True, capture_output=True, env=env, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert (tmp_path / 'rep' / 'report.html').is_file()
