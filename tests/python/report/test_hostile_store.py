'''A shared results store written by somebody else (issue 27, points 1 and 6): nothing in
it makes `cobalt-bench report` run code, and the report reads nothing outside the run.

- a site configuration is executed only from a site the user names (--site,
  $COBALT_BENCH_SITE) or the installed site-configs/<the run's site>; never from a path
  found in the results (report.json's session_info.config_files, a judged.json's
  site_dir): where the run names another, the verdict says so instead;
- the paths report.json gives (outputdir, stagedir, job_stdout) and the files under them
  are confined to the run directory: `..`, absolute paths elsewhere and symlinks leaving
  the run are refused, and named in the report as such;
- the report directory is never a symlink: refused, exit 3, nothing written elsewhere.

The run is tests/data/store (a real MemTest case of the site `local`); each test plants
its hostile part in a copy. The commands run in this process (cli.main).
'''

import json
import os
import re
import shutil

import pytest

from cobalt_bench.store import job_record, reader
from plugins.checkout import DATA, ROOT, cobalt_cli

STORE_DATA = DATA / 'store'
MEMTEST = os.path.join('output', 'local', 'default', 'builtin', 'MemTest')


pytestmark = pytest.mark.usefixtures('no_store_settings')


cobalt = cobalt_cli


def planted_site(where, marker):
    '''A site directory whose config.py, if anything ran it, would leave `marker`.'''
    where.mkdir(parents=True)
    (where / 'config.py').write_text(
        f'open({str(marker)!r}, "w").write("executed")\n'
        'site_configuration = {"systems": [{"name": "local", "partitions": '
        '[{"name": "default"}]}]}\n')
    (where / 'references.yaml').write_text('{}\n')
    return where


def make_run(tmp_path, site='local', config_dir=None, change=None):
    '''A copy of the stored run at tmp_path/results/SITE/run: its report.json naming
    `config_dir` as the site directory it ran with; `change(testcase)` edits its MemTest
    test case.'''
    run = tmp_path / 'results' / site / 'run'
    (run / MEMTEST).mkdir(parents=True)
    shutil.copy(STORE_DATA / 'mem-test.json', run / MEMTEST / 'mem-test.json')
    (run / MEMTEST / 'rfm_job.sh').write_text(
        '#!/bin/bash\nmem-test --stations 1 --desired-rate 8 --duration 3 --json '
        'mem-test.json\n')
    (run / MEMTEST / 'rfm_job.out').write_text('----- Test results -----\n')
    text = (STORE_DATA / 'report.json').read_text()
    text = text.replace('@RUN@', json.dumps(str(run))[1:-1]).replace(
        '@SITE@', str(config_dir or os.path.join(ROOT, 'site-configs', 'local')))
    report = json.loads(text)
    if change:
        change(report['runs'][0]['testcases'][0])
    (run / 'report.json').write_text(json.dumps(report))
    return run


def outside_dir(tmp_path):
    '''A directory outside the run with what a report would show if it read there.'''
    out = tmp_path / 'elsewhere'
    out.mkdir()
    doc = json.loads((STORE_DATA / 'mem-test.json').read_text())
    doc['host'] = 'OUTSIDE-SECRET-HOST'
    (out / 'secret.json').write_text(json.dumps(doc))
    (out / 'mem-test.json').write_text(json.dumps(doc))
    (out / 'rfm_job.sh').write_text('mem-test --json SECRET-COMMAND-LINE mem-test.json\n')
    return out


def report_text(run):
    return ((run / 'report' / 'report.md').read_text()
            + (run / 'report' / 'report.html').read_text())


# ---- point 1: no code from the store ---------------------------------------------------

def test_report_json_config_files_are_not_executed(tmp_path):
    marker = tmp_path / 'executed'
    planted = planted_site(tmp_path / 'planted', marker)
    run = make_run(tmp_path, config_dir=planted)
    rc, out, err = cobalt('report', run)
    assert not marker.exists(), 'the configuration named in report.json was executed'
    # Judged by the installed site of the run's name, and the verdict says the run
    # names another.
    assert rc in (0, 1) and 'verdict: DEMONSTRATION' in out, out + err
    assert (f'the run was made with site configuration {planted}/config.py; judged by '
            f'{os.path.join(ROOT, "site-configs", "local")}') in out
    verdict = json.loads((run / 'report' / 'verdict.json').read_text())
    assert any(f'{planted}/config.py' in r for r in verdict['reasons'])


def test_run_of_an_unknown_site_runs_nothing(tmp_path):
    marker = tmp_path / 'executed'
    planted = planted_site(tmp_path / 'planted', marker)
    run = make_run(tmp_path, site='planted', config_dir=planted)
    rc, out, err = cobalt('report', run)
    assert not marker.exists(), 'the configuration named in report.json was executed'
    assert rc == 1 and 'verdict: INCOMPLETE' in out, out + err
    assert f'{planted}/config.py' in out and 'not executed' in out


