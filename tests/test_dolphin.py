'''The Dolphin PCIe interconnect checks: the parsers and verdicts on the real outputs
recorded in Dolphin's manual (tests/data/dolphin/) and on failing variants of them (a node
missing, a failure count, *FAILED*); the ReFrame checks end to end with
site-configs/dolphin-example, where small executables on PATH print those recorded outputs
in place of Dolphin's tools (there is no Dolphin hardware here), and skipped with a reason
without them; the Slurm jobs through the local cluster.'''

import json
import os
import re
import subprocess
import sys

import pytest

from cobalt_bench.parsers import dolphin as dp
from conftest import finished_job, sbatch


DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'dolphin')
TOOLS = ['dis_diag', 'sciconntest', 'dma_bench', 'scipp', 'intr_bench']
RECORDED = {'dis_diag': 'dis_diag-MXH830.txt', 'sciconntest': 'sciconntest.txt',
            'dma_bench': 'dma_bench-MXH930.txt', 'scipp': 'scipp-MXH830.txt',
            'intr_bench': 'intr_bench.txt'}


def recorded(tool):
    with open(os.path.join(DATA, RECORDED[tool])) as fp:
        return fp.read()


def changed(text, old, new, count=1):
    '''A failing variant of a recorded output; the change must apply.'''
    assert text.count(old) >= count, old
    return text.replace(old, new, count)


# ---- parsers on the recorded outputs ---------------------------------------------------

def test_dis_diag_recorded():
    d = dp.parse_dis_diag(recorded('dis_diag'))
    assert d['result'] == 'PASSED'
    assert (d['notes'], d['warnings'], d['errors']) == (0, 0, 0)
    assert d['local_nodes'] == [4]
    assert d['nodes_detected'] == {4, 8}
    assert d['adapters_found'] == 2
    assert d['sessions'] == {4: 'Session valid', 8: 'Session valid'}
    assert '[WARN] Node 8 not reachable, but is an entry in the dishosts.conf file' in \
        d['messages']


def test_sciconntest_recorded():
    d = dp.parse_sciconntest(recorded('sciconntest'))
    assert d['local_node'] == 76
    assert (d['loops'], d['nodes_found'], d['errors']) == (1, 8, 0)
    assert sorted(d['nodes']) == [4, 8, 12, 68, 72, 132, 136, 140]
    assert all(s == {'found': True, 'failures': 0, 'longest_failure_ms': 0.0}
               for s in d['nodes'].values())
    assert d['responses'] == [4, 8, 12, 68, 72, 132, 136, 140]


def test_dma_bench_recorded():
    rows = dp.parse_dma_bench(recorded('dma_bench'))
    assert [r['message_size'] for r in rows] == [64 << i for i in range(21)]
    assert rows[0] == {'message_size': 64, 'total_size': 16384, 'vector_length': 256,
                       'transfer_time_us': 69.55, 'time_per_message_us': 0.27,
                       'bandwidth_mbps': 235.57}
    assert rows[-1]['bandwidth_mbps'] == 27959.73
    assert max(r['bandwidth_mbps'] for r in rows) == 27960.29


def test_scipp_and_intr_bench_recorded():
    rows = dp.parse_scipp(recorded('scipp'))
    assert [r['size'] for r in rows] == [0] + [4 << i for i in range(12)]
    assert rows[0] == {'size': 0, 'retries': 248, 'latency_us': 1.391, 'half_latency_us': 0.695}
    assert rows[-1]['latency_us'] == 3.854
    assert dp.parse_intr_bench(recorded('intr_bench')) == {'unidirectional_us': 2.515,
                                                           'round_trip_us': 5.03}


@pytest.mark.parametrize('tool, text', [
    ('dis_diag', 'hello\n'),
    ('sciconntest', recorded('sciconntest').split(' SCICONNTEST_REPORT_END')[0]),
    ('dma_bench', recorded('scipp')),
    ('scipp', recorded('dma_bench')),
    ('intr_bench', 'Average unidirectional interrupt time :        2.515 us.\n'),
])
def test_not_the_tools_output(tool, text):
    parse = {'dis_diag': dp.parse_dis_diag, 'sciconntest': dp.parse_sciconntest,
             **dp.PARSERS}[tool]
    with pytest.raises(dp.DolphinParseError):
        parse(text)


