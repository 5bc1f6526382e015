'''Faults of a run of the suite that must end in a clear state (issue 27, points 7, 9, 12,
13): scripts/run-suite with a broken site, a read-only or full results store, a results
path ReFrame cannot quote, references broken while it runs; files created under the
user's umask; the local cluster's caches in /var/tmp never taken through a planted link.

Every run here is real (scripts/run-suite, ReFrame, the Preflight check: seconds each).
A broken site is a copy of `local` made under site-configs/ for the test and removed after.
'''

import json
import os
import re
import shutil
import stat
import subprocess
import uuid

import pytest

from cobalt_bench import fileio
from plugins.checkout import REFRAME, ROOT, clean_env

RUN_SUITE = os.path.join(ROOT, 'scripts', 'run-suite')


def run_suite(site, results, *options, env=None):
    proc = subprocess.run([RUN_SUITE, site, '-n', 'Preflight', '--nocolor', *options],
                          env=clean_env(COBALT_BENCH_RESULTS=str(results), **(env or {})),
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300)
    return proc


def runs(results, site):
    where = os.path.join(str(results), site)
    return sorted(os.path.join(where, d) for d in os.listdir(where)
                  if os.path.isdir(os.path.join(where, d)))


def last_line(proc):
    return proc.stdout.rstrip('\n').splitlines()[-1]


