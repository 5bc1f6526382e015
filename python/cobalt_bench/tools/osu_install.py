'''Finding an OSU micro-benchmarks build: its binaries on PATH, or under an install prefix
or build tree in either layout.

  5.x install   PREFIX/libexec/osu-micro-benchmarks/mpi/{pt2pt,collective}/osu_*
  7.x install   the same directories (pt2pt/ also holds persistent/; the collective
                directory holds blocking and non-blocking benchmarks together)
  5.x build     SRC/mpi/{pt2pt,collective}/osu_*
  7.x build     SRC/c/mpi/pt2pt/standard/osu_*, SRC/c/mpi/collective/blocking/osu_*
  a directory that holds the binaries themselves (e.g. a module's bin directory)

Search order: $COBALT_OSU_PATH (a colon-separated list of the above), the roots a site
names (partition extras `osu_path`), then PATH.
'''

import os
import shutil

#: The environment variable naming where an OSU build is (prefix, build tree or directory).
OSU_PATH_VAR = 'COBALT_OSU_PATH'

#: The list of where a build keeps its binaries, shared with the Slurm jobs
#: (jobs/lib/osu-common.sh reads it through jobs/lib/osu-search-dirs).
SEARCH_DIRS_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                'data', 'osu-search-dirs')


def _subdirs():
    with open(SEARCH_DIRS_FILE) as fp:
        return [line.strip() for line in fp if line.strip() and not line.startswith('#')]


_SUBDIRS = _subdirs()


def candidate_dirs(roots):
    '''The directories where a benchmark binary may be, for each root, in order.'''
    return [os.path.join(root, sub) if sub != '.' else root
            for root in roots if root for sub in _SUBDIRS]


def search_roots(extra_roots=()):
    '''$COBALT_OSU_PATH's entries, then `extra_roots`.'''
    env = [p for p in os.environ.get(OSU_PATH_VAR, '').split(':') if p]
    return env + [r for r in extra_roots if r]


def find(benchmark, extra_roots=()):
    '''The path of the OSU binary `benchmark` (e.g. 'osu_latency'), or None.'''
    for d in candidate_dirs(search_roots(extra_roots)):
        path = os.path.join(d, benchmark)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)

    return shutil.which(benchmark)


def not_found_reason(benchmark, extra_roots=()):
    '''Why `benchmark` was not found, naming what was searched.'''
    roots = search_roots(extra_roots)
    where = (f'{OSU_PATH_VAR}/partition osu_path ({":".join(roots)})' if roots
             else f'{OSU_PATH_VAR} (not set)')
    return (f'OSU micro-benchmarks not found: {benchmark} is neither on PATH nor under '
            f'{where}; install OSU and put its binaries on PATH (module load), or set '
            f'{OSU_PATH_VAR} to its install prefix or build tree')