def test_inconsistent_figures_are_rejected():
    # a bandwidth that is not total size / transfer time, a half that is not half
    with pytest.raises(dp.DolphinParseError, match='is not'):
        dp.parse_dma_bench(changed(recorded('dma_bench'), '235.57 MBytes/s', '535.57 MBytes/s'))
    with pytest.raises(dp.DolphinParseError, match='not half'):
        dp.parse_scipp(changed(recorded('scipp'), '1.258             0.629',
                               '1.258             0.829'))


# ---- verdicts ------------------------------------------------------------------------

def test_dis_diag_verdict_passes_on_the_recorded_output():
    passed, problems, _ = dp.judge_dis_diag({'a': recorded('dis_diag'),
                                             'b': recorded('dis_diag')})
    assert passed and problems == []


@pytest.mark.parametrize('old, new, expect', [
    ('TEST RESULT: *PASSED*', 'TEST RESULT: *FAILED*', 'b: TEST RESULT is *FAILED*'),
    ('discovered 0 error(s)', 'discovered 2 error(s)', 'b: dis_diag discovered 2 error(s)'),
    ('TEST RESULT: *PASSED*\n', '', 'b: TEST RESULT is missing'),
    ('Nodes detected:   0004  0008', 'Nodes detected:   0004',
     'the nodes do not see the same topology: a: 4 8; b: 4'),
    ('NodeId                     : 4', 'NodeId                     : 12',
     'a does not see b (node 12)'),
])
def test_dis_diag_verdict_fails(old, new, expect):
    passed, problems, _ = dp.judge_dis_diag({'a': recorded('dis_diag'),
                                             'b': changed(recorded('dis_diag'), old, new)})
    assert not passed
    assert any(expect in p for p in problems), problems


def test_sciconntest_verdict():
    text = recorded('sciconntest')
    assert dp.judge_sciconntest({'n76': text})[0]
    # the cluster's NodeIds: all found (76 is the node itself)
    assert dp.judge_sciconntest({'n76': text}, {4, 8, 76, 140})[0]
    passed, problems, _ = dp.judge_sciconntest({'n76': text}, {4, 8, 76, 144})
    assert not passed and problems == ['n76: remote node(s) 144 not found']


@pytest.mark.parametrize('variant, expect', [
    # a failure count
    (lambda t: changed(t, 'node 68 : Number of failures : 0', 'node 68 : Number of failures : 3'),
     'n76: node 68: 3 failures'),
    (lambda t: changed(t, 'NUM_ERRORS_DETECTED       0', 'NUM_ERRORS_DETECTED       1'),
     'n76: NUM_ERRORS_DETECTED 1'),
    # a node missing from the report (and the count still saying 8)
    (lambda t: changed(t, ' node 140 : Found\n node 140 : Number of failures : 0\n'
                          ' node 140 : Longest failure    :    0.00 (ms)\n', ''),
     'n76: NUM_NODES_FOUND 8 but 7 nodes reported found'),
    (lambda t: changed(t, 'node 12 : Found', 'node 12 : Not found'), 'n76: node 12 not found'),
    (lambda t: changed(t, 'NUM_TESTLOOPS_EXECUTED    1', 'NUM_TESTLOOPS_EXECUTED    0'),
     'n76: no test loop executed'),
    (lambda t: t.split(' SCICONNTEST_REPORT\n')[0], 'not a complete sciconntest output'),
])
def test_sciconntest_verdict_fails(variant, expect):
    passed, problems, _ = dp.judge_sciconntest({'n76': variant(recorded('sciconntest'))})
    assert not passed
    assert any(expect in p for p in problems), problems


def test_sciconntest_a_node_that_is_not_found_by_another():
    # node 76's output, and a second node (80) whose report lacks node 76
    other = changed(recorded('sciconntest'), 'Local node-id      : 76', 'Local node-id      : 80')
    other = changed(other, 'node 140 : Found', 'node 76 : Found')
    other = changed(other, 'node 140 :', 'node 76 :', 2)
    mine = recorded('sciconntest')
    passed, problems, _ = dp.judge_sciconntest({'n76': mine, 'n80': other})
    assert not passed
    assert 'n76: remote node(s) 80 not found' in problems


