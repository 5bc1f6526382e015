'''Draining and resuming by Slurm's rules, and the health check as Slurm's
HealthCheckProgram, on the faults' local cluster (``fault_cluster``, issue 38; docs/drain.md, docs/health.md):

1. `cobalt-bench nodes drain SWEEP --apply` drains the sweep's bad node that Slurm has
   idle, and leaves alone the bad nodes Slurm holds otherwise: one an operator drained with
   their own reason, one in a reservation, one down; a dry run changes nothing;
   `nodes resume` refuses before K clean re-tests (`cobalt-bench health` records) and
   resumes after them; an operator's drain is never resumed; `sinfo -R` shows the codes.
2. `cluster restart --health-check`: slurmd runs `cobalt-bench health --drain` on every
   node; a failing required setting planted on one node (a recorded root) gets that node
   drained by it with the coded reason, and no other node.
The sweep of (1) is one of documents (plugins.stores.capacity_sweep: real mem-test --max
documents, four nodes planted at half speed), judged as any sweep; the states are Slurm's.
'''

import json
import os
import re
import subprocess
import time

import pytest

from plugins.checkout import ROOT
from plugins.kernels import kernel
from plugins.slurm import wait_for
from plugins.stores import capacity_sweep, site_copy, unpaced_mem_test_doc

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
NODES = 4


def run(env, *cmd, timeout=120):
    return subprocess.run(cmd, env=env, text=True, capture_output=True, timeout=timeout)


def x86_nodes(env):
    out = run(env, 'sinfo', '-h', '-p', 'x86', '-N', '-o', '%N').stdout.split()
    return sorted(set(out), key=lambda n: int(n[1:]))


def states(env):
    '''{node: (State=..., Reason text)} from scontrol.'''
    out = run(env, 'scontrol', 'show', 'node', '-o').stdout
    found = {}
    for line in out.splitlines():
        name = re.search(r'^NodeName=(\S+)', line)
        state = re.search(r' State=(\S+)', line)
        reason = re.search(r' Reason=(.*?)(?: \[[^]]*\])?\s*$', line)
        if name and state:
            found[name[1]] = (state[1], reason[1] if reason else '')
    return found


@pytest.fixture
def four_nodes(fault_cluster):
    '''The cluster with 4 x86 nodes, every node state and reservation this test makes
    undone after it, and the former size restored.'''
    env = fault_cluster.env
    before = len(x86_nodes(env))
    if before != NODES:
        r = fault_cluster.cluster('restart', '--nodes', str(NODES))
        assert r.returncode == 0, r.stdout + r.stderr
    try:
        yield fault_cluster
    finally:
        run(env, 'scontrol', 'delete', 'ReservationName=cb_drain_test')
        for node in x86_nodes(env):
            run(env, 'scontrol', 'update', f'NodeName={node}', 'State=RESUME')
        if before != NODES:
            r = fault_cluster.cluster('restart', '--nodes', str(before))
            assert r.returncode == 0, r.stdout + r.stderr


def cb(env, *args):
    return run(env, COBALT_BENCH, *map(str, args), timeout=300)


