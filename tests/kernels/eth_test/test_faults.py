'''eth-test-send / eth-test-receive under faults, table-driven and fast (on loopback, no
namespaces): option values that must be usage errors, `--json -` that must give the
document alone on stdout, and signals that must stop a run with a partial, marked result.
The datagram faults (strays and forgeries across a real link) are in test_eth_test.py,
beside the namespace fixtures they need.'''

import json
import os
import signal
import subprocess
import time

import pytest

from plugins.checkout import BIN, results_block
from plugins.kernels import check_interrupted as check_kernel_interrupted
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

SEND = str(BIN / 'eth-test-send')
RECV = str(BIN / 'eth-test-receive')
LO = '127.0.0.1'
PORT = 47000   # eth-test's ports on loopback (47000-47011), as in test_eth_test.py


@pytest.fixture(scope='module', autouse=True)
def built():
    for b in (SEND, RECV):
        if not os.access(b, os.X_OK):
            pytest.fail(f'{b} is not built: run make first')


# ---- option values: usage errors (exit 2), before anything is sent or received -------------
# (program, arguments, what the message must name)
BAD_OPTIONS = [
    # numbers that would wrap or slip past strtoull
    (SEND, ['--session', '-1'], '--session'),
    (SEND, ['--session', ' -1'], '--session'),
    (SEND, ['--session= -1'], '--session'),
    (SEND, ['--session', '+1'], '--session'),
    (SEND, ['--session', ' 5'], '--session'),
    (SEND, ['--session', '18446744073709551616'], '--session'),
    (SEND, ['--session', '0x10000000000000000'], '--session'),
    (SEND, ['--session', '0x'], '--session'),
    (SEND, ['--session', '0'], '--session'),
    (SEND, ['--session', '1e3'], '--session'),
    (RECV, ['--session', ' -1'], '--session'),
    (RECV, ['--session', '-0x5'], '--session'),
    (SEND, ['--port', '-1'], '--port'),
    (SEND, ['--streams', '4294967297'], '--streams'),
    (SEND, ['--rate', 'nan'], '--rate'),
    (SEND, ['--rate', 'inf'], '--rate'),
    (RECV, ['--threshold', 'nan'], '--threshold'),
    (RECV, ['--max-loss', '-0.5'], '--max-loss'),
    # empty values and empty list items
    (SEND, ['--json='], '--json'),
    (RECV, ['--json', ''], '--json'),
    (SEND, ['--cpu', '0,,1'], '--cpu'),
    (SEND, ['--cpu', '0,'], '--cpu'),
    (RECV, ['--cpu', ',0'], '--cpu'),
    (RECV, ['--cpu', ''], '--cpu'),
    (RECV, ['--ready-file='], '--ready-file'),
    # one record copy cannot be confirmed: the receiver needs two of each
    (SEND, ['--end-copies', '1'], '--end-copies'),
    # a GSO send holds at most one UDP datagram's 65507 bytes, and 64 datagrams
    (SEND, ['--gso', '8', '--size', '8900'], '(at most --gso 7)'),
    (SEND, ['--gso', '45', '--size', '1472'], '(at most --gso 44)'),
    (SEND, ['--gso', '65', '--size', '100'], "invalid value '65' for --gso"),
    (RECV, ['--gro', 'yes'], "invalid value 'yes' for --gro: expected one of off, on"),
    (RECV, ['--reuseport', '0'], "invalid value '0' for --reuseport"),
]


@pytest.mark.parametrize('prog,args,words', BAD_OPTIONS,
                         ids=[f'{os.path.basename(p)}:{" ".join(a)}' for p, a, _ in BAD_OPTIONS])
