'''The results store: every run of the suite in its own results/<site>/<run-id>/ with the
ReFrame report, perflogs, the kernels' JSON documents and job outputs; run ids that never
collide; nothing overwritten; an interrupted run marked partial with the earlier runs
intact; ReFrame's results database (reframe --performance-compare). A job script's documents in the
store: tests/integration/slurm/test_mem_test_jobs.py.'''

import hashlib
import json
import os
import re
import signal
import subprocess
import time

import pytest

from plugins.checkout import REFRAME, ROOT, clean_env

RUN_SUITE = os.path.join(ROOT, 'scripts', 'run-suite')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


def env_for(results, base=None, **extra):
    return clean_env(base, COBALT_BENCH_RESULTS=str(results), **extra)


def run_suite(results, *options, env=None, timeout=600):
    proc = subprocess.run([RUN_SUITE, 'local', '-n', 'MemTest', '--nocolor', *options],
                          env=env or env_for(results), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout)
    m = re.search(r'^results: (.+)$', proc.stdout, re.M)
    return proc, (m.group(1) if m else None)


def tree_digest(path):
    '''{relative path: sha256} of every file under path.'''
    digest = {}
    for dirpath, _, files in os.walk(path):
        for name in files:
            full = os.path.join(dirpath, name)
            with open(full, 'rb') as fp:
                digest[os.path.relpath(full, path)] = hashlib.sha256(fp.read()).hexdigest()
    return digest


def runs_listing(results):
    return subprocess.run([COBALT_BENCH, 'runs', '--results', str(results)], text=True,
                          capture_output=True, timeout=60).stdout


@pytest.fixture(scope='module')
def store(tmp_path_factory):
    '''A results store with two complete runs of the suite.'''
    results = tmp_path_factory.mktemp('results')
    first, run1 = run_suite(results)
    assert first.returncode == 0, first.stdout
    digest1 = tree_digest(run1)
    second, run2 = run_suite(results)
    assert second.returncode == 0, second.stdout
    return results, run1, digest1, run2


def test_each_run_has_its_own_complete_directory(store):
    results, run1, digest1, run2 = store
    assert run1 != run2
    for run in (run1, run2):
        assert os.path.dirname(run) == os.path.join(str(results), 'local')
        assert re.fullmatch(r'\d{8}T\d{6}-\d+(-\d+)?', os.path.basename(run))
        assert not os.path.exists(os.path.join(run, 'INCOMPLETE'))
        out = os.path.join(run, 'output', 'local', 'default', 'builtin', 'MemTest')
        for name in ('mem-test.json', 'rfm_job.out', 'rfm_job.sh'):
            assert os.path.isfile(os.path.join(out, name)), name
        assert os.path.isfile(os.path.join(run, 'perflogs', 'local', 'default', 'MemTest.log'))
        with open(os.path.join(run, 'report.json')) as fp:
            report = json.load(fp)
        assert report['session_info']['prefix_output'] == os.path.join(run, 'output')
    # The second run changed nothing of the first.
    assert tree_digest(run1) == digest1
    listing = runs_listing(results)
    for run in (run1, run2):
        assert re.search(rf'{os.path.basename(run)}\s+complete\s+1 pass', listing), listing


def test_a_given_run_id_is_never_overwritten(store):
    results, run1, digest1, _ = store
    env = env_for(results, COBALT_BENCH_RUN_ID=os.path.basename(run1))
    proc = subprocess.run([RUN_SUITE, 'local', '-n', 'MemTest'], env=env, text=True,
                          capture_output=True, timeout=120)
    assert proc.returncode == 2
    assert 'never overwritten' in proc.stderr
    assert tree_digest(run1) == digest1


def test_interrupted_run_is_partial_and_earlier_runs_intact(store):
    results, run1, digest1, _ = store
    before = set(os.listdir(os.path.join(str(results), 'local')))
    proc = start_memtest_run(results, 60)
    try:
        # Wait for mem-test to be running, then Ctrl-C the whole run (its process group).
        deadline = time.monotonic() + 120
        new = None
        while time.monotonic() < deadline:
            new = set(os.listdir(os.path.join(str(results), 'local'))) - before
            if new:
                stage = os.path.join(str(results), 'local', next(iter(new)), 'stage', 'local',
                                     'default', 'builtin', 'MemTest', 'rfm_job.out')
                if os.path.exists(stage):
                    break
            time.sleep(0.2)
        else:
            pytest.fail('the run did not start mem-test in time')
        time.sleep(1)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, out
    run = os.path.join(str(results), 'local', next(iter(new)))
    assert 'marked partial' in out
    with open(os.path.join(run, 'INCOMPLETE')) as fp:
        marker = fp.read()
    assert 'interrupted: SIGINT' in marker
    assert re.search(rf'{os.path.basename(run)}\s+partial', runs_listing(results))
    # The earlier runs are untouched, and the report says what happened.
    assert tree_digest(run1) == digest1
    rep = subprocess.run([COBALT_BENCH, 'report', run, '--format', 'md'], text=True,
                         capture_output=True, timeout=120)
    assert rep.returncode == 1
    assert 'INCOMPLETE' in rep.stdout and 'MISSING: run: the run is partial' in rep.stdout
    with open(os.path.join(run, 'report', 'report.md')) as fp:
        md = fp.read()
    assert 'state: **partial**' in md and 'SIGINT' in md
    # `latest` skips it: the newest complete run.
    latest = subprocess.run([COBALT_BENCH, 'report', '--results', str(results), 'local/latest',
                             '-o', os.path.join(str(results), 'latest-report')],
                            text=True, capture_output=True, timeout=120)
    assert os.path.basename(run) not in latest.stdout


