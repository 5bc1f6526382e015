'''The PDF report of `cobalt-bench linktest-report` (cb-linktest-report): made from a real
cb-linktest run (4 ranks under mpirun, two host names, one slow link), rendered with
poppler (pdftoppm to PNG, pdftotext for its text), bad input and unwritable output, the
fields a newer cb-linktest may add, and the compliance report's link to the PDF.'''

import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from plugins.checkout import MPI_ENV, ROOT

LINKTEST = os.path.join(ROOT, 'bin', 'cb-linktest')
REPORT = os.path.join(ROOT, 'bin', 'cb-linktest-report')
COBALT = os.path.join(ROOT, 'bin', 'cobalt-bench')
SIZE = 65536
OPTS = ['-w', '2', '-n', '10', '-s', str(SIZE), '--num-slowest', '3']
# The pages of a run on several hosts with retested pairs, by their headings: summary
# (with the settings), heat map, hosts, histograms, slowest pairs.
HEADINGS = ['cb-linktest report', 'Heat map, ranks grouped by host', 'Hosts', 'Histogram',
            'Slowest pairs and their retest']


def needs(*tools):
    for tool in tools:
        if not (os.access(tool, os.X_OK) if os.sep in tool else shutil.which(tool)):
            pytest.skip(f'{tool} is not there (make; poppler-utils for pdftoppm/pdftotext)')


