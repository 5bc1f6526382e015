'''sysfs/procfs as the checks read them: this machine's, a recorded tree's (`--root DIR`:
DIR/sys/..., DIR/proc/...), or this machine's while recording it (`--record DIR`). Every
check reads through a Tree, so a tree recorded on one machine is judged the same elsewhere.
Also read this way (cobalt_bench.inventory): /etc files, and what is not a file at all, a
program's output or a digest of a file too large to record (Tree.derived).'''

import os
import socket

from ..errors import CannotRun

# Where a recorded tree keeps what Tree.derived made on the machine recorded: no path of
# a real machine, so a live tree never finds one there.
DERIVED = '/cobalt-bench'


def cpulist(text):
    '''The CPUs (or NUMA nodes) of a kernel list such as "0-3,8,10-11", as ints; None for
    no text or text that is not such a list.'''
    if text is None:
        return None
    numbers = []
    try:
        for part in text.split(','):
            if part.strip():
                lo, _, hi = part.partition('-')
                numbers += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        return None
    return numbers


class Tree:
    '''sysfs/procfs under `root` ('/' for this machine). Every read is tolerant: an absent
    or unreadable file is None, which the checks turn into `unknown`.'''

    def __init__(self, root='/'):
        self.root = os.path.abspath(root)
        self.live = self.root == '/'

    def path(self, path):
        '''Where `path` (/sys/..., /proc/...) lies on this machine: for tools that read the
        tree themselves (cb-pcie-links --sysfs-root).'''
        return os.path.join(self.root, path.lstrip('/'))

    def read(self, path):
        try:
            with open(self.path(path)) as fp:
                return fp.read().strip()
        except (OSError, UnicodeDecodeError):
            return None

    def listdir(self, path):
        try:
            return sorted(os.listdir(self.path(path)))
        except OSError:
            return None

    def exists(self, path):
        return os.path.lexists(self.path(path))

    def realpath(self, path):
        '''The path with symbolic links resolved, inside the tree.'''
        real = os.path.realpath(self.path(path))
        if self.root == '/':
            return real
        if real == self.root or real.startswith(self.root + os.sep):
            return '/' + os.path.relpath(real, self.root)
        return None   # a link leading out of the recorded tree

    def derived(self, name, make):
        '''What make() returns (text, or None for nothing) on this machine: a program's
        output, or what is kept of a file too large to record. In a recorded tree it is
        not made again (the program may be absent there, or report the machine it runs
        on): it is the text recorded as DERIVED/name, or None.'''
        if self.live:
            return make()
        return self.read(f'{DERIVED}/{name}')

    def host(self):
        '''The node's name: its recorded one, else this machine's, else the tree's.'''
        return self.read('/proc/sys/kernel/hostname') or (
            socket.gethostname() if self.live else os.path.basename(self.root))


class RecordingTree(Tree):
    '''This machine's tree that copies everything it reads into `dest`, with the symbolic
    links on the way (sysfs uses relative links), so `Tree(dest)` reads the same.'''

    def __init__(self, dest):
        super().__init__('/')
        self.dest = os.path.abspath(dest)

    def _mirror(self, path):
        '''Recreate the symbolic links along `path` under dest; return the real path.'''
        cur = '/'
        for comp in [c for c in path.split('/') if c]:
            nxt = os.path.join(cur, comp)
            # /proc/self names the reading process: record it as a plain directory.
            if os.path.islink(nxt) and nxt != '/proc/self':
                link = self.dest + nxt
                if not os.path.lexists(link):
                    os.makedirs(os.path.dirname(link), exist_ok=True)
                    os.symlink(os.readlink(nxt), link)
                cur = os.path.realpath(nxt)
            else:
                cur = nxt
        return cur

    def _failed(self, path, err):
        # Not an OSError: the checks treat an OSError as an unreadable setting, and a
        # copy that could not be written must stop the recording, not pass for one.
        return CannotRun(f'--record {self.dest}: cannot record {path}: '
                         f'{err.strerror or err}')

    def _store(self, path, target, value):
        '''`value` as the recorded file `target` (a path inside dest) for `path`.'''
        try:
            os.makedirs(os.path.dirname(self.dest + target), exist_ok=True)
            with open(self.dest + target, 'w') as fp:
                fp.write(value + '\n')
        except OSError as err:
            raise self._failed(path, err)

    def read(self, path):
        value = super().read(path)
        if value is not None:
            try:
                real = self._mirror(path)
            except OSError as err:
                raise self._failed(path, err)
            self._store(path, path if path.startswith('/proc/self/') else real, value)
        return value

    def derived(self, name, make):
        value = make()
        if value is not None:
            self._store(f'{DERIVED}/{name}', f'{DERIVED}/{name}', value)
        return value

    def listdir(self, path):
        entries = super().listdir(path)
        if entries is not None:
            try:
                real = self._mirror(path)
                os.makedirs(self.dest + real, exist_ok=True)
            except OSError as err:
                raise self._failed(path, err)
        return entries

    def exists(self, path):
        found = super().exists(path)
        if found:
            try:
                real = self._mirror(path)
                if os.path.isdir(real):
                    os.makedirs(self.dest + real, exist_ok=True)
                    return found
                recorded = os.path.lexists(self.dest + real)
            except OSError as err:
                raise self._failed(path, err)
            if not recorded:
                self.read(path)
        return found
