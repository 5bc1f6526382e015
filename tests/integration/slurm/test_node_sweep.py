'''Fleet acceptance (issue 28) on a real 8-node Slurm cluster (``fleet_cluster``: a second
local cluster beside the first, its own state directory and ports). A new site with no
references yet:

1. a clean sweep (jobs/node-sweep.slurm, one job: `sbatch -N 8`) runs the single-node pack
   on every node (its paced part: the references are mem-test's); `cobalt-bench references
   derive` writes the site's references from it;
2. a second clean sweep passes them, no node flagged;
3. one node really slowed (each mem-test it runs, in a cgroup with a 1 % CPU quota):
   both sweep ways, the job and ReFrame's `--distribute`,
   flag exactly that node in the report, bad-nodes.txt and verdict.json; the HTML report
   of the sweep is opened in headless Chromium (a screenshot) and shows the node table
   and the plot;
4. a node lost in the middle of a sweep (`scontrol ... state=down`) is named while the
   other seven finish; a crashed batch host ends the sweep within minutes, named.

The documented sweeps and their ReFrame run take four of the nodes (FEW): what they assert
(a clean sweep, a node with half its CPUs named by its configuration) needs no more.'''

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from plugins.checkout import JOB_STATE, REFRAME, ROOT, clean_env
from plugins.slurm import finished_job, sbatch, wait_for

NODES = 8
# A sweep of these four nodes where an assertion needs no more: on this one machine the
# nodes take turns at the unpaced tests, so a sweep's time and CPU grow with its nodes
# (the documented sweep: 892 CPU-s in Slurm's accounting on 8 nodes, 378 on 4). n1 is the
# batch host and n2 its watchdog's node; a node the test makes bad is another.
FEW = ('n1', 'n2', 'n3', 'n4')
SLOW = 'n5'
SWEEP = os.path.join(ROOT, 'jobs', 'node-sweep.slurm')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
# 1 Gbit/s with small buffers: eight mem-tests share this machine's two cores.
LOAD = ('--stations 1 --desired-rate 1 --duration {seconds} --packet-size 1K '
        '--small-block 16 --large-block 128')


def _x86_nodes(env):
    out = subprocess.run(['sinfo', '-h', '-p', 'x86', '-N', '-o', '%N'], env=env, text=True,
                         capture_output=True, timeout=30).stdout.split()
    return sorted(set(out), key=lambda n: int(n[1:]))


@pytest.fixture(scope='module')
def fleet(fleet_cluster):
    '''The second local cluster, of 8 x86 nodes (tests/plugins/slurm.py).'''
    assert _x86_nodes(fleet_cluster.env) == [f'n{i}' for i in range(1, NODES + 1)]
    return fleet_cluster


@pytest.fixture
def new_site(tmp_path):
    '''The local cluster as a new site: its config, a compliance.yaml that requires no
    check yet, and no reference (`{}`).'''
    where = tmp_path / 'site'
    where.mkdir()
    here = os.path.join(ROOT, 'site-configs', 'local-slurm')
    shutil.copy(os.path.join(here, 'config.py'), where / 'config.py')
    (where / 'compliance.yaml').write_text(
        'title: a new site, references derived from its first clean sweep\n'
        'demonstration: the local cluster at a small load\n')
    (where / 'references.yaml').write_text('# none yet: derived from a clean sweep\n{}\n')
    return where


class cpu_cgroup:
    '''A cgroup of this machine's, with a CPU quota (`percent` of one CPU) or none: what is
    moved in (`add`) and what it starts run in it. cgroup v1 (the cpu controller) or v2
    (cpu.max).'''

    def __init__(self, name, percent=None):
        quota = None if percent is None else 1000 * percent
        v1, v2 = '/sys/fs/cgroup/cpu', '/sys/fs/cgroup'
        if os.path.isfile(f'{v1}/cpu.cfs_quota_us'):
            self.root, self.files = v1, {'cpu.cfs_period_us': '100000',
                                         'cpu.cfs_quota_us': str(quota)}
            self.unlimited = {'cpu.cfs_quota_us': '-1'}
        elif 'cpu' in open(f'{v2}/cgroup.controllers').read().split() if os.path.isfile(
                f'{v2}/cgroup.controllers') else False:
            self.root, self.files = v2, {'cpu.max': f'{quota} 100000'}
            self.unlimited = {'cpu.max': 'max 100000'}
        else:
            pytest.skip('no cgroup CPU controller to slow a node with (cgroup v1 cpu or v2 '
                        'cpu.max)')
        if quota is None:
            self.files = self.unlimited = {}
        self.group = os.path.join(self.root, name)

    def pids(self):
        with open(os.path.join(self.group, 'cgroup.procs')) as fp:
            return fp.read().split()

    def named(self, comm):
        '''Its processes whose name is `comm` (one that ended meanwhile left out).'''
        found = []
        for pid in self.pids():
            try:
                if Path(f'/proc/{pid}/comm').read_text().strip() == comm:
                    found.append(pid)
            except OSError:
                continue
        return found

    def add(self, pid, group=None):
        try:
            with open(os.path.join(group or self.group, 'cgroup.procs'), 'w') as fp:
                fp.write(str(pid))
        except ProcessLookupError:      # it ended meanwhile
            pass

    def __enter__(self):
        os.makedirs(self.group, exist_ok=True)
        for name, value in self.files.items():
            with open(os.path.join(self.group, name), 'w') as fp:
                fp.write(value)
        return self

    def __exit__(self, *exc):
        # The quota lifted first: what is still in it (a sweep the test gave up on and
        # cancelled) ends at full speed, and holds no node from the next test's job.
        for name, value in self.unlimited.items():
            with open(os.path.join(self.group, name), 'w') as fp:
                fp.write(value)
        for _ in range(50):
            for pid in self.pids():
                self.add(pid, self.root)
            try:
                os.rmdir(self.group)
                return
            except OSError:         # a process was still being forked into it
                time.sleep(0.2)