def test_drain_leaves_what_is_not_ours_and_resume_waits_for_clean_retests(tmp_path,
                                                                         four_nodes):
    env = dict(four_nodes.env)
    results = tmp_path / 'results'
    doc = unpaced_mem_test_doc(tmp_path, kernel('mem-test'))
    # n1..n4 at half the speed of six peers (n5..n10, which this cluster does not have)
    factors = {f'n{i}': 0.5 if i <= 4 else 1.0 + 0.005 * i for i in range(1, 11)}
    (results / 'slurm').mkdir(parents=True)
    sweep = capacity_sweep(results / 'slurm', doc, factors, jobid=4711)
    operator = 'disk replaced CR-123'
    assert run(env, 'scontrol', 'update', 'NodeName=n2', 'State=DRAIN',
               f'Reason={operator}').returncode == 0
    r = run(env, 'scontrol', 'create', 'ReservationName=cb_drain_test', 'Nodes=n3',
            'StartTime=now', 'Duration=30', 'Users=root')
    assert r.returncode == 0, r.stdout + r.stderr
    assert run(env, 'scontrol', 'update', 'NodeName=n4', 'State=DOWN',
               'Reason=psu failed').returncode == 0
    # slurmctld sets a reservation's nodes RESERVED at its next pass, not at once
    wait_for(lambda: 'RESERVED' in states(env)['n3'][0], 90, 'n3 shown RESERVED')
    before = states(env)
    assert before['n4'][0].startswith('DOWN'), before

    dry = cb(env, 'nodes', 'drain', sweep, '--site', 'local', '--results', results)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert 'n1: would drain: cobalt-bench:MemCapacity:measured_speed:node-sweep-4711' \
        in dry.stdout, dry.stdout
    assert states(env) == before, 'a dry run changed a node'
    assert not (results / 'node-actions.jsonl').exists()

    applied = cb(env, 'nodes', 'drain', sweep, '--site', 'local', '--results', results,
                 '--apply')
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = states(env)
    assert after['n1'] == ('IDLE+DRAIN',
                           'cobalt-bench:MemCapacity:measured_speed:node-sweep-4711'), after
    assert after['n2'] == before['n2'] and after['n2'][1] == operator, after
    assert after['n3'] == before['n3'] and after['n4'] == before['n4'], after
    out = applied.stdout
    assert f'n2: leave: someone else\'s: IDLE+DRAIN, reason "{operator}"' in out, out
    assert 'n3: leave: in a reservation (IDLE+RESERVED)' in out, out
    assert "n4: leave: someone else's: DOWN" in out, out
    log = [json.loads(line) for line in (results / 'node-actions.jsonl').read_text()
           .splitlines()]
    assert {(r['node'], r['act'], r['applied']) for r in log} >= {
        ('n1', 'drain', True), ('n2', 'leave', False), ('n3', 'leave', False)}
    sinfo = [line.split('|') for line in
             run(env, 'sinfo', '-R', '-h', '-o', '%100E|%N').stdout.splitlines()]
    assert ['cobalt-bench:MemCapacity:measured_speed:node-sweep-4711', 'n1'] in \
        [[reason.strip(), nodes] for reason, nodes in sinfo], sinfo

    # Resume: not before 2 clean re-tests (the local site's default); an operator's drain
    # never, whatever its node's health.
    early = cb(env, 'nodes', 'resume', '--apply', '--results', results, '--site', 'local')
    assert early.returncode == 0, early.stdout + early.stderr
    assert 'n1: keep: 0 clean re-test(s) since its drain, 2 needed' in early.stdout
    assert states(env)['n1'][0] == 'IDLE+DRAIN'
    time.sleep(1.1)         # the re-tests come after the drain, to the second
    for node in ('n1', 'n2'):
        for _ in range(2):
            h = cb(env, 'health', '--node', node, '--no-memory', '--results', results)
            assert h.returncode == 0, h.stdout + h.stderr
    done = cb(env, 'nodes', 'resume', '--apply', '--results', results, '--site', 'local')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'n1: resumed' in done.stdout, done.stdout
    final = states(env)
    # (Slurm pings a resumed node: NOT_RESPONDING for a moment, never DRAIN again)
    assert final['n1'][0].startswith('IDLE') and 'DRAIN' not in final['n1'][0], final
    assert final['n2'] == before['n2'], final
    named = cb(env, 'nodes', 'resume', 'n2', '--results', results)
    assert 'n2: leave: not drained by cobalt-bench' in named.stdout, named.stdout


@pytest.fixture
def health_checked(four_nodes, tmp_path):
    '''The cluster restarted with `--health-check`, a site that requires real-time
    scheduling (which this machine allows), then restarted without.'''
    c = four_nodes
    site = site_copy(tmp_path, 'local')
    (site / 'compliance.yaml').write_text('title: health\ndemonstration: a test\n'
                                          'preflight: [sched.realtime]\n')
    health_dir = c.state_dir / 'health'
    health_dir.mkdir(exist_ok=True)
    (health_dir / 'site').write_text(str(site))
    r = c.cluster('restart', '--nodes', str(NODES), '--health-check')
    assert r.returncode == 0, r.stdout + r.stderr
    try:
        yield c, health_dir
    finally:
        for path in ('site',):
            (health_dir / path).unlink(missing_ok=True)
        subprocess.run(['rm', '-rf', str(health_dir / 'roots')])
        r = c.cluster('restart', '--nodes', str(NODES))
        assert r.returncode == 0, r.stdout + r.stderr


def test_slurm_drains_the_node_whose_health_check_fails(tmp_path, health_checked):
    c, health_dir = health_checked
    env = dict(c.env)
    assert 'HealthCheckProgram' in run(env, 'scontrol', 'show', 'config').stdout
    # n2's root: this machine's, recorded, with real-time scheduling switched off
    root = health_dir / 'roots' / 'n2'
    rec = run(env, COBALT_BENCH, 'preflight', '--record', str(root), '--quiet')
    assert rec.returncode in (0, 1), rec.stderr
    (root / 'proc' / 'sys' / 'kernel' / 'sched_rt_runtime_us').write_text('0\n')

    def n2_drained():
        state, reason = states(env)['n2']
        return reason if 'DRAIN' in state else None
    reason = wait_for(n2_drained, 120, 'n2 drained by its health check')
    assert re.fullmatch(r'cobalt-bench:health:sched\.realtime:health-\d{8}T\d{6}Z', reason), \
        reason
    others = states(env)
    assert not any('DRAIN' in others[n][0] for n in ('n1', 'n3', 'n4')), others
    log = (c.state_dir / 'log' / 'health-n2.log').read_text()
    assert 'ERROR: cobalt-bench health n2: preflight: sched.realtime' in log, log
