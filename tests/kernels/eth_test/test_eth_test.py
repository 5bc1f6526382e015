'''eth-test-send / eth-test-receive across a real network: two network namespaces joined
by a veth pair with MTU 9000 (cobalt_bench.netns; MTU 1500 for the receive path's UDP GSO
and GRO), made and removed by each test.

The rates here are ones this 2-core machine sustains while other work runs on it; the
compliance rate (9 Gbit/s) is bench/eth-test's and the README's demonstration, not a
unit test's. Loss is injected with the firewall in the receiving namespace, and its own
drop counter is what the receiver's count is checked against.'''

import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time

import pytest

from cobalt_bench import netns
from cobalt_bench.preflight import NET_SYSCTLS
from plugins.checkout import ROOT, repo_version, results_block
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

SEND = os.path.join(ROOT, 'bin', 'eth-test-send')
RECV = os.path.join(ROOT, 'bin', 'eth-test-receive')

PORT = 47000
# A load this machine carries reliably, busy or not: 3 Gbit/s of jumbo datagrams in
# 12 streams for 2 s (the compliance shape at a third of its rate).
RATE = 3.0
SMALL = ['--rate', str(RATE), '--duration', '2', '--quiet']
# A rate measured over a 1-2 s run on a busy machine is good to a few per mille (a
# sender delayed by milliseconds at the end, batches arriving as bursts); over the
# compliance run's 10 s and thousands of batches, to far less. Judged here to 1%.
TOLERANCE = 0.01
THRESHOLD = ['--threshold', str(RATE * (1 - TOLERANCE))]

needs_netns = pytest.mark.skipif(netns.unavailable_reason() is not None,
                                 reason=f'{netns.unavailable_reason()}')


@pytest.fixture(scope='module', autouse=True)
def built():
    for b in (SEND, RECV):
        if not os.access(b, os.X_OK):
            pytest.fail(f'{b} is not built: run make first')


@pytest.fixture
def net():
    with netns.VethPair() as pair:
        yield pair


class Run:
    '''A receiver in the receiving namespace and a sender in the sending one.'''

    def __init__(self, net, tmp_path, send_args=(), recv_args=(), timeout=60, on_start=None):
        self.rx_json = tmp_path / 'rx.json'
        self.tx_json = tmp_path / 'tx.json'
        ready = tmp_path / 'ready'
        self.rx = net.popen_rx([RECV, '-H', net.rx_addr, '--timeout', '20', '--quiet',
                                '--ready-file', str(ready), '--json', str(self.rx_json),
                                *recv_args])
        if on_start:
            on_start(self.rx)
        try:
            net.wait_ready(str(ready), self.rx)
            self.ready = ready.read_text().split()
            self.tx = net.run_tx([SEND, '-H', net.rx_addr, '--json', str(self.tx_json),
                                  *send_args], timeout=timeout)
            self.rx_out, self.rx_err = self.rx.communicate(timeout=timeout)
        finally:
            if self.rx.poll() is None:
                self.rx.kill()
                self.rx.communicate()

    @property
    def doc(self):
        return json.loads(self.rx_json.read_text())

    @property
    def tx_doc(self):
        return json.loads(self.tx_json.read_text())

    def __repr__(self):
        return (f'receiver exit {self.rx.returncode}:\n{self.rx_out}{self.rx_err}\n'
                f'sender exit {self.tx.returncode}:\n{self.tx.stdout}{self.tx.stderr}')


# ---- the command lines -----------------------------------------------------------------

def test_version_and_help():
    version = repo_version()
    for prog, words in ((SEND, ['--rate', '--size', '--streams', '--batch', '--duration',
                                '--cpu', '8900', 'Exit status']),
                        (RECV, ['--host', '--interface', '--rcvbuf', '--busy-poll', '--cpu',
                                '--timeout', 'net.core.rmem_max', 'Exit status'])):
        r = subprocess.run([prog, '--version'], capture_output=True, text=True)
        assert r.returncode == 0
        assert r.stdout.startswith(f'{os.path.basename(prog)} (cobalt-bench) {version}')
        r = subprocess.run([prog, '--help'], capture_output=True, text=True)
        assert r.returncode == 0
        for w in words:
            assert w in r.stdout, w


