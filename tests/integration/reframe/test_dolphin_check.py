'''The Dolphin PCIe interconnect checks (reframe_checks/dolphin.py) end to end with
site-configs/dolphin-example, where small executables on PATH print the outputs recorded
in Dolphin's manual in place of Dolphin's tools (there is no Dolphin hardware here), and
skipped with a reason without them.'''

import json
import os
import re
import subprocess

from cobalt_bench.tools import dolphin as dp
from plugins.checkout import REFRAME, clean_env
from plugins.tools import changed
from plugins.tools import dolphin_recorded as recorded


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


def test_reframe_makes_no_dolphin_check_for_a_site_without_dolphin(root, tmp_path):
    # placement 'dolphin': the local site's partition has neither the feature nor nodes
    proc = subprocess.run(
        [*REFRAME, '-C', os.path.join(root, 'site-configs', 'local', 'config.py'),
         '-c', os.path.join(root, 'reframe_checks', 'dolphin.py'), '-l', '--nocolor'],
        cwd=str(tmp_path), env=clean_env(COBALT_BENCH_RESULTS=str(tmp_path)), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert 'Found 0 check(s)' in proc.stdout and 'Dolphin' not in proc.stdout.split(
        '[List of matched checks]')[1], proc.stdout


def test_reframe_skips_where_the_tools_are_missing(root, tmp_path):
    proc, cases = reframe(root, 'dolphin-example', tmp_path, fakes=False)
    assert proc.returncode == 0, proc.stdout
    assert {name for name, _ in cases} == set(CHECKS)
    assert all(tc['result'] == 'skip' for tc in cases.values())
    reasons = skip_reasons(proc.stdout)
    assert sorted(reasons) == sorted(cases)
    for (name, _), reason in reasons.items():
        # the example site names where its tools are; none is there on this machine
        assert f'Dolphin tool {TOOL_OF[name]} not found (/opt/DIS/' in reason, reason


def test_reframe_with_recorded_outputs(root, tmp_path, dolphin_fake_tools):
    bindir, _ = dolphin_fake_tools
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


def test_reframe_failures(root, tmp_path, dolphin_fake_tools):
    bindir, data = dolphin_fake_tools
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
