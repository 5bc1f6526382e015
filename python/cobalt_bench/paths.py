'''Where the cobalt-bench tree is: the one place that answers it, for Python and for the
site configurations (cobalt_bench.reframe.site).

The package lives in one of two layouts:

  a checkout     ROOT/python/cobalt_bench (what ROOT/.venv imports: bootstrap.sh installs
                 the package editable); ROOT holds bin/, modulefiles/, VERSION, jobs/,
                 reframe_checks/, site-configs/ and results/.
  an install     PREFIX/lib/cobalt-bench/python/cobalt_bench (`make install PREFIX=...`,
                 and the Spack recipe, which runs it); PREFIX holds bin/ and modulefiles/,
                 PREFIX/share/cobalt-bench holds VERSION, jobs/, reframe_checks/ and
                 site-configs/.

$COBALT_BENCH_ROOT (the modulefile sets it) names ROOT and wins when it is such a tree.
The root is the directory that holds modulefiles/cobalt-bench/. A copy of the package
outside any tree (a plain `pip install`) has no root: root() is None there.
'''

import os
import re
import sys

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

# Where ROOT is from the package's directory in each layout: python/cobalt_bench in a
# checkout, lib/cobalt-bench/python/cobalt_bench in an install tree.
_LAYOUTS = (('..', '..'), ('..', '..', '..', '..'))


def is_root(path):
    '''Whether `path` is the root of a cobalt-bench tree (checkout or install).'''
    return bool(path) and os.path.isdir(os.path.join(path, 'modulefiles', 'cobalt-bench'))


def root(inside=None):
    '''The tree's root. With `inside` (a path in a tree: a site configuration's
    directory), the tree that holds it, found by walking up; then $COBALT_BENCH_ROOT if
    it is a tree; then the tree this package belongs to; else None.'''
    if inside:
        here = os.path.realpath(inside)
        while True:
            if is_root(here):
                return here
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
    env = os.environ.get('COBALT_BENCH_ROOT')
    if is_root(env):
        return os.path.realpath(env)
    for up in _LAYOUTS:
        candidate = os.path.join(PACKAGE_DIR, *up)
        if is_root(candidate):
            return os.path.realpath(candidate)
    return None


def data_dir(tree=None):
    '''Where VERSION, jobs/, reframe_checks/ and site-configs/ are: ROOT in a checkout,
    ROOT/share/cobalt-bench in an install tree; None without a tree.'''
    tree = tree or root()
    if not tree:
        return None
    share = os.path.join(tree, 'share', 'cobalt-bench')
    return share if os.path.isfile(os.path.join(share, 'VERSION')) else tree


#: A copy of the package with neither a tree nor a distribution's metadata (PEP 440: a
#: local version, sorted before every release).
UNKNOWN_VERSION = '0+unknown'


def version():
    '''The tree's VERSION; else the installed distribution's version; else UNKNOWN_VERSION.'''
    data = data_dir()
    if data:
        try:
            with open(os.path.join(data, 'VERSION')) as fp:
                return fp.read().strip()
        except OSError:
            pass
    try:
        from importlib.metadata import PackageNotFoundError, version as dist_version
        try:
            return dist_version('cobalt-bench')
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    return UNKNOWN_VERSION


def results_dir(explicit=None):
    '''The results store, one rule for the runs written (the site configurations,
    cobalt_bench.reframe.site) and the runs read (`cobalt-bench report`, `runs`): the
    directory named (--results), else $COBALT_BENCH_RESULTS, else the tree's results/
    where it is writable (or can be made: a checkout), else ./results (an install tree
    is usually not writable: its runs go where the user is, and are read from there).'''
    for base in (explicit, os.environ.get('COBALT_BENCH_RESULTS')):
        if base:
            return os.path.abspath(base)
    tree = root()
    if tree:
        own = os.path.join(tree, 'results')
        if os.access(own if os.path.isdir(own) else tree, os.W_OK):
            return own
    return os.path.abspath('results')


#: What a results path may hold: ReFrame writes the run's directories into job scripts and
#: runs them as commands without quoting them (its local scheduler splits a job script
#: path at a space; a backtick is run as a command). scripts/run-suite refuses the same
#: characters before it starts ReFrame.
_SHELL_SAFE = re.compile(r'[A-Za-z0-9._/+,:@%=-]*')


def unquoted_character(path):
    '''The first character of `path` that ReFrame would not quote, said as a message says
    it ('a space', "'`'"); '' when there is none.'''
    bad = path[_SHELL_SAFE.match(path).end():][:1]
    names = {' ': 'a space', '\n': 'a newline', '\t': 'a tab'}
    return names.get(bad, f"'{bad}'") if bad else ''


def venv_python():
    '''The Python of a checkout's .venv (which has numpy and matplotlib, requirements.txt),
    if there is one and it is not the Python running now; else None.'''
    tree = root()
    if not tree:
        return None
    python = os.path.join(tree, '.venv', 'bin', 'python')
    if not os.access(python, os.X_OK):
        return None
    if os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(tree, '.venv')):
        return None
    return python
