'''smp-mad-stress against a real, independent InfiniBand management stack: the local-ib
site's simulated fabric (site-configs/local-ib/fabric: ibsim, opensm, and the unchanged
libibumad under the libumad2sim.so preload). The fabric is started once for this module,
in a state directory of its own, and stopped at the end.

No speed is judged here: the simulator's speed is not a switch's. What is judged is what
the fabric says independently of the tool: every LID and directed route opensm configured
answers with the right response (transaction id, attribute, GetResp, SET value), the window
limits hold, and a link taken down through ibsim's console shows up as timeouts and drops
of exactly the destination behind it, exit 1, within the run's time.'''

import json
import os
import shutil
import subprocess
import time

import pytest

from plugins.checkout import REFRAME

FABRIC_TOOLS = ('ibsim', 'opensm', 'smpquery', 'ibnetdiscover')


@pytest.fixture(scope='module')
def tool(smp_mad_stress):
    return smp_mad_stress


@pytest.fixture(scope='module')
def fabric_script(root):
    return os.path.join(root, 'site-configs', 'local-ib', 'fabric')


def parse_env(text):
    env = {}
    for line in text.splitlines():
        if line.startswith('export '):
            key, _, value = line[len('export '):].partition('=')
            env[key] = value.strip("'")
    return env


@pytest.fixture(scope='module')
def fabric(fabric_script, tmp_path_factory):
    missing = [t for t in FABRIC_TOOLS if not shutil.which(t, path=os.environ['PATH'] + ':/usr/sbin')]
    if missing:
        pytest.skip(f'no simulated fabric: {", ".join(missing)} not installed '
                    '(Debian: ibsim-utils, opensm, infiniband-diags)')
    state = tmp_path_factory.mktemp('ib-fabric')
    env = dict(os.environ, COBALT_IB_DIR=str(state), PATH=os.environ['PATH'] + ':/usr/sbin')
    start = subprocess.run([fabric_script, 'start'], env=env, text=True, capture_output=True,
                           timeout=120)
    try:
        assert start.returncode == 0, start.stderr
        fab = parse_env(start.stdout)
        fab['_state'] = str(state)
        fab['_script_env'] = env
        yield fab
    finally:
        stop = subprocess.run([fabric_script, 'stop'], env=env, text=True, capture_output=True,
                              timeout=60)
        assert stop.returncode == 0, stop.stderr
        for name in ('ibsim', 'opensm'):
            assert not (state / f'{name}.pid').exists()


def client_env(fab):
    env = dict(os.environ)
    for key in ('LD_PRELOAD', 'IBSIM_SOCKNAME'):
        env[key] = fab[key]
    return env


def stress(tool, fab, tmp_path, *args, timeout=90):
    out = tmp_path / 'r.json'
    # the preload makes ./sys-PID while the process runs: not in the checkout
    p = subprocess.run([tool, '-q', '--json', str(out), *map(str, args)], text=True,
                       capture_output=True, timeout=timeout, env=client_env(fab), cwd=tmp_path)
    doc = json.loads(out.read_text()) if out.exists() else None
    return p, doc


def check_clean(p, doc, ndests):
    assert p.returncode == 0, p.stdout + p.stderr
    assert doc['config']['transport'] == 'umad'
    rows = doc['per_destination']
    assert len(rows) == ndests
    for row in rows:
        assert row['answered'] > 0, row
        assert row['answered'] == row['sent'], row
        assert row['verification_errors'] == 0 and row['status_errors'] == 0, row
        assert row['timeouts'] == 0 and row['drops'] == 0, row
    assert doc['metrics']['mad_rate']['value'] > 0


