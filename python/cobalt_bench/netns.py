'''A private network on this machine: two network namespaces joined by a veth pair, for
running eth-test-send and eth-test-receive across a real (virtual) link. Used by
bench/eth-test and by tests/kernels/eth_test/test_eth_test.py, so it lives in the package and both import it
by name (`from cobalt_bench.netns import VethPair`).

    with VethPair() as net:
        rx = net.popen_rx(['eth-test-receive', '-H', net.rx_addr, ...])
        net.run_tx(['eth-test-send', '-H', net.rx_addr, ...])
        with net.drop_fraction(0.05, ports=(47000, 47011)) as fw:
            ...
            fw.dropped()

The receiving namespace holds address rx_addr, the sending one tx_addr (198.18.0.0/15, the
range RFC 2544 reserves for network benchmarks), on a /30 of their own, so traffic never
leaves the pair. Names are unique per run (pid and a random tag): concurrent runs do not
collide. Everything is removed on exit, also after an error or Ctrl-C; a namespace left
behind by a killed run (its pid gone) is removed by the next run (sweep_stale).

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2; loss injection needs nftables
(`numgen random`) or iptables (`statistic`).
'''

import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from contextlib import contextmanager

PREFIX = 'cbet'


def unavailable_reason():
    '''Why namespaces cannot be made here, or None.'''
    if os.geteuid() != 0:
        return 'network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN)'
    if not shutil.which('ip'):
        return 'ip (iproute2) not installed'
    return None


def firewall_tool():
    '''nft or iptables, whichever is installed (nft preferred), or None.'''
    for tool in ('nft', 'iptables'):
        if shutil.which(tool):
            return tool
    return None


def _ip(*args, check=True):
    return subprocess.run(['ip', *args], check=check, text=True, capture_output=True, timeout=30)


def _end_by_signal(signum, frame):
    raise SystemExit(128 + signum)


def sweep_stale():
    '''Remove namespaces of this module whose creating process is gone.'''
    out = _ip('netns', 'list', check=False).stdout
    for name in re.findall(rf'^({PREFIX}-(?:rx|tx)-(\d+)-[0-9a-f]+)', out, re.M):
        ns, pid = name
        if not os.path.exists(f'/proc/{pid}'):
            _ip('netns', 'del', ns, check=False)


