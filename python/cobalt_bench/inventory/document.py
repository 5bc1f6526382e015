'''The inventory as it leaves the package: its JSON document (the kernels' envelope,
docs/kernel-contract.md, where it fits: no metrics and no compliance, since nothing is
judged here) and its text. Strings only: cobalt_bench.cli.inventory prints them.'''

import datetime
import time

from .. import __version__
from .items import collect, spec_of

TEST = 'inventory'
TEST_VERSION = '1.0'


def take(tree):
    '''The inventory document of `tree` (preflight.open_tree's: recorded, live, or live
    and recorded).'''
    started = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    t0 = time.monotonic()
    items = collect(tree)
    return {
        'test': TEST,
        'version': __version__,
        'test_version': TEST_VERSION,
        'host': tree.host(),
        'started': started,
        'duration_s': round(time.monotonic() - t0, 3),
        'config': {'root': tree.root},
        'items': items,
        'identity': [key for key in items if spec_of(key).identity],
    }


def format_items(items):
    '''One aligned "key  value" line per item; a list's values joined by ", ".'''
    width = max((len(key) for key in items), default=0)
    return '\n'.join(f'{key:<{width}}  '
                     + (', '.join(map(str, value)) if isinstance(value, list) else str(value))
                     for key, value in items.items())