def test_fabric_start_is_idempotent_and_status(fabric, fabric_script):
    env = fabric['_script_env']
    pids = {n: open(os.path.join(fabric['_state'], f'{n}.pid')).read() for n in ('ibsim', 'opensm')}
    again = subprocess.run([fabric_script, 'start'], env=env, text=True, capture_output=True,
                           timeout=60)
    assert again.returncode == 0 and 'already running' in again.stderr
    assert parse_env(again.stdout)['COBALT_IB_LIDS'] == fabric['COBALT_IB_LIDS']
    for n, pid in pids.items():
        assert open(os.path.join(fabric['_state'], f'{n}.pid')).read() == pid
    st = subprocess.run([fabric_script, 'status'], env=env, text=True, capture_output=True,
                        timeout=60)
    assert st.returncode == 0 and 'subnet: up' in st.stdout
    # the topology: 5 switches and 12 hosts, each with a LID
    assert len(fabric['COBALT_IB_SWITCH_LIDS'].split(',')) == 5
    assert len(fabric['COBALT_IB_LIDS'].split(',')) == 17
    assert len(fabric['COBALT_IB_PATHS'].split(';')) == 16


def test_fabric_missing_tools_message(fabric_script, tmp_path):
    # this machine's programs, less the simulator's and the subnet manager's
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    for d in ('/usr/bin', '/bin'):
        for name in os.listdir(d):
            if name not in ('ibsim', 'ibsim-run', 'opensm') and not (bindir / name).exists():
                (bindir / name).symlink_to(os.path.join(d, name))
    env = dict(os.environ, PATH=str(bindir), COBALT_IB_DIR=str(tmp_path / 'state'))
    p = subprocess.run(['/bin/bash', fabric_script, 'start'], env=env, text=True,
                       capture_output=True, timeout=30)
    assert p.returncode == 1
    assert 'missing' in p.stderr and 'ibsim (Debian: ibsim-utils)' in p.stderr, p.stderr
    assert 'opensm (Debian: opensm)' in p.stderr
    st = subprocess.run(['/bin/bash', fabric_script, 'status'], env=env, text=True,
                        capture_output=True, timeout=30)
    assert st.returncode == 3


def test_nodeinfo_every_lid(tool, fabric, tmp_path):
    lids = fabric['COBALT_IB_LIDS']
    p, doc = stress(tool, fabric, tmp_path, '-d', '1', '-n', '2', '-N', '16', '-L', lids, 'NodeInfo')
    check_clean(p, doc, len(lids.split(',')))
    assert doc['config']['routing'] == 'lid'
    # the window limits: never more than -N from the port, -n to one destination
    assert doc['metrics']['max_local_in_flight']['value'] <= 16
    assert doc['metrics']['max_dest_in_flight']['value'] <= 2


def test_nodeinfo_every_node_directed(tool, fabric, tmp_path):
    paths = fabric['COBALT_IB_PATHS']
    # one worker: libumad2sim hands every response of a management class to the last
    # port registered for it, where the kernel would route by transaction id (README)
    p, doc = stress(tool, fabric, tmp_path, '-d', '1', '-n', '1', '-N', '8', '--paths', paths,
                    'NodeInfo')
    check_clean(p, doc, len(paths.split(';')))
    assert doc['config']['routing'] == 'directed'
    assert doc['metrics']['max_dest_in_flight']['value'] == 1


@pytest.mark.parametrize('method', ['get', 'set'])
def test_linear_forwarding_table_switch(tool, fabric, tmp_path, method):
    switch = fabric['COBALT_IB_SWITCH_LIDS'].split(',')[-1]
    # block 0 of the LFT holds LIDs 0..63: every LID of this fabric
    p, doc = stress(tool, fabric, tmp_path, '-d', '1', '-m', method, '--timeout', '100', '-r', '1',
                    switch, 'LinearForwardingTable', '0')
    check_clean(p, doc, 1)
    assert doc['config']['method'] == method
    assert doc['config']['attribute'] == 0x19
    # a SET wrote back what the switch held: opensm's routes still work afterwards
    if method == 'set':
        q, doc2 = stress(tool, fabric, tmp_path, '-d', '0.3', '-L', fabric['COBALT_IB_LIDS'],
                         'NodeInfo')
        check_clean(q, doc2, 17)