def processes_under(path):
    '''pids of the processes whose working directory is under `path`.'''
    pids = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                cwd = os.readlink(f'/proc/{pid}/cwd')
            except OSError:
                continue
            if cwd == path or cwd.startswith(path + '/'):
                pids.append(int(pid))
    return pids


def start_memtest_run(results, seconds):
    '''run-suite of the local site's MemTest for `seconds`, in its own session, as a user
    starts it from a terminal (stop signals at their default); output captured.'''
    return subprocess.Popen([RUN_SUITE, 'local', '-n', 'MemTest', '--nocolor', '-S',
                             f'kernel_opts=--stations 1 --desired-rate 8 --duration {seconds}'],
                            env=env_for(results), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_default_stop_signals)


def _default_stop_signals():
    # A shell started with a signal ignored cannot trap it, and Python leaves it ignored:
    # nohup ignores SIGHUP, and a non-interactive shell starts a background job (`make test
    # &`) with SIGINT ignored. run-suite started from a terminal or a login session has both
    # at their default, as here, whatever the test runner itself was started with.
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_run_suite_stops_reframe_within_seconds(sig, tmp_path):
    '''kill -TERM (or -HUP) to run-suite alone (not its process group, as a batch
    system or a supervisor sends it): ReFrame gets it, stops its test and mem-test, and
    the run is marked interrupted by that signal.'''
    results = tmp_path / 'results'
    proc = start_memtest_run(results, 120)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            outs = list(results.glob('local/*/stage/local/default/builtin/MemTest/rfm_job.out'))
            if outs and '----- ' in outs[0].read_text() or outs and \
                    'Running paced' in outs[0].read_text():
                break
            time.sleep(0.2)
        else:
            pytest.fail('the run did not start mem-test in time')
        stage = str(outs[0].parent)
        assert processes_under(stage), 'mem-test is not running'
        started = time.monotonic()
        os.kill(proc.pid, sig)
        out, _ = proc.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # Stopped within seconds, not after mem-test's 120 s.
    assert took < 20, (took, out)
    assert proc.returncode != 0
    assert 'force exit error: received signal' in out, out
    run = outs[0].parents[5]
    marker = (run / 'INCOMPLETE').read_text()
    assert f'interrupted: SIG{sig.name[3:]}' in marker, marker
    assert re.search(rf'{run.name}\s+partial', runs_listing(results))
    time.sleep(1)
    assert not processes_under(stage), 'mem-test outlived the run'


def test_a_run_of_no_check_is_not_called_interrupted(tmp_path):
    # ReFrame exits 0 having run nothing ("Ran 0/0"): say that, and judge nothing.
    proc = subprocess.run([RUN_SUITE, 'local', '-n', 'NoSuchCheck', '--nocolor'],
                          env=env_for(tmp_path), text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    run = re.search(r'^results: (.+)$', proc.stdout, re.M).group(1)
    assert proc.returncode == 1, proc.stdout
    assert 'ReFrame ran no test case (Ran 0/0' in proc.stdout
    assert 'interrupted' not in proc.stdout
    with open(os.path.join(run, 'INCOMPLETE')) as fp:
        marker = fp.read()
    assert 'empty: ReFrame ran 0/0 test cases' in marker and 'interrupted' not in marker
    assert re.search(r'partial\s+-\s+\(INCOMPLETE marker present: empty: ReFrame ran 0/0',
                     runs_listing(tmp_path))


def test_reframe_results_database(store):
    '''Each site config enables ReFrame's results storage: one database per site beside the
    runs, so `reframe --performance-compare` compares two runs.'''
    results, run1, _, run2 = store
    assert os.path.isfile(os.path.join(str(results), 'local', 'results.db'))
    uuids = []
    for run in (run1, run2):
        with open(os.path.join(run, 'report.json')) as fp:
            uuids.append(json.load(fp)['session_info']['uuid'])
    env = env_for(results)
    config = os.path.join(ROOT, 'site-configs', 'local', 'config.py')
    listed = subprocess.run([*REFRAME, '-C', config, '--list-stored-sessions', '--nocolor'],
                            env=env, cwd=str(results), text=True, capture_output=True,
                            timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    for uuid in uuids:
        assert uuid in listed.stdout
    cmp = subprocess.run([*REFRAME, '-C', config, '--nocolor',
                          f'--performance-compare={uuids[0]}/{uuids[1]}/mean:/'],
                         env=env, cwd=str(results), text=True, capture_output=True,
                         timeout=120)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    assert 'MemTest' in cmp.stdout and 'measured_speed' in cmp.stdout
