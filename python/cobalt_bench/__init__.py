'''cobalt-bench's command: the compliance report of a run (`cobalt-bench report`), the
system settings check (`cobalt-bench preflight`) and the results store (`cobalt-bench runs`).

Where things are, for a checkout and for a `make install` tree alike: this package lives in
DATA/python/cobalt_bench, DATA being the checkout's root or PREFIX/share/cobalt-bench; DATA
holds VERSION and site-configs/; results/ is in the tree's root (the checkout, or PREFIX),
as the site configs put it there (site-configs/cobalt_site.py).
'''

import os

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
DATA_DIR = os.path.dirname(os.path.dirname(PACKAGE_DIR))
# The tree's root (bin/, modulefiles/, and where site configs put results/): the checkout,
# or PREFIX of an install tree.
ROOT_DIR = (os.path.dirname(os.path.dirname(DATA_DIR))
            if DATA_DIR.endswith(os.path.join('share', 'cobalt-bench')) else DATA_DIR)


def _version():
    try:
        with open(os.path.join(DATA_DIR, 'VERSION')) as fp:
            return fp.read().strip()
    except OSError:
        return 'unknown'


__version__ = _version()


class UsageError(Exception):
    '''Bad command-line input: exit status 2.'''


class CannotRun(Exception):
    '''The command cannot do its work (missing run, unreadable file): exit status 3.'''