@pytest.mark.parametrize('prog,args,words', [
    (SEND, [], '-H HOST is required'),
    (SEND, ['-H', '127.0.0.1', '--rate', '-1'], '--rate'),
    (SEND, ['-H', '127.0.0.1', '--rate', 'fast'], 'not a number'),
    (SEND, ['-H', '127.0.0.1', '--size', '20'], '--size'),
    (SEND, ['-H', '127.0.0.1', '--size', '70000'], '--size'),
    (SEND, ['-H', '127.0.0.1', '--streams', '0'], '--streams'),
    (SEND, ['-H', '127.0.0.1', '--port', '65530'], 'past port 65535'),
    (SEND, ['-H', '127.0.0.1', '--session', '0'], '--session'),
    (SEND, ['-H', '127.0.0.1', '--cpu', '1-'], '--cpu'),
    (SEND, ['-H', '127.0.0.1', '--bogus'], "unknown option '--bogus'"),
    (SEND, ['-H', '127.0.0.1', 'extra'], "unexpected argument 'extra'"),
    (SEND, ['-H', '127.0.0.1', '--json', '/nonexistent/dir/x.json'], 'cannot write'),
    (RECV, [], 'exactly one of -H HOST and -I IFACE'),
    (RECV, ['-H', '127.0.0.1', '-I', 'lo'], 'exactly one'),
    (RECV, ['-H', '127.0.0.1', '--streams', '2000'], '--streams'),
    (RECV, ['-H', '127.0.0.1', '--max-loss', '101'], '--max-loss'),
    (RECV, ['-H', '127.0.0.1', '--timeout', '0'], '--timeout'),
    (RECV, ['-H', '127.0.0.1', '--busy-poll=x'], '--busy-poll'),
    (RECV, ['-H', '127.0.0.1', '--batch'], "needs a value"),
])
def test_bad_options_exit_2(prog, args, words):
    r = subprocess.run([prog, *args], capture_output=True, text=True, timeout=10)
    assert r.returncode == 2, r.stdout + r.stderr
    assert words in r.stderr
    assert r.stdout == ''     # nothing sent or received before the options are checked


