'''Every ReFrame a site may have (docs/reframe.md: 4.5 to 4.10): under each ReFrame release
in the venvs that COBALT_REFRAME_VENVS names (directories, separated by ':'; each made by
`scripts/reframe-venv VERSION DIR`, .ci/run sets it to the oldest supported and the
pinned one), each site configuration loads and lists the same checks, on the same
partitions, as the ReFrame that runs the tests; the venv imports this checkout's package;
and a reference of 0 judges there as it does since ReFrame 4.8.

The local site's suite itself runs under both in .ci/run (ReFrame, then the run's report).
Without COBALT_REFRAME_VENVS every test here is skipped, naming scripts/reframe-venv.
'''

import functools
import os
import re
import subprocess

import pytest

from plugins.checkout import REFRAME, REPO_ROOT, ROOT, clean_env
from plugins.workers import ETH_TEST_PORTS

VENVS = [v for v in os.environ.get('COBALT_REFRAME_VENVS', '').split(os.pathsep) if v]
SITES = sorted(p.parent.name for p in (REPO_ROOT / 'site-configs').glob('*/config.py'))
CHECKS = os.path.join(ROOT, 'reframe_checks')

pytestmark = [
    pytest.mark.skipif(
        not VENVS, reason='COBALT_REFRAME_VENVS names no venv of another ReFrame: make one '
                          'with `scripts/reframe-venv oldest DIR` (or VERSION DIR) and set '
                          'COBALT_REFRAME_VENVS=DIR[:DIR...]'),
    ETH_TEST_PORTS,
]

# `reframe -l` lists a check as "- Name %param=value /hash" (every release since 4.0).
_LISTED = re.compile(r'^- (?P<name>.+?) /[0-9a-f]{8}$', re.M)


def listing(command, site, tmp_path):
    '''(exit status, output, sorted check names) of `reframe -C <site> -c reframe_checks
    -l`, with the results store in tmp_path (ReFrame's topology cache stays the user's: a
    newer ReFrame's files there are what an older one must read).'''
    env = clean_env(COBALT_BENCH_RESULTS=str(tmp_path / 'results'))
    proc = subprocess.run(
        [*command, '-C', os.path.join(ROOT, 'site-configs', site, 'config.py'), '-c', CHECKS,
         '-l', '--nocolor'],
        cwd=str(tmp_path), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=300)
    return proc.returncode, proc.stdout, sorted(_LISTED.findall(proc.stdout))


@functools.cache
def pinned_listing(site, tmp_path):
    return listing(REFRAME, site, tmp_path)


def venv_python(venv, code):
    return subprocess.run([os.path.join(venv, 'bin', 'python'), '-c', code], cwd='/',
                          env=clean_env(), text=True, capture_output=True, timeout=120)


@pytest.fixture(scope='module')
def pinned_dir(tmp_path_factory):
    return tmp_path_factory.mktemp('pinned')


@pytest.mark.parametrize('venv', VENVS or ['-'])
def test_the_venv_runs_a_supported_reframe_with_this_checkouts_package(venv):
    r = venv_python(venv, 'import cobalt_bench; from cobalt_bench.reframe import compat; '
                          'print(cobalt_bench.__file__); print(compat.version_text('
                          'compat.RFM_VERSION)); print(compat.too_old() or "supported")')
    assert r.returncode == 0, r.stderr
    package, version, supported = r.stdout.split('\n')[:3]
    assert package == os.path.join(ROOT, 'python', 'cobalt_bench', '__init__.py'), \
        f'{venv} imports {package}: run scripts/reframe-venv {version} {venv} again'
    assert supported == 'supported', supported


@pytest.mark.parametrize('site', SITES)
@pytest.mark.parametrize('venv', VENVS or ['-'])
def test_each_site_lists_the_same_checks_under_each_reframe(venv, site, tmp_path, pinned_dir):
    rc, out, names = listing([os.path.join(venv, 'bin', 'reframe')], site, tmp_path)
    assert rc == 0, out
    assert names, f'no check listed under {venv} for site {site}:\n{out}'
    pinned_rc, pinned_out, pinned_names = pinned_listing(site, pinned_dir)
    assert pinned_rc == 0, pinned_out
    assert names == pinned_names, f'{venv} lists\n{out}\nthe pinned ReFrame\n{pinned_out}'


ZERO_SITE = """from cobalt_bench.reframe.site import Site
SITE = Site('zero', __file__)
site_configuration = SITE.checked({
    'systems': [{'name': 'zero', 'hostnames': ['.*'], 'modules_system': 'nomod',
                 'prefix': SITE.prefix,
                 'partitions': [{'name': 'default', 'scheduler': 'local', 'launcher': 'local',
                                 'environs': ['builtin'], 'max_jobs': 1,
                                 'env_vars': [['PATH', f'{SITE.root}/bin:$PATH']]}]}],
    'general': SITE.general(),
})
"""


@pytest.mark.parametrize('venv', VENVS or ['-'])
def test_a_reference_of_zero_judges_under_each_reframe(venv, tmp_path):
    # desired_speed: [0, null, 0]: mem-test's 1 Gbit/s fails it under every release (before
    # 4.8 ReFrame itself passed it; there the check's own hook judges it), and nothing of
    # ReFrame is changed for that (tests/integration/reframe/test_other_suite_beside.py).
    site = tmp_path / 'zero'
    site.mkdir()
    (site / 'config.py').write_text(ZERO_SITE)
    (site / 'references.yaml').write_text(
        "MemTest:\n  'zero:default':\n    desired_speed: [0, null, 0, 'Gbit/s']\n")
    env = clean_env(COBALT_BENCH_RESULTS=str(tmp_path / 'results'), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run(
        [os.path.join(venv, 'bin', 'reframe'), '-C', str(site / 'config.py'), '-c',
         os.path.join(CHECKS, 'memory.py'), '-r', '--nocolor',
         '-S', 'kernel_opts=--stations 1 --desired-rate 1 --duration 1'],
        cwd=str(tmp_path), env=env, text=True, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode != 0, proc.stdout
    assert re.search(r'FAIL.*MemTest', proc.stdout) and 'desired_speed' in proc.stdout, \
        proc.stdout
    assert 'performance' in proc.stdout, proc.stdout
