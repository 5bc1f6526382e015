'''cobalt-bench's checks under other centres' published ReFrame configurations (issue 35):
the EESSI test suite's configurations of IZUM Vega, SURF Snellius and BSC MareNostrum 5
(from PyPI), CSCS's Beverin (AMD MI300 and MI200 GPU partitions) and LUMI (AMD MI250X), as
`scripts/other-sites` prepares them. Each is loaded as the centre wrote it, adapted only
where it cannot run here (module system, remote topology detection, the scheduler of the
one partition MemTest runs on, logging to the centre's servers). Each check is made for
exactly the partitions it fits, once per partition (one programming environment); GpuCopy
only where the GPUs are NVIDIA's; MemTest runs on Beverin and is reported unjudged, never
PASS.

The EESSI configurations refuse ReFrame 4.10.1 to 4.10.x (EESSI's own check: environment
names with dots), so they are loaded by the newest ReFrame of COBALT_REFRAME_VENVS that
they accept (.ci/run: 4.7.3, Spack's newest); without one they skip, naming it.'''

import json
import os
import subprocess

import pytest

from plugins.checkout import REFRAME, ROOT, clean_env
from plugins.setup import OTHER_SITES
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

SITES = str(OTHER_SITES)
VENVS = [v for v in os.environ.get('COBALT_REFRAME_VENVS', '').split(os.pathsep) if v]
CHECKS = os.path.join(ROOT, 'reframe_checks')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')
PREPARE = 'scripts/other-sites'
OURS = {'Preflight', 'MemTest', 'CpuTest', 'EthTest', 'GpuCopy', 'IbWriteBw', 'SmpMadStress',
        'OsuPt2Pt', 'OsuCollective', 'CbLinkTest'}

# Adapting a centre's configuration where it cannot run here, and nowhere else.
ADAPT = '''
import os
import sys

from reframe.utility import import_module_from_file

if {python_path!r}:
    sys.path.insert(0, {python_path!r})
configuration = {{}}
for path, keys in {parts!r}:
    part = import_module_from_file(path).site_configuration
    for key in keys or part:
        if isinstance(part.get(key), list):
            configuration.setdefault(key, []).extend(part[key])
        elif key in part:
            configuration[key] = part[key]
for system in configuration['systems']:
    # No module tree of the centre's here.
    system['modules_system'] = 'nomod'
    system.pop('modules', None)
    for partition in system['partitions']:
        partition.pop('modules', None)
        if '{{}}:{{}}'.format(system['name'], partition['name']) == {run_on!r}:
            # The one partition MemTest runs on: this machine.
            partition.update(scheduler='local', launcher='local', max_jobs=1)
            partition.pop('access', None)
            partition.pop('resources', None)
            partition.pop('container_platforms', None)
            partition['env_vars'] = [['PATH', {bin!r} + ':$PATH']]
for environ in configuration.get('environments', []):
    environ.pop('modules', None)
for general in configuration.get('general', []):
    general['remote_detect'] = False
site_configuration = configuration
'''


class Centre:
    def __init__(self, name, system, parts, expected, python_path='', eessi=False,
                 run_on=''):
        self.name, self.system, self.parts = name, system, parts
        self.expected, self.python_path, self.eessi = expected, python_path, eessi
        self.run_on = run_on

    def files(self):
        return [os.path.join(SITES, p) for p, _ in self.parts]

    def config(self, tmp_path, run=False):
        '''The adapted configuration; `run`: with the partition MemTest runs on here.'''
        path = tmp_path / f'{self.name}.py'
        path.write_text(ADAPT.format(
            python_path=os.path.join(SITES, self.python_path) if self.python_path else '',
            parts=[(os.path.join(SITES, p), keys) for p, keys in self.parts],
            run_on=self.run_on if run else '', bin=os.path.join(ROOT, 'bin')))
        return path


EVERY_COMPUTE = {'Preflight', 'MemTest', 'CpuTest', 'EthTest'}
MPI = {'OsuPt2Pt', 'OsuCollective', 'CbLinkTest'}
CENTRES = [
    # EESSI's configurations: features 'cpu'/'gpu', extras 'gpu_vendor' (NVIDIA).
    Centre('izum_vega', 'vega', [('eessi/config/izum_vega.py', None)], {
        'vega:cpu': EVERY_COMPUTE | MPI, 'vega:gpu': EVERY_COMPUTE | MPI | {'GpuCopy'}},
        python_path='eessi', eessi=True),
    Centre('surf_snellius', 'snellius', [('eessi/config/surf_snellius.py', None)], {
        'snellius:rome': EVERY_COMPUTE | MPI, 'snellius:genoa': EVERY_COMPUTE | MPI,
        'snellius:gpu_A100': EVERY_COMPUTE | MPI | {'GpuCopy'},
        'snellius:gpu_H100': EVERY_COMPUTE | MPI | {'GpuCopy'}},
        python_path='eessi', eessi=True),
    Centre('bsc_marenostrum5', 'marenostrum5', [('eessi/config/bsc_marenostrum5.py', None)], {
        'marenostrum5:gp_ehpc': EVERY_COMPUTE | MPI,
        'marenostrum5:acc_ehpc': EVERY_COMPUTE | MPI | {'GpuCopy'}},
        python_path='eessi', eessi=True),
    # CSCS: features 'gpu' and 'amdgpu', devices of arch gfx942/gfx90a: AMD, no GpuCopy.
    Centre('cscs_beverin', 'beverin', [('cscs/config/common.py', ['environments']),
                                       ('cscs/config/systems/beverin.py', None)], {
        'beverin:login': {'Preflight'},
        'beverin:mi300': EVERY_COMPUTE | MPI, 'beverin:mi200': EVERY_COMPUTE | MPI},
        run_on='beverin:mi300'),
    # LUMI: its GPU partition says neither feature nor device: no GpuCopy either.
    Centre('lumi', 'lumi', [('lumi/config/lumi.py', None)], {
        'lumi:login': {'Preflight'},
        'lumi:cpu': EVERY_COMPUTE | MPI, 'lumi:gpu': EVERY_COMPUTE | MPI}),
]