def test_command_line(tmp_path):
    lib = ['-m', 'cobalt_bench.parsers.dolphin']   # the command the Slurm jobs run
    good = tmp_path / 'dis_diag-a.out'
    good.write_text(recorded('dis_diag'))
    bad = tmp_path / 'dis_diag-b.out'
    bad.write_text(changed(recorded('dis_diag'), '*PASSED*', '*FAILED*'))
    proc = subprocess.run([sys.executable, *lib, 'dis_diag', str(good)], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and 'dis_diag: PASSED' in proc.stdout
    proc = subprocess.run([sys.executable, *lib, 'dis_diag', str(good), str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert 'PROBLEM: dis_diag-b.out: TEST RESULT is *FAILED*' in proc.stdout
    out = tmp_path / 'dma.out'
    out.write_text(recorded('dma_bench'))
    proc = subprocess.run([sys.executable, *lib, 'dma_bench', str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)[0]['bandwidth_mbps'] == 235.57
    assert subprocess.run([sys.executable, *lib, 'nonsense'], capture_output=True).returncode == 2


# ---- stand-ins for Dolphin's tools ---------------------------------------------------

FAKE = '''#!/bin/sh
# Stands in for Dolphin's {tool} (no Dolphin hardware here): prints a real output recorded
# in Dolphin's manual; per node, {data}/{tool}-<node>.txt if the test wrote one.
case " $* " in *" -server "*) echo "{tool} server: $*"; exit 0;; esac
host=${{COBALT_FAKE_DOLPHIN_HOST:-${{SLURMD_NODENAME:-local}}}}
f={data}/{tool}-$host.txt
[ -f "$f" ] || f={data}/{tool}.txt
cat "$f"
'''


@pytest.fixture
def fake_tools(tmp_path):
    '''A directory of stand-ins for the five tools and the data they print; returns
    (bin dir, data dir).'''
    bindir, data = tmp_path / 'fakebin', tmp_path / 'fakedata'
    bindir.mkdir()
    data.mkdir()
    for tool in TOOLS:
        (data / f'{tool}.txt').write_text(recorded(tool))
        path = bindir / tool
        path.write_text(FAKE.format(tool=tool, data=data))
        path.chmod(0o755)
    return bindir, data


# ---- ReFrame --------------------------------------------------------------------------

REFRAME = [sys.executable, '-c',
           'import sys; from reframe.frontend.cli import main; '
           'sys.argv[0] = "reframe"; sys.exit(main())']


@pytest.fixture(scope='module')
def root(repo_root):
    return os.path.realpath(str(repo_root))


def reframe(root, site, results, *options, path=None, fakes=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    env.update(COBALT_BENCH_RESULTS=str(results), COBALT_BENCH_RUN_ID='run')
    if path:
        env['PATH'] = f'{path}:{env["PATH"]}'
    if fakes:
        env['COBALT_DOLPHIN_TOOLS'] = 'PATH'
        # each node is told apart by the stand-ins; nothing is started elsewhere
        options = ('-S', 'run_on=env COBALT_FAKE_DOLPHIN_HOST={host}',
                   '-S', 'server_start_s=0.2', *options)
    proc = subprocess.run(
        [*REFRAME, '-C', os.path.join(root, 'site-configs', site, 'config.py'),
         '-c', os.path.join(root, 'reframe_checks', 'dolphin.py'), '-r',
         '--exec-policy', 'serial', '--nocolor', *options],
        cwd=str(results), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=600)
    with open(os.path.join(str(results), site, 'run', 'report.json')) as fp:
        report = json.load(fp)
    cases = {(tc['name'].split()[0], tc['partition']): tc
             for run in report['runs'] for tc in run['testcases']}
    return proc, cases


def perf(tc, name):
    '''(value, reference, lower, upper, unit) of a performance variable.'''
    prefix = f'{tc["system"]}:{tc["partition"]}:'
    return tuple(tc['perfvalues'][prefix + name][:5])


CHECKS = ['DolphinStatic', 'DolphinLoad', 'DolphinDmaBench', 'DolphinScipp',
          'DolphinIntrBench']


def skip_reasons(output):
    '''{(check, partition): reason} from ReFrame's SKIP lines (the run report has no
    reasons).'''
    return {(m.group(1), m.group(2)): m.group(3) for m in re.finditer(
        r'^\[\s+SKIP \] \(\s*\d+/\d+\) (\w+) /\w+ @[\w-]+:([\w-]+)\+\w+ \[(.*)\]$', output,
        re.M)}


TOOL_OF = {'DolphinStatic': 'dis_diag', 'DolphinLoad': 'sciconntest',
           'DolphinDmaBench': 'dma_bench', 'DolphinScipp': 'scipp',
           'DolphinIntrBench': 'intr_bench'}


def test_reframe_skips_without_the_tools(root, tmp_path):
    proc, cases = reframe(root, 'dolphin-example', tmp_path, fakes=False)
    assert proc.returncode == 0, proc.stdout
    assert len(cases) == 10
    assert all(tc['result'] == 'skip' for tc in cases.values())
    reasons = skip_reasons(proc.stdout)
    assert sorted(reasons) == sorted(cases)
    for (name, part), reason in reasons.items():
        assert reason.startswith(f'Dolphin tool {TOOL_OF[name]} not found (/opt/DIS/'), reason
        assert f'no Dolphin PCIe interconnect software on dolphin-example:{part}' in reason


def test_reframe_skips_on_the_local_site(root, tmp_path):
    proc, cases = reframe(root, 'local', tmp_path, fakes=False)
    assert proc.returncode == 0, proc.stdout
    assert {name for name, _ in cases} == set(CHECKS)
    assert all(tc['result'] == 'skip' for tc in cases.values())
    reasons = skip_reasons(proc.stdout)
    assert sorted(reasons) == sorted(cases)
    for (name, _), reason in reasons.items():
        assert f'Dolphin tool {TOOL_OF[name]} not found (not on PATH' in reason, reason


def test_reframe_with_recorded_outputs(root, tmp_path, fake_tools):
    bindir, _ = fake_tools
    proc, cases = reframe(root, 'dolphin-example', tmp_path, path=bindir)
    assert proc.returncode == 0, proc.stdout
    assert sorted(cases) == sorted((c, p) for c in CHECKS for p in ('mxh830', 'mxh930'))
    assert all(tc['result'] == 'pass' for tc in cases.values()), proc.stdout

    # the manual's figures, judged by the example site's references
    dma = cases['DolphinDmaBench', 'mxh930']
    assert perf(dma, 'bw_64') == (235.57, 235.57, -0.1, None, 'MB/s')
    assert perf(dma, 'bw_67108864')[:2] == (27959.73, 27959.73)
    assert perf(dma, 'bw_max')[0] == 27960.29
    scipp = cases['DolphinScipp', 'mxh830']
    assert perf(scipp, 'latency_0') == (1.391, 1.391, None, 0.1, 'us')
    assert perf(scipp, 'half_latency_8192')[:2] == (1.927, 1.927)
    intr = cases['DolphinIntrBench', 'mxh830']
    assert perf(intr, 'unidirectional')[:2] == (2.515, 2.515)
    assert perf(intr, 'round_trip')[:2] == (5.03, 5.03)
    assert perf(cases['DolphinStatic', 'mxh830'], 'nodes_detected')[:2] == (2, 2)
    assert perf(cases['DolphinLoad', 'mxh830'], 'failures')[:2] == (0, 0)
    # recorded, not judged: no reference for scipp on the MXH930 partition
    assert perf(cases['DolphinScipp', 'mxh930'], 'latency_0')[1] == 0

    # each node's output is kept; the servers got the client's NodeId and vice versa
    static = cases['DolphinStatic', 'mxh830']
    kept = os.listdir(static['outputdir'])
    assert {'dis_diag-dolphin-a.out', 'dis_diag-dolphin-b.out', 'dolphin-run.sh'} <= set(kept)
    with open(os.path.join(dma['outputdir'], 'server.out')) as fp:
        assert fp.read().strip() == 'dma_bench server: -server -rn 8'
    with open(os.path.join(dma['outputdir'], 'dolphin-run.sh')) as fp:
        script = fp.read()
    assert "COBALT_FAKE_DOLPHIN_HOST=dolphin-d" in script and '-client -rn 4' in script


def test_reframe_failures(root, tmp_path, fake_tools):
    bindir, data = fake_tools
    # node dolphin-b: dis_diag fails, sciconntest sees failures to node 68
    (data / 'dis_diag-dolphin-b.txt').write_text(
        changed(recorded('dis_diag'), 'TEST RESULT: *PASSED*', 'TEST RESULT: *FAILED*'))
    (data / 'sciconntest-dolphin-b.txt').write_text(
        changed(recorded('sciconntest'), 'node 68 : Number of failures : 0',
                'node 68 : Number of failures : 5'))
    # the MXH930 pair (dolphin-d runs the client) is half as fast as the manual's card
    rows = dp.parse_dma_bench(recorded('dma_bench'))
    slow = [f'{r["message_size"]:>7} {r["total_size"]:>9} {r["vector_length"]:>8} '
            f'{2 * r["transfer_time_us"]:>10.2f} us {2 * r["time_per_message_us"]:>10.2f} us '
            f'{r["total_size"] / (2 * r["transfer_time_us"]):>12.2f} MBytes/s' for r in rows]
    (data / 'dma_bench-dolphin-d.txt').write_text('\n'.join(slow) + '\n')

    proc, cases = reframe(root, 'dolphin-example', tmp_path, '-n', 'DolphinStatic',
                          '-n', 'DolphinLoad', '-n', 'DolphinDmaBench', path=bindir)
    assert proc.returncode != 0
    static = cases['DolphinStatic', 'mxh830']
    assert static['result'] == 'fail' and static['fail_phase'] == 'sanity'
    assert 'dolphin-b: TEST RESULT is *FAILED*' in static['fail_reason']
    load = cases['DolphinLoad', 'mxh830']
    assert load['fail_phase'] == 'sanity'
    assert 'dolphin-b: node 68: 5 failures' in load['fail_reason']
    dma = cases['DolphinDmaBench', 'mxh930']
    assert dma['result'] == 'fail' and dma['fail_phase'] == 'performance'
    assert 'bw_64' in dma['fail_reason']
    # the MXH830 partition's nodes are fine, and its dma_bench has no references
    assert cases['DolphinStatic', 'mxh930']['result'] == 'pass'
    assert cases['DolphinDmaBench', 'mxh830']['result'] == 'pass'


# ---- the Slurm jobs ------------------------------------------------------------------

def test_slurm_jobs(root, tmp_path, fake_tools, slurm_cluster):
    bindir, data = fake_tools
    results = tmp_path / 'results'
    env = {k: v for k, v in slurm_cluster.env.items()
           if not k.startswith(('COBALT_BENCH_', 'DOLPHIN_', 'SLURM_JOB', 'SBATCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(results), DOLPHIN_DIS_DIAG=str(bindir / 'dis_diag'),
               DOLPHIN_TOOL_DIR=str(bindir), DOLPHIN_NODE_IDS='4,8',
               DOLPHIN_SERVER_START='0.2')
    jobs = os.path.join(root, 'jobs')
    static = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    perf_job = sbatch(os.path.join(jobs, 'dolphin-perf.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(static, env) == ('COMPLETED', '0:0')
    assert finished_job(perf_job, env) == ('COMPLETED', '0:0')
    outdir = results / 'slurm' / f'dolphin-static-{static}'
    assert sorted(os.listdir(outdir)) == ['dis_diag-n1.out', 'dis_diag-n2.out']
    with open(tmp_path / f'dolphin-static-{static}.out') as fp:
        assert 'static interconnect test PASSED' in fp.read()
    with open(results / 'slurm' / f'dolphin-perf-{perf_job}' / 'dma_bench.json') as fp:
        assert json.load(fp)[0]['bandwidth_mbps'] == 235.57
    with open(results / 'slurm' / f'dolphin-perf-{perf_job}' / 'scipp-server.out') as fp:
        assert fp.read().strip() == 'scipp server: -server -rn 8'

    # node n2 reports *FAILED*: the job fails
    (data / 'dis_diag-n2.txt').write_text(
        changed(recorded('dis_diag'), 'TEST RESULT: *PASSED*', 'TEST RESULT: *FAILED*'))
    failing = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(failing, env) == ('FAILED', '1:0')
    with open(tmp_path / f'dolphin-static-{failing}.out') as fp:
        assert 'PROBLEM: dis_diag-n2.out: TEST RESULT is *FAILED*' in fp.read()
    # without the tool: could not run
    env['DOLPHIN_DIS_DIAG'] = str(tmp_path / 'nowhere' / 'dis_diag')
    missing = sbatch(os.path.join(jobs, 'dolphin-static.slurm'), tmp_path, env, '-p', 'x86')
    assert finished_job(missing, env) == ('FAILED', '3:0')
