'''The CPU and memory settings: the frequency governor and turbo (required: the document's
"all tests must show compliance under the following system settings"), and the NUMA layout
and real-time priority (recommended: its tips).'''

import re
import shutil
import subprocess

from .finding import FAIL, PASS, RECOMMENDED, REQUIRED, UNKNOWN, Finding
from .system import cpulist as cpu_list

# Which checks a setting can spoil (matched against check names, kernel names and ReFrame
# tags by the report, to put findings next to the failures they may explain).
CPU_BOUND = ['compute', 'memory', 'gpu', 'ethernet', 'interconnect']

CAP_SYS_NICE = 23

# The machine-wide turbo switches, the first one present decides: (file, its name in the
# finding, the value that means turbo off). intel_pstate's says "no turbo", cpufreq's
# (acpi-cpufreq, AMD) says "boost".
TURBO_SWITCHES = (
    ('/sys/devices/system/cpu/intel_pstate/no_turbo', 'intel_pstate no_turbo', '1'),
    ('/sys/devices/system/cpu/cpufreq/boost', 'cpufreq boost', '0'),
)


def _online_cpus(tree):
    cpus = [c for c in (tree.listdir('/sys/devices/system/cpu') or [])
            if re.fullmatch(r'cpu\d+', c)]
    # cpuN/online is absent for CPUs that cannot go offline (cpu0): those are online.
    return sorted((c for c in cpus
                   if tree.read(f'/sys/devices/system/cpu/{c}/online') != '0'),
                  key=lambda c: int(c[3:]))


def check_governor(tree):
    cpus = _online_cpus(tree)
    source = '/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor'
    common = dict(setting='cpu.governor', expected='performance on every online CPU',
                  fix='cpupower frequency-set -g performance', level=REQUIRED,
                  affects=CPU_BOUND, source=source)
    if not cpus:
        return Finding(status=UNKNOWN, value='no CPUs listed in /sys/devices/system/cpu',
                       **common)
    governors = {c: tree.read(f'/sys/devices/system/cpu/{c}/cpufreq/scaling_governor')
                 for c in cpus}
    known = {c: g for c, g in governors.items() if g}
    if not known:
        return Finding(status=UNKNOWN, value='not readable (no cpufreq in sysfs)',
                       note='no frequency-scaling driver: typical of a VM, or the '
                            'firmware controls the frequency (check the BIOS power profile)',
                       **common)
    counts = {}
    for g in known.values():
        counts[g] = counts.get(g, 0) + 1
    value = ', '.join(f'{g} on {n} of {len(cpus)} CPUs' for g, n in sorted(counts.items()))
    if len(known) < len(cpus):
        value += f', unreadable on {len(cpus) - len(known)}'
        status = FAIL if set(known.values()) - {'performance'} else UNKNOWN
    else:
        status = PASS if set(known.values()) == {'performance'} else FAIL
    return Finding(status=status, value=value, **common)


def check_turbo(tree):
    common = dict(setting='cpu.turbo', expected='disabled', level=REQUIRED,
                  affects=CPU_BOUND)
    for path, name, off in TURBO_SWITCHES:
        value = tree.read(path)
        if value is not None:
            return Finding(status=PASS if value == off else FAIL, value=f'{name}={value}',
                           fix=f'echo {off} > {path}', source=path, **common)
    # amd-pstate (and newer kernels) switch boost per cpufreq policy.
    policies = [p for p in (tree.listdir('/sys/devices/system/cpu/cpufreq') or [])
                if re.fullmatch(r'policy\d+', p)]
    boosts = {p: tree.read(f'/sys/devices/system/cpu/cpufreq/{p}/boost') for p in policies}
    boosts = {p: b for p, b in boosts.items() if b is not None}
    fix = 'for f in /sys/devices/system/cpu/cpufreq/policy*/boost; do echo 0 > $f; done'
    if boosts:
        on = sorted((p for p, b in boosts.items() if b != '0'), key=lambda p: int(p[6:]))
        value = (f'boost on in {len(on)} of {len(boosts)} cpufreq policies' if on
                 else f'boost off in all {len(boosts)} cpufreq policies')
        return Finding(status=FAIL if on else PASS, value=value, fix=fix,
                       source='/sys/devices/system/cpu/cpufreq/policy*/boost', **common)
    return Finding(status=UNKNOWN, value='not readable (no intel_pstate or cpufreq boost)',
                   fix='echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (Intel); '
                       'echo 0 > /sys/devices/system/cpu/cpufreq/boost (AMD, acpi-cpufreq)',
                   note='no frequency-scaling driver exposes turbo: typical of a VM; '
                        'check the BIOS (Turbo Boost / Core Performance Boost)',
                   source='/sys/devices/system/cpu/intel_pstate/no_turbo, '
                          '/sys/devices/system/cpu/cpufreq/boost', **common)


