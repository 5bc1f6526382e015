'''cpu-test under hostile input, injected faults and signals: every bad option value ends
in exit 2 with a message naming the option (nothing run); a corrupted lane in any ISA's
stream is a verification error (exit 1), never a number; a real signal stops a running
cpu-test, which prints a results block marked "Interrupted", leaves a valid JSON document
with "interrupted": true covering what it measured and exits 128 + the signal's number.
The bad values by type and the signal driver are every kernel's (tests/plugins/kernels.py).'''

import json
import os
import signal
import subprocess

import pytest

from plugins.checkout import results_block
from plugins.kernels import (BAD_DURATION, BAD_INT, BAD_REAL, bad_value_test,
                             check_interrupted, cpu_isas, document_alone_on_stdout, empty_json_cases,
                             interrupt, kernel)

OPTIONS = {
    'duration': BAD_DURATION, 'interval': BAD_DURATION, 'burn': BAD_REAL,
    'threads': BAD_INT, 'desired-gflops': BAD_REAL,
}
TAIL = ['-i', '0.1']   # a valid option beside the one under test (not --duration: --burn)

SPECIAL = [
    (['--isa', 'sse2'], '--isa'),
    (['--isa='], '--isa'),
    (['--isa', 'AVX2'], '--isa'),
    (['--cpus', '0,,1'], '--cpus'),
    (['--cpus', '0,'], '--cpus'),
    (['--cpus='], '--cpus'),
    (['--cpus', '-1'], '--cpus'),
    (['--cpus', '1-0'], '--cpus'),
    (['--cpus', '99999999999999999999'], '--cpus'),
    (['--cpus', '4096'], '--cpus'),
    (['--cpus', '4095'], '--cpus'),           # in range, not a CPU this process may use
    (['--threads', '4096'], '--threads'),     # more than the usable cores
    (['--threads', '1', '--cpus', '0'], '--threads'),
    (['--burn', '1', '--duration', '5'], '--burn'),
    (['--duration', '7d', '--interval', '0.1'], '--interval'),  # too many intervals
    (['--interval', '0.01'], '--interval'),
    (['--burn', '0.001'], '--burn'),
] + empty_json_cases(TAIL)


test_bad_value_exits_2_naming_it = bad_value_test('cpu-test', OPTIONS, TAIL, SPECIAL)


def test_a_bad_fault_name_is_a_usage_error():
    r = subprocess.run([kernel('cpu-test'), '-d', '0.1'], capture_output=True, text=True,
                       timeout=30, env=dict(os.environ, CPU_TEST_FAULT='lanes'))
    assert r.returncode == 2 and 'CPU_TEST_FAULT must be lane or ulp' in r.stderr
    assert r.stdout == ''


def test_json_to_stdout_is_the_document_alone():
    doc = document_alone_on_stdout([kernel('cpu-test'), '-d', '0.3', '-q', '--json', '-'])
    assert doc['metrics']['verification_errors']['value'] == 0


@pytest.mark.parametrize('fault', ['lane', 'ulp'])
@pytest.mark.parametrize('isa', ['avx512', 'avx2', 'neon', 'scalar'])
def test_a_corrupted_lane_is_a_verification_error(tmp_path, isa, fault):
    # CPU_TEST_FAULT: one lane of one block of one core starts 2^-20 off (lane), or ends
    # with its last bit flipped (ulp); the check of that block must catch it.
    if isa not in cpu_isas():
        pytest.skip(f'this CPU does not run {isa}')
    out = tmp_path / 'r.json'
    r = subprocess.run([kernel('cpu-test'), '--isa', isa, '-d', '0.3', '-q', '--json', str(out)],
                       capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, CPU_TEST_FAULT=fault))
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'VERIFICATION FAILED: 1 blocks gave wrong results; the FLOP rates are not valid' \
        in r.stdout
    assert 'Wrong result: CPU ' in r.stdout and ' is right (1 wrong block on this core)' in r.stdout
    doc = json.loads(out.read_text())
    assert doc['metrics']['verification_errors']['value'] == 1
    assert doc['compliance']['passed'] is False and doc['interrupted'] is False
    assert sorted(c['verification_errors'] for c in doc['cores'])[-1] == 1
    assert sum(c['verification_errors'] for c in doc['cores']) == 1
    assert results_block(r.stdout)['Errors'].startswith('1 of ')


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM'),
                                       (signal.SIGHUP, 'SIGHUP')])
def test_cpu_test_interrupted(tmp_path, sig, name):
    out = tmp_path / 'r.json'
    out.write_text('{"an": "older result"}\n')
    rc, stdout, stderr, took = interrupt(
        [kernel('cpu-test'), '-d', '60', '-i', '0.5', '-q', '--json', str(out)], sig, 'Running',
        after=1.3)
    assert took < 5, 'the threads must see the signal and stop promptly'
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert block['Interrupted'].endswith('of 60.00 s; the figures cover that time')
    assert 1 < doc['duration_s'] < 30  # the time measured, not the 60 s planned
    m = doc['metrics']
    assert m['verification_errors']['value'] == 0 and m['verified_blocks']['value'] > 0
    assert m['node_gflops']['value'] > 0
    # the intervals cover the time measured, the last one cut short by the signal
    assert doc['intervals'][-1]['end_s'] == pytest.approx(doc['duration_s'])
    assert len(doc['intervals']) >= 2
    assert block['Node FLOP rate'].split()[0] == f"{m['node_gflops']['value']:.2f}"
    assert not [f for f in os.listdir(tmp_path) if f != 'r.json'], 'no temporary file left'


def test_cpu_test_interrupted_json_to_stdout():
    rc, stdout, stderr, took = interrupt(
        [kernel('cpu-test'), '-d', '60', '-q', '--json', '-'], signal.SIGINT, 'Running',
        human='stderr')
    check_interrupted(rc, stderr, stdout, signal.SIGINT, 'SIGINT')