def test_judged_json_site_dir_is_not_executed(tmp_path):
    marker = tmp_path / 'executed'
    planted = planted_site(tmp_path / 'planted', marker)
    jobs = tmp_path / 'results' / 'slurm'
    jobs.mkdir(parents=True)
    shutil.copy(STORE_DATA / 'mem-test.json', jobs / 'mem-test-7.json')
    (jobs / 'mem-test-7.judged.json').write_text(json.dumps(
        {'state': 'COMPLIANT', 'site_dir': str(planted), 'partition': 'local:default'}))
    rc, out, err = cobalt('report', jobs)
    assert not marker.exists(), "the judged.json's site_dir was executed"
    assert rc == 1 and 'verdict: INCOMPLETE' in out, out + err
    assert str(planted) in out and 'not executed' in out
    # The installed site a job names is still used (what the job scripts record).
    (jobs / 'mem-test-7.judged.json').write_text(json.dumps(
        {'site_dir': os.path.join(ROOT, 'site-configs', 'local'),
         'partition': 'local:default'}))
    rc, out, err = cobalt('report', jobs, '-o', tmp_path / 'rep')
    assert rc == 0 and 'verdict: DEMONSTRATION' in out, out + err


# ---- point 6: nothing read outside the run ---------------------------------------------

def _refused(run):
    return [c for c in reader.load_run(str(run)).cases
            if any('refused' in d.problem for d in c.damaged)]


@pytest.mark.parametrize('name, change', [
    ('outputdir absolute elsewhere', lambda tc, out, run: tc.update(
        outputdir=str(out), stagedir=None)),
    ('stagedir absolute elsewhere', lambda tc, out, run: tc.update(stagedir=str(out))),
    ('outputdir with ..', lambda tc, out, run: tc.update(
        outputdir=f'{run}/output/../../../../{out.name}', stagedir=None)),
    ('outputdir relative with ..', lambda tc, out, run: tc.update(
        outputdir=f'../../../{out.name}', stagedir=None)),
])
def test_paths_from_report_json_stay_in_the_run(name, change, tmp_path, monkeypatch):
    out = outside_dir(tmp_path)
    run = make_run(tmp_path, change=lambda tc: change(tc, out, tmp_path / 'results' /
                                                        'local' / 'run'))
    shutil.rmtree(run / MEMTEST)
    # A relative path: relative to the run, wherever the reader stands (here: in it).
    monkeypatch.chdir(run)
    rc, stdout, err = cobalt('report', run)
    assert rc == 1, stdout + err
    text = report_text(run)
    assert 'OUTSIDE-SECRET-HOST' not in text and 'SECRET-COMMAND-LINE' not in text
    assert 'refused' in text and _refused(run)


def test_symlinks_leaving_the_run_are_refused(tmp_path):
    out = outside_dir(tmp_path)
    run = make_run(tmp_path)
    # stage/: a link to a directory elsewhere; the test's output: a document that is a
    # link to a file elsewhere.
    (run / 'stage' / 'local' / 'default' / 'builtin').mkdir(parents=True)
    os.symlink(out, run / 'stage' / 'local' / 'default' / 'builtin' / 'MemTest')
    os.remove(run / MEMTEST / 'mem-test.json')
    os.symlink(out / 'secret.json', run / MEMTEST / 'mem-test.json')
    os.remove(run / MEMTEST / 'rfm_job.sh')
    os.symlink(out / 'rfm_job.sh', run / MEMTEST / 'rfm_job.sh')
    rc, stdout, err = cobalt('report', run)
    text = report_text(run)
    assert 'OUTSIDE-SECRET-HOST' not in text and 'SECRET-COMMAND-LINE' not in text
    assert re.search(r'refused: .*outside the run', text) and _refused(run)
    assert rc == 1


def test_job_stdout_outside_the_run_is_not_read(tmp_path):
    run = make_run(tmp_path, change=lambda tc: tc.update(job_stdout='/etc/passwd'))
    (case,) = reader.load_run(str(run)).cases
    assert case.stdout == ''
    run2 = make_run(tmp_path / 'b', change=lambda tc: tc.update(
        job_stdout='../../../../../../../../etc/passwd'))
    (case,) = reader.load_run(str(run2)).cases
    assert case.stdout == ''