@pytest.fixture
def site_copy():
    '''A copy of the site `local` under site-configs/ named for this test (the site's name
    in config.py too); removed after.'''
    name = f'test-faults-{uuid.uuid4().hex[:8]}'
    where = os.path.join(ROOT, 'site-configs', name)
    shutil.copytree(os.path.join(ROOT, 'site-configs', 'local'), where)
    for file, old, new in (('config.py', "Site('local'", f"Site('{name}'"),
                           ('references.yaml', "'local:", f"'{name}:")):
        with open(os.path.join(where, file)) as fp:
            text = fp.read()
        with open(os.path.join(where, file), 'w') as fp:
            fp.write(text.replace(old, new))
    yield name, where
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def tmpfs(tmp_path):
    '''A mount point for a small tmpfs (root only); unmounted after.'''
    where = tmp_path / 'store'
    where.mkdir()
    mounted = []

    def mount(size='3m', readonly_after=None):
        proc = subprocess.run(['mount', '-t', 'tmpfs', '-o', f'size={size}', 'tmpfs',
                               str(where)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f'cannot mount a tmpfs here: {proc.stderr.strip()}')
        mounted.append(where)
        return where

    yield mount
    for m in mounted:
        subprocess.run(['umount', '-l', str(m)], capture_output=True)


# ---- 12: causes named ----------------------------------------------------------------------

@pytest.mark.parametrize('breakage, cause', [
    ('x = (\n', "SyntaxError: '(' was never closed"),
    ('raise RuntimeError("site broken here")\n', 'RuntimeError: site broken here'),
])
def test_broken_site_configuration_is_named(site_copy, tmp_path, breakage, cause):
    name, where = site_copy
    with open(os.path.join(where, 'config.py'), 'a') as fp:
        fp.write(breakage)
    proc = run_suite(name, tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert 'Traceback' not in proc.stdout, proc.stdout
    assert 'interrupted' not in proc.stdout, proc.stdout
    end = last_line(proc)
    assert 'site configuration cannot be loaded' in end and cause in end, proc.stdout
    assert 'report:' not in proc.stdout, proc.stdout
    [run] = runs(tmp_path, name)
    with open(os.path.join(run, 'INCOMPLETE')) as fp:
        marker = fp.read()
    assert 'site configuration' in marker and cause in marker, marker


def test_read_only_store_is_named_and_keeps_earlier_results(tmpfs):
    store = tmpfs('1m')
    earlier = store / 'local' / 'earlier-run'
    earlier.mkdir(parents=True)
    (earlier / 'report.json').write_text('{"runs": []}')
    remount = subprocess.run(['mount', '-o', 'remount,ro', str(store)], capture_output=True,
                             text=True)
    if remount.returncode != 0:
        pytest.skip(f'cannot remount read-only: {remount.stderr.strip()}')
    proc = run_suite('local', store)
    assert proc.returncode == 3, proc.stdout
    assert 'Read-only file system' in proc.stdout and str(store) in proc.stdout, proc.stdout
    assert 'Traceback' not in proc.stdout
    assert (earlier / 'report.json').read_text() == '{"runs": []}'


def test_references_broken_during_the_run_name_no_report(site_copy, tmp_path):
    '''The references are broken after ReFrame has run (its own atexit, in the site's
    config.py): the report cannot be made, and run-suite names no report page.'''
    name, where = site_copy
    with open(os.path.join(where, 'config.py'), 'a') as fp:
        fp.write("import atexit, sys\n"
                 "if sys.argv[0] == 'reframe':\n"
                 "    atexit.register(lambda: open(SITE.dir + '/references.yaml', 'a')"
                 ".write('\\nbroken: [\\n'))\n")
    proc = run_suite(name, tmp_path)
    assert proc.returncode != 0, proc.stdout
    assert 'Traceback' not in proc.stdout
    assert 'references.yaml' in proc.stdout, proc.stdout
    [run] = runs(tmp_path, name)
    assert not os.path.exists(os.path.join(run, 'report', 'report.html'))
    assert not re.search(r'^report: ', proc.stdout, re.M), proc.stdout


# ---- 7: disk full ---------------------------------------------------------------------------

def test_disk_full_keeps_the_run_incomplete_naming_the_cause(tmpfs):
    '''A 3 MB results file system with 48 KiB left: ReFrame cannot write its report.json
    (it leaves it empty) nor copy the outputs.'''
    store = tmpfs('3m')
    vfs = os.statvfs(store)
    free = vfs.f_bavail * vfs.f_frsize
    subprocess.run(['fallocate', '-l', str(free - 48 * 1024), str(store / 'filler')],
                   check=True)
    proc = run_suite('local', store)
    assert proc.returncode != 0, proc.stdout
    assert 'Traceback' not in proc.stdout, proc.stdout
    assert 'no space left on device' in last_line(proc), proc.stdout
    [run] = runs(store, 'local')
    marker = os.path.join(run, 'INCOMPLETE')
    assert os.path.isfile(marker), proc.stdout
    with open(marker) as fp:
        assert 'no space left on device' in fp.read()


# ---- 9: results paths ReFrame cannot quote ------------------------------------------------

@pytest.mark.parametrize('odd, named', [('x y', 'a space'), ('x`touch PWNED`', "'`'"),
                                        ('x$(touch PWNED)', "'$'")])
def test_results_path_with_odd_character_is_refused(tmp_path, odd, named):
    results = tmp_path / odd
    proc = subprocess.run([RUN_SUITE, 'local', '-n', 'Preflight'], cwd=tmp_path,
                          env=clean_env(COBALT_BENCH_RESULTS=str(results)), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode == 2, proc.stdout
    assert named in proc.stdout and str(results) in proc.stdout, proc.stdout
    assert not results.exists()
    assert not (tmp_path / 'PWNED').exists()
    assert not os.path.exists(os.path.join(ROOT, 'PWNED'))


@pytest.mark.parametrize('odd, named', [('x y', 'a space'), ('x`touch PWNED`', "'`'")])
def test_reframe_refuses_a_results_path_it_cannot_quote(tmp_path, odd, named):
    # ReFrame run directly with a site's configuration (no run-suite): the site refuses.
    results = tmp_path / odd
    proc = subprocess.run([*REFRAME, '-C', os.path.join(ROOT, 'site-configs', 'local',
                                                        'config.py'),
                           '-c', os.path.join(ROOT, 'reframe_checks'), '-n', 'Preflight', '-r'],
                          cwd=tmp_path, env=clean_env(COBALT_BENCH_RESULTS=str(results)),
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300)
    assert proc.returncode != 0, proc.stdout
    assert 'failed to load configuration' in proc.stdout and named in proc.stdout, proc.stdout
    assert not results.exists() and not (tmp_path / 'PWNED').exists()


# ---- 13: umask, caches ----------------------------------------------------------------------

def _under_umask(mask, fn):
    old = os.umask(mask)
    try:
        return fn()
    finally:
        os.umask(old)


@pytest.mark.parametrize('mask, mode', [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_atomic_files_follow_the_umask(tmp_path, mask, mode):
    path = tmp_path / 'verdict.json'
    _under_umask(mask, lambda: fileio.write_atomic(path, json.dumps({})))
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert _under_umask(mask, fileio.umask) == mask


@pytest.mark.parametrize('mask, mode', [(0o077, 0o600), (0o022, 0o644)])
def test_kernel_json_follows_the_umask(tmp_path, mask, mode):
    doc = tmp_path / 'mem-test.json'
    proc = subprocess.run([os.path.join(ROOT, 'bin', 'mem-test'), '--stations', '1',
                           '--desired-rate', '1', '--duration', '0.2', '--json', str(doc)],
                          capture_output=True, text=True, timeout=60,
                          preexec_fn=lambda: os.umask(mask))
    assert doc.is_file(), proc.stdout + proc.stderr
    assert stat.S_IMODE(doc.stat().st_mode) == mode


def _planted(tmp_path, kind):
    '''A cache path as another user might plant it: a symbolic link to a directory, or a
    directory owned by someone else.'''
    target = tmp_path / 'elsewhere'
    target.mkdir()
    cache = tmp_path / 'cache'
    if kind == 'link':
        cache.symlink_to(target)
        return cache, 'a symbolic link'
    if os.geteuid() != 0:
        pytest.skip('chown to another user needs root')
    cache.mkdir()
    os.chown(cache, 65534, 65534)
    return cache, 'owned by'


@pytest.mark.parametrize('kind', ['link', 'other-user'])
@pytest.mark.parametrize('command, variable', [
    (['scripts/spack-offline', 'env'], 'CB_SPACK_CACHE'),
    (['scripts/arm64-root', 'path'], 'COBALT_ARM64_ROOT'),
    (['site-configs/local-slurm/cluster', 'env'], 'COBALT_SLURM_DIR'),
])
def test_cache_planted_by_another_user_is_refused(tmp_path, command, variable, kind):
    cache, why = _planted(tmp_path, kind)
    env = clean_env(drop=('SPACK_ROOT', 'CB_SPACK_CACHE', 'COBALT_ARM64_ROOT',
                          'COBALT_SLURM_DIR', 'CB_THIRD_PARTY'),
                    **{variable: str(cache), 'CB_THIRD_PARTY': str(tmp_path / 'none')})
    proc = subprocess.run([os.path.join(ROOT, command[0]), *command[1:]], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f'refusing the cache {cache}' in proc.stderr and why in proc.stderr, proc.stderr
    assert str(tmp_path / 'elsewhere') not in proc.stdout
    assert os.listdir(tmp_path / 'elsewhere') == []


@pytest.mark.parametrize('beside', ['.lock', '.osu-build.log'])
def test_arm64_root_refuses_a_planted_file_beside_its_cache(tmp_path, beside):
    # The lock and the build log sit beside the cache in /var/tmp: a link planted there
    # would have root write through it.
    target = tmp_path / 'victim'
    target.write_text('precious')
    cache = tmp_path / 'cache'
    (tmp_path / f'cache{beside}').symlink_to(target)
    env = clean_env(drop=('COBALT_ARM64_ROOT',), COBALT_ARM64_ROOT=str(cache))
    proc = subprocess.run([os.path.join(ROOT, 'scripts', 'arm64-root'), 'path'], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert f'refusing the cache {cache}{beside}: a symbolic link' in proc.stderr, proc.stderr
    assert target.read_text() == 'precious'
