'''What the report reads of a run stays in the run: the one rule for every path read from
a run's files (report.json's outputdir, stagedir and job_stdout, a document's file names)
and for every file found in the run's directories.

A results store may be shared: whoever can write into it can write a report.json that
names /etc, a `..` path or a symlink to another user's files. A path is refused when it
has a `..` component, when it resolves (symlinks followed) outside the run directory, or
when what it names is not a regular file (a pipe would block the reader, a device never
end). A refused path is never opened; the reader records it as damage, named, so the
report says what it did not read and why.
'''

import functools
import os
import stat

REFUSED = 'refused'


def run_root(path):
    '''The directory a run's paths must stay in: the run directory, or the directory of
    a run that is one document.'''
    return path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))


def _inside(real, root):
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=64)
def _real(root):
    # A run's root, resolved once per process: a report checks every file of the run
    # against it (30,000 files in a sweep of 1,000 nodes).
    return os.path.realpath(root)


@functools.lru_cache(maxsize=1 << 16)
def _real_dir(path):
    # A directory of the run, resolved once per process: a sweep's files are a few per
    # node directory (realpath walks every component of every file: 8 % of a report).
    return os.path.realpath(path)


def _realpath(full):
    '''os.path.realpath(full), with its directory resolved once (_real_dir): only the
    last component is looked at for each file.'''
    where, name = os.path.split(full)
    if name in ('', '.', '..'):
        return os.path.realpath(full)
    candidate = os.path.join(_real_dir(where), name)
    try:
        if not stat.S_ISLNK(os.lstat(candidate).st_mode):
            return candidate
    except OSError:
        return candidate
    return os.path.realpath(candidate)


def escapes(path, root):
    '''Why `path` leaves the run directory `root` ('' when it stays in it): a `..`
    component, or a real location (symlinks followed) outside the run.'''
    if '..' in str(path).split(os.sep):
        return f'{REFUSED}: the path has a ".." component (outside the run directory)'
    full = os.path.join(root, path)
    if _inside(_realpath(full), _real(root)):
        return ''
    # Outside: named as a path elsewhere, or as a link from inside leading out.
    if _inside(os.path.abspath(full), os.path.abspath(root)):
        return f'{REFUSED}: a symbolic link leading outside the run directory'
    return f'{REFUSED}: outside the run directory'


def file_problem(path, root):
    '''Why the file `path` of a run is not read ('' when it may be): it leaves the run,
    or it is not a regular file.'''
    why = escapes(path, root)
    if why:
        return why
    try:
        mode = os.stat(os.path.join(root, path)).st_mode
    except OSError:
        return ''           # absent or unreadable: the reader says which
    if not stat.S_ISREG(mode):
        return f'{REFUSED}: not a regular file'
    return ''


def run_files(root):
    '''(path, problem) of every file below the run directory `root`, walked without
    following links, sorted per directory: what file_problem() says of each, from the
    directory entries themselves (a sweep of 1,000 nodes has 30,000 files: a link is
    resolved, anything else found by this walk is inside the run, and only its type
    matters).'''
    stack = [root]
    while stack:
        where = stack.pop()
        try:
            with os.scandir(where) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                dirs.append(entry.path)
            elif entry.is_symlink():
                yield entry.path, file_problem(entry.path, root)
            elif entry.is_file(follow_symlinks=False):
                yield entry.path, ''
            else:
                yield entry.path, f'{REFUSED}: not a regular file'
        stack.extend(reversed(dirs))


def read_text(path, root, limit=1 << 20):
    '''At most `limit` characters of a small text file of the run (a job script, a
    marker, a log); None when it is refused, absent or unreadable.'''
    if file_problem(path, root):
        return None
    try:
        with open(os.path.join(root, path), errors='replace') as fp:
            return fp.read(limit)
    except OSError:
        return None
