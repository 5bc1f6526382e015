'''mem-test under hostile input and signals (issue 14): every bad option value must end in
exit 2 with a message naming the option (never a run, a crash, a hang or a value that
wrapped around); a real signal to a running mem-test must stop it, print a results block
marked "Interrupted", leave a valid JSON document with "interrupted": true and exit
128 + the signal's number. The bad values by type and the signal driver are shared by
every kernel (tests/plugins/kernels.py).'''

import os
import signal

import pytest

from plugins.kernels import (BAD_DURATION, BAD_INT, BAD_REAL, BAD_SIZE, bad_value_test,
                             check_interrupted, document_alone_on_stdout, empty_json_cases,
                             interrupt, kernel)

OPTIONS = {
    'stations': BAD_INT, 'reduction': BAD_INT, 'small-block': BAD_INT, 'large-block': BAD_INT,
    'threads-per-domain': BAD_INT, 'input-rate': BAD_REAL, 'desired-rate': BAD_REAL,
    'threshold': BAD_REAL, 'packet-size': BAD_SIZE, 'sample-bytes': BAD_SIZE,
    'duration': BAD_DURATION,
}
TAIL = ['-d', '0.1']   # what else a run needs besides the option under test

# Lists and the cases of the issue: (args, what the message must name).
SPECIAL = [
    # issue 14, item 6: empty list items are typos, not "all" or "skip"
    (['--ops=copy,'], '--ops'),
    (['--ops=,copy'], '--ops'),
    (['--ops=copy,,read'], '--ops'),
    (['--ops='], '--ops'),
    (['--ops=copy,bogus'], '--ops'),
    (['--numa-nodes', '0,,1'], '--numa-nodes'),
    (['--numa-nodes', '0,'], '--numa-nodes'),
    (['--numa-nodes', '-1'], '--numa-nodes'),
    (['--numa-nodes', '1-0'], '--numa-nodes'),
    (['--numa-nodes', '99999999999999999999'], '--numa-nodes'),
    (['--numa-nodes', '0- 1'], '--numa-nodes'),
] + empty_json_cases(TAIL)


test_bad_value_exits_2_naming_it = bad_value_test('mem-test', OPTIONS, TAIL, SPECIAL)


def test_json_to_stdout_is_the_document_alone():
    document_alone_on_stdout([kernel('mem-test'), '-s', '1', '-r', '4', '-d', '0.2', '-q',
                              '--json', '-'])


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM'),
                                       (signal.SIGHUP, 'SIGHUP')])
def test_mem_test_interrupted(tmp_path, sig, name):
    '''Issue 14, item 1: mem-test died at once, with no message and no result.'''
    out = tmp_path / 'r.json'
    out.write_text('{"an": "older result"}\n')
    rc, stdout, stderr, took = interrupt(
        [kernel('mem-test'), '-s', '1', '-r', '4', '-d', '60', '-q', '--json', str(out)],
        sig, 'Running paced')
    assert took < 5, 'the workers must see the signal and stop promptly'
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 0 < doc['duration_s'] < 30  # the time measured, not the 60 s planned
    assert doc['metrics']['verification_errors']['value'] == 0
    # what was measured is reported, in the same figures as a whole run
    assert block['Measured speed'].split()[0] == f"{doc['metrics']['measured_speed']['value']:.2f}"
    assert not [f for f in os.listdir(tmp_path) if f != 'r.json'], 'no temporary file left'


def test_mem_test_interrupted_json_to_stdout():
    rc, stdout, stderr, took = interrupt(
        [kernel('mem-test'), '-s', '1', '-r', '4', '-d', '60', '-q', '--json', '-'],
        signal.SIGINT, 'Running paced', human='stderr')
    check_interrupted(rc, stderr, stdout, signal.SIGINT, 'SIGINT')
