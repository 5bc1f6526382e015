'''Nothing of cobalt-bench changes another suite (issue 35): another suite's checks
(tests/data/reframe/other-suite/checks: a reference of 0; from ReFrame 4.10 on, '$ref'
references in a references.yaml of its own under the reference prefix that the site sets
for everything) run with and without cobalt-bench's checks in the same invocation, under
the pinned ReFrame and every ReFrame of COBALT_REFRAME_VENVS (.ci/run: 4.5.2, 4.7.3 and
4.10.4): the other suite's results are identical, whatever each release decides, and
cobalt-bench's MemTest runs beside them (unjudged: the shared file has no entry of ours, and
its other entries are never an error of ours).'''

import json
import os
import subprocess

import pytest

from plugins.checkout import DATA, REFRAME, ROOT, clean_env
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

VENVS = [v for v in os.environ.get('COBALT_REFRAME_VENVS', '').split(os.pathsep) if v]
OTHER = DATA / 'reframe' / 'other-suite'
OURS = os.path.join(ROOT, 'reframe_checks', 'memory.py')
REFRAMES = [('pinned', REFRAME)] + [
    (os.path.basename(v), [os.path.join(v, 'bin', 'reframe')]) for v in VENVS]


def run(command, tmp_path, name, *checks):
    '''report.json's testcases {name: testcase} of a run of `checks` in the other suite's
    configuration, its reference prefix the other suite's directory.'''
    report = tmp_path / f'{name}.json'
    env = clean_env(PATH=f'{ROOT}/bin:{os.environ["PATH"]}',
                    RFM_REFERENCE_PREFIX=str(OTHER / 'references'),
                    HOME=str(tmp_path / 'home'))
    args = [*command, '-C', str(OTHER / 'config.py'), '--system', 'hpc:cpu', '-r',
            '--exec-policy', 'serial', '--nocolor', '--report-file', str(report),
            '--prefix', str(tmp_path / name)]
    for check in checks:
        args += ['-c', str(check)]
    proc = subprocess.run(args, cwd=str(tmp_path), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    assert report.is_file(), proc.stdout
    cases = {tc['name']: tc for r in json.loads(report.read_text())['runs'][-1:]
             for tc in r['testcases']}
    return cases, proc.stdout


def outcome(tc):
    '''What the other suite's check came to, without what differs from run to run.'''
    perf = {k: v[:4] for k, v in (tc.get('perfvalues') or {}).items()}
    # ReFrame 4.5's report keeps them as a list of perfvars
    perf.update({p.get('name'): (p.get('value'), p.get('reference'), p.get('thres_lower'),
                                 p.get('thres_upper')) for p in tc.get('perfvars') or []})
    return tc['result'], tc['fail_phase'], tc['fail_reason'], perf


@pytest.mark.parametrize('label, command', REFRAMES, ids=[r[0] for r in REFRAMES])
def test_other_suites_results_are_the_same_beside_cobalt_bench(label, command, tmp_path):
    (tmp_path / 'home').mkdir()
    alone, out_alone = run(command, tmp_path, 'alone', OTHER / 'checks' / 'other_suite.py')
    # cobalt-bench's check file first: whatever it does at load time happens before.
    beside, out_beside = run(command, tmp_path, 'beside', OURS,
                             OTHER / 'checks' / 'other_suite.py')
    others = [name for name in alone if name.startswith('Other')]
    assert 'OtherZeroLoss' in others, out_alone
    for name in others:
        assert outcome(beside[name]) == outcome(alone[name]), (name, out_alone, out_beside)
    # Each release decides the reference of 0 its own way: 4.8 judged it, before not.
    version = subprocess.run([*command, '--version'], text=True, capture_output=True,
                             timeout=60).stdout.strip()
    release = tuple(int(p) for p in version.split('-')[0].split('.')[:2])
    # (ReFrame 4.5 writes a pass as 'success'.)
    passed = ('pass', 'success')
    assert (alone['OtherZeroLoss']['result'] in passed) == (release < (4, 8)), alone
    if release >= (4, 10):
        assert alone['OtherExternalRef']['result'] in passed, out_alone
    # cobalt-bench's check ran: the shared references.yaml holds other suites' entries
    # only, none of which is an error of ours; MemTest is unjudged (nothing judges it).
    mem = beside['MemTest']
    assert mem['result'] in passed and (mem.get('perfvalues') or mem.get('perfvars')), \
        out_beside
    assert 'unjudged: no reference for hpc:cpu' in out_beside, out_beside