def numa_layout(tree):
    '''{node: (cpulist text, number of CPUs, MemTotal kB or None)}, or None.'''
    names = [n for n in (tree.listdir('/sys/devices/system/node') or [])
             if re.fullmatch(r'node\d+', n)]
    if not names:
        return None
    layout = {}
    for n in sorted(names, key=lambda n: int(n[4:])):
        cpulist = tree.read(f'/sys/devices/system/node/{n}/cpulist')
        meminfo = tree.read(f'/sys/devices/system/node/{n}/meminfo') or ''
        m = re.search(r'MemTotal:\s+(\d+)\s*kB', meminfo)
        layout[int(n[4:])] = (cpulist or '', len(cpu_list(cpulist) or []),
                              int(m.group(1)) if m else None)
    return layout


def check_numa(tree):
    common = dict(setting='numa.layout',
                  expected='every node with CPUs has memory; memory within 10% across '
                           'those nodes',
                  fix='populate the memory channels of every socket alike; in the BIOS, '
                      'NUMA on (no node interleaving), and the same sub-NUMA clustering '
                      'on every node',
                  level=RECOMMENDED, affects=['memory', 'gpu', 'ethernet'],
                  source='/sys/devices/system/node/node*/{cpulist,meminfo}')
    layout = numa_layout(tree)
    if layout is None:
        return Finding(status=UNKNOWN, value='no /sys/devices/system/node', **common)
    parts = []
    for node, (cpulist, ncpu, mem) in layout.items():
        mem_txt = f'{mem / 1048576:.1f} GiB' if mem is not None else 'memory unknown'
        parts.append(f'node{node}: {ncpu} CPUs ({cpulist or "-"}), {mem_txt}')
    value = f'{len(layout)} node(s): ' + '; '.join(parts)
    cpu_nodes = {n: v for n, v in layout.items() if v[1] > 0}
    if any(v[2] is None for v in cpu_nodes.values()):
        return Finding(status=UNKNOWN, value=value, note='MemTotal not readable', **common)
    memoryless = [n for n, v in cpu_nodes.items() if v[2] == 0]
    if memoryless:
        return Finding(status=FAIL, value=value,
                       note=f'node(s) {memoryless} have CPUs but no memory: their CPUs '
                            'work on remote memory', **common)
    mems = [v[2] for v in cpu_nodes.values()]
    if mems and max(mems) > 1.10 * min(mems):
        return Finding(status=FAIL, value=value,
                       note='memory differs by more than 10% between nodes: unequal '
                            'DIMM population', **common)
    return Finding(status=PASS, value=value, **common)


def _rt_from_files(tree):
    '''(status, value, note) of real-time priority from procfs alone.'''
    runtime = tree.read('/proc/sys/kernel/sched_rt_runtime_us')
    limits = tree.read('/proc/self/limits') or ''
    status_txt = tree.read('/proc/self/status') or ''
    m = re.search(r'^Max realtime priority\s+(\S+)', limits, re.M)
    rlimit = m.group(1) if m else None
    m = re.search(r'^CapEff:\s+([0-9a-f]+)', status_txt, re.M)
    sys_nice = bool(int(m.group(1), 16) >> CAP_SYS_NICE & 1) if m else None
    value = (f'sched_rt_runtime_us={runtime}, RLIMIT_RTPRIO={rlimit}, '
             f'CAP_SYS_NICE={"yes" if sys_nice else "no" if sys_nice is not None else "?"}')
    if runtime is None or (rlimit is None and sys_nice is None):
        return UNKNOWN, value, 'not readable'
    if runtime == '0':
        return FAIL, value, 'real-time tasks get no CPU time (sched_rt_runtime_us=0)'
    allowed = sys_nice or (rlimit not in (None, '0'))
    if not allowed:
        return FAIL, value, 'neither CAP_SYS_NICE nor a real-time priority limit above 0'
    return PASS, value, ''


def check_realtime(tree, probe):
    status, value, note = _rt_from_files(tree)
    common = dict(setting='sched.realtime', expected='chrt -f 1 works',
                  fix='run as root, or allow it (limits.conf: `@users - rtprio 1`, then '
                      'a new login); sysctl -w kernel.sched_rt_runtime_us=950000',
                  level=RECOMMENDED, affects=['memory', 'ethernet'],
                  source='/proc/sys/kernel/sched_rt_runtime_us, /proc/self/{limits,status}')
    if probe and tree.live:
        # The files say whether it should work; the kernel (cgroups, containers) decides.
        chrt = shutil.which('chrt')
        if chrt is None:
            return Finding(status=UNKNOWN, value=value + '; chrt not installed',
                           note='install util-linux', **common)
        try:
            proc = subprocess.run([chrt, '-f', '1', 'true'], capture_output=True, text=True,
                                  timeout=10)
        except (OSError, subprocess.TimeoutExpired) as err:
            return Finding(status=UNKNOWN, value=f'{value}; chrt: {err}', **common)
        if proc.returncode == 0:
            return Finding(status=PASS, value=value + '; `chrt -f 1 true` ran', **common)
        msg = (proc.stderr or proc.stdout).strip().splitlines()
        return Finding(status=FAIL,
                       value=f'{value}; `chrt -f 1 true`: {msg[-1] if msg else proc.returncode}',
                       note=note, **common)
    return Finding(status=status, value=value, note=note, **common)