def test_a_moved_run_still_reads_its_own_files(tmp_path):
    # report.json names where the run was; a copy elsewhere reads its own copy's files.
    run = make_run(tmp_path)
    moved = shutil.copytree(run, tmp_path / 'moved' / 'local' / 'run')
    shutil.rmtree(run)
    (case,) = reader.load_run(str(moved)).cases
    assert case.docs and not case.damaged and case.result == 'pass'
    assert case.doc_paths[0].startswith(str(moved))


def test_report_directory_that_is_a_symlink_is_refused(tmp_path):
    run = make_run(tmp_path)
    target = tmp_path / 'target'
    target.mkdir()
    os.symlink(target, run / 'report')
    rc, out, err = cobalt('report', run)
    assert rc == 3, out + err
    assert 'is a symbolic link' in err and str(run / 'report') in err
    assert os.listdir(target) == []
    # A plots/ link planted in a report directory: the report is written beside it and
    # replaces the directory whole (report.write), so nothing is written through the link,
    # and the link is gone with the earlier report.
    os.remove(run / 'report')
    (run / 'report').mkdir()
    os.symlink(target, run / 'report' / 'plots')
    rc, out, err = cobalt('report', run)
    assert rc in (0, 1) and 'Traceback' not in err, out + err
    assert os.listdir(target) == [] and not os.path.islink(run / 'report' / 'plots')


def test_a_run_that_is_a_link_out_of_the_store_is_not_read(tmp_path):
    # Somebody else's run, linked into the shared store: `runs` names it, reads nothing
    # of it, and `latest` never picks it.
    elsewhere = make_run(tmp_path / 'other')
    store = tmp_path / 'store'
    (store / 'local').mkdir(parents=True)
    os.symlink(elsewhere, store / 'local' / '29990101T000000-1')
    rc, out, err = cobalt('runs', '--results', store)
    assert rc == 1, out + err
    assert re.search(r'29990101T000000-1 +damaged +- +\(refused: a symbolic link leading '
                     r'outside the results store\)', out), out
    rc, out, err = cobalt('report', '--results', store, 'latest')
    assert rc == 3 and 'no complete run' in err, out + err


def test_a_directory_of_job_documents_reads_only_its_own_regular_files(tmp_path):
    # Job documents (a sweep's node directories): a link leaving the run and a pipe are
    # named and never opened; a link inside the run and a directory linked from outside
    # (never walked into) are as they are.
    run = tmp_path / 'sweep'
    (run / 'n1').mkdir(parents=True)
    shutil.copy(STORE_DATA / 'mem-test.json', run / 'n1' / 'mem-test-7.json')
    outside = tmp_path / 'elsewhere'
    outside.mkdir()
    shutil.copy(STORE_DATA / 'mem-test.json', outside / 'mem-test-8.json')
    os.symlink(outside / 'mem-test-8.json', run / 'n1' / 'mem-test-8.json')
    os.symlink(outside, run / 'n2')
    os.mkfifo(run / 'n1' / 'mem-test-9.json')
    os.symlink(run / 'n1' / 'mem-test-7.json', run / 'mem-test-10.json')
    loaded = reader.load_run(str(run))
    damaged = {os.path.basename(d.path): d.problem for d in loaded.damaged}
    assert damaged == {
        'mem-test-8.json': 'refused: a symbolic link leading outside the run directory',
        'mem-test-9.json': 'refused: not a regular file'}
    assert sorted(os.path.relpath(p, run) for p in loaded.sources) == [
        'mem-test-10.json', os.path.join('n1', 'mem-test-7.json')]


def test_a_job_record_that_leaves_the_run_is_not_read(tmp_path):
    # A document's `cobalt-bench judge` record is read with it (one pass over a sweep's
    # files): a record that is a link leading out of the run, or a pipe, is never opened,
    # by that pass nor by with_job_judgements.
    run = tmp_path / 'sweep'
    (run / 'n1').mkdir(parents=True)
    outside = tmp_path / 'elsewhere'
    outside.mkdir()
    (outside / 'record.json').write_text(json.dumps(
        {'partition': 'local:planted', 'command': 'planted'}))
    for jobid in (7, 8, 9):
        shutil.copy(STORE_DATA / 'mem-test.json', run / 'n1' / f'mem-test-{jobid}.json')
    os.symlink(outside / 'record.json', run / 'n1' / 'mem-test-7.judged.json')
    os.mkfifo(run / 'n1' / 'mem-test-8.judged.json')
    (run / 'n1' / 'mem-test-9.judged.json').write_text(json.dumps(
        {'partition': 'local:default', 'command': 'mem-test --json mem-test-9.json'}))
    loaded, _ = job_record.with_job_judgements(reader.load_run(str(run)))
    taken = {c.jobid: (c.judged_partition, c.command) for c in loaded.cases}
    assert taken == {'7': ('', ''), '8': ('', ''),
                     '9': ('local:default', 'mem-test --json mem-test-9.json')}