def release(command):
    out = subprocess.run([*command, '--version'], text=True, capture_output=True,
                         timeout=120, env=clean_env()).stdout.strip()
    return tuple(int(p) for p in out.split('-')[0].split('.')[:3])


def reframe_for(centre):
    '''The ReFrame command that loads the centre's configuration: the pinned one, or for the
    EESSI configurations the newest of COBALT_REFRAME_VENVS before 4.10.1.'''
    if not centre.eessi:
        return REFRAME
    fits = sorted(((release(c), c) for c in
                   ([os.path.join(v, 'bin', 'reframe')] for v in VENVS)),
                  reverse=True)
    fits = [c for r, c in fits if r < (4, 10, 1)]
    if not fits:
        pytest.skip('the EESSI configurations refuse ReFrame 4.10.1 to 4.10.x: name a venv '
                    'of an older ReFrame in COBALT_REFRAME_VENVS (scripts/reframe-venv 4.7.3 '
                    'DIR)')
    return fits[0]


def env_for(tmp_path):
    home = tmp_path / 'home'
    home.mkdir(exist_ok=True)
    # An account: MareNostrum 5's configuration requires one to be named.
    return clean_env(HOME=str(home), RFM_PREFIX=str(tmp_path / 'rfm'),
                     PATH=f'{ROOT}/bin:{os.environ["PATH"]}', SBATCH_ACCOUNT='cobalt-bench')


def setup_of(centre):
    return 'other-sites' if centre.eessi else 'other-sites-mirrors'


@pytest.fixture(params=[pytest.param(c, id=c.name,
                                     marks=pytest.mark.needs_setup(setup_of(c)))
                        for c in CENTRES])
def centre(request):
    c = request.param
    missing = [f for f in c.files() if not os.path.isfile(f)]
    assert not missing, f'{missing[0]}: not prepared by `{PREPARE}`'
    return c


def described(command, config, system, tmp_path):
    '''{check: (valid_systems, valid_prog_environs)} of cobalt-bench's checks as ReFrame
    made them for `system`, and the test cases {(check, partition): [environments]}.'''
    env = env_for(tmp_path)
    base = [*command, '-C', str(config), '--system', system, '-c', CHECKS, '--nocolor']
    proc = subprocess.run([*base, '--describe'], cwd=str(tmp_path), env=env, text=True,
                          capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    start = proc.stdout.index('[')
    checks = {d['name'].split(' ')[0]: (set(d['valid_systems']), d['valid_prog_environs'])
              for d in json.loads(proc.stdout[start:proc.stdout.rindex(']') + 1])}
    cases = subprocess.run([*base, '--list=C'], cwd=str(tmp_path), env=env, text=True,
                           capture_output=True, timeout=600)
    assert cases.returncode == 0, cases.stdout + cases.stderr
    listed = {}
    for line in cases.stdout.splitlines():
        if line.startswith('- ') and ' @' in line:
            name = line[2:].split(' /')[0]
            where, _, environ = line.rsplit(' @', 1)[1].partition('+')
            listed.setdefault((name, where), []).append(environ)
    return checks, listed, proc.stdout


def test_each_check_where_it_fits_once_per_partition(centre, tmp_path):
    command = reframe_for(centre)
    checks, cases, out = described(command, centre.config(tmp_path), centre.system, tmp_path)
    ours = {name: where for name, (where, _) in checks.items() if name in OURS}
    assert ours, out
    placed = {}
    for name, where in ours.items():
        for part in where:
            placed.setdefault(part, set()).add(name)
    assert {p: s for p, s in placed.items() if s} == centre.expected, placed
    # Once per partition: one programming environment for each (check, partition).
    for (name, where), environs in cases.items():
        if name in OURS:
            assert len(environs) == 1, (name, where, environs)


@pytest.mark.needs_setup('other-sites-mirrors')
def test_memtest_runs_at_a_centre_and_is_reported_unjudged(tmp_path):
    centre = next(c for c in CENTRES if c.run_on)
    env = env_for(tmp_path)
    report = tmp_path / 'run-report.json'
    proc = subprocess.run(
        [*REFRAME, '-C', str(centre.config(tmp_path, run=True)), '--system', centre.run_on,
         '-c',
         os.path.join(CHECKS, 'memory.py'), '-n', 'MemTest', '-r', '--nocolor',
         '--report-file', str(report),
         '-S', 'kernel_opts=--stations 1 --desired-rate 1 --duration 2'],
        cwd=str(tmp_path), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0 and 'unjudged: no reference for beverin:mi300' in out, out
    rep = subprocess.run([COBALT_BENCH, 'report', str(report), '--format', 'md'],
                         cwd=str(tmp_path), env=env, text=True, capture_output=True,
                         timeout=300)
    text = rep.stdout + rep.stderr
    assert rep.returncode == 1, text
    verdict = json.loads((tmp_path / 'report' / 'verdict.json').read_text())
    assert verdict['state'] != 'COMPLIANT', verdict
    assert any('MemTest on beverin:mi300' in u for u in verdict['unjudged']), verdict
    md = (tmp_path / 'report' / 'report.md').read_text()
    row = next(line for line in md.splitlines() if line.startswith('| MemTest')).split(' | ')
    assert row[3] == 'UNJUDGED', row
