'''sysfs/procfs as the checks read them: this machine's, a recorded tree's (`--root DIR`:
DIR/sys/..., DIR/proc/...), or this machine's while recording it (`--record DIR`). Every
check reads through a Tree, so a tree recorded on one machine is judged the same elsewhere.'''

import os

from ..errors import CannotRun


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

    def read(self, path):
        value = super().read(path)
        if value is not None:
            try:
                real = self._mirror(path)
                target = self.dest + (path if path.startswith('/proc/self/') else real)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, 'w') as fp:
                    fp.write(value + '\n')
            except OSError as err:
                raise self._failed(path, err)
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