def test_cannot_run_exit_3():
    # An address that is not this machine's (TEST-NET-1): refused without sending anything.
    r = subprocess.run([RECV, '-H', '192.0.2.1', '--timeout', '1'], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 3
    assert 'not an address of this machine' in r.stderr
    r = subprocess.run([RECV, '-I', 'no-such-if0', '--timeout', '1'], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 3 and "no interface 'no-such-if0'" in r.stderr
    r = subprocess.run([SEND, '-H', 'no-such-host.invalid', '--duration', '0.1'],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3 and 'cannot resolve' in r.stderr


def test_deprecated_threads_letter_and_units():
    # -t was --threads; the contract's -t is --threshold, but an old "-t 4" must keep
    # meaning four threads: it still sets --threads, with a note on stderr.
    for prog in (SEND, RECV):
        r = subprocess.run([prog, '-H', '127.0.0.1', '-t', '0'], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 2
        assert "'-t' is deprecated; use '-T' or '--threads'" in r.stderr
        assert "invalid value '0' for --threads" in r.stderr
        r = subprocess.run([prog, '-H', '127.0.0.1', '-T', '300'], capture_output=True,
                           text=True, timeout=10)
        assert r.returncode == 2 and '--threads' in r.stderr and 'deprecated' not in r.stderr
    # Durations and sizes take units; a bare number is still seconds or bytes.
    r = subprocess.run([RECV, '-H', '127.0.0.1', '-t', '1', '--timeout', '300ms',
                        '--rcvbuf', '1M'], capture_output=True, text=True, timeout=10)
    assert r.returncode == 3, r.stdout + r.stderr
    assert 'no data from a sender in 0.3 s' in r.stderr
    assert 'asked 1048576 B per socket' in r.stdout


def test_sysctl_tips_are_preflights():
    # One list of the compliance document's sysctl tips: eth-test's preflight prints the
    # names and values that `cobalt-bench preflight` checks, in the same order.
    r = subprocess.run([RECV, '-H', '127.0.0.1', '--timeout', '0.05'], capture_output=True,
                       text=True, timeout=10)
    assert r.returncode == 3, r.stdout + r.stderr
    printed = re.findall(r'^  sysctl (\S+) .*\(tip: ([^)]*)\)', r.stdout, re.M)
    assert printed == [(name, ' '.join(map(str, mins))) for name, mins, _ in NET_SYSCTLS]


# ---- across the namespaces --------------------------------------------------------------


def receive_crafted(net, tmp_path, rx_opts, sender_args, plan):
    """eth-test-receive (threshold 0, JSON to r.json) against datagrams that a Python
    sender (`sender_args`: its code and arguments) sends as `plan` says: the document, the
    receiver's stdout and stderr, and its exit code."""
    ready = tmp_path / 'ready'
    rx = net.popen_rx([RECV, '-H', net.rx_addr, '--threshold', '0', *rx_opts,
                       '--ready-file', str(ready), '--json', str(tmp_path / 'r.json')])
    try:
        net.wait_ready(str(ready), rx)
        tx = net.run_tx([sys.executable, '-c', *sender_args], input=json.dumps(plan), timeout=60)
        assert tx.returncode == 0, tx.stderr
        out, err = rx.communicate(timeout=30)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.communicate()
    return json.loads((tmp_path / 'r.json').read_text()), out, err, rx.returncode

@needs_netns
def test_no_sender_times_out(net, tmp_path):
    r = net.run_rx([RECV, '-H', net.rx_addr, '--timeout', '0.5', '--quiet',
                    '--json', str(tmp_path / 'r.json')], timeout=30)
    assert r.returncode == 3, r.stdout + r.stderr
    assert 'no data from a sender in 0.5 s' in r.stderr
    assert not (tmp_path / 'r.json').exists()   # no result from a run that did not happen
    # The preflight ran: the interface and its jumbo MTU.
    assert f'interface {net.rx_if} ({net.rx_addr}): MTU 9000, jumbo frames on' in r.stdout


@needs_netns
@pytest.mark.measures
def test_stream_with_zero_loss(net, tmp_path):
    rx_before = net.rx_counters()
    run = Run(net, tmp_path, send_args=SMALL, recv_args=THRESHOLD)
    assert run.rx.returncode == 0, run
    assert run.tx.returncode in (0, 1), run     # 1: its rate was a per mille short
    assert run.ready == [net.rx_addr, str(PORT), '12']

    block = results_block(run.rx_out)
    assert block['Test version'] == '1.0'
    assert block['Total speed'].endswith(' Gbit/s')
    assert float(block['Total speed'].split()[0]) == pytest.approx(RATE, rel=TOLERANCE)
    assert block['Average loss'] == '0.000%'

    doc, tx = run.doc, run.tx_doc
    m = doc['metrics']
    assert doc['test'] == 'eth-test-receive' and tx['test'] == 'eth-test-send'
    for key in ('test', 'version', 'test_version', 'host', 'started', 'duration_s', 'config',
                'metrics', 'compliance'):
        assert key in doc
    assert doc['config']['interface'] == net.rx_if and doc['config']['mtu'] == 9000
    assert doc['complete'] is True
    sent = tx['metrics']['sent_packets']['value']
    assert sent == 12 * round(2 * RATE / 12 * 1e9 / (8 * 8900))
    assert m['sent_packets']['value'] == sent
    assert m['received_packets']['value'] == sent
    assert m['lost_packets']['value'] == 0 and m['average_loss']['value'] == 0
    for k in ('duplicate_packets', 'reordered_packets', 'malformed_datagrams',
              'foreign_datagrams', 'misdirected_datagrams', 'verification_errors'):
        assert m[k]['value'] == 0, k
    # the receiver's clock and the sender's agree on the rate
    assert m['total_speed'] == {'value': pytest.approx(RATE, rel=TOLERANCE), 'unit': 'Gbit/s'}
    assert m['total_speed_bytes']['value'] == pytest.approx(m['total_speed']['value'] * 1e9 / 8)
    assert m['sender_clock_speed']['value'] == pytest.approx(RATE, rel=TOLERANCE)
    assert tx['metrics']['sent_speed']['value'] == pytest.approx(RATE, rel=TOLERANCE)
    assert doc['compliance'] == {'threshold': RATE * (1 - TOLERANCE), 'max_loss': 0,
                                 'passed': True}
    assert [s['received'] for s in doc['streams']] == [sent // 12] * 12
    assert all(s['end_records'] >= 1 for s in doc['streams'])
    # Every datagram really crossed the veth pair: its receive counter saw them all.
    packets, octets = (a - b for a, b in zip(net.rx_counters(), rx_before))
    assert packets >= sent
    assert octets >= sent * (8900 + 28 + 14)


@needs_netns
@pytest.mark.measures
def test_sender_paces_at_the_requested_rate(net, tmp_path):
    # The veth's own byte counter in the receiving namespace, sampled every 20 ms while a
    # 1 Gbit/s stream runs for 2 s, must show 2 s of steady traffic, not a burst.
    samples = []
    done = threading.Event()
    # A process that stays in the receiving namespace: its /proc/PID/net/dev is that
    # namespace's, readable from here every 20 ms without starting a process each time.
    witness = net.popen_rx(['sleep', '60'])

    def sample():
        while True:
            with open(f'/proc/{witness.pid}/net/dev') as fp:
                for line in fp:
                    name, _, rest = line.partition(':')
                    if name.strip() == net.rx_if:
                        samples.append((time.monotonic(), int(rest.split()[0])))
            if done.is_set():
                break
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    try:
        run = Run(net, tmp_path,
                  send_args=['--rate', '1', '--duration', '2', '--streams', '4', '--quiet'],
                  recv_args=['--streams', '4', '--threshold', '0.99'])
    finally:
        time.sleep(0.05)
        done.set()
        t.join()
        witness.kill()
        witness.communicate()
    assert run.rx.returncode == 0, run
    base, final = samples[0][1], samples[-1][1]
    frame = 8900 + 28 + 14
    assert final - base >= run.doc['metrics']['received_packets']['value'] * frame
    # when the traffic started and ended, on the counter's clock
    t_start = next(t for t, b in samples if b > base + 10 * frame)
    t_end = next(t for t, b in samples if b >= final - 10 * frame)
    assert 1.8 < t_end - t_start < 2.3, (t_start, t_end)

    # the rate over the middle second, from the counter: 1 Gbit/s of payload
    def at(t):
        before = [s for s in samples if s[0] <= t][-1]
        after = [s for s in samples if s[0] >= t][0]
        return before[1] if after[0] == before[0] else \
            before[1] + (after[1] - before[1]) * (t - before[0]) / (after[0] - before[0])
    mid0, mid1 = t_start + 0.5, t_start + 1.5
    payload_gbits = (at(mid1) - at(mid0)) * 8 / (mid1 - mid0) / 1e9 * 8900 / frame
    assert payload_gbits == pytest.approx(1.0, rel=0.10)
    # and the receiver's own clock agrees
    assert run.doc['metrics']['total_speed']['value'] == pytest.approx(1.0, rel=TOLERANCE)
    assert run.tx_doc['metrics']['sent_speed']['value'] == pytest.approx(1.0, rel=TOLERANCE)


@needs_netns
@pytest.mark.skipif(netns.firewall_tool() is None,
                    reason='neither nft nor iptables installed')
def test_injected_loss_matches_the_firewall_counter(net, tmp_path):
    with net.drop_fraction(0.05, ports=(PORT, PORT + 11)) as fw:
        run = Run(net, tmp_path, send_args=SMALL, recv_args=THRESHOLD)
        dropped = fw.dropped()
    assert run.rx.returncode == 1, run          # loss: not compliant
    m = run.doc['metrics']
    sent = run.tx_doc['metrics']['sent_packets']['value']
    assert m['sent_packets']['value'] == sent
    # Every packet the firewall dropped, and only those (plus any the receiving socket
    # dropped itself, if the machine was too busy), is reported lost.
    assert 0.03 * sent < dropped < 0.07 * sent
    assert m['lost_packets']['value'] == dropped + m['socket_drops']['value']
    assert m['received_packets']['value'] == sent - m['lost_packets']['value']
    assert m['average_loss']['value'] == pytest.approx(100 * m['lost_packets']['value'] / sent)
    assert results_block(run.rx_out)['Average loss'] == f"{m['average_loss']['value']:.3f}%"
    assert m['duplicate_packets']['value'] == 0 and m['foreign_datagrams']['value'] == 0
    assert run.doc['compliance']['passed'] is False
    if not m['socket_drops']['value']:
        assert "before this machine's UDP layer" in run.rx_out


@needs_netns
def test_killed_sender_leaves_a_partial_report(net, tmp_path):
    ready = tmp_path / 'ready'
    rx = net.popen_rx([RECV, '-H', net.rx_addr, '--streams', '2', '--idle-timeout', '0.5',
                       '--quiet', '--ready-file', str(ready), '--json', str(tmp_path / 'r.json')])
    try:
        net.wait_ready(str(ready), rx)
        tx = net.popen_tx([SEND, '-H', net.rx_addr, '--streams', '2', '--rate', '0.5',
                           '--duration', '30', '--quiet'])
        time.sleep(1.0)
        tx.send_signal(signal.SIGKILL)
        tx.communicate(timeout=10)
        out, err = rx.communicate(timeout=30)
    finally:
        for p in (rx, tx):
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert rx.returncode == 1, out + err
    doc = json.loads((tmp_path / 'r.json').read_text())
    assert doc['complete'] is False
    assert doc['metrics']['received_packets']['value'] > 1000
    assert 'went silent without end records' in out
    assert results_block(out)['Average loss'].endswith('(at least; incomplete)')


# ---- crafted datagrams of the real format -----------------------------------------------
# An independent (Python) writer of eth-test's format (src/eth-test/eth_proto.h), in the
# protocol version the tree's header declares (the version its binaries speak).
M64 = (1 << 64) - 1
with open(os.path.join(ROOT, 'src', 'eth-test', 'eth_proto.h')) as _fp:
    VERSION = int(re.search(r'#define ET_VERSION (\d+)', _fp.read()).group(1))


def mix64(x):
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def header(kind, stream, nstreams, size, session, seq, aux=0, copy=0):
    h = struct.pack('<4sBBHHHIQQQ', b'CBET', VERSION, kind, stream, nstreams, copy, size,
                    session, seq, aux)
    c = 0x6574682d74657374
    for w in struct.unpack('<5Q', h):
        c = mix64(c ^ w)
    return h + struct.pack('<Q', c)


def data(session, stream, nstreams, seq, size=1000, corrupt=False):
    payload = bytearray(size - 48)
    nwords = len(payload) // 8
    for w in (0, nwords - 1, mix64(seq ^ session) % nwords):
        v = mix64(session ^ mix64((stream << 48) ^ seq) ^ (w << 1))
        struct.pack_into('<Q', payload, 8 * w, v)
    if corrupt:
        payload[0] ^= 0xff
    return header(1, stream, nstreams, size, session, seq) + bytes(payload)


def end(session, stream, nstreams, sent, copy, send_ns=10_000_000):
    return header(2, stream, nstreams, 48, session, sent, aux=send_ns, copy=copy)


def start(session, stream, nstreams, planned, copy, size=1000):
    return header(3, stream, nstreams, 48, session, planned, aux=size, copy=copy)


SENDER = '''
import json, socket, sys, time
host = sys.argv[1]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for port, hexdata in json.load(sys.stdin):
    s.sendto(bytes.fromhex(hexdata), (host, port))
    time.sleep(0.002)
'''


@needs_netns
def test_crafted_datagrams_are_classified(net, tmp_path):
    S, OTHER = 0x5eed, 0xf0e1
    # the start records, two copies per stream: they lock session S (four pieces of
    # evidence) and confirm each stream's plan
    starts = [start(S, st, 2, planned, c) for c in (0, 1) for st, planned in ((0, 10), (1, 6))]
    s0 = [data(S, 0, 2, q) for q in (0, 1, 2, 4, 5)]        # 3 is missing: a gap
    s0 += [data(S, 0, 2, 2), data(S, 0, 2, 2)]              # two duplicates
    s0 += [data(S, 0, 2, q) for q in (7, 6, 9)]             # 6 late: reordered; 8 missing
    s0 += [end(S, 0, 2, 10, c) for c in range(3)]           # sent 10: lost 3 and 8
    s1 = [data(S, 1, 2, q) for q in range(5)]
    s1 += [data(S, 1, 2, 5, corrupt=True)]                  # damaged payload
    s1 += [end(S, 1, 2, 5, c) for c in range(3)]
    strays = [data(OTHER, 0, 2, q) for q in range(3)]       # another session: foreign
    garbage = [b'hello',                                    # too short
               bytes(range(100)),                           # not eth-test
               header(1, 0, 2, 1000, S, 3)[:40] + b'\0' * 960,  # header check wrong
               data(S, 0, 2, 8)[:500]]                      # truncated: length differs
    misdirected = [data(S, 1, 2, 0)]                        # stream 1 on stream 0's port
    plan = [(PORT + i % 2, d) for i, d in enumerate(starts)]  # session S is locked
    plan += [(PORT, d) for d in strays + garbage + misdirected]
    plan += [(PORT, d) for d in s0] + [(PORT + 1, d) for d in s1]

    doc, out, err, rc = receive_crafted(
        net, tmp_path, ['--streams', '2', '--quiet'], [SENDER, net.rx_addr],
        [(p, d.hex()) for p, d in plan])
    m = {k: v['value'] for k, v in doc['metrics'].items()}
    st0, st1 = doc['streams']
    assert (st0['sent'], st0['received'], st0['lost'], st0['duplicated'], st0['reordered']) == \
        (10, 8, 2, 2, 1), out
    assert (st1['sent'], st1['received'], st1['lost'], st1['corrupt']) == (5, 5, 0, 1), out
    assert st0['sent_known'] and st1['sent_known'] and doc['complete']
    assert st0['start_records'] == st1['start_records'] == 2
    assert st0['end_records'] == st1['end_records'] == 3
    assert m['foreign_datagrams'] == 3
    assert m['misdirected_datagrams'] == 1
    assert m['malformed_datagrams'] == 4
    assert doc['malformed']['too short'] == 1
    assert doc['malformed']['not eth-test (magic)'] == 1
    assert doc['malformed']['header check failed'] == 1
    assert doc['malformed']['length differs from header'] == 1
    assert m['verification_errors'] == 1
    assert m['lost_packets'] == 2 and m['sent_packets'] == 15
    assert m['average_loss'] == pytest.approx(100 * 2 / 15)
    assert doc['config']['session'] == hex(S)
    # loss and a corrupt payload: not compliant, and it says why
    assert rc == 1
    assert 'CORRUPT DATA: 1 packets' in out


# ---- the receive path at 1500 MTU: UDP GSO, UDP GRO, several threads per stream ----------
@pytest.fixture
def net1500():
    with netns.VethPair(mtu=1500) as pair:
        yield pair


GSO_SENDER = '''
import json, socket, sys, time
host, port, seg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for kind, hexdata in json.load(sys.stdin):
    if kind == 'gso':    # one send, cut by the kernel into datagrams of seg bytes (UDP_SEGMENT)
        s.setsockopt(socket.SOL_UDP, 103, seg)
    s.sendto(bytes.fromhex(hexdata), (host, port))
    s.setsockopt(socket.SOL_UDP, 103, 0)
    time.sleep(0.002)
'''


@needs_netns
@pytest.mark.parametrize('gro', ['on', 'off'])
def test_coalesced_receive_is_classified_datagram_by_datagram(net1500, tmp_path, gro):
    # One UDP GSO send of eight 1000-byte datagrams (the last cut short) crosses the veth
    # whole; a receiver with UDP GRO gets it as one receive and must classify every
    # datagram in it on its own, exactly as the same datagrams one by one (--gro off,
    # where the kernel cuts them apart).
    net = net1500
    S, OTHER = 0x5eed, 0xf0e1
    starts = [start(S, 0, 1, 6, c) for c in range(4)]        # lock S; plan 6 packets
    coalesced = [data(S, 0, 1, 0), data(S, 0, 1, 1),
                 b'x' * 1000,                                # not eth-test
                 data(S, 0, 1, 3), data(S, 0, 1, 3),         # 2 missing; 3 twice
                 data(S, 0, 1, 4, corrupt=True),             # damaged payload
                 data(OTHER, 0, 1, 0),                       # another session
                 data(S, 0, 1, 5)[:500]]                     # the short last one: truncated
    ends = [end(S, 0, 1, 6, c) for c in range(3)]
    plan = [('one', d.hex()) for d in starts] + [('gso', b''.join(coalesced).hex())]
    plan += [('one', d.hex()) for d in ends]
    doc, out, err, rc = receive_crafted(
        net, tmp_path, ['--streams', '1', '--gro', gro], [GSO_SENDER, net.rx_addr, str(PORT), '1000'],
        plan)
    m = {k: v['value'] for k, v in doc['metrics'].items()}
    (st,) = doc['streams']
    assert (st['sent'], st['received'], st['lost'], st['duplicated'], st['corrupt']) == \
        (6, 3, 3, 1, 1), out
    assert m['foreign_datagrams'] == 1 and m['malformed_datagrams'] == 2
    assert doc['malformed']['not eth-test (magic)'] == 1
    assert doc['malformed']['length differs from header'] == 1
    assert doc['config']['gro'] is (gro == 'on')
    if gro == 'on':   # it did come as one receive
        assert (m['gro_receives'], m['gro_datagrams']) == (1, 8), out
        assert 'UDP GRO: 1 receives held 8 datagrams' in out
    else:
        assert (m['gro_receives'], m['gro_datagrams']) == (0, 0), out
    assert f'UDP GRO {gro}' in out
    assert rc == 1


@needs_netns
def test_gso_datagrams_larger_than_the_mtu_are_refused_clearly(net1500, tmp_path):
    # Without GSO an 8900-byte datagram crosses an MTU of 1500 in IP fragments; a GSO send
    # of them the kernel refuses: the sender says why and could not run (exit 3).
    r = net1500.run_tx([SEND, '-H', net1500.rx_addr, '--streams', '1', '--size', '8900',
                        '--gso', '4', '--rate', '0.1', '--duration', '1', '--quiet'], timeout=60)
    assert r.returncode == 3, r.stdout + r.stderr
    assert 'every --size datagram and its 28 B of headers must fit the MTU' in r.stderr


def nft_dropped_datagrams(net, size):
    '''Datagrams of `size` bytes the loss-injecting nft rule dropped, from its own counter:
    a coalesced packet (a GSO send) of n datagrams is one packet of 28 + n * size bytes,
    so the datagrams are (bytes - 28 * packets) / size.'''
    out = net.run_rx(['nft', 'list', 'table', 'inet', 'cbet_loss'], timeout=30).stdout
    packets, octets = map(int, re.search(r'counter packets (\d+) bytes (\d+)', out).groups())
    assert (octets - 28 * packets) % size == 0, out
    return packets, (octets - 28 * packets) // size


@needs_netns
@pytest.mark.skipif(shutil.which('nft') is None, reason='nft not installed')
@pytest.mark.parametrize('recv_opts', [['--threads', '2', '--reuseport', '2'], ['--gro', 'off']],
                         ids=['gro-2-threads', 'no-gro'])
def test_loss_with_gso_gro_and_threads_matches_the_firewall(net1500, tmp_path, recv_opts):
    # 1472-byte datagrams sent with UDP GSO (44 to a send), received with UDP GRO by two
    # threads sharing each stream's port (SO_REUSEPORT, spread at random), or without GRO
    # (the kernel cuts the sends apart): the firewall drops whole coalesced packets, and
    # the receiver must still count exactly the datagrams in them as lost.
    net = net1500
    with net.drop_fraction(0.05, ports=(PORT, PORT + 1)):
        run = Run(net, tmp_path,
                  send_args=['--streams', '2', '--size', '1472', '--rate', '1', '--duration', '2',
                             '--gso', '44', '--quiet'],
                  recv_args=['--streams', '2', '--threshold', '0', *recv_opts])
        packets, dropped = nft_dropped_datagrams(net, 1472)
    m = {k: v['value'] for k, v in run.doc['metrics'].items()}
    sent = run.tx_doc['metrics']['sent_packets']['value']
    assert run.tx_doc['config']['gso_segments'] == 44
    assert 'UDP GSO (UDP_SEGMENT): 44 datagrams of 1472 B per send' in run.tx.stdout
    assert m['sent_packets'] == sent and run.doc['complete'], run
    assert 0.02 * sent < dropped < 0.08 * sent and packets < dropped   # whole sends dropped
    assert m['socket_drops'] == 0, run     # else the loss would have a second source
    assert m['lost_packets'] == dropped, run
    assert m['received_packets'] == sent - dropped
    assert m['duplicate_packets'] == 0 and m['foreign_datagrams'] == 0
    assert m['malformed_datagrams'] == 0 and m['verification_errors'] == 0
    assert [s['lost'] for s in run.doc['streams']] != [0, 0]
    assert run.rx.returncode == 1
    if '--reuseport' in recv_opts:
        assert run.doc['config']['reuseport'] == 2 and run.doc['config']['threads'] == 2
        assert run.doc['config']['gro'] is True and m['gro_datagrams'] > 0.9 * m['received_packets']
        assert '2 sockets per port (SO_REUSEPORT, spread at random), 2 threads' in run.rx_out
        # both threads had their share of each stream
        assert all(n > 0.2 * m['received_packets'] for n in run.doc['thread_datagrams'])
    else:
        assert run.doc['config']['gro'] is False and m['gro_receives'] == 0


# ---- one stray or forged datagram changes nothing but the counters of rejected ones ------
# A real sender and receiver across the namespaces; one datagram crafted by the test is
# sent to the receiver's port from the sending namespace, before the sender starts or
# while it sends. Every figure must be what the sender's own document says (all packets
# received, none lost, the sender's session, every end record in), and of the counters
# of datagrams set aside exactly one must count it: the one named.
TX_SESSION = 0x5eed0001
OTHER_SESSION = 0xf0e1
STRAY_STREAMS, STRAY_RATE, STRAY_SIZE = 2, 0.2, 8900
# the sender's plan per stream (et_packets_per_stream) for --duration D
def stray_plan(duration):
    return round(duration * STRAY_RATE / STRAY_STREAMS * 1e9 / (8 * STRAY_SIZE))


OTHER_COUNTERS = ('malformed_datagrams', 'foreign_datagrams', 'misdirected_datagrams',
                  'rejected_datagrams', 'verification_errors')

# name, when, receiver's extra options, the datagram (from the sender's plan), the
# counter that counts it ('rejected:<reason>' for a rejected one)
STRAYS = [
    # the cases
    ('session_option_5_bytes', 'before', ['--session', hex(TX_SESSION)],
     lambda plan: b'hello', 'malformed_datagrams'),
    ('other_session_huge_number', 'before', [],
     lambda plan: data(OTHER_SESSION, 0, 2, 1 << 62), 'rejected:out_of_window'),
    ('same_session_huge_number', 'during', [],
     lambda plan: data(TX_SESSION, 0, 2, 1 << 62, size=STRAY_SIZE), 'rejected:beyond_plan'),
    # and their neighbours
    ('other_session_first_packet', 'before', [],
     lambda plan: data(OTHER_SESSION, 0, 2, 0), 'foreign_datagrams'),
    ('same_session_huge_number_before', 'before', [],
     lambda plan: data(TX_SESSION, 1, 2, 1 << 62), 'rejected:out_of_window'),
    ('same_session_just_beyond_plan', 'during', [],
     lambda plan: data(TX_SESSION, 1, 2, plan + 3, size=STRAY_SIZE), 'rejected:beyond_plan'),
    ('forged_end_record_before', 'before', [],
     lambda plan: end(TX_SESSION, 0, 2, 3, 0), 'rejected:record_conflict'),
    ('forged_end_record_during', 'during', [],
     lambda plan: end(TX_SESSION, 1, 2, plan // 2, 0), 'rejected:record_conflict'),
    ('forged_end_record_huge', 'during', [],
     lambda plan: end(TX_SESSION, 0, 2, 1 << 62, 0), 'rejected:record_out_of_range'),
    ('forged_start_record_before', 'before', [],
     lambda plan: start(TX_SESSION, 0, 2, 1, 0, size=STRAY_SIZE), 'rejected:record_conflict'),
]


@needs_netns
@pytest.mark.parametrize('name,when,recv_args,make,counter', STRAYS, ids=[s[0] for s in STRAYS])
def test_one_stray_datagram_changes_no_figure(net, tmp_path, name, when, recv_args, make, counter):
    duration = 1.5 if when == 'during' else 0.5
    plan = stray_plan(duration)
    stray = make(plan)
    port = PORT + (stray[6] if len(stray) >= 48 else 0)   # its stream's port
    inject = [sys.executable, '-c', SENDER, net.rx_addr]
    payload = json.dumps([(port, stray.hex())])
    ready = tmp_path / 'ready'
    rx = net.popen_rx([RECV, '-H', net.rx_addr, '--streams', str(STRAY_STREAMS), '--threshold', '0',
                       '--timeout', '20', '--quiet', '--ready-file', str(ready),
                       '--json', str(tmp_path / 'r.json'), *recv_args])
    tx = None
    try:
        net.wait_ready(str(ready), rx)
        if when == 'before':
            r = net.run_tx(inject, input=payload, timeout=30)
            assert r.returncode == 0, r.stderr
            time.sleep(0.3)   # time to act on it, as a receiver without the fix did
        tx = net.popen_tx([SEND, '-H', net.rx_addr, '--streams', str(STRAY_STREAMS),
                           '--rate', str(STRAY_RATE), '--duration', str(duration),
                           '--session', hex(TX_SESSION), '--quiet',
                           '--json', str(tmp_path / 't.json')])
        if when == 'during':
            time.sleep(duration / 3)
            r = net.run_tx(inject, input=payload, timeout=30)
            assert r.returncode == 0, r.stderr
            assert tx.poll() is None, 'the sender ended before the stray was sent'
        tx_out, tx_err = tx.communicate(timeout=60)
        out, err = rx.communicate(timeout=60)
    finally:
        for p in (rx, tx):
            if p is not None and p.poll() is None:
                p.kill()
                p.communicate()
    assert rx.returncode == 0, out + err
    doc = json.loads((tmp_path / 'r.json').read_text())
    txm = json.loads((tmp_path / 't.json').read_text())['metrics']
    m = {k: v['value'] for k, v in doc['metrics'].items()}
    sent = txm['sent_packets']['value']
    assert sent == STRAY_STREAMS * plan
    # every figure is the sender's truth
    assert doc['config']['session'] == hex(TX_SESSION), out
    assert (m['sent_packets'], m['received_packets'], m['lost_packets']) == (sent, sent, 0), out
    assert m['average_loss'] == 0 and doc['complete'] is True, out
    assert (m['duplicate_packets'], m['reordered_packets'], m['stale_packets']) == (0, 0, 0), out
    assert [(s['sent'], s['received'], s['lost']) for s in doc['streams']] == \
        [(plan, plan, 0)] * STRAY_STREAMS, out
    assert doc['compliance']['passed'] is True, out
    # and the one datagram is counted where it belongs, nowhere else
    expected = {k: 0 for k in OTHER_COUNTERS}
    reasons = {k: 0 for k in doc['rejected']}
    if counter.startswith('rejected:'):
        expected['rejected_datagrams'] = 1
        reasons[counter.split(':')[1]] = 1
    else:
        expected[counter] = 1
    assert {k: m[k] for k in OTHER_COUNTERS} == expected, out
    assert doc['rejected'] == reasons, out
    if counter.startswith('rejected:'):
        assert 'rejected, ' in out   # the human report says why


# ---- buffers, busy polling, pinning ------------------------------------------------------

@needs_netns
def test_small_receive_buffer_warning_names_rmem_max(net, tmp_path):
    # Without root (no SO_RCVBUFFORCE) the kernel caps the buffer at net.core.rmem_max.
    rmem_max = int(net.run_rx(['cat', '/proc/sys/net/core/rmem_max']).stdout)
    asked = 4 * rmem_max
    if not shutil.which('setpriv'):
        pytest.skip('setpriv (util-linux) not installed')
    r = net.run_rx(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                    '--inh-caps=-all', RECV, '-H', net.rx_addr, '--rcvbuf', str(asked),
                    '--rt-priority', '1', '--timeout', '0.3'], timeout=30)
    assert r.returncode == 3, r.stdout + r.stderr        # no sender: only the set-up ran
    assert f'granted a receive buffer of {rmem_max} B of the {asked} B asked' in r.stderr
    assert '--rt-priority 1: Operation not permitted' in r.stderr   # and it still ran
    assert f'net.core.rmem_max is {rmem_max}' in r.stderr
    assert f'granted {rmem_max} B' in r.stdout
    # As root it forces the size past rmem_max, and says so.
    r = net.run_rx([RECV, '-H', net.rx_addr, '--rcvbuf', str(asked), '--timeout', '0.3'],
                   timeout=30)
    assert f'granted {asked} B (SO_RCVBUFFORCE)' in r.stdout
    assert 'warning' not in r.stderr


@needs_netns
def test_busy_poll_threads_and_cpu_pinning(net, tmp_path):
    # One spinning receiver thread on the last CPU, two sender threads on the first: on a
    # 2-core machine a second spinning thread would starve the sender.
    cpus = sorted(os.sched_getaffinity(0))
    run = Run(net, tmp_path,
              send_args=['--rate', '1', '--duration', '1', '--streams', '4', '--threads', '2',
                         '--cpu', str(cpus[0]), '--rt-priority', '1', '--quiet'],
              recv_args=['--streams', '4', '--busy-poll=20', '--cpu', str(cpus[-1]),
                         '--threshold', '0.99'])
    assert run.rx.returncode == 0, run
    assert run.doc['config']['busy_poll_us'] == 20
    assert run.doc['config']['threads'] == 1
    assert run.tx_doc['config']['threads'] == 2
    assert run.tx_doc['config']['rt_priority'] == 1 and 'warning' not in run.tx.stderr
    assert run.doc['metrics']['lost_packets']['value'] == 0


@pytest.mark.parametrize('sig', [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_removes_the_namespaces(sig):
    '''bench/eth-test and these tests make their namespaces with netns.VethPair: ended by
    SIGTERM (a time limit), SIGHUP or Ctrl-C while inside, the process removes them
    (issue 37: bench/eth-test ended by SIGTERM left cbet-rx-* and cbet-tx-* behind).'''
    reason = netns.unavailable_reason()
    if reason:
        pytest.skip(reason)
    code = ('import sys, time\n'
            'from cobalt_bench import netns\n'
            'with netns.VethPair() as net:\n'
            '    print(net.rx_ns, net.tx_ns, flush=True)\n'
            '    time.sleep(60)\n')
    # The signal's handling as a login shell's process has it: a suite started under
    # nohup (SIGHUP ignored) or in the background (SIGINT ignored) passes its children a
    # signal ignored, which VethPair rightly leaves so.
    proc = subprocess.Popen([sys.executable, '-c', code], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, 'PYTHONPATH': os.path.join(ROOT, 'python')},
                            preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    made = proc.stdout.readline().split()
    assert len(made) == 2, made
    listed = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True).stdout
    assert all(ns in listed for ns in made), listed
    proc.send_signal(sig)
    proc.wait(timeout=60)
    listed = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True).stdout
    assert not any(ns in listed for ns in made), (sig, listed)
