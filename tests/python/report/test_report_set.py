'''A report directory is replaced as one (issue 37: SIGTERM, what Slurm sends at a time
limit, during `cobalt-bench report` left a report.md naming a bad node beside a
verdict.json of the earlier report, in 5 of 5 trials). Killed at any moment, the report
directory holds the earlier report or the new one, whole: report.md's verdict, verdict.json
and bad-nodes.txt always say the same; nothing is left beside it.'''
import json
import os
import re
import signal
import subprocess
import time

import pytest

from plugins.checkout import DATA, ROOT, clean_env

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


@pytest.fixture
def site(tmp_path):
    '''A compliance definition of references only: MemTest required, met by the recorded
    document; the same document with verification errors is NOT COMPLIANT.'''
    where = tmp_path / 'site'
    where.mkdir()
    (where / 'references.yaml').write_text(
        "MemTest:\n  '*':\n    measured_speed: [0.5, -0.5, null, 'Gbit/s']\n")
    (where / 'compliance.yaml').write_text(
        'title: one node\nrequired:\n  MemTest:\n    what: mem-test\n')
    return where


def report(run, env, site):
    return subprocess.Popen([COBALT_BENCH, 'report', str(run), '--site', str(site)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def the_set(out):
    '''(report.md's verdict, verdict.json's state, bad-nodes.txt's hostlist) of a report.'''
    md = (out / 'report.md').read_text()
    verdict = json.loads((out / 'verdict.json').read_text())
    listed = [line for line in (out / 'bad-nodes.txt').read_text().splitlines()
              if line and not line.startswith('#')]
    said = re.search(r'^\*\*Verdict: ([A-Z ]+)\*\*', md, re.M).group(1)
    return said.strip(), verdict['state'], verdict['bad_nodes_hostlist'], listed


@pytest.mark.parametrize('delay', [0.3, 0.6, 0.9, 1.2, 1.5, 2.0])
def test_a_killed_report_leaves_one_whole_report(delay, tmp_path, site):
    run = tmp_path / 'run'
    run.mkdir()
    doc = json.loads((DATA / 'store' / 'mem-test.json').read_text())
    (run / 'mem-test-7.json').write_text(json.dumps(doc))
    env = clean_env()
    assert report(run, env, site).wait(timeout=300) == 0
    first = the_set(run / 'report')
    # The same node now failed (crashed, named): the next report says another verdict.
    doc['metrics']['verification_errors']['value'] = 3
    (run / 'mem-test-7.json').write_text(json.dumps(doc))
    proc = report(run, env, site)
    time.sleep(delay)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=300)
    now = the_set(run / 'report')
    said, state, hostlist, listed = now
    assert said == state and [hostlist] == (listed or ['']), now
    assert now in (first, the_set(run / 'report')), now
    assert sorted(p.name for p in run.iterdir()) == ['mem-test-7.json', 'report'], \
        'a staged or old report left beside it'


def test_a_report_stopped_between_its_files_leaves_the_earlier_one(tmp_path, monkeypatch,
                                                                   site):
    '''The kill at the worst moment, made exact: the new report.md is written and the
    process ends while the HTML page is rendered (SystemExit, as an interrupted Python
    ends). The directory still holds the earlier report, whole; a later report cleans up
    what the stopped one left beside it.'''
    from cobalt_bench.report import write
    from cobalt_bench.report.model import build
    from cobalt_bench.store.reader import load_run

    run = tmp_path / 'run'
    run.mkdir()
    doc = json.loads((DATA / 'store' / 'mem-test.json').read_text())
    (run / 'mem-test-7.json').write_text(json.dumps(doc))
    write.write_report(build(load_run(str(run)), with_plots=False, site=str(site)),
                       str(run / 'report'), ('md', 'html'))
    first = the_set(run / 'report')
    assert first[:2] == ('COMPLIANT', 'COMPLIANT'), first
    doc['metrics']['verification_errors']['value'] = 3
    (run / 'mem-test-7.json').write_text(json.dumps(doc))
    model = build(load_run(str(run)), with_plots=False, site=str(site))
    assert model.verdict == 'NOT COMPLIANT'

    def killed(*args, **kwargs):
        raise SystemExit(143)
    monkeypatch.setattr(write, 'render_html', killed)
    with pytest.raises(SystemExit):
        write.write_report(model, str(run / 'report'), ('md', 'html'))
    assert the_set(run / 'report') == first
    monkeypatch.undo()
    (run / '.new-report-x').mkdir()             # as a SIGKILLed writer leaves it
    write.write_report(model, str(run / 'report'), ('md', 'html'))
    assert the_set(run / 'report') != first
    assert sorted(p.name for p in run.iterdir()) == ['mem-test-7.json', 'report']


def test_a_report_of_one_format_keeps_the_others(tmp_path, site):
    '''`report --format md` rewrites the Markdown; the HTML page of the earlier report stays
    as it was, in the same set.'''
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'mem-test-7.json').write_bytes((DATA / 'store' / 'mem-test.json').read_bytes())
    env = clean_env()
    assert report(run, env, site).wait(timeout=300) == 0
    page = run / 'report' / 'report.html'
    before = page.stat().st_mtime_ns
    proc = subprocess.run([COBALT_BENCH, 'report', str(run), '--site', str(site), '--format',
                           'md'], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert page.stat().st_mtime_ns == before
    assert sorted(p.name for p in run.iterdir()) == ['mem-test-7.json', 'report']