def linktest(out, json_path, hosts, env=None, cwd=None, extra=()):
    '''cb-linktest under mpirun, one app context per run of ranks on one host name:
    cb-linktest takes the host name from SLURMD_NODENAME, so two "hosts" share this
    machine and the ranks of a host need not be adjacent.'''
    needs(LINKTEST, 'mpirun')
    cmd = ['mpirun', '--oversubscribe', '--bind-to', 'none']
    for i, (host, count) in enumerate(hosts):
        cmd += ([':'] if i else []) + ['-np', str(count), 'env', f'SLURMD_NODENAME={host}',
                                       LINKTEST, *OPTS, *extra, '-o', str(out), '--json',
                                       str(json_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=cwd,
                          env=dict(os.environ, **MPI_ENV, **(env or {})))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def report(*args):
    needs(REPORT)
    return subprocess.run([REPORT, *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def pdftotext(pdf, page=None, flat=True):
    '''The text of the PDF (or one page) as pdftotext -layout extracts it: a label and its
    value, a table row, stay on one line; flat: runs of white space made one space per
    line.'''
    needs('pdftotext')
    cmd = ['pdftotext', '-layout']
    if page:
        cmd += ['-f', str(page), '-l', str(page)]
    proc = subprocess.run(cmd + [str(pdf), '-'], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    if not flat:
        return proc.stdout
    return '\n'.join(' '.join(line.split()) for line in proc.stdout.splitlines())


def pdfinfo(pdf):
    needs('pdfinfo')
    proc = subprocess.run(['pdfinfo', str(pdf)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return dict(re.findall(r'^([^:]+):\s+(.*)$', proc.stdout, re.M))


def pages_of(pdf):
    '''{heading: page number} of the report's pages, by the first line of each page.'''
    count = int(pdfinfo(pdf)['Pages'])
    first = [pdftotext(pdf, page=k).strip().split('\n')[0] for k in range(1, count + 1)]
    found = {h: first.index(h) + 1 for h in HEADINGS if h in first}
    assert list(found) == HEADINGS, first
    assert sorted(found.values()) == list(found.values())   # in this order
    return found, count


def load(path):
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data['meta'] = json.loads(str(data['meta'].item()))
    return data


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    '''A real run: ranks 0 and 3 on node-a, 1 and 2 on node-b (so grouping by host
    reorders them), the link 1 <-> 2 made slow (50 ms on every message rank 1 sends it: CI
    saw every pair's time per message up to 3 ms with four ranks on two busy CPUs, and a
    2 ms delay was not the slowest), and its report with the default outputs.'''
    d = tmp_path_factory.mktemp('ltpdf')
    npz = d / 'lt.npz'
    linktest(npz, d / 'lt.json', [('node-a', 1), ('node-b', 2), ('node-a', 1)],
             env={'CB_LINKTEST_DELAY': '1-2:50000'})
    rep = report(npz)
    return d, npz, rep


def test_pdf_written_with_the_png_files(run):
    d, npz, rep = run
    # the slow link is flagged: exit 1, as before
    assert rep.returncode == 1, rep.stdout + rep.stderr
    pdf = d / 'lt-report.pdf'
    m = re.search(rf'^PDF: {re.escape(str(pdf))} \((\d+) pages\)$', rep.stdout, re.M)
    assert m, rep.stdout
    for name in ('lt-heatmap.png', 'lt-histogram.png'):
        assert (d / name).read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    # written through a temporary file: nothing else left behind
    assert sorted(os.listdir(d)) == ['lt-heatmap.png', 'lt-histogram.png', 'lt-report.pdf',
                                     'lt.json', 'lt.npz']
    info = pdfinfo(pdf)
    assert int(info['Pages']) == int(m.group(1)) >= len(HEADINGS)
    assert 'A4' in info['Page size']
    assert info['Title'] == 'cb-linktest report: lt.npz'


def test_pdf_pages_render_with_content(run, tmp_path):
    d, npz, rep = run
    needs('pdftoppm')
    proc = subprocess.run(['pdftoppm', '-png', '-r', '40', str(d / 'lt-report.pdf'),
                           str(tmp_path / 'page')], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    found, count = pages_of(d / 'lt-report.pdf')
    pngs = sorted(tmp_path.glob('page-*.png'))
    assert len(pngs) == count
    import matplotlib.image
    pages = [(matplotlib.image.imread(str(p))[:, :, :3] * 255).round() for p in pngs]
    for path, px in zip(pngs, pages):
        assert px.shape[:2] == (468, 331), path        # A4 at 40 dpi
        inked = (px.min(axis=2) < 200).mean()
        assert inked > 0.01, (path, inked)             # not a blank page
    # The heat map and the host-to-host matrix fill much of their pages with colour
    # (viridis, saturated); the first page is text, black on white with a coloured line.
    def colour(px):
        return ((px.max(axis=2) - px.min(axis=2)) > 80).mean()
    heat, hosts = (pages[found[h] - 1] for h in ('Heat map, ranks grouped by host', 'Hosts'))
    assert colour(heat) > 0.1 and colour(hosts) > 0.1, (colour(heat), colour(hosts))
    assert colour(pages[0]) < 0.01
    assert len({p.tobytes() for p in pages}) == count


def test_pdf_settings_and_summary_extractable(run):
    d, npz, rep = run
    data = load(npz)
    text = pdftotext(d / 'lt-report.pdf', page=1)
    for line in ('cb-linktest report', 'Summary', 'Run', 'Settings', 'Pairs tested 6 of 6',
                 'Ranks, hosts, steps 4 ranks on 2 hosts, 3 steps, 1 iteration(s)',
                 'Hosts (ranks) node-a (2), node-b (2)'):
        assert re.search(rf'^{re.escape(line)}$', text, re.M), (line, text)
    # the settings in two columns, under LinkTest's option names
    for option, value in (('--num-warmup-messages', '2'), ('--num-messages', '10'),
                          ('--size-messages', f'{SIZE} B'), ('--num-slowest', '3'),
                          ('--bisection', 'no'), ('--serial-tests', 'no'),
                          (r'pattern \(--uni/--bidirectional\)', 'semidirectional')):
        assert re.search(rf'(^| ){option} {value}( |$)', text, re.M), (option, text)
    assert data['meta']['command'].split()[-1] in text  # the command line
    # the summary's figures are the matrix's
    t = data['time'][np.triu_indices(4, 1)]
    bw = SIZE * 8 / t / 1e9
    assert (f'min {bw.min():.3f}, avg {bw.mean():.3f}, median {np.median(bw):.3f}, '
            f'max {bw.max():.3f}') in text
    # the slowest pair, retested alone, still slow: named with its hosts and retest
    (a, b), retest = data['slowest_pairs'][0], data['retest_time'][0]
    assert (a, b) == (1, 2)
    row = re.search(r'^1 1 <-> 2 node-b <-> node-b .*$', text, re.M)
    assert row and f' {SIZE * 8 / retest / 1e9:.3f} ' in row.group(0), text
    assert re.search(r'^Flagged links [1-6] \(slower than 2 x the median time', text, re.M)


def test_pdf_heat_map_grouped_by_host(run):
    d, npz, rep = run
    found, _ = pages_of(d / 'lt-report.pdf')
    text = pdftotext(d / 'lt-report.pdf', page=found['Heat map, ranks grouped by host'],
                     flat=False)
    assert 'Heat map, ranks grouped by host' in text
    assert text.count('node-a (2)') == 2 and text.count('node-b (2)') == 2  # top and left
    # the ranks along the x axis in host order: node-a's 0 and 3, then node-b's 1 and 2
    assert re.search(r'^\s*0\s+3\s+1\s+2\s*$', text, re.M), text
    hosts = pdftotext(d / 'lt-report.pdf', page=found['Hosts'])
    assert 'Slowest link between each pair of hosts' in hosts
    data = load(npz)
    bw = SIZE * 8 / data['time'] / 1e9
    cross = bw[np.ix_([0, 3], [1, 2])]
    assert f'node-a 2 {cross.min():.3f} {np.median(cross):.3f}' in hosts
    hist = pdftotext(d / 'lt-report.pdf', page=found['Histogram'])
    assert 'bandwidth per pair [Gbit/s]' in hist and 'time per message [us]' in hist
    slow = pdftotext(d / 'lt-report.pdf', page=found['Slowest pairs and their retest'])
    assert 'Slowest pairs and their retest' in slow
    # the three retested pairs, then the flagged links (the slow one first)
    assert len(re.findall(r'^[123] \d <-> \d node-\w <-> node-\w ', slow, re.M)) == 3
    assert re.search(r'^Flagged links: [1-6]\nLinks slower than 2 x the median time .*\n'
                     r'.*\n1 <-> 2 node-b <-> node-b ', slow, re.M), slow


def test_pdf_options(run, tmp_path):
    d, npz, rep = run
    # --no-png: text only, as before
    shutil.copy(npz, tmp_path / 'x.npz')
    r = report(tmp_path / 'x.npz', '--no-png')
    assert r.returncode == 1 and 'PDF:' not in r.stdout
    assert os.listdir(tmp_path) == ['x.npz']
    # --pdf PATH: that file, with or without the PNG files; --no-pdf: none
    r = report(tmp_path / 'x.npz', '--no-png', '--pdf', tmp_path / 'only.pdf')
    assert r.returncode == 1 and pages_of(tmp_path / 'only.pdf')
    assert sorted(os.listdir(tmp_path)) == ['only.pdf', 'x.npz']
    r = report(tmp_path / 'x.npz', '--no-pdf', '--prefix', tmp_path / 'p')
    assert r.returncode == 1 and 'PDF:' not in r.stdout
    assert sorted(os.listdir(tmp_path)) == ['only.pdf', 'p-heatmap.png', 'p-histogram.png',
                                            'x.npz']
    # --factor 0, a threshold below every link: nothing flagged, exit 0, and the PDF says so
    r = report(tmp_path / 'x.npz', '--no-png', '--factor', '0', '--min-bandwidth', '1e-6',
               '--pdf', tmp_path / 'clean.pdf')
    assert r.returncode == 0, r.stdout
    assert 'Flagged links 0 (below 1e-06 Gbit/s)' in pdftotext(tmp_path / 'clean.pdf', page=1)


@pytest.mark.parametrize('args, message', [
    (['--pdf', ''], '--pdf: empty path'),
    (['--pdf', 'a.pdf', '--no-pdf'], '--pdf and --no-pdf exclude each other'),
])
def test_pdf_usage_errors_exit_2(run, args, message):
    d, npz, rep = run
    r = report(npz, *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr


def test_bad_input_and_unwritable_pdf_exit_3(run, tmp_path):
    d, npz, rep = run
    data = npz.read_bytes()
    good = tmp_path / 'good.pdf'
    assert report(npz, '--no-png', '--pdf', good).returncode == 1
    before = good.read_bytes()
    # a results file cut short: exit 3 naming it, and the earlier PDF left as it was
    cut = tmp_path / 'cut.npz'
    cut.write_bytes(data[:len(data) // 2])
    r = report(cut, '--pdf', good)
    assert r.returncode == 3 and str(cut) in r.stderr and 'cut short' in r.stderr, r
    assert good.read_bytes() == before
    r = report(cut)
    assert r.returncode == 3 and not (tmp_path / 'cut-report.pdf').exists()
    # a PDF that cannot be written: exit 3 naming it, no temporary file left behind
    r = report(npz, '--no-png', '--pdf', tmp_path / 'missing' / 'x.pdf')
    assert r.returncode == 3 and 'cannot write the PDF report' in r.stderr, r.stderr
    (tmp_path / 'adir').mkdir()
    r = report(npz, '--no-png', '--pdf', tmp_path / 'adir')
    assert r.returncode == 3 and 'cannot write the PDF report' in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ['adir', 'cut.npz', 'good.pdf']
    assert not os.listdir(tmp_path / 'adir')


def test_fields_of_a_newer_cb_linktest_shown(run, tmp_path):
    # Results the report does not know (a later cb-linktest's): shown under their names,
    # those named all-to-all as such; a file without them has no such section.
    d, npz, rep = run
    with np.load(npz, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays['meta'].item()))
    text = pdftotext(d / 'lt-report.pdf')
    assert 'Other results in the file' not in text and 'All-to-all: further' not in text
    meta['options']['frobnicate_level'] = 3
    meta['all_to_all_extra'] = {'before_s': 0.000123, 'after_s': 0.000456}
    arrays['meta'] = np.array(json.dumps(meta))
    arrays['all_to_all_rounds'] = np.array([1.5e-4, 2.5e-4])
    arrays['rank_temperature_c'] = np.arange(4, dtype=float) + 40
    np.savez(tmp_path / 'new.npz', **arrays)
    r = report(tmp_path / 'new.npz', '--no-png', '--pdf', tmp_path / 'new.pdf')
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'All-to-all: all_to_all_extra.before_s: 0.000123' in r.stdout
    text = pdftotext(tmp_path / 'new.pdf')
    for line in ('--frobnicate-level 3', 'All-to-all: further results',
                 'all_to_all_extra.before_s 0.000123', 'all_to_all_extra.after_s 0.000456',
                 'all_to_all_rounds 0.00015, 0.00025', 'Other results in the file',
                 'rank_temperature_c 40, 41, 42, 43'):
        assert line in text, line
    pages_of(tmp_path / 'new.pdf')


def test_monitoring_of_the_run_shown(run, tmp_path):
    # cb-linktest's monitoring arrays: memory per task (every run) and, with --all-to-all,
    # the MPI_Alltoall times before and after the test, from a real run.
    d, npz, rep = run
    data = load(npz)
    if 'task_memory_kib' not in data:
        pytest.skip('this cb-linktest writes no monitoring arrays (task_memory_kib)')
    text = pdftotext(d / 'lt-report.pdf')
    assert 'Memory per task [kiB]' in text
    for r, host in enumerate(['node-a', 'node-b', 'node-b', 'node-a']):
        row = ' '.join(f'{v:,.0f}' for v in data['task_memory_kib'][r])
        assert f'{r} {host} {row}' in text, (r, text)
    assert 'All-to-all before the test' not in text      # not asked for
    out = tmp_path / 'a2a.npz'
    linktest(out, tmp_path / 'a2a.json', [('node-a', 2), ('node-b', 2)],
             extra=['--all-to-all'])
    times = load(out)['alltoall_time']
    assert times.shape == (2, 4)
    r = report(out, '--no-png', '--pdf', tmp_path / 'a2a.pdf')
    assert r.returncode in (0, 1), r.stdout + r.stderr
    text = pdftotext(tmp_path / 'a2a.pdf', page=1)
    for when, row in zip(('before', 'after'), times):
        k = int(np.argmax(row))
        gbits = SIZE * 3 * 8 / row[k] / 1e9     # -s bytes to each of the 3 other ranks
        assert re.search(rf'^All-to-all {when} the test slowest rank {k} \(node-[ab]\): '
                         rf'.* \({gbits:.3f} Gbit/s\)', text, re.M), text
        assert re.search(rf'^All-to-all {when} the test: slowest rank {k} ', r.stdout, re.M)


def test_compliance_report_links_the_pdf(tmp_path):
    # A run directory as jobs/cb-linktest.slurm leaves it (the JSON document naming the
    # matrix file): no PDF, no link; after linktest-report wrote one, the report links it.
    jobs = tmp_path / 'slurm'
    jobs.mkdir()
    linktest('lt.npz', 'cb-linktest-7.json', [('node-a', 2), ('node-b', 2)], cwd=jobs)

    def compliance_report():
        proc = subprocess.run([COBALT, 'report', str(jobs), '-o', str(tmp_path / 'rep')],
                              capture_output=True, text=True, timeout=300,
                              env={k: v for k, v in os.environ.items()
                                   if not k.startswith(('RFM_', 'COBALT_BENCH_'))})
        assert proc.returncode in (0, 1), proc.stdout + proc.stderr
        return ((tmp_path / 'rep' / 'report.md').read_text(),
                (tmp_path / 'rep' / 'report.html').read_text())

    md, page = compliance_report()
    assert 'cb-linktest pair bandwidth' in md and 'report (PDF)' not in md + page
    r = report(jobs / 'lt.npz', '--no-png')
    assert r.returncode in (0, 1) and not (jobs / 'lt-report.pdf').exists()
    r = report(jobs / 'lt.npz')
    assert r.returncode in (0, 1), r.stdout + r.stderr
    md, page = compliance_report()
    m = re.search(r'^\[cb-linktest report \(PDF\)[^\]]*\]\(<([^>]+)>\)$', md, re.M)
    assert m, md
    # relative to the report, and it is the PDF
    assert m.group(1) == '../slurm/lt-report.pdf'
    assert (tmp_path / 'rep' / m.group(1)).resolve() == (jobs / 'lt-report.pdf').resolve()
    assert '<a href="../slurm/lt-report.pdf">cb-linktest report (PDF)' in page