class node_cgroup(cpu_cgroup):
    '''The node's slurmd in a cgroup of its own: the job steps it starts inherit it
    (proctrack/linuxproc), so that whatever runs on that node is found there (`pids`).'''

    def __init__(self, cluster, node):
        super().__init__(f'cobalt-bench-{node}')
        self.pid = int((cluster.state_dir / 'run' / f'slurmd-{node}.pid').read_text())

    def __enter__(self):
        super().__enter__()
        self.add(self.pid)
        return self


class slowed:
    '''The node's memory work really slowed: each mem-test the node runs (found by its
    name among the node's processes, `node_cgroup`) is moved within 10 ms of its start into
    a cgroup at 1 % of one CPU. The rest of what it runs keeps its speed: with its slurmd
    at 1 %, the judge of its sweep took 46 s and its ReFrame job 81 s, for nothing the
    test asks.'''

    def __init__(self, cluster, node, percent=1):
        self.node = node_cgroup(cluster, node)
        self.slow = cpu_cgroup(f'cobalt-bench-{node}-slowed', percent)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.moved = 0

    def _watch(self):
        while not self.stop.is_set():
            for pid in self.node.named('mem-test'):
                self.slow.add(pid)
                self.moved += 1
            time.sleep(0.01)

    def __enter__(self):
        self.slow.__enter__()
        self.node.__enter__()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)
        self.node.__exit__(*exc)
        self.slow.__exit__(*exc)


# The pack without its unpaced tests (mem-capacity, cpu-test: the nodes' turns).
PACED_PACK = 'inventory preflight mem-test'


def sweep(tmp_path, fleet, site, seconds, during=None, tests=None, timeout=300, **extra):
    tmp_path.mkdir(exist_ok=True)
    env = clean_env(fleet.env, drop=('MEM_TEST_', 'MEM_CAPACITY_', 'CPU_TEST_', 'NODE_SWEEP_',
                                     'CB_OPT_', *JOB_STATE),
                    COBALT_BENCH_SITE=str(site), COBALT_BENCH_RESULTS=str(tmp_path / 'results'),
                    MEM_TEST_OPTS=LOAD.format(seconds=seconds),
                    # the capacity test at its smallest: these tests are not about it
                    MEM_CAPACITY_OPTS='--stations 1 --duration 1',
                    # cpu-test's own sweep is below (a node sharing its cores)
                    NODE_SWEEP_TESTS=tests or 'inventory preflight mem-test mem-capacity',
                    **extra)
    jobid = sbatch(SWEEP, tmp_path, env, '-N', str(NODES), '-p', 'x86')
    if during:
        during(jobid, env)
    state, _ = finished_job(jobid, env, timeout=timeout)
    log = (tmp_path / f'node-sweep-{jobid}.out').read_text()
    out = tmp_path / 'results' / 'slurm' / f'node-sweep-{jobid}'
    assert (out / 'report' / 'verdict.json').is_file(), log
    verdict = json.loads((out / 'report' / 'verdict.json').read_text())
    return jobid, state, out, verdict, log


def listed(report_dir):
    return [line for line in (report_dir / 'bad-nodes.txt').read_text().splitlines()
            if not line.startswith('#')]


