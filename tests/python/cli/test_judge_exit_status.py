'''`cobalt-bench judge --exit-status`, the one judge of every job script's end (issue 35):
each exit status a job script can hand it, with and without the document the kernel was to
write, and the report of what it recorded. The kernels' real documents come from a real
mem-test run; the ends are the statuses a shell gives (tests/python/store/test_exit_status
reads them off real deaths).'''

import json
import os
import shutil
import subprocess

import pytest

from cobalt_bench.judging import judge as jd
from cobalt_bench.site.loader import load_site
from cobalt_bench.store.model import Case
from cobalt_bench.store.result import Result
from plugins.checkout import ROOT, clean_env

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


@pytest.fixture(scope='module')
def real_doc(tmp_path_factory):
    '''A real mem-test document of this machine (1 Gbit/s, 1 s).'''
    where = tmp_path_factory.mktemp('doc') / 'mem-test-7.json'
    proc = subprocess.run([os.path.join(ROOT, 'bin', 'mem-test'), '--stations', '1',
                           '--desired-rate', '1', '--duration', '1', '--json', str(where)],
                          capture_output=True, text=True, timeout=120)
    assert where.is_file(), proc.stdout + proc.stderr
    return where


def judge(*args, cwd):
    env = clean_env(SLURMD_NODENAME='n7')
    return subprocess.run([COBALT_BENCH, 'judge', *args], cwd=str(cwd), env=env, text=True,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize('status, signal, code', [('137', 'SIGKILL', 1), ('139', 'SIGSEGV', 1),
                                                  ('134', 'SIGABRT', 1)])
def test_a_killed_kernel_without_a_document_is_recorded_and_fails(status, signal, code,
                                                                  tmp_path):
    doc = tmp_path / 'mem-test-7.json'
    (tmp_path / 'mem-test-7.started').write_text(
        'kernel mem-test\njob 7\nnodes n7\nstarted 2026-11-27T00:00:00Z\n')
    r = judge('--site', 'local', '--exit-status', status, str(doc), cwd=tmp_path)
    assert r.returncode == code, r.stdout + r.stderr
    assert f'killed by {signal}' in r.stdout
    record = json.loads((tmp_path / 'mem-test-7.judged.json').read_text())
    assert record['kernel'] == 'mem-test' and record['node'] == 'n7'
    assert record['exit_status']['signal_name'] == signal
    assert not (tmp_path / 'mem-test-7.started').exists()
    # The report of the directory: the case is the node's failure, mapped to MemTest.
    rep = subprocess.run([COBALT_BENCH, 'report', str(tmp_path), '--site', 'local',
                          '--format', 'md'], env=clean_env(), text=True,
                         capture_output=True, timeout=120)
    verdict = json.loads((tmp_path / 'report' / 'verdict.json').read_text())
    assert rep.returncode == 1, rep.stdout + rep.stderr
    assert any(r.startswith('FAILED: MemTest') or (r.startswith('FAILED') and signal in r)
               for r in verdict['reasons']), verdict['reasons']
    assert [b['node'] for b in verdict['bad_nodes']] == ['n7']


@pytest.mark.parametrize('status, code, words', [('2', 2, 'usage error'),
                                                 ('3', 3, 'cannot run here')])
def test_two_and_three_are_not_run(status, code, words, tmp_path):
    r = judge('--site', 'local', '--exit-status', status, str(tmp_path / 'mem-test-7.json'),
              cwd=tmp_path)
    assert r.returncode == code, r.stdout + r.stderr
    assert words in r.stdout
    record = json.loads((tmp_path / 'mem-test-7.judged.json').read_text())
    assert record['results'][0]['result'] == Result.SKIP


def test_a_run_that_left_no_document_is_a_lost_result(tmp_path):
    r = judge('--site', 'local', '--exit-status', '0', str(tmp_path / 'mem-test-7.json'),
              cwd=tmp_path)
    assert r.returncode == 1 and 'wrote no document' in r.stdout, r.stdout + r.stderr


def test_a_document_after_a_signal_is_never_a_pass(real_doc, tmp_path):
    doc = tmp_path / real_doc.name
    shutil.copy(real_doc, doc)
    r = judge('--site', 'local', '--exit-status', '139', str(doc), cwd=tmp_path)
    assert r.returncode == 1 and 'FAIL' in r.stdout and 'killed by SIGSEGV' in r.stdout, \
        r.stdout + r.stderr
    # SIGTERM (scancel, a time limit): stopped by someone, incomplete, not the node's fault
    r = judge('--site', 'local', '--exit-status', '143', str(doc), cwd=tmp_path)
    assert r.returncode == 1 and 'ABORT' in r.stdout and 'interrupted by SIGTERM' in r.stdout, \
        r.stdout + r.stderr


def test_the_document_is_judged_after_zero_or_one(real_doc, tmp_path):
    doc = tmp_path / real_doc.name
    shutil.copy(real_doc, doc)
    r = judge('--site', 'local', '--exit-status', '0', str(doc), cwd=tmp_path)
    # local's references are 8 Gbit/s: the 1 Gbit/s document is judged and fails them
    assert r.returncode == 1 and 'FAIL' in r.stdout and 'desired_speed' in r.stdout, r.stdout
    # without a site: recorded unjudged, the job takes the kernel's own status
    r = judge('--exit-status', '0', str(doc), cwd=tmp_path)
    assert r.returncode == 0 and 'UNJUDGED' in r.stdout, r.stdout + r.stderr


def test_bad_exit_status_is_a_usage_error(tmp_path):
    for bad in ('abc', '256', ''):
        r = judge('--site', 'local', '--exit-status', bad, str(tmp_path / 'x.json'),
                  cwd=tmp_path)
        assert r.returncode == 2 and 'exit status' in r.stderr, (bad, r.stderr)
    r = judge('--site', 'local', '--exit-status', '0', str(tmp_path / 'a.json'),
              str(tmp_path / 'b.json'), cwd=tmp_path)
    assert r.returncode == 2 and 'one document' in r.stderr


@pytest.mark.parametrize('state, result', [('OUT_OF_MEMORY', Result.FAIL),
                                           ('NODE_FAIL', Result.FAIL),
                                           ('TIMEOUT', Result.ABORT),
                                           ('CANCELLED by 0', Result.ABORT)])
def test_slurms_state_decides_between_a_failure_and_a_run_cut_short(state, result):
    site = load_site('local')
    case = Case(check='mem-test', partition='job 7', jobid='7', nodes=['n7'],
                result=Result.ABORT, fail_phase='run', job_state=state,
                fail_reason='mem-test-7: the job started and left no document')
    judged, _ = jd.judge_doc_case(case, site, 'local:default')
    assert judged.result is result
    assert f'Slurm job state {state.split()[0]}' in judged.fail_reason
