'''cobalt-bench's checks at a site that is not one of ours (docs/running-at-a-site.md):

- the design card's commands as written, in a fresh login shell on a node of the local
  Slurm cluster: `module load cobalt-bench`, `reframe -c $COBALT_BENCH_CHECKS -r` with no
  configuration (ReFrame's builtin generic one) and no references anywhere;
- a configuration written for another suite (tests/data/reframe/other-suite): its extras
  and features left alone, each check made for exactly the partitions it fits, MemTest
  run; a typo inside cobalt-bench's namespace still a clear error;
- references that lack a partition: the check runs, is recorded and reported unjudged,
  and the verdict is not COMPLIANT.
'''

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from plugins.checkout import DATA, REFRAME, ROOT, clean_env
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

CHECKS = os.path.join(ROOT, 'reframe_checks')
OTHER_SUITE = DATA / 'reframe' / 'other-suite' / 'config.py'
LMOD_INIT = '/usr/share/lmod/lmod/init/bash'


def reframe(*args, cwd, env=None, timeout=300):
    env = env or clean_env(PATH=f'{ROOT}/bin:{os.environ["PATH"]}')
    return subprocess.run([*REFRAME, '--nocolor', *args], cwd=str(cwd), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)


# ---- the design card ------------------------------------------------------------------

