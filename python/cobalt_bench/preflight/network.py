'''The network settings: jumbo frames on the tested Ethernet interfaces (required: "Jumbo
frames must be enabled for the participating NICs") and the network sysctls of the
document's tips (recommended), from their one list, data/net-sysctls.tsv.'''

import os

from .. import paths
from .finding import FAIL, PASS, RECOMMENDED, REQUIRED, SKIP, UNKNOWN, Finding


def load_net_sysctls(path=None):
    '''The compliance document's network tips, from their one list (data/net-sysctls.tsv,
    also compiled into eth-test): [(name, minimums (a tuple of ints), note)]. Minimums:
    larger values are fine; a sysctl of several numbers is compared field by field.'''
    if path is None:
        path = os.path.join(paths.PACKAGE_DIR, 'data', 'net-sysctls.tsv')
    rows = []
    with open(path) as fp:
        for line in fp:
            if not line.strip() or line.startswith('#'):
                continue
            name, value, note = (line.rstrip('\n').split('\t') + ['', ''])[:3]
            rows.append((name, tuple(int(v) for v in value.split()), note))
    return rows


NET_SYSCTLS = load_net_sysctls()

JUMBO_MTU = 9000


def physical_ethernet(tree):
    '''Ethernet interfaces backed by a device (not lo, bridges, bonds, tunnels, ifb).'''
    names = []
    for name in tree.listdir('/sys/class/net') or []:
        if tree.read(f'/sys/class/net/{name}/type') != '1':   # ARPHRD_ETHER
            continue
        if not tree.exists(f'/sys/class/net/{name}/device'):
            continue
        if tree.exists(f'/sys/class/net/{name}/wireless'):
            continue
        names.append(name)
    return names


def check_mtu(tree, interfaces):
    if interfaces is None:
        if tree.listdir('/sys/class/net') is None:
            return [Finding(setting='net.mtu', status=UNKNOWN, value='no /sys/class/net',
                            expected=f'MTU >= {JUMBO_MTU} on tested interfaces',
                            fix='ip link set IFACE mtu 9000', level=REQUIRED,
                            affects=['ethernet'], source='/sys/class/net')]
        interfaces = physical_ethernet(tree)
        if not interfaces:
            return [Finding(setting='net.mtu', status=SKIP,
                            value='no physical Ethernet interface',
                            expected=f'MTU >= {JUMBO_MTU} on tested interfaces',
                            fix='', level=REQUIRED, affects=['ethernet'],
                            source='/sys/class/net/*/{type,device}')]
    findings = []
    for name in interfaces:
        mtu = tree.read(f'/sys/class/net/{name}/mtu')
        speed = tree.read(f'/sys/class/net/{name}/speed')
        state = tree.read(f'/sys/class/net/{name}/operstate')
        extra = ', '.join(x for x in (
            f'{speed} Mbit/s' if speed and speed.lstrip('-').isdigit() and int(speed) > 0
            else '', state or '') if x)
        if mtu is None:
            status, value = UNKNOWN, 'no such interface' if not tree.exists(
                f'/sys/class/net/{name}') else 'not readable'
        else:
            status = PASS if int(mtu) >= JUMBO_MTU else FAIL
            value = mtu + (f' ({extra})' if extra else '')
        findings.append(Finding(
            setting=f'net.{name}.mtu', status=status, value=value,
            expected=f'>= {JUMBO_MTU} (jumbo frames)', fix=f'ip link set {name} mtu 9000',
            level=REQUIRED, affects=['ethernet'], source=f'/sys/class/net/{name}/mtu'))
    return findings


def check_net_sysctls(tree):
    findings = []
    for name, minimums, note in NET_SYSCTLS:
        path = '/proc/sys/' + name.replace('.', '/')
        raw = tree.read(path)
        want = ' '.join(map(str, minimums))
        common = dict(setting=name, expected=f'>= {want}' + (f' ({note})' if note else ''),
                      fix=f"sysctl -w {name}='{want}'" if len(minimums) > 1 else
                      f'sysctl -w {name}={want}',
                      level=RECOMMENDED, affects=['ethernet'], source=path)
        values = raw.split() if raw else []
        if len(values) != len(minimums) or not all(v.isdigit() for v in values):
            findings.append(Finding(status=UNKNOWN, value='not readable', **common))
        else:
            ok = all(int(v) >= w for v, w in zip(values, minimums))
            findings.append(Finding(status=PASS if ok else FAIL, value=' '.join(values),
                                    **common))
    return findings
