'''The Dolphin PCIe interconnect tools: the parsers and verdicts
(cobalt_bench.tools.dolphin) on the real outputs recorded in Dolphin's manual
(tests/data/dolphin/) and on failing variants of them (a node missing, a failure count,
*FAILED*), and their command line. The ReFrame checks and the Slurm jobs, with stand-ins
for Dolphin's tools: tests/integration/.'''

import json
import subprocess
import sys

import pytest

from cobalt_bench.tools import dolphin as dp
from plugins.tools import changed
from plugins.tools import dolphin_recorded as recorded


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


@pytest.mark.parametrize('module', ['cobalt_bench.cli.dolphin'])
def test_command_line(tmp_path, module):
    # The command the Slurm jobs run.
    lib = ['-m', module]
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
