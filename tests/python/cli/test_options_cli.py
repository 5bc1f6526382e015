'''A kernel's typed options from a job script: `cobalt-bench options [--env] KERNEL
NAME=VALUE...` prints the command line, one argument a line, after checking each option
against the kernel's description (name, type, range), and jobs/lib/cobalt-job.sh's
cb_typed_options takes them from CB_OPT_<KERNEL>_<NAME> variables into a job's array.
A bad option is exit 2 naming it and what it takes; a value is an argument, never code.'''

import contextlib
import io
import os
import subprocess
import sys

import pytest

from cobalt_bench import cli
from plugins.checkout import ROOT, clean_env


def options(*argv, environ=None):
    '''(exit status, stdout lines, stderr) of `cobalt-bench options ARGV`, in this process.'''
    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(clean_env(saved, drop=('CB_OPT_',), **(environ or {})))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(['options', *argv])
            except SystemExit as stop:      # argparse's own usage errors
                status = stop.code
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return status, out.getvalue().splitlines(), err.getvalue()


def test_the_options_by_name_as_the_command_line():
    status, words, _ = options('mem-test', 'stations=1', 'desired-rate=8', 'max=true',
                               'quiet=false', 'duration=500ms', 'numa_nodes=0-1')
    assert status == 0
    assert words == ['--stations', '1', '--desired-rate', '8', '--max', '--duration', '500ms',
                     '--numa-nodes', '0-1']


@pytest.mark.parametrize('word,said', [
    ('stations=0', "stations=0: 0 is out of range: mem-test --stations takes 1 to 100000"),
    ('stations=x', "mem-test --stations takes int, not 'x'"),
    ('stations=1.5', "mem-test --stations takes int, not '1.5'"),
    ('desired_rate=-1', 'mem-test --desired-rate takes'),
    ('max=maybe', "mem-test --max is a flag: true or false, not 'maybe'"),
    ('statoins=2', "'statoins' is no option of mem-test (did you mean 'stations'?)"),
    ('stations', "'stations': expected NAME=VALUE"),
    ('ops=write\nread', 'takes one line'),
])
def test_a_bad_option_is_exit_2_naming_it(word, said):
    status, words, err = options('mem-test', word)
    assert (status, words) == (2, [])
    assert said in err
    assert 'Traceback' not in err


def test_an_unknown_kernel_is_named_with_the_kernels():
    status, _, err = options('mem-tset', 'stations=1')
    assert status == 2
    assert "no kernel 'mem-tset'" in err and 'mem-test' in err


def test_from_the_environment_and_a_word_wins():
    env = {'CB_OPT_MEM_TEST_STATIONS': '3', 'CB_OPT_MEM_TEST_REDUCTION': '4',
           'CB_OPT_CB_LINKTEST_NUM_MESSAGES': '9', 'MEM_TEST_OPTS': '--max'}
    status, words, _ = options('--env', 'mem-test', 'stations=2', environ=env)
    assert status == 0
    assert words == ['--reduction', '4', '--stations', '2']
    # without --env the environment is not read
    assert options('mem-test', environ=env)[:2] == (0, [])
    # a variable is checked as a word is
    status, _, err = options('--env', 'mem-test', environ={'CB_OPT_MEM_TEST_REDUCTION': '0'})
    assert status == 2 and '--reduction takes 1 to 1024' in err


def test_a_value_is_one_argument_whatever_it_holds():
    status, words, _ = options('cb-linktest', 'output=a b; touch x $(id)')
    assert (status, words) == (0, ['--output', 'a b; touch x $(id)'])


# ---- cb_typed_options, in a job's shell ----------------------------------------------------

JOB = '''
say() { echo "job: $*"; }
. "$JOBS/lib/cobalt-job.sh"
opts=(--duration 1)
cb_typed_options mem-test opts
rc=$?
printf '%s\\n' "rc $rc" "${opts[@]}"
'''


def job_shell(tmp_path, **variables):
    '''The lines the job's shell prints: its rc, then its opts array, one a line.'''
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    wrapper = bindir / 'cobalt-bench'
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m cobalt_bench "$@"\n')
    wrapper.chmod(0o755)
    env = clean_env(drop=('CB_OPT_',), **{'JOBS': os.path.join(ROOT, 'jobs'),
                                          'PATH': f'{bindir}:{os.environ["PATH"]}',
                                          **variables})
    proc = subprocess.run(['bash', '-c', JOB], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60)
    return proc.stdout.splitlines(), proc.stderr


def test_a_job_appends_the_typed_options_to_its_own(tmp_path):
    lines, _ = job_shell(tmp_path, CB_OPT_MEM_TEST_STATIONS='1',
                         CB_OPT_MEM_TEST_OPS='write,read', CB_OPT_MEM_TEST_MAX='yes')
    assert lines == ['rc 0', '--duration', '1', '--max', '--ops', 'write,read', '--stations', '1']


def test_a_job_without_typed_options_asks_nothing(tmp_path):
    lines, _ = job_shell(tmp_path, PATH='/usr/bin:/bin')   # no cobalt-bench at all
    assert lines == ['rc 0', '--duration', '1']


def test_a_job_with_a_bad_one_gets_2_and_runs_nothing_of_it(tmp_path):
    lines, err = job_shell(tmp_path, CB_OPT_MEM_TEST_STATIONS=f'1; touch {tmp_path}/x')
    assert lines == ['rc 2', '--duration', '1']
    # the variable named as it was set
    assert f"CB_OPT_MEM_TEST_STATIONS=1; touch {tmp_path}/x: mem-test --stations takes int" in err
    assert not (tmp_path / 'x').exists()