class VethPair:
    def __init__(self, mtu=9000):
        self.mtu = mtu
        tag = '%04x' % random.getrandbits(16)
        pid = os.getpid()
        self.rx_ns = f'{PREFIX}-rx-{pid}-{tag}'
        self.tx_ns = f'{PREFIX}-tx-{pid}-{tag}'
        # Interface names have at most 15 characters; they live inside the namespaces.
        self.rx_if = f'cbr{pid % 100000}{tag}'[:15]
        self.tx_if = f'cbt{pid % 100000}{tag}'[:15]
        subnet = random.randrange(0, 512 * 64)       # a /30 inside 198.18.0.0/15
        base = (198 << 24) | (18 << 16) | (subnet << 2)
        self.tx_addr = self._dotted(base + 1)
        self.rx_addr = self._dotted(base + 2)
        self._made = []
        self._handlers = {}         # signal: the handler before ours (_catch_ends)

    @staticmethod
    def _dotted(n):
        return '.'.join(str(n >> s & 255) for s in (24, 16, 8, 0))

    def __enter__(self):
        sweep_stale()
        self._catch_ends()
        try:
            for ns in (self.rx_ns, self.tx_ns):
                _ip('netns', 'add', ns)
                self._made.append(ns)
                # IPv4 only: no IPv6 neighbour discovery chatter in the interface counters.
                for conf in ('all', 'default'):
                    subprocess.run(['ip', 'netns', 'exec', ns, 'sysctl', '-qw',
                                    f'net.ipv6.conf.{conf}.disable_ipv6=1'],
                                   capture_output=True, timeout=30)
            # Created in the sending namespace, so nothing appears in the host's.
            _ip('-n', self.tx_ns, 'link', 'add', self.tx_if, 'type', 'veth',
                'peer', 'name', self.rx_if, 'netns', self.rx_ns)
            for ns, dev, addr in ((self.rx_ns, self.rx_if, self.rx_addr),
                                  (self.tx_ns, self.tx_if, self.tx_addr)):
                _ip('-n', ns, 'link', 'set', 'lo', 'up')
                _ip('-n', ns, 'link', 'set', dev, 'mtu', str(self.mtu), 'up')
                _ip('-n', ns, 'addr', 'add', f'{addr}/30', 'dev', dev)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        # Deleting a namespace removes its veth end (and so the pair) and its firewall.
        while self._made:
            _ip('netns', 'del', self._made.pop(), check=False)
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)
        self._handlers = {}

    def _catch_ends(self):
        '''SIGTERM and SIGHUP (a time limit, a closed terminal) end the process through
        Python, as Ctrl-C does, so that close() removes the namespaces; only where their
        handling is Python's default and this is the main thread (a caller's own handler
        is left alone).'''
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) == signal.SIG_DFL:
                self._handlers[signum] = signal.signal(signum, _end_by_signal)

    # ---- running things inside -----------------------------------------------------
    def cmd_rx(self, argv):
        return ['ip', 'netns', 'exec', self.rx_ns, *argv]

    def cmd_tx(self, argv):
        return ['ip', 'netns', 'exec', self.tx_ns, *argv]

    def popen_rx(self, argv, **kw):
        kw.setdefault('stdout', subprocess.PIPE)
        kw.setdefault('stderr', subprocess.PIPE)
        return subprocess.Popen(self.cmd_rx(argv), text=True, **kw)

    def run_rx(self, argv, timeout=120, **kw):
        return subprocess.run(self.cmd_rx(argv), text=True, capture_output=True, timeout=timeout, **kw)

    def popen_tx(self, argv, **kw):
        kw.setdefault('stdout', subprocess.PIPE)
        kw.setdefault('stderr', subprocess.PIPE)
        return subprocess.Popen(self.cmd_tx(argv), text=True, **kw)

    def run_tx(self, argv, timeout=120, **kw):
        return subprocess.run(self.cmd_tx(argv), text=True, capture_output=True, timeout=timeout, **kw)

    def rx_counters(self):
        '''(packets, bytes) the receiving end of the veth pair has received.'''
        out = self.run_rx(['cat', '/proc/net/dev'], timeout=10).stdout
        for line in out.splitlines():
            name, _, rest = line.partition(':')
            if name.strip() == self.rx_if:
                fields = rest.split()
                return int(fields[1]), int(fields[0])
        raise RuntimeError(f'{self.rx_if} not in /proc/net/dev of {self.rx_ns}')

    def wait_ready(self, path, proc, timeout=10):
        '''Wait (bounded) until a receiver has written its --ready-file.'''
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return
            if proc.poll() is not None:
                out, err = proc.communicate()
                raise RuntimeError(f'receiver exited with {proc.returncode}: {out}{err}')
            time.sleep(0.02)
        raise RuntimeError(f'receiver not ready after {timeout} s')

    # ---- loss injection ----------------------------------------------------------------
    @contextmanager
    def drop_fraction(self, fraction, ports, min_udp_length=100):
        '''Drop about `fraction` of the UDP datagrams to ports[0]..ports[1] longer than
        min_udp_length (data, not eth-test's 48-byte end records) in the receiving
        namespace's input; yields an object whose dropped() is the firewall's own count.
        The rule is removed on exit (and goes with the namespace in any case).'''
        tool = firewall_tool()
        if tool is None:
            raise RuntimeError('neither nft nor iptables installed')
        fw = _Nft(self, fraction, ports, min_udp_length) if tool == 'nft' else \
            _Iptables(self, fraction, ports, min_udp_length)
        fw.add()
        try:
            yield fw
        finally:
            fw.remove()


class _Nft:
    TABLE = 'cbet_loss'

    def __init__(self, net, fraction, ports, min_len):
        self.net = net
        per_million = int(round(fraction * 1e6))
        self.ruleset = (
            f'table inet {self.TABLE} {{\n'
            f'  chain input {{\n'
            f'    type filter hook input priority -10; policy accept;\n'
            f'    udp dport {ports[0]}-{ports[1]} udp length > {min_len} '
            f'numgen random mod 1000000 < {per_million} counter drop\n'
            f'  }}\n'
            f'}}\n')

    def add(self):
        r = self.net.run_rx(['nft', '-f', '-'], input=self.ruleset, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f'nft failed: {r.stderr}')

    def dropped(self):
        out = self.net.run_rx(['nft', 'list', 'table', 'inet', self.TABLE], timeout=30).stdout
        m = re.search(r'counter packets (\d+)', out)
        if not m:
            raise RuntimeError(f'no nft counter in:\n{out}')
        return int(m.group(1))

    def remove(self):
        self.net.run_rx(['nft', 'delete', 'table', 'inet', self.TABLE], timeout=30)


class _Iptables:
    def __init__(self, net, fraction, ports, min_len):
        self.net = net
        self.rule = ['INPUT', '-p', 'udp', '--dport', f'{ports[0]}:{ports[1]}',
                     '-m', 'length', '--length', f'{min_len + 20}:65535',
                     '-m', 'statistic', '--mode', 'random', '--probability', str(fraction),
                     '-j', 'DROP']

    def add(self):
        r = self.net.run_rx(['iptables', '-I', *self.rule], timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f'iptables failed: {r.stderr}')

    def dropped(self):
        out = self.net.run_rx(['iptables', '-L', 'INPUT', '-v', '-x', '-n'], timeout=30).stdout
        for line in out.splitlines():
            if 'statistic' in line and 'DROP' in line:
                return int(line.split()[0])
        raise RuntimeError(f'no iptables counter in:\n{out}')

    def remove(self):
        self.net.run_rx(['iptables', '-D', *self.rule], timeout=30)
