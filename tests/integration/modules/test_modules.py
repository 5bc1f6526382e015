'''The `cobalt-bench` Lmod modulefile, in fresh shells (real Lmod, real kernels).'''

import os
import shutil
import subprocess

import pytest

LMOD_INIT = '/usr/share/lmod/lmod/init/bash'

pytestmark = pytest.mark.skipif(not os.path.exists(LMOD_INIT),
                                reason=f'Lmod is not installed ({LMOD_INIT})')


def fresh_env(**extra):
    '''An environment as a new login would have it: no modules, no cobalt-bench.'''
    env = {
        'HOME': os.environ.get('HOME', '/root'),
        'USER': os.environ.get('USER', 'root'),
        'PATH': '/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin',
        'LANG': 'C.UTF-8',
    }
    env.update(extra)
    return env


def bash(script, *, cwd, login=False, env=None):
    '''Run `script` in a new bash: non-login with Lmod sourced, or a login shell.'''
    if login:
        argv = ['bash', '-l', '-c', script]
    else:
        argv = ['bash', '-c', f'source {LMOD_INIT}\n{script}']

    proc = subprocess.run(argv, cwd=cwd, env=env or fresh_env(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return proc


def shell_vars(stdout):
    return dict(line.split('=', 1) for line in stdout.splitlines() if '=' in line)


@pytest.fixture(scope='module')
def version(root):
    with open(os.path.join(root, 'VERSION')) as fp:
        return fp.read().strip()


def test_modulefile_is_named_by_version(root, version):
    assert os.path.isfile(
        os.path.join(root, 'modulefiles', 'cobalt-bench', f'{version}.lua')
    )


def test_load_then_mem_test_version(root, version, mem_test):
    proc = bash('module use modulefiles\n'
                'module load cobalt-bench\n'
                'mem-test --version', cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert version in proc.stdout


def test_load_sets_paths_of_a_checkout(root, version, mem_test):
    proc = bash(f'module use {root}/modulefiles\n'
                f'module load cobalt-bench/{version}\n'
                'echo MEM_TEST=$(command -v mem-test)\n'
                'env | grep ^COBALT_BENCH_', cwd='/')
    assert proc.returncode == 0, proc.stderr
    got = shell_vars(proc.stdout)
    assert got['MEM_TEST'] == mem_test
    assert got['COBALT_BENCH_ROOT'] == root
    assert got['COBALT_BENCH_VERSION'] == version
    assert got['COBALT_BENCH_JOBS'] == os.path.join(root, 'jobs')
    assert got['COBALT_BENCH_CHECKS'] == os.path.join(root, 'reframe_checks')
    assert got['COBALT_BENCH_SITE_CONFIGS'] == os.path.join(root, 'site-configs')


def test_login_shell_as_in_a_batch_job(root, version, mem_test):
    # Batch scripts start with `#!/bin/bash -l`: `module` must come from the login setup.
    proc = bash(f'module use {root}/modulefiles\n'
                'module load cobalt-bench\n'
                'mem-test --version', cwd='/', login=True)
    assert proc.returncode == 0, proc.stderr
    assert version in proc.stdout


def test_loaded_module_survives_a_login_shell(root, mem_test):
    # sbatch hands the submitting shell's environment to a job whose login shell resets
    # PATH (Debian's /etc/profile); loading the module again must bring mem-test back.
    proc = bash(f'module use {root}/modulefiles\n'
                'module load cobalt-bench\n'
                "bash -l -c 'module load cobalt-bench; command -v mem-test'",
                cwd='/')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == mem_test


def test_unload_restores_path(root, mem_test):
    proc = bash(f'module use {root}/modulefiles\n'
                'before=$PATH\n'
                'module load cobalt-bench\n'
                'module unload cobalt-bench\n'
                '[ "$PATH" = "$before" ] && echo SAME\n'
                'env | grep -c ^COBALT_BENCH_ || true', cwd='/')
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ['SAME', '0']


def test_linked_into_another_modulepath(root, tmp_path, mem_test):
    # Sites link modulefiles into a central MODULEPATH: the root is where the file is.
    central = tmp_path / 'central'
    central.mkdir()
    (central / 'cobalt-bench').symlink_to(os.path.join(root, 'modulefiles', 'cobalt-bench'))
    proc = bash(f'module use {central}\n'
                'module load cobalt-bench\n'
                'echo ROOT=$COBALT_BENCH_ROOT\n'
                'echo MEM_TEST=$(command -v mem-test)', cwd='/')
    assert proc.returncode == 0, proc.stderr
    got = shell_vars(proc.stdout)
    assert got['ROOT'] == root
    assert got['MEM_TEST'] == mem_test


def test_only_one_cobalt_bench_at_a_time(root, tmp_path, version):
    # A second tree under another name (as a site might install one) is in the same family:
    # loading it replaces the first.
    other = tmp_path / 'other' / 'modulefiles' / 'cobalt-bench-dev'
    other.mkdir(parents=True)
    shutil.copy(os.path.join(root, 'modulefiles', 'cobalt-bench', f'{version}.lua'),
                other / f'{version}.lua')
    proc = bash(f'module use {root}/modulefiles\n'
                f'module use {other.parent}\n'
                'module load cobalt-bench\n'
                'module load cobalt-bench-dev\n'
                'module -t list 2>&1\n'
                'echo ROOT=$COBALT_BENCH_ROOT', cwd='/')
    assert proc.returncode == 0, proc.stderr
    loaded = [line for line in proc.stdout.splitlines()
              if line.startswith('cobalt-bench')]
    assert loaded == [f'cobalt-bench-dev/{version}']
    assert shell_vars(proc.stdout)['ROOT'] == str(tmp_path / 'other')


def test_install_tree(root, installed_tree, version, mem_test):
    prefix = installed_tree
    share = prefix / 'share' / 'cobalt-bench'
    proc = bash(f'module use {prefix}/modulefiles\n'
                'module load cobalt-bench\n'
                'mem-test --version\n'
                'echo MEM_TEST=$(command -v mem-test)\n'
                'env | grep ^COBALT_BENCH_', cwd='/')
    assert proc.returncode == 0, proc.stderr
    assert version in proc.stdout
    got = shell_vars(proc.stdout)
    assert got['MEM_TEST'] == str(prefix / 'bin' / 'mem-test')
    assert got['COBALT_BENCH_ROOT'] == str(prefix)
    assert got['COBALT_BENCH_JOBS'] == str(share / 'jobs')
    assert got['COBALT_BENCH_CHECKS'] == str(share / 'reframe_checks')
    assert got['COBALT_BENCH_SITE_CONFIGS'] == str(share / 'site-configs')
    for var in ('COBALT_BENCH_JOBS', 'COBALT_BENCH_CHECKS', 'COBALT_BENCH_SITE_CONFIGS'):
        assert os.path.isdir(got[var]), var
    # The Python package: installed in the prefix (not copied into share/), its commands
    # on PATH, and what a Python with ReFrame (here the checkout's venv, which has the
    # checkout's copy too) imports once the module is loaded: the site configurations
    # import it in ReFrame.
    pylib = prefix / 'lib' / 'cobalt-bench' / 'python'
    assert not (share / 'python').exists()
    venv_python = os.path.join(root, '.venv', 'bin', 'python')
    proc = bash(f'module use {prefix}/modulefiles\n'
                'module load cobalt-bench\n'
                'cobalt-bench --version\n'
                'cobalt-bench preflight --help | head -1\n'
                'cb-linktest-report --version\n'
                'echo CB=$(command -v cobalt-bench)\n'
                f'{venv_python} -c "import cobalt_bench.reframe.site as s, cobalt_bench.paths as p; '
                'print(\'PKG=\' + s.__file__); print(\'ROOT=\' + p.root())"', cwd='/')
    assert proc.returncode == 0, proc.stderr
    assert f'cobalt-bench {version}' in proc.stdout
    assert 'usage: cobalt-bench preflight' in proc.stdout
    assert f'cb-linktest-report (cobalt-bench) {version}' in proc.stdout
    got = shell_vars(proc.stdout)
    assert got['CB'] == str(prefix / 'bin' / 'cobalt-bench')
    assert got['PKG'].startswith(str(pylib / 'cobalt_bench') + os.sep)
    assert got['ROOT'] == os.path.realpath(prefix)
    # without the module, the command still runs the installed package
    proc = subprocess.run([str(prefix / 'bin' / 'cobalt-bench'), '--version'], text=True,
                          capture_output=True, env=fresh_env(), timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == f'cobalt-bench {version}', proc


def test_load_sets_pythonpath_of_a_checkout(root, version):
    proc = bash(f'module use {root}/modulefiles\n'
                'module load cobalt-bench\n'
                'echo PYTHONPATH=$PYTHONPATH\n'
                'python3 -c "import cobalt_bench; print(\'PKG=\' + cobalt_bench.__file__)"',
                cwd='/')
    assert proc.returncode == 0, proc.stderr
    got = shell_vars(proc.stdout)
    assert got['PYTHONPATH'].split(':')[0] == os.path.join(root, 'python')
    assert got['PKG'] == os.path.join(root, 'python', 'cobalt_bench', '__init__.py')


def test_node_architecture_picks_its_build(root, tmp_path, version):
    # A build for the loading node's architecture in bin/<uname -m> (where a cross build,
    # make CC=aarch64-linux-gnu-gcc, puts its kernels) comes before bin/ on PATH; a build
    # for another architecture is left alone. Lmod evaluates the file on the node, so an
    # aarch64 node of the arm partition gets bin/aarch64 (tests/integration/arm/ runs that).
    arch = os.uname().machine
    other_arch = 'x86_64' if arch == 'aarch64' else 'aarch64'
    tree = tmp_path / 'tree'
    (tree / 'modulefiles' / 'cobalt-bench').mkdir(parents=True)
    shutil.copy(os.path.join(root, 'modulefiles', 'cobalt-bench', f'{version}.lua'),
                tree / 'modulefiles' / 'cobalt-bench' / f'{version}.lua')
    for d in ('bin', f'bin/{arch}', f'bin/{other_arch}'):
        (tree / d).mkdir(parents=True, exist_ok=True)
        (tree / d / 'mem-test').write_text('#!/bin/sh\n')
        (tree / d / 'mem-test').chmod(0o755)
    script = (f'module use {tree}/modulefiles\nmodule load cobalt-bench\n'
              'echo MEM_TEST=$(command -v mem-test)\necho ARCH=$COBALT_BENCH_ARCH\n')
    proc = bash(script, cwd='/')
    assert proc.returncode == 0, proc.stderr
    got = shell_vars(proc.stdout)
    assert got['MEM_TEST'] == str(tree / 'bin' / arch / 'mem-test')
    assert got['ARCH'] == arch
    shutil.rmtree(tree / 'bin' / arch)
    proc = bash(script, cwd='/')
    assert shell_vars(proc.stdout)['MEM_TEST'] == str(tree / 'bin' / 'mem-test')
