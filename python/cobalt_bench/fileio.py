'''Files written whole or not at all: a reader never sees half a result or report, and a
failed or interrupted write leaves the earlier file as it was and no temporary file.'''

import contextlib
import ctypes
import errno
import os
import shutil
import tempfile


def umask():
    '''The process's umask, read without changing it where Linux says it
    (/proc/self/status), else set and restored at once.'''
    try:
        with open('/proc/self/status') as fp:
            for line in fp:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_file(path, mode='wb', prefix='.tmp-', sync=False, suffix=None):
    '''A file object for a temporary file beside `path` (same directory, so the rename
    stays on one file system); when the block ends normally the file (mode 0666 less the
    umask, as open() would create it) replaces `path`, on any exception it is removed and the exception goes on. `sync`: flushed to
    disk before the rename (result documents that must survive a crash). `suffix`: the
    temporary name's end (default '-' and the name: a reader that globs for the name's
    extension, node_exporter's *.prom, must be given another).'''
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=prefix,
                               suffix='-' + os.path.basename(path) if suffix is None else suffix)
    try:
        with os.fdopen(fd, mode) as fp:
            yield fp
            if sync:
                fp.flush()
                os.fsync(fp.fileno())
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path, data):
    '''Write `data` (str or bytes) to `path` whole or not at all: a reader never sees half
    a report, and a failed write leaves the earlier file as it was.'''
    with atomic_file(path, 'wb' if isinstance(data, bytes) else 'w') as fp:
        fp.write(data)


_RENAME_EXCHANGE = 2        # renameat2(2): swap the two names in one step (Linux 3.15)
_AT_FDCWD = -100


def _exchange(a, b):
    '''Swap the directories `a` and `b` in one step; False where the system cannot.'''
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False            # not on this file system: the two renames below
    raise OSError(err, os.strerror(err), b)


def replace_dir(staged, target):
    '''Put the directory `staged` (written beside `target`) in place of `target`, as one:
    a reader, or a kill at any moment, finds the old set of files or the new one, never a
    mix. The old set is removed after.'''
    if not os.path.lexists(target):
        os.rename(staged, target)
        return
    if _exchange(staged, target):
        shutil.rmtree(staged, ignore_errors=True)     # now the old set
        return
    old = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(target)),
                           prefix='.old-' + os.path.basename(target) + '-')
    os.rename(target, os.path.join(old, 'set'))
    os.rename(staged, target)
    shutil.rmtree(old, ignore_errors=True)


#: What read_bytes asks of the kernel at a time: a kernel document or a record at once.
READ_SIZE = 1 << 16


def read_bytes(path):
    '''The whole content of the file at `path`; OSError where it cannot be read. Four
    system calls for a small file (open, read, the read that finds its end, close), where
    Python's file object makes seven (its fstat, lseek and size checks): a sweep's 200,000
    files cost a fifth less to read.'''
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = []
        while True:
            part = os.read(fd, READ_SIZE)
            if not part:
                break
            parts.append(part)
    finally:
        os.close(fd)
    return parts[0] if len(parts) == 1 else b''.join(parts)
