'''A cb-linktest results file (.npz, written by cb-linktest --output) read and checked:
what the report can rely on, or CannotRun naming the file and what is wrong with it.

numpy comes in as `np` from the caller (the command finds it, or re-runs itself with the
checkout's .venv where this Python has none): importing this module needs no numpy.
'''

import json
import math
import zipfile
import zlib

from ..errors import CannotRun

# Arrays and meta keys of the results file this report knows; anything else in the file
# (a newer cb-linktest's results, e.g. all-to-all timings) is shown as it is.
KNOWN_ARRAYS = {'time', 'hosts', 'meta', 'slowest_pairs', 'slowest_time', 'retest_time',
                'error_pairs', 'task_memory_kib', 'alltoall_time', 'task_order'}
KNOWN_META = {'format', 'test', 'version', 'test_version', 'started', 'duration_s',
              'interrupted', 'ranks', 'hosts', 'steps', 'iterations', 'time_unit', 'time',
              'command', 'options', 'allocator', 'buffers_per_ring', 'gpu_transfer'}
# task_memory_kib: one row per task, these columns.
MEMORY_COLUMNS = ['resident', 'peak', 'locked', 'huge pages']

# What reading a damaged .npz raises: the ZIP container (cut short, bad CRC, bad
# compressed data) and the .npy members in it (bad header, short data, object arrays).
_READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, KeyError,
                UnicodeDecodeError, NotImplementedError, RecursionError, MemoryError)


def _pairs(np, data, key, n):
    '''An optional k x 2 array of rank pairs, each rank < n; None if absent.'''
    if key not in data:
        return None
    a = data[key]
    if a.size == 0:
        return np.zeros((0, 2), dtype=int)
    if a.ndim != 2 or a.shape[1] != 2 or a.dtype.kind not in 'iu' or \
            (a < 0).any() or (a >= n).any():
        raise ValueError(f'"{key}" must be pairs of ranks 0..{n - 1}; it is {a.dtype} '
                         f'{a.shape}')
    return a


def load(np, path):
    '''The results file as a dict: time (N x N seconds, NaN: not tested), hosts, meta, ...
    CannotRun naming the file and what is wrong with it for anything else.'''
    try:
        with open(path, 'rb') as fp:
            head = fp.read(4)
        if head != b'PK\x03\x04':
            # numpy would take anything else for a pickle, and say so: misleading.
            raise CannotRun(f'{path} is not a cb-linktest results file (.npz, a ZIP '
                            'archive): ' + ('it is empty' if not head else
                                            'it is cut short or something else'))
        with np.load(path, allow_pickle=False) as z:
            data = {name: z[name] for name in z.files}
    except zipfile.BadZipFile as err:
        raise CannotRun(f'cannot read {path}: it is cut short or damaged '
                        f'(BadZipFile: {err})')
    except _READ_ERRORS as err:
        raise CannotRun(f'cannot read {path}: {err.__class__.__name__}: {err}'
                        if not isinstance(err, OSError) else f'cannot read {path}: {err}')
    for key in ('time', 'hosts', 'meta'):
        if key not in data:
            raise CannotRun(f'{path} is not a cb-linktest results file (no "{key}" array)')
    try:
        if data['meta'].size != 1:
            raise ValueError(f'"meta" is {data["meta"].shape}, not one JSON text')
        meta = json.loads(str(data['meta'].item()))
        if not isinstance(meta, dict) or not isinstance(meta.get('options', {}), dict):
            raise ValueError('"meta" is not a JSON object with an "options" object')
        data['meta'] = meta
        t = data['time']
        if t.dtype.kind not in 'fiu':
            raise ValueError(f'"time" is {t.dtype}, not numbers')
        if t.ndim != 2 or t.shape[0] != t.shape[1] or data['hosts'].ndim != 1 or \
                len(data['hosts']) != t.shape[0]:
            raise ValueError(f'time must be N x N with N hosts; it is {t.shape} with '
                             f'{data["hosts"].shape} hosts')
        data['time'] = t.astype(float)
        if (data['time'] <= 0).any() or np.isinf(data['time']).any():
            raise ValueError('"time" holds zero, negative or infinite times')
        # below a femtosecond or above a day per message: no measurement, and bandwidths
        # from them overflow
        if (data['time'] < 1e-15).any() or (data['time'] > 86400).any():
            raise ValueError('"time" holds times below 1e-15 s or above a day per message')
        n = t.shape[0]
        for key in ('slowest_pairs', 'error_pairs'):
            pairs = _pairs(np, data, key, n)
            if pairs is not None:
                data[key] = pairs
        if 'slowest_pairs' in data:
            k = len(data['slowest_pairs'])
            for key in ('slowest_time', 'retest_time'):
                a = data.get(key)
                if a is None or a.ndim != 1 or len(a) != k or a.dtype.kind not in 'fiu':
                    raise ValueError(f'"{key}" must be {k} times, one per slowest pair')
        size = meta.get('options', {}).get('size_messages')
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float))
                                 or not math.isfinite(size) or size <= 0):
            raise ValueError(f'meta.options.size_messages is {size!r}, not a positive size')
    except (ValueError, TypeError, RecursionError) as err:
        raise CannotRun(f'{path}: not a usable cb-linktest results file: {err}')
    return data
