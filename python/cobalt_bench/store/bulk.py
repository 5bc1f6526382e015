'''Reading the many files of a large run: a node sweep of 10,000 nodes is 100,000 job
documents and as many judgement records (bench/fleet-scale).

Two things make that slow in one Python process, and each has its remedy here:
- parsing: a worker process per CPU reads and parses a share of the files and hands back
  what it parsed (unpickling a document costs a seventh of parsing its JSON);
- the cyclic garbage collector: a report makes millions of objects that live to its end
  and form no cycles, and each full collection walks them all (a quarter of the time of
  a 10,000-node report). It is paused while they are made.

What a worker does is the function it is given, which must be a module-level function
returning picklable values and catching what it expects (a damaged file is a value, not
an exception). Where workers cannot be had (one CPU, no fork, a worker killed), the
files are read here, one after another: the result is the same.
'''

import contextlib
import gc
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

#: Fewer files than this are read here: starting workers costs more than they save.
MIN_PARALLEL = 2000
#: Workers at most: past about three the command itself, which makes the run's objects of
#: what they parsed, is what the others wait for; and a login node is shared.
MAX_WORKERS = 4
#: Files per task: enough that a task's round trip is small beside its work, few enough
#: that the workers finish together.
CHUNK = 500


def usable_cpus():
    '''The CPUs this process may run on (its affinity: a Slurm step's cgroup, taskset).'''
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def paused_gc():
    '''The cyclic garbage collector paused for the block, and restored after it.'''
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # What the block made is kept out of later collections (it lives to the end).
        gc.freeze()
        if enabled:
            gc.enable()


def map_items(func, items, workers=None):
    '''func(item) for each of `items`, yielded in order as they are made: by worker
    processes where there are many items and more than one usable CPU, so that the caller
    works on the first results while the workers make the next.'''
    items = list(items)
    workers = min(usable_cpus(), MAX_WORKERS) if workers is None else workers
    if workers < 2 or len(items) < MIN_PARALLEL or \
            'fork' not in multiprocessing.get_all_start_methods():
        yield from map(func, items)
        return
    chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
    # fork: the workers start as copies of this process (its modules imported, its site
    # loaded), so no work is repeated and nothing is pickled but the items and results.
    pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)),
                               mp_context=multiprocessing.get_context('fork'),
                               initializer=_worker_started)
    done = 0
    try:
        for part in pool.map(_apply, [func] * len(chunks), chunks):
            yield from part
            done += len(part)
    except (BrokenProcessPool, OSError):
        # A worker killed (the OOM killer, a signal) or none could be started: the rest
        # is read here.
        pool.shutdown(wait=False, cancel_futures=True)
        yield from map(func, items[done:])
        return
    except BaseException:
        # Ctrl-C, a bug, or the caller stopped: the chunks not begun are dropped, not
        # waited for.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def _apply(func, items):
    return [func(item) for item in items]


def _worker_started():
    # Ctrl-C reaches the whole process group: the command says it was interrupted, once
    # (cli.status), and its workers say nothing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