@pytest.mark.skipif(not os.path.exists(LMOD_INIT), reason=f'Lmod is not installed ({LMOD_INIT})')
def test_design_card_commands_on_a_cluster_node_with_no_configuration(slurm_cluster, tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    work = tmp_path / 'tmp'         # the user's `cd /tmp`, one of its own
    work.mkdir()
    script = f'''
        module use {ROOT}/modulefiles
        module load cobalt-bench || exit 90
        cd {work} || exit 91
        echo "reframe: $(command -v reframe)"
        reframe -c $COBALT_BENCH_CHECKS -r --nocolor
    '''
    # A login as a new user has it: no ReFrame or cobalt-bench settings, no modules.
    env = {'HOME': str(home), 'USER': 'root', 'LANG': 'C.UTF-8', 'PATH': '/usr/bin:/bin',
           'SLURM_CONF': str(slurm_cluster.slurm_conf)}
    proc = subprocess.run(['srun', '-N1', '-p', 'x86', '-t', '10', 'bash', '-l', '-c', script],
                          env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert f'reframe: {ROOT}/bin/reframe' in out, out
    for check in ('MemTest', 'Preflight', r'EthTest %interface=lo'):
        assert re.search(rf'^\[ +OK \] \(\d+/\d+\) {check} /\w+ @generic:default\+builtin',
                         out, re.M), f'{check} did not run and pass:\n{out}'
        assert re.search(rf'WARNING: {check} on generic:default: unjudged: no reference for '
                         'generic:default', out), f'{check} is not named unjudged:\n{out}'
    # MemCapacity and CpuTest too: no reference, and none needed (their peers judge them
    # in the report).
    for check in ('MemCapacity', 'CpuTest'):
        assert re.search(rf'^\[ +OK \] \(\d+/\d+\) {check} /\w+ @generic:default\+builtin',
                         out, re.M), out
        assert f'{check} on generic:default: unjudged' not in out, out
    assert re.search(r'\[  PASSED  \] Ran 5/5 test case\(s\) .*0 failure\(s\).* 0 skipped',
                     out), out
    assert (work / 'output' / 'generic' / 'default' / 'builtin' / 'MemTest' /
            'mem-test.json').is_file()


# ---- another suite's configuration ----------------------------------------------------

# Where each check belongs in tests/data/reframe/other-suite (placement.py's table).
MPI = {'OsuPt2Pt', 'OsuCollective', 'CbLinkTest'}
EXPECTED = {
    'Preflight': {'login', 'cpu', 'cpu-mpi', 'gpu', 'ib'},
    'MemTest': {'cpu', 'cpu-mpi', 'gpu', 'ib'},
    'MemCapacity': {'cpu', 'cpu-mpi', 'gpu', 'ib'},
    'CpuTest': {'cpu', 'cpu-mpi', 'gpu', 'ib'},
    'EthTest': {'cpu', 'cpu-mpi', 'gpu', 'ib'},
    'GpuCopy': {'gpu'},
    'IbWriteBw': {'ib'},
    'SmpMadStress': {'ib'},
    **{check: {'cpu-mpi', 'gpu', 'ib'} for check in MPI},
}


def test_other_suites_configuration_gets_each_check_where_it_fits(tmp_path):
    proc = reframe('-C', str(OTHER_SUITE), '-c', CHECKS, '--describe', cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert 'config error' not in proc.stdout and 'skipping' not in proc.stdout, proc.stdout
    described = json.loads(proc.stdout[proc.stdout.index('['):])
    placed = {}
    for test in described:
        check = test['name'].split()[0]
        parts = {v.split(':', 1)[1] for v in test['valid_systems']}
        assert placed.setdefault(check, parts) == parts, test['name']
    listed = {c: p for c, p in placed.items() if p}
    assert listed == EXPECTED
    assert not any(c.startswith('Dolphin') for c in listed), 'no partition has Dolphin'


def test_other_suites_configuration_runs_memtest(tmp_path):
    proc = reframe('-C', str(OTHER_SUITE), '-c', os.path.join(CHECKS, 'memory.py'), '-r',
                   '--system', 'hpc:cpu', cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 0, out
    assert re.search(r'^\[ +OK \] \(1/1\) MemTest /\w+ @hpc:cpu\+default', out, re.M), out
    doc = json.loads((tmp_path / 'output' / 'hpc' / 'cpu' / 'default' / 'MemTest' /
                      'mem-test.json').read_text())
    # the workload of the partition's cobalt_bench namespace, not mem-test's default
    assert doc['config']['stations'] == 1
    assert doc['metrics']['desired_speed']['value'] == pytest.approx(1)
    assert 'unjudged: no reference for hpc:cpu' in out, out


def test_a_typo_inside_the_namespace_is_still_an_error_naming_key_and_partition(tmp_path):
    config = tmp_path / 'config.py'
    config.write_text(OTHER_SUITE.read_text().replace("'mem_test_opts'", "'mem_tst_opts'"))
    proc = reframe('-C', str(config), '-c', os.path.join(CHECKS, 'memory.py'), '-l',
                   cwd=tmp_path)
    assert ("config error: partition 'hpc:cpu': extras['cobalt_bench']: unknown key "
            "'mem_tst_opts' (did you mean 'mem_test_opts'?)") in proc.stdout, proc.stdout
    assert 'Found 0 check(s)' in proc.stdout


def test_settings_written_flat_are_another_suites_keys(tmp_path):
    config = tmp_path / 'config.py'
    text = OTHER_SUITE.read_text()
    # the partition's namespace taken apart: its one setting written flat, with a value
    # cobalt-bench would refuse: outside the namespace it is another suite's key
    flat = re.sub(r"'cobalt_bench': \{\s*'mem_test_opts': '[^']*',\s*\},",
                  "'mem_test_opts': 42,", text)
    assert flat != text
    config.write_text(flat)
    proc = reframe('-C', str(config), '-c', os.path.join(CHECKS, 'memory.py'), '-l',
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert '- MemTest /' in proc.stdout, proc.stdout
    assert 'mem_test_opts' not in proc.stdout and 'deprecated' not in proc.stdout, proc.stdout


# ---- references that lack a partition --------------------------------------------------

def test_a_check_without_reference_runs_and_is_reported_unjudged(tmp_path):
    site = tmp_path / 'site'
    shutil.copytree(os.path.join(ROOT, 'site-configs', 'local'), site,
                    ignore=shutil.ignore_patterns('spack.yaml', '.spack-env', 'spack.lock'))
    # A compliance definition, not a demonstration, requiring MemTest (which passes its
    # references): Preflight, run and judged by nothing, must keep it from COMPLIANT.
    (site / 'compliance.yaml').write_text('title: unjudged test\nrequired:\n  MemTest: {}\n')
    # MemTest judged by what does not depend on the machine's speed; Preflight not at all.
    (site / 'references.yaml').write_text(yaml.safe_dump({'MemTest': {'local:default': {
        'verification_errors': [0, None, 0, 'errors']}}}))
    results = tmp_path / 'results'
    env = clean_env(PATH=f'{ROOT}/bin:{os.environ["PATH"]}',
                    COBALT_BENCH_RESULTS=str(results), COBALT_BENCH_RUN_ID='run')
    proc = reframe('-C', str(site / 'config.py'), '-c', os.path.join(CHECKS, 'preflight.py'),
                   '-c', os.path.join(CHECKS, 'memory.py'), '-r', cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout
    assert 'Preflight on local:default: unjudged: no reference for local:default' in proc.stdout
    run = results / 'local' / 'run'
    report = subprocess.run([os.path.join(ROOT, 'bin', 'cobalt-bench'), 'report', str(run),
                             '--site', str(site), '--format', 'md'], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert report.returncode != 0, report.stdout
    assert 'INCOMPLETE' in report.stdout, report.stdout
    assert re.search(r'UNJUDGED: Preflight on local:default.*: unjudged: no reference for '
                     r'local:default', report.stdout), report.stdout
    verdict = json.loads((run / 'report' / 'verdict.json').read_text())
    assert verdict['state'] == 'INCOMPLETE'
    assert [u for u in verdict['unjudged'] if u.startswith('Preflight on local:default')]
    assert 'unjudged' in (run / 'report' / 'report.md').read_text()


# ---- a site's options are arguments, never shell ------------------------------------------

@pytest.mark.parametrize('opts', ['--duration 1 $(touch {mark})', '--duration 1;touch {mark}',
                                  '--duration 1 `touch {mark}`'])
def test_options_from_the_extras_run_no_shell(opts, tmp_path):
    mark = tmp_path / 'ran'
    config = tmp_path / 'config.py'
    config.write_text(OTHER_SUITE.read_text().replace(
        "'--stations 1 --desired-rate 1 --duration 1'", repr(opts.format(mark=mark))))
    proc = reframe('-C', str(config), '-c', os.path.join(CHECKS, 'memory.py'), '-r',
                   '--system', 'hpc:cpu', cwd=tmp_path)
    assert not mark.exists(), f'the job shell ran a command from the extras:\n{proc.stdout}'
    # mem-test got the words as they are, and refused them: a usage error, never a pass
    assert proc.returncode != 0 and 'mem-test not run: usage error (exit status 2)' in \
        proc.stdout, \
        proc.stdout