def relink(fabric, fabric_script, command, lid):
    '''Bring a link back with ibsim's console and wait until `lid` answers again.'''
    subprocess.run([fabric_script, 'console', command], env=fabric['_script_env'], text=True,
                   capture_output=True, timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        q = subprocess.run(['smpquery', 'nodeinfo', str(lid)],
                           env=dict(client_env(fabric), PATH=fabric['_script_env']['PATH']),
                           cwd=fabric['_state'], capture_output=True, timeout=30)
        if q.returncode == 0:
            return
        time.sleep(0.5)
    pytest.fail(f'lid {lid} does not answer 30 s after {command}')


def test_link_down_counts_timeouts_and_names_destination(tool, fabric, fabric_script, tmp_path):
    '''The link comes back up at the end, for the tests after this one.'''
    lids = fabric['COBALT_IB_LIDS'].split(',')
    # H2-1 is the first host behind Leaf2; its LID from ibnetdiscover's port list
    ports = open(os.path.join(fabric['_state'], 'ports.txt')).read().splitlines()
    h21 = next(line.split()[1] for line in ports if line.startswith('CA') and "'H2-1'" in line)
    dests = [fabric['COBALT_IB_SWITCH_LIDS'].split(',')[0], h21, lids[-1]]
    env = client_env(fabric)
    out = tmp_path / 'r.json'
    t0 = time.monotonic()
    proc = subprocess.Popen([tool, '-q', '--json', str(out), '-d', '3', '--timeout', '50', '-r', '2',
                             '-L', ','.join(dests), 'NodeInfo'], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    time.sleep(1)
    c = subprocess.run([fabric_script, 'console', 'Unlink "H2-1"'], env=fabric['_script_env'],
                       text=True, capture_output=True, timeout=30)
    try:
        assert c.returncode == 0, c.stderr
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        relink(fabric, fabric_script, 'Link "H2-1"[1] "Leaf2"[1]', h21)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 1, stdout + stderr   # ran, not healthy
    assert elapsed < 3 + 3 * 0.05 + 10             # the run, the retries of the last MADs, slack
    doc = json.loads(out.read_text())
    rows = {r['lid']: r for r in doc['per_destination']}
    down = rows[int(h21)]
    assert down['timeouts'] > 0 and down['drops'] > 0
    assert down['answered'] > 0                    # it answered until the link went down
    for lid, row in rows.items():
        if lid != int(h21):
            assert row['timeouts'] == 0 and row['drops'] == 0, row
    assert doc['metrics']['drops']['value'] == down['drops']
    assert f'lid {h21}: no response after 3 attempts' in stdout + stderr
    assert down['first_problem'] == 'no response after 3 attempts'
    assert 'Not compliant' in stdout and 'drops' in stdout


# ---- the ReFrame check (reframe_checks/subnet_management.py), real ReFrame ------------------


def reframe_check(root, site, tmp_path, *options, site_dir=None, **env_extra):
    '''Run SmpMadStress on `site` (or the copy of it in `site_dir`) with real ReFrame:
    (process, its report's testcase).'''
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'COBALT_BENCH_', 'COBALT_IB_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path / 'results'), COBALT_BENCH_RUN_ID='run',
               **env_extra)
    site_dir = site_dir or os.path.join(root, 'site-configs', site)
    proc = subprocess.run([*REFRAME, '-C', os.path.join(site_dir, 'config.py'),
                           '-c', os.path.join(root, 'reframe_checks', 'subnet_management.py'),
                           '-r', '--nocolor', *options], cwd=str(tmp_path), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    with open(tmp_path / 'results' / site / 'run' / 'report.json') as fp:
        cases = json.load(fp)['runs'][-1]['testcases']
    assert [c['name'] for c in cases] == ['SmpMadStress'], proc.stdout
    return proc, cases[0]


@pytest.mark.measures
def test_reframe_check_passes_on_the_fabric(root, tool, fabric, tmp_path):
    proc, case = reframe_check(root, 'local-ib', tmp_path, COBALT_IB_DIR=fabric['_state'])
    assert proc.returncode == 0 and case['result'] == 'pass', proc.stdout
    # it went through libibumad to every LID of this fabric, as the site's extras say
    with open(os.path.join(case['outputdir'], 'smp-mad-stress.json')) as fp:
        doc = json.load(fp)
    assert doc['config']['transport'] == 'umad' and doc['config']['routing'] == 'lid'
    assert [r['lid'] for r in doc['per_destination']] == \
        [int(lid) for lid in fabric['COBALT_IB_LIDS'].split(',')]
    # perfvalues: '<partition>:<metric>': [value, reference, lower, upper, unit, result];
    # the site's references judge these (a metric without one has no bounds)
    judged = {key.rsplit(':', 1)[1]: v for key, v in case['perfvalues'].items()
              if v[2] is not None or v[3] is not None}
    assert set(judged) == {'mad_rate', 'drops', 'status_errors'}, case['perfvalues']
    assert judged['mad_rate'][0] == doc['metrics']['mad_rate']['value']


def test_reframe_check_fails_when_a_reference_is_unreachable(root, tool, fabric, tmp_path):
    import yaml
    # A copy of the site whose references.yaml has a floor no fabric reaches (a site is
    # judged differently by a copy of its directory): the same run, judged by it.
    site = tmp_path / 'local-ib'
    shutil.copytree(os.path.join(root, 'site-configs', 'local-ib'), site,
                    ignore=shutil.ignore_patterns('__pycache__'))
    refs = yaml.safe_load((site / 'references.yaml').read_text())
    refs['SmpMadStress']['local-ib:default']['mad_rate'][0] = 1e9
    (site / 'references.yaml').write_text(yaml.safe_dump(refs))
    proc, case = reframe_check(root, 'local-ib', tmp_path, site_dir=str(site),
                               COBALT_IB_DIR=fabric['_state'])
    assert proc.returncode != 0 and case['result'] == 'fail', proc.stdout
    assert case['fail_phase'] == 'performance', case['fail_reason']
    assert 'mad_rate' in case['fail_reason'], case['fail_reason']


def test_reframe_check_without_a_workload_is_skipped_saying_so(root, tool, fabric, tmp_path):
    proc, case = reframe_check(root, 'local-ib', tmp_path, '-S', 'SmpMadStress.kernel_opts=',
                               COBALT_IB_DIR=fabric['_state'])
    assert proc.returncode == 0 and case['result'] == 'skip', proc.stdout
    assert ("no smp-mad-stress workload (destinations and attribute) for partition "
            "local-ib:default") in proc.stdout, proc.stdout


def test_reframe_makes_no_check_for_a_site_without_infiniband(root, tmp_path):
    # placement 'infiniband': the local site's partition does not have the feature
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path))
    proc = subprocess.run([*REFRAME, '-C', os.path.join(root, 'site-configs', 'local', 'config.py'),
                           '-c', os.path.join(root, 'reframe_checks', 'subnet_management.py'),
                           '-l', '--nocolor'], cwd=str(tmp_path), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode == 0 and 'Found 0 check(s)' in proc.stdout, proc.stdout


def test_reframe_check_without_fabric_or_device_is_skipped_saying_so(root, tmp_path):
    from cobalt_bench.tools import ib_ports
    if ib_ports.ports():
        pytest.skip(f'this machine has InfiniBand ports in {ib_ports.SYSFS}')
    # local-ib (feature infiniband) with a state directory where no fabric runs
    site = 'local-ib'
    proc, case = reframe_check(root, site, tmp_path, COBALT_IB_DIR=str(tmp_path / 'no-fabric'))
    assert proc.returncode == 0 and case['result'] == 'skip', proc.stdout
    assert (f"no InfiniBand port in /sys/class/infiniband and no simulated fabric in partition "
            f"{site}:default's environment") in proc.stdout, proc.stdout
    assert 'site-configs/local-ib/fabric start' in proc.stdout


@pytest.mark.parametrize('number, name, mad', [('1', 'get', 'SubnGet'), ('2', 'set', 'SubnSet')])
def test_method_numbers_are_the_original_tools(tool, fabric, tmp_path, number, name, mad):
    # the original tool's code (smpdump.c: enum mngt_methods { get = 1, set = 2 }, default
    # get) and the IBA agree; its README's table (1 = SET) does not: the settings block says
    # which method ran, by name and number
    switch = fabric['COBALT_IB_SWITCH_LIDS'].split(',')[0]
    p, doc = stress(tool, fabric, tmp_path, '-d', '0.3', '-m', number, switch,
                    'LinearForwardingTable', '0')
    check_clean(p, doc, 1)
    assert doc['config']['method'] == name
    assert f'MAD: {mad}(LinearForwardingTable, attribute 0x0019) modifier 0x0, method {number} ' \
           f'({name}), LID routed' in p.stdout, p.stdout