def distributed_reframe(tmp_path, fleet, site):
    '''MemTest on every x86 node through ReFrame's --distribute, judged by `site`; the
    verdict.json of its report.'''
    env = clean_env(fleet.env, drop=JOB_STATE, COBALT_BENCH_RESULTS=str(tmp_path / 'rfm'),
                    COBALT_BENCH_RUN_ID='sweep')
    run = subprocess.run(
        [*REFRAME, '-C', str(site / 'config.py'), '-c', os.path.join(ROOT, 'reframe_checks'),
         '-n', '^MemTest', '--system', 'local-slurm:x86', '--distribute=all', '-r',
         '--nocolor', '-S', f'kernel_opts={LOAD.format(seconds=3)}'],
        cwd=tmp_path, env=env, text=True, capture_output=True, timeout=600)
    run_dir = tmp_path / 'rfm' / 'local-slurm' / 'sweep'
    rep = subprocess.run([COBALT_BENCH, 'report', str(run_dir), '--site', str(site)],
                         env=env, text=True, capture_output=True, timeout=300)
    assert (run_dir / 'report' / 'verdict.json').is_file(), run.stdout + rep.stdout + rep.stderr
    return run_dir / 'report', json.loads((run_dir / 'report' / 'verdict.json').read_text())


def screenshot(page, tmp_path):
    chromium = shutil.which('chromium') or shutil.which('chromium-browser')
    if chromium is None:
        return None
    shot = tmp_path / 'sweep-report.png'
    flags = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
             '--host-resolver-rules=MAP * ~NOTFOUND', f'--user-data-dir={tmp_path / "chr"}']
    run = subprocess.run([chromium, *flags, '--window-size=1280,4000', f'--screenshot={shot}',
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.is_file(), run.stderr
    dom = subprocess.run([chromium, *flags, '--dump-dom', page.as_uri()], capture_output=True,
                         text=True, timeout=120).stdout
    return shot, dom


def only_capacity(bad_nodes, planted=None):
    '''Whether the sweep named a node besides `planted` (the node a test made bad), and
    every such node only by an unpaced measurement against its peers (MemCapacity or
    cpu-test, "peers' median"). Such a sweep is made once more, and the test's assertion
    is on that one: the eight nodes are one VM, whose memory bandwidth unpaced is bimodal,
    set by what else runs on its host (in one clean sweep in CI the 40 runs of mem-test
    --max gave 330-380 or 500-560 Gbit/s, and a node whose rounds all fell in the slow mode
    was named), and the other workers' tests run beside the sweep (CI saw a node's
    MemCapacity turns 25 % down, and another's cpu-test slowest core 22 % down, while they
    did). A node named for anything else (its configuration, a paced measurement, a
    failure) is never a reason to make it again.'''
    others = [b for b in bad_nodes if b['node'] != planted]
    return bool(others) and all(
        all(part.strip().startswith(('MemCapacity ', 'cpu-test ')) and "peers' median" in part
            for part in b['why'].split(';')) for b in others)


def test_derived_references_pass_a_clean_sweep_and_flag_the_slowed_node(
        tmp_path, fleet, new_site):
    # 1. A clean sweep: no reference yet, so nothing failed; references derived from it.
    # (All eight nodes: derived from four, the references' tolerance was narrower than
    # what the other workers' tests do to a paced mem-test beside it; CI saw a clean
    # node's 98.0 % fail the next sweep.) The pack without the capacity turns: the
    # references are mem-test's, and the turns took half of each clean sweep's 2 min
    # (the documented sweep has them, and so does the lost node's).
    _, _, first, verdict, log = sweep(tmp_path / 'a', fleet, new_site, seconds=3,
                                      tests=PACED_PACK)
    assert verdict['bad_nodes'] == [], (verdict['bad_nodes'], log)
    derive = subprocess.run([COBALT_BENCH, 'references', 'derive', str(first), '--site',
                             str(new_site), '--metric', 'measured_speed', '--metric',
                             'percent_of_desired', '--write'],
                            text=True, capture_output=True, timeout=300)
    assert derive.returncode == 0, derive.stdout + derive.stderr
    refs = (new_site / 'references.yaml').read_text()
    assert re.search(r"measured_speed: \[1\.0, -0\.\d+, ", refs), refs
    assert f'node-sweep-{first.name.rsplit("-", 1)[1]}; 8 node(s)' in refs, refs

    # 2. A later clean sweep passes them: no node flagged, every mem-test passed.
    _, _, second, verdict, log = sweep(tmp_path / 'b', fleet, new_site, seconds=3,
                                       tests=PACED_PACK)
    assert verdict['bad_nodes'] == [], (verdict['bad_nodes'], log)
    passed = [i for i in verdict['items'] if i['what'].startswith('mem-test')]
    assert len(passed) == NODES and all(i['status'] == 'passed' for i in passed), passed

    # 3. One node really slowed: both ways flag exactly that node. At 1 % of a CPU
    # mem-test gets about two thirds of what its 1 Gbit/s takes once running (86.5 %; at
    # 2 % it kept its pace on a machine with AVX-512, 97.8 and 100.0 %: CI, 2026-12-07).
    # mem-test alone: what the references judge.
    with slowed(fleet, SLOW) as slow:
        _, _, third, verdict, log = sweep(tmp_path / 'c', fleet, new_site, seconds=3,
                                          tests='mem-test', timeout=600)
        rfm_report, rfm_verdict = distributed_reframe(tmp_path, fleet, new_site)
    assert slow.moved >= 2, ('the slowed node ran no mem-test', log)
    for where, v, report in (('node-sweep job', verdict, third / 'report'),
                             ('reframe --distribute', rfm_verdict, rfm_report)):
        assert [b['node'] for b in v['bad_nodes']] == [SLOW], (where, v['bad_nodes'])
        assert 'mem-test' in v['bad_nodes'][0]['why'].lower() or \
            'memtest' in v['bad_nodes'][0]['why'].lower(), v['bad_nodes']
        assert listed(report) == [SLOW], where
        assert any(SLOW in r for r in v['reasons'] if r.startswith('BAD NODES')), v['reasons']
    md = (third / 'report' / 'report.md').read_text()
    assert f'- **Bad nodes:** `{SLOW}` (1: {SLOW}: mem-test failed' in md, md[:1500]

    # 4. References are never derived from it (issue 37): the slowed node is refused by
    # name, the references stay as they were.
    before = (new_site / 'references.yaml').read_text()
    poisoned = subprocess.run([COBALT_BENCH, 'references', 'derive', str(third), '--site',
                               str(new_site), '--metric', 'measured_speed', '--write'],
                              text=True, capture_output=True, timeout=300)
    assert poisoned.returncode == 1, poisoned.stdout + poisoned.stderr
    assert SLOW in poisoned.stdout + poisoned.stderr, poisoned.stdout + poisoned.stderr
    assert (new_site / 'references.yaml').read_text() == before

    # The HTML report of the sweep in Chromium: the node table and the distribution plot.
    seen = screenshot(third / 'report' / 'report.html', tmp_path)
    if seen is None:
        pytest.skip('headless Chromium not installed (Debian: chromium): the screenshot '
                    'of the sweep report was not taken')
    shot, dom = seen
    assert shot.stat().st_size > 20000, shot.stat().st_size
    assert 'Nodes against their peers' in dom and f'>{SLOW}<' in dom
    assert re.search(r'<img[^>]+alt="[^"]*over 8 nodes', dom), 'no distribution plot'


def test_a_node_lost_in_the_sweep_is_named(tmp_path, fleet, new_site):
    bad = 'n6'

    def lose_a_node(jobid, env):
        out = tmp_path / 'results' / 'slurm' / f'node-sweep-{jobid}' / bad
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            log = out / f'mem-test-{jobid}.out'
            if log.is_file() and 'Running paced' in log.read_text():
                break
            time.sleep(0.5)
        else:
            pytest.fail(f'mem-test on {bad} did not start')
        subprocess.run(['scontrol', 'update', f'nodename={bad}', 'state=down',
                        'reason=cobalt-bench test: node lost in a sweep'],
                       env=env, timeout=30, check=True)

    try:
        # The others take their capacity turns without it, as soon as they are ready: it
        # is out of the job (and back in service, ReturnToService=2), and waiting the hour
        # for it would outlast the sweep's timeout.
        # All eight: the capacity turns of three peers named a clean node in CI. mem-test
        # for 10 s: lost at its start, the node is lost in the middle of it.
        jobid, _, out, verdict, log = sweep(tmp_path, fleet, new_site, seconds=10,
                                            during=lose_a_node, CB_READY_TIMEOUT_S='3600')
    finally:
        subprocess.run(['scontrol', 'update', f'nodename={bad}', 'state=resume'],
                       env=fleet.env, timeout=30)
    assert [b['node'] for b in verdict['bad_nodes']] == [bad], (verdict['bad_nodes'], log)
    assert 'did not finish' in verdict['bad_nodes'][0]['why'], verdict['bad_nodes']
    assert listed(out / 'report') == [bad]
    # The seven others finished their load: not stopped by the lost node (whether each kept
    # its pace is a measurement beside the other workers' tests, not this test's question:
    # CI saw one node's compliance fail so).
    for i in range(1, NODES + 1):
        if f'n{i}' != bad:
            doc = json.loads((out / f'n{i}' / f'mem-test-{jobid}.json').read_text())
            assert doc['interrupted'] is False and \
                doc['duration_s'] >= doc['config']['requested_duration_s'] == 10, doc


def _text(path):
    try:
        return path.read_text(errors='replace')
    except OSError:
        return ''


def crash(node, jobid, state_dir):
    '''What a crashed node leaves of a job: nothing that answers. The node's slurmd, the
    job's batch step daemon (the batch host's) and every process of the job that runs as
    that node, with its step daemon, stopped and then killed (SIGSTOP, SIGKILL); Slurm
    finds out by its pings.'''
    victims = {int((state_dir / 'run' / f'slurmd-{node}.pid').read_text())}
    # This cluster's processes only: the other local cluster, beside it in the same test
    # session, has nodes of the same names and job ids of its own.
    ours = f'SLURM_CONF={state_dir / "etc" / "slurm.conf"}'.encode()
    for pid in map(int, filter(str.isdigit, os.listdir('/proc'))):
        try:
            cmdline = (Path(f'/proc/{pid}/cmdline').read_bytes()).replace(b'\0', b' ')
            environ = Path(f'/proc/{pid}/environ').read_bytes().split(b'\0')
            stat = Path(f'/proc/{pid}/stat').read_text()
        except OSError:
            continue
        if ours not in environ:
            continue
        if cmdline.startswith(f'slurmstepd: [{jobid}.batch]'.encode()):
            victims.add(pid)
        elif f'SLURM_JOB_ID={jobid}'.encode() in environ and \
                f'SLURMD_NODENAME={node}'.encode() in environ:
            victims.update({pid, _parent_in(stat)})   # and its parent
    # All at once, as a crash: frozen first, so that none of them sees another die and
    # acts on it, then killed, every process before its parent. The order matters: a
    # process group whose last parent outside it dies is orphaned, and the kernel wakes
    # its stopped members (SIGHUP, SIGCONT); srun's shepherd, its child, woken after
    # srun died, cancels srun's step (slurm_kill_job_step). Killed parents first, CI saw
    # the watchdog's step so cancelled at the crash, and the sweep never ended; a real
    # crash takes the shepherd with it. The kills 50 ms apart: a wrong order shows in
    # every run, not in the few where this process was descheduled between two kills.
    for pid in victims:
        _signal(pid, signal.SIGSTOP)
    for pid in sorted(victims, key=_depth, reverse=True):
        _signal(pid, signal.SIGKILL)
        time.sleep(0.05)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _parent_in(stat):
    '''The parent's pid in the text of /proc/PID/stat (the field after the state, which
    follows the command's closing parenthesis).'''
    return int(stat.rsplit(')', 1)[1].split()[1])


def _depth(pid):
    '''How many parents the process has up to init (0 once it is gone).'''
    depth = 0
    while pid > 1:
        try:
            pid = _parent_in(Path(f'/proc/{pid}/stat').read_text())
        except (OSError, ValueError, IndexError):
            break
        depth += 1
    return depth


def test_a_lost_batch_host_ends_the_sweep_within_minutes_naming_it(tmp_path, fleet,
                                                                     new_site):
    '''The node that runs the batch script crashes (issue 37). The sweep is --no-kill, so
    nothing else ended it before its time limit (it held the others for the hour); its
    watchdog, a step on another node, names the lost host, writes the report of what the
    others measured and cancels the job, within minutes (Slurm marks a node that stopped
    answering NOT_RESPONDING at its next ping, every third of SlurmdTimeout: Slurm's 300 s
    give 215 s; the fleet's cluster has 60 s).'''
    env = clean_env(fleet.env, drop=('MEM_TEST_', 'NODE_SWEEP_', *JOB_STATE),
                    COBALT_BENCH_SITE=str(new_site),
                    COBALT_BENCH_RESULTS=str(tmp_path / 'results'),
                    MEM_TEST_OPTS=LOAD.format(seconds=20), NODE_SWEEP_TESTS='mem-test')
    jobid = sbatch(SWEEP, tmp_path, env, '-N', '3', '-p', 'x86')
    host = wait_for(lambda: (lambda m: m[1] if m else None)(re.search(
        r'BatchHost=(\S+)', subprocess.run(['scontrol', 'show', 'job', jobid], env=env,
                                             text=True, capture_output=True).stdout)),
        120, 'the sweep running')
    out = tmp_path / 'results' / 'slurm' / f'node-sweep-{jobid}'
    try:
        # A crash while the tests run: the watchdog watches, and every node's mem-test has
        # run 5 s (so that the others have measured something for the report).
        wait_for(lambda: (out / '.watching').is_file() and all(
            '[    5.0 s' in _text(out / n / f'mem-test-{jobid}.out')
            for n in (out / 'allocation').read_text().split()),
            120, 'the watchdog watching and mem-test running 5 s on every node')
        crash(host, jobid, fleet.state_dir)
        crashed = time.monotonic()
        state, _ = finished_job(jobid, env, timeout=480)
        took = time.monotonic() - crashed
    finally:
        subprocess.run(['scancel', jobid], env=env, timeout=30)
        fleet.cluster('start')                  # the crashed node's slurmd again
        subprocess.run(['scontrol', 'update', f'nodename={host}', 'state=resume'],
                       env=env, timeout=30, capture_output=True)   # unless it is back
    assert state.startswith('CANCELLED'), state
    assert took < 420, f'the sweep ended {took:.0f} s after its batch host was lost'
    assert (out / 'batch-host-lost').read_text().startswith(f'{host} '), \
        (out / 'node-sweep.log').read_text()
    verdict = json.loads((out / 'report' / 'verdict.json').read_text())
    assert [b['node'] for b in verdict['bad_nodes']] == [host], verdict['bad_nodes']
    assert 'the batch host of the sweep, lost' in verdict['bad_nodes'][0]['why']
    assert 'written by the watchdog' in (out / 'node-sweep.log').read_text()
    # The two others measured, and their results are in the report.
    others = [n for n in (out / 'allocation').read_text().split() if n != host]
    for node in others:
        assert (out / node / f'mem-test-{jobid}.json').is_file(), node


# ---- issue 36: each node against its peers, by what it is ------------------------------

DOCUMENTED = '--stations 1 --desired-rate 8 --duration 5'   # jobs/node-sweep.slurm's header
DOCUMENTED_CAPACITY = '--stations 1 --duration 3'            # and its MEM_CAPACITY_OPTS
DOCUMENTED_CPU = '--duration 1'                              # and its CPU_TEST_OPTS
HALF = 'n3'


class half_the_cpus:
    '''The node's slurmd (and so every job step it starts) bound to one CPU of this
    machine's two: its jobs get half of what its peers' get, as on a node where a runaway
    process holds the others or cores were taken offline.'''

    def __init__(self, cluster, node):
        self.pid = (cluster.state_dir / 'run' / f'slurmd-{node}.pid').read_text().strip()
        self.all = ','.join(map(str, sorted(os.sched_getaffinity(0))))
        if len(os.sched_getaffinity(0)) < 2:
            pytest.skip('this machine has one CPU: no half of it to take')

    def __enter__(self):
        subprocess.run(['taskset', '-a', '-p', '-c', '0', self.pid], check=True,
                       capture_output=True, timeout=30)
        return self

    def __exit__(self, *exc):
        subprocess.run(['taskset', '-a', '-p', '-c', self.all, self.pid], check=True,
                       capture_output=True, timeout=30)


def documented_sweep(tmp_path, fleet):
    '''The sweep as jobs/node-sweep.slurm's header documents it for the local cluster, on
    FEW of its nodes.'''
    site = os.path.join(ROOT, 'site-configs', 'local-slurm')
    tmp_path.mkdir(exist_ok=True)
    env = clean_env(fleet.env, drop=('MEM_TEST_', 'MEM_CAPACITY_', 'CPU_TEST_', 'NODE_SWEEP_',
                                     'CB_OPT_', *JOB_STATE),
                    COBALT_BENCH_SITE='local-slurm', MEM_TEST_OPTS=DOCUMENTED,
                    MEM_CAPACITY_OPTS=DOCUMENTED_CAPACITY, CPU_TEST_OPTS=DOCUMENTED_CPU,
                    COBALT_BENCH_RESULTS=str(tmp_path / 'results'))
    jobid = sbatch(SWEEP, tmp_path, env, '-N', str(len(FEW)), '-w', ','.join(FEW), '-p', 'x86')
    finished_job(jobid, env, timeout=300)
    out = tmp_path / 'results' / 'slurm' / f'node-sweep-{jobid}'
    log = (out / 'node-sweep.log').read_text()     # the job's output, with its results
    verdict = json.loads((out / 'report' / 'verdict.json').read_text())
    return jobid, out, verdict, log, site, env


def first_screen_order(dom):
    '''The report's headings in the order a reader meets them.'''
    return re.findall(r'<h2>([^<]+)</h2>|<p>(Why:)</p>', dom)


def test_the_documented_sweep_is_clean_and_a_node_with_half_its_cpus_is_named(
        tmp_path, fleet):
    jobid, out, verdict, log, site, env = documented_sweep(tmp_path / 'clean', fleet)
    if only_capacity(verdict['bad_nodes']):
        print('clean sweep named', verdict['bad_nodes'], 'by capacity: once more')
        jobid, out, verdict, log, site, env = documented_sweep(tmp_path / 'clean2', fleet)
    assert verdict['bad_nodes'] == [], (verdict['bad_nodes'], log)
    assert 'bad node' not in subprocess.run(
        [COBALT_BENCH, 'report', str(out), '--site', site], env=env, text=True,
        capture_output=True, timeout=300).stdout
    inventories = sorted(out.glob('n*/inventory-*.json'))
    assert len(inventories) == len(FEW), log

    with half_the_cpus(fleet, HALF):
        jobid, out, verdict, log, site, env = documented_sweep(tmp_path / 'half', fleet)
        if only_capacity(verdict['bad_nodes'], planted=HALF):
            print('half sweep named', verdict['bad_nodes'], 'by capacity: once more')
            jobid, out, verdict, log, site, env = documented_sweep(tmp_path / 'half2', fleet)
        rfm_report, rfm_verdict = distributed_reframe_preflight(tmp_path, fleet, site)
        if only_capacity(rfm_verdict['bad_nodes'], planted=HALF):
            print('half ReFrame run named', rfm_verdict['bad_nodes'], 'by capacity: once more')
            rfm_report, rfm_verdict = distributed_reframe_preflight(tmp_path, fleet, site,
                                                                    run_id='half2')
    why = f'CPUs usable (cpu.usable) 1, usual 2 ({len(FEW) - 1} nodes)'   # its peers'
    for where, v in (('node-sweep job', verdict), ('reframe --distribute', rfm_verdict)):
        assert [b['node'] for b in v['bad_nodes']] == [HALF], (where, v['bad_nodes'])
        assert why in v['bad_nodes'][0]['why'], (where, v['bad_nodes'])
    assert listed(out / 'report') == [HALF]
    md = (out / 'report' / 'report.md').read_text()
    # the answer first: the bad nodes' table right under the verdict, then the classes
    assert md.index('## Bad nodes') < md.index('## Configuration classes') < \
        md.index('Why:') < md.index('## Checks'), md[:3000]
    assert f'scontrol update NodeName={HALF} State=DRAIN' in md

    # Another configuration planted for one node: its inventory taken from a recorded root
    # of this machine with another kernel release and half the memory.
    root = tmp_path / 'root'
    shutil.copytree(os.path.join(ROOT, 'tests', 'data', 'inventory', 'vm-x86'), root,
                    symlinks=True)
    (root / 'proc' / 'sys' / 'kernel' / 'osrelease').write_text('6.1.0-99-amd64\n')
    meminfo = root / 'proc' / 'meminfo'
    meminfo.write_text(re.sub(r'^MemTotal:\s+(\d+)', lambda m: f'MemTotal: {int(m[1]) // 2}',
                              meminfo.read_text(), flags=re.M))
    planted = next((out / 'n4').glob('inventory-*.json'))
    inv = subprocess.run([COBALT_BENCH, 'inventory', '--root', str(root), '--quiet', '--json',
                          str(planted)], text=True, capture_output=True, timeout=120)
    assert inv.returncode == 0, inv.stderr
    subprocess.run([COBALT_BENCH, 'report', str(out), '--site', site], env=env, text=True,
                   capture_output=True, timeout=300)
    verdict = json.loads((out / 'report' / 'verdict.json').read_text())
    n4 = next(b for b in verdict['bad_nodes'] if b['node'] == 'n4')
    assert 'configuration differs' in n4['why'], n4
    assert 'kernel release (kernel.release) 6.1.0-99-amd64' in n4['why'], n4
    assert 'memory (memory.total)' in n4['why'], n4

    # The HTML report in headless Chromium: the bad nodes' table is the first screen.
    seen = screenshot(out / 'report' / 'report.html', tmp_path)
    if seen is None:
        pytest.skip('headless Chromium not installed (Debian: chromium): the screenshot '
                    'of the sweep report was not taken')
    shot, dom = seen
    headings = [h or w for h, w in first_screen_order(dom)]
    assert headings[:2] == ['Bad nodes', 'Configuration classes'], headings
    if os.environ.get('COBALT_SCREENSHOT_DIR'):     # kept for an issue's note
        shutil.copy(shot, os.environ['COBALT_SCREENSHOT_DIR'])


def distributed_reframe_preflight(tmp_path, fleet, site, run_id='half'):
    '''Preflight (which records each node's inventory), MemTest and MemCapacity on each of
    FEW through ReFrame's --distribute (the partition's other nodes excluded, a job option
    that ReFrame's Slurm backend filters the nodes by), judged by `site`: the verdict.json
    of its report.'''
    others = [f'n{i}' for i in range(1, NODES + 1) if f'n{i}' not in FEW]
    env = clean_env(fleet.env, drop=JOB_STATE, COBALT_BENCH_RESULTS=str(tmp_path / 'rfm'),
                    COBALT_BENCH_RUN_ID=run_id)
    run = subprocess.run(
        [*REFRAME, '-C', os.path.join(site, 'config.py'), '-c',
         os.path.join(ROOT, 'reframe_checks'), '-n', '^MemTest', '-n', '^MemCapacity',
         '-n', '^Preflight',
         '--system', 'local-slurm:x86', '--distribute=all', '-J', f'exclude={",".join(others)}',
         '-r', '--nocolor',
         # one machine under 8 nodes: unpaced tests one at a time (docs/fleet.md)
         '--exec-policy', 'serial', '-S', f'MemTest.kernel_opts={DOCUMENTED}'],
        cwd=tmp_path, env=env, text=True, capture_output=True, timeout=900)
    run_dir = tmp_path / 'rfm' / 'local-slurm' / run_id
    rep = subprocess.run([COBALT_BENCH, 'report', str(run_dir), '--site', site],
                         env=env, text=True, capture_output=True, timeout=300)
    assert (run_dir / 'report' / 'verdict.json').is_file(), run.stdout + rep.stdout + rep.stderr
    return run_dir / 'report', json.loads((run_dir / 'report' / 'verdict.json').read_text())


# ---- issue 41: a node whose jobs share their cores with a busy process --------------------

BUSY = 'n4'


class busy_beside:
    '''A busy process beside every cpu-test that `node` runs, on the same cores: while one
    of the node's cpu-test processes lives (found by its name among the processes of the
    node's cgroup, `node_cgroup`), two spinning processes per CPU of this machine run with
    it, as runaway processes or a co-scheduled job on a real node would: the node gets a
    third of its cores. (With one per CPU, a half, CI saw the node at -37 %, 3.9 robust
    sigmas, not named: the other workers' tests had slowed some of its peers' runs too.)
    The spinners are started before, stopped (SIGSTOP), and let go within 10 ms of the
    run's start: started then, Python's start-up under load left a 1 s run mostly alone
    (CI saw the node at -17 %, no more than a clean peer). They run in the node's cgroup,
    sharing what the node gets of this machine: outside it, beside the other workers'
    tests, they were a small part of the machine's load (CI saw the node at -20 %, its
    peers at a third of their speed alone). The other nodes' runs (their own turns on this
    one machine: lib/shared-host.sh) have the cores to themselves.'''

    def __init__(self, cluster, node):
        self.cgroup = node_cgroup(cluster, node)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.shared = 0                  # cpu-test runs of the node that had company
        self.spinners = []

    def _signal_spinners(self, sig):
        for p in self.spinners:
            p.send_signal(sig)

    def _watch(self):
        spinning = False
        while not self.stop.is_set():
            runs = self.cgroup.named('cpu-test')
            if runs and not spinning:
                self.shared += 1
                self._signal_spinners(signal.SIGCONT)
            elif not runs and spinning:
                self._signal_spinners(signal.SIGSTOP)
            spinning = bool(runs)
            time.sleep(0.01)

    def __enter__(self):
        self.cgroup.__enter__()
        for _ in range(2 * len(os.sched_getaffinity(0))):
            p = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
            p.send_signal(signal.SIGSTOP)
            self.cgroup.add(p.pid)
            self.spinners.append(p)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=30)
        for p in self.spinners:
            p.kill()
            p.wait()
        self.cgroup.__exit__(*exc)


# A measurement against its peers beside the other workers' tests: a clean clone's run saw
# the node at -64 %, its peers spread so widely (51.8-85.8 GFLOP/s) that it was 2.4 robust
# sigmas off, under the threshold of 4.
@pytest.mark.measures
def test_a_node_whose_cores_are_shared_with_a_busy_process_is_named_by_cpu_test(
        tmp_path, fleet):
    site = os.path.join(ROOT, 'site-configs', 'local-slurm')
    with busy_beside(fleet, BUSY) as busy:
        # three rounds in turns, not five: every run of the shared node is slowed
        # all eight: against three peers, slowed too by the other workers' tests, the node
        # was not told apart in CI
        jobid, _, out, verdict, log = sweep(tmp_path, fleet, site, seconds=1, tests='cpu-test',
                                            CB_TURN_ROUNDS='3')
        if only_capacity(verdict['bad_nodes'], planted=BUSY):
            print('busy sweep named', verdict['bad_nodes'], 'by capacity: once more')
            jobid, _, out, verdict, log = sweep(tmp_path / 'again', fleet, site, seconds=1,
                                                tests='cpu-test', CB_TURN_ROUNDS='3')
    assert busy.shared >= 1, ('no cpu-test of the node was seen running', log)
    assert [b['node'] for b in verdict['bad_nodes']] == [BUSY], (verdict['bad_nodes'], log)
    why = verdict['bad_nodes'][0]['why']
    # cpu-test's own figures are the evidence: the node's rate against its peers' median
    assert re.search(r'cpu-test node_gflops = [\d.]+ GFLOP/s, peers\' median [\d.]+, -\d', why), why
    assert listed(out / 'report') == [BUSY]
    # each node's document names every core it computed on, verified
    for i in range(1, NODES + 1):
        doc = json.loads((out / f'n{i}' / f'cpu-test-{jobid}.json').read_text())
        assert doc['metrics']['verification_errors']['value'] == 0, doc['metrics']
        assert len(doc['cores']) == len(os.sched_getaffinity(0)), doc['cores']