def test_bad_option_is_a_usage_error(prog, args, words):
    r = subprocess.run([prog, '-H', LO, *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r.stdout + r.stderr
    assert words in r.stderr
    assert r.stdout == ''


# ---- --json -: the document alone on stdout, the people's output on stderr ------------------

def test_json_to_stdout_sender():
    r = subprocess.run([SEND, '-H', LO, '--port', str(PORT), '--streams', '1', '--rate', '0.01',
                        '--duration', '0.05', '--quiet', '--json', '-'],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    doc = json.loads(r.stdout)            # nothing else on stdout
    assert doc['test'] == 'eth-test-send' and doc['interrupted'] is False
    assert results_block(r.stderr)['Desired speed'] == '0.01 Gbit/s'
    assert 'Preflight:' in r.stderr


def test_json_to_stdout_receiver(tmp_path):
    ready = tmp_path / 'ready'
    rx = subprocess.Popen([RECV, '-H', LO, '--port', str(PORT), '--streams', '2', '--threshold', '0',
                           '--timeout', '20', '--quiet', '--ready-file', str(ready), '--json', '-'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(ready, rx)
        tx = subprocess.run([SEND, '-H', LO, '--port', str(PORT), '--streams', '2', '--rate', '0.05',
                             '--duration', '0.2', '--quiet'], capture_output=True, text=True,
                            timeout=30)
        out, err = rx.communicate(timeout=30)
    finally:
        stop(rx)
    assert rx.returncode == 0, out + err + tx.stdout + tx.stderr
    doc = json.loads(out)
    assert doc['test'] == 'eth-test-receive' and doc['metrics']['lost_packets']['value'] == 0
    assert results_block(err)['Average loss'] == '0.000%'
    assert 'Packets:' in err and 'Packets:' not in out


# ---- signals: stop, report what was counted, mark it interrupted, exit 128 + signal ---------

def wait_for(path, proc, timeout=10):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f'exited with {proc.returncode}: {proc.communicate()}')
        assert time.monotonic() < deadline, 'not ready in time'
        time.sleep(0.02)


def stop(*procs):
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.communicate()


SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def check_interrupted(proc, out, err, json_path, sig, test):
    assert proc.returncode == 128 + sig, out + err
    block, doc = check_kernel_interrupted(proc.returncode, out, json_path.read_text(), sig,
                                          signal.Signals(sig).name)
    assert doc['test'] == test
    return block, doc


@pytest.mark.parametrize('sig', SIGNALS, ids=[s.name for s in SIGNALS])
def test_signal_to_waiting_receiver(tmp_path, sig):
    # No sender yet: it stops at once, with an empty but valid and marked result.
    ready, result = tmp_path / 'ready', tmp_path / 'r.json'
    rx = subprocess.Popen([RECV, '-H', LO, '--port', str(PORT), '--streams', '2', '--timeout', '60',
                           '--quiet', '--ready-file', str(ready), '--json', str(result)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(ready, rx)
        start = time.monotonic()
        rx.send_signal(sig)
        out, err = rx.communicate(timeout=10)
        assert time.monotonic() - start < 5
    finally:
        stop(rx)
    block, doc = check_interrupted(rx, out, err, result, sig, 'eth-test-receive')
    assert doc['metrics']['received_packets']['value'] == 0
    assert 'No session' in out


@pytest.mark.parametrize('sig', SIGNALS, ids=[s.name for s in SIGNALS])
def test_signal_to_receiving_receiver(tmp_path, sig):
    # Mid-run: what it received so far is in the report, the loss marked incomplete.
    ready, result = tmp_path / 'ready', tmp_path / 'r.json'
    rx = subprocess.Popen([RECV, '-H', LO, '--port', str(PORT), '--streams', '2', '--timeout', '60',
                           '--quiet', '--ready-file', str(ready), '--json', str(result)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tx = None
    try:
        wait_for(ready, rx)
        tx = subprocess.Popen([SEND, '-H', LO, '--port', str(PORT), '--streams', '2', '--rate', '0.1',
                               '--duration', '30', '--quiet'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert rx.poll() is None and tx.poll() is None
        rx.send_signal(sig)
        out, err = rx.communicate(timeout=10)
    finally:
        stop(rx, tx)
    block, doc = check_interrupted(rx, out, err, result, sig, 'eth-test-receive')
    assert doc['metrics']['received_packets']['value'] > 100
    assert doc['complete'] is False
    assert block['Average loss'].endswith('(at least; incomplete)')
    assert 'interrupted' in out.split('Packets:')[0]


@pytest.mark.parametrize('sig', SIGNALS, ids=[s.name for s in SIGNALS])
def test_signal_to_sender(tmp_path, sig):
    # The sender stops its data, still sends its end records with the packets really
    # sent: the receiver's count is then exact, and its run complete.
    ready, rx_json, tx_json = tmp_path / 'ready', tmp_path / 'r.json', tmp_path / 't.json'
    rx = subprocess.Popen([RECV, '-H', LO, '--port', str(PORT), '--streams', '2', '--timeout', '60',
                           '--threshold', '0', '--quiet', '--ready-file', str(ready),
                           '--json', str(rx_json)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tx = None
    try:
        wait_for(ready, rx)
        tx = subprocess.Popen([SEND, '-H', LO, '--port', str(PORT), '--streams', '2', '--rate', '0.1',
                               '--duration', '30', '--quiet', '--json', str(tx_json)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        start = time.monotonic()
        tx.send_signal(sig)
        tx_out, tx_err = tx.communicate(timeout=10)
        assert time.monotonic() - start < 5
        rx_out, rx_err = rx.communicate(timeout=30)
    finally:
        stop(rx, tx)
    block, doc = check_interrupted(tx, tx_out, tx_err, tx_json, sig, 'eth-test-send')
    sent = doc['metrics']['sent_packets']['value']
    assert sent > 100
    assert 'INTERRUPTED by' in tx_out
    assert rx.returncode == 0, rx_out + rx_err
    rdoc = json.loads(rx_json.read_text())
    assert rdoc['complete'] is True and rdoc['interrupted'] is False
    assert rdoc['metrics']['sent_packets']['value'] == sent
    assert rdoc['metrics']['received_packets']['value'] == sent


def test_signal_to_sender_with_a_slow_schedule(tmp_path):
    # Batches of one datagram 71 s apart (1000 bit/s): the signal still stops it at once.
    tx_json = tmp_path / 't.json'
    tx = subprocess.Popen([SEND, '-H', LO, '--port', str(PORT), '--streams', '1', '--rate', '0.000001',
                           '--batch', '1', '--duration', '600', '--quiet', '--json', str(tx_json)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        start = time.monotonic()
        tx.send_signal(signal.SIGINT)
        out, err = tx.communicate(timeout=10)
        assert time.monotonic() - start < 2
    finally:
        stop(tx)
    check_interrupted(tx, out, err, tx_json, signal.SIGINT, 'eth-test-send')
