'''`cobalt-bench health` (judging.health): the site's required settings on a recorded tree,
the node's inventory against the peers of the newest node sweep, the short mem-test; the
exit status a HealthCheckProgram gives, and the record `nodes resume` counts.'''

import json
import shutil

import pytest

from cobalt_bench.judging import health as hl
from plugins.checkout import DATA, ROOT, cobalt_cli
from plugins.stores import site_copy

COMPLIANT, NONCOMPLIANT = DATA / 'sysfs' / 'compliant', DATA / 'sysfs' / 'noncompliant'
VM, SERVER = DATA / 'inventory' / 'vm-x86', DATA / 'inventory' / 'server-2s'


@pytest.fixture
def site(tmp_path):
    '''The local site, requiring the CPU frequency settings of preflight.'''
    s = site_copy(tmp_path, 'local')
    (s / 'compliance.yaml').write_text('title: health test\ndemonstration: a test\n'
                                       'preflight: [cpu.governor, cpu.turbo]\n')
    return s


def health(tmp_path, *args):
    return cobalt_cli('health', '--results', tmp_path / 'results', '--no-memory', *args)


def records(tmp_path, node):
    return [json.loads(p.read_text())
            for p in sorted((tmp_path / 'results' / 'health' / node).glob('health-*.json'))]


def test_a_node_whose_required_settings_pass_is_healthy_and_recorded(tmp_path, site):
    rc, out, err = health(tmp_path, '--site', site, '--root', COMPLIANT, '--node', 'n1')
    assert rc == 0, out + err
    assert 'n1: healthy' in out
    (rec,) = records(tmp_path, 'n1')
    assert rec['passed'] is True and rec['problems'] == [] and rec['node'] == 'n1'


def test_a_failing_required_setting_is_one_error_line_and_exit_1(tmp_path, site):
    rc, out, err = health(tmp_path, '--site', site, '--root', NONCOMPLIANT, '--node', 'n2',
                          '--quiet')
    assert rc == 1, out + err
    lines = out.splitlines()
    assert lines[0].startswith('ERROR: cobalt-bench health n2: preflight: cpu.governor '
                               'performance on 4 of 16 CPUs'), out
    assert any(line.startswith('ERROR: cobalt-bench health n2: preflight: cpu.turbo')
               for line in lines), out
    (rec,) = records(tmp_path, 'n2')
    assert rec['passed'] is False
    assert [p['item'] for p in rec['problems']] == ['cpu.governor', 'cpu.turbo']


def sweep_of_inventories(tmp_path, nodes):
    '''results/slurm/node-sweep-5 with each node's inventory of the recorded root VM.'''
    sweep = tmp_path / 'results' / 'slurm' / 'node-sweep-5'
    for node in nodes:
        (sweep / node).mkdir(parents=True)
        rc, out, err = cobalt_cli('inventory', '--root', VM, '--quiet', '--json',
                                  sweep / node / 'inventory-5.json')
        assert rc == 0, err
    return sweep


def test_a_node_that_is_now_another_machine_differs_from_its_peers(tmp_path):
    sweep_of_inventories(tmp_path, ['n1', 'n2', 'n3', 'n4'])
    rc, out, err = health(tmp_path, '--root', VM, '--node', 'n2')
    assert rc == 0, out + err        # as in the sweep
    rc, out, err = health(tmp_path, '--root', SERVER, '--node', 'n2', '--quiet')
    assert rc == 1, out + err
    assert 'ERROR: cobalt-bench health n2: configuration: CPU model (cpu.model)' in out, out
    assert 'usual' in out and '(3 nodes)' in out, out


def test_without_enough_peers_nothing_is_compared_and_it_says_so(tmp_path):
    sweep_of_inventories(tmp_path, ['n1', 'n2'])
    rc, out, err = health(tmp_path, '--root', SERVER, '--node', 'n2')
    assert rc == 0, out + err
    assert 'configuration not compared: 2 nodes in' in out, out
    assert 'no site named: no required setting checked' in out, out


def test_the_short_memory_check_runs_mem_test_and_a_killed_one_is_a_problem(tmp_path):
    rc, out, err = cobalt_cli('health', '--results', tmp_path / 'results', '--node', 'n1')
    assert rc == 0, out + err
    (problem,) = hl.memory_problems(137, None)
    assert problem.check == 'memory' and 'killed by SIGKILL' in problem.text
    assert hl.memory_problems(0, None)[0].text == 'mem-test wrote no document'


def test_a_node_name_that_is_no_host_name_is_refused(tmp_path):
    rc, out, err = health(tmp_path, '--node', 'n[1-3]')
    assert rc == 2 and "--node 'n[1-3]': not a node name" in err, out + err
    assert not (tmp_path / 'results' / 'health').exists()
