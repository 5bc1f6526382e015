'''cobalt-bench's kernels, one descriptor each (kernels.descriptor.Kernel): everything the
Python side derives from a kernel (check settings, document validation, plots, hints, the
tests' binaries) reads it from here. A new kernel adds one module here and one line below.
'''

from . import cb_linktest, cpu_test, eth_test, gpu_copy, mem_test, preflight, smp_mad_stress
from .descriptor import Kernel  # noqa: F401  (the descriptor's type, for users)

#: Every kernel, by name (its documents' `test`).
KERNELS = {k.name: k for k in (mem_test.KERNEL, gpu_copy.KERNEL, eth_test.KERNEL,
                               cb_linktest.KERNEL, smp_mad_stress.KERNEL, cpu_test.KERNEL,
                               preflight.KERNEL)}


def of_document(doc):
    '''The Kernel that wrote a JSON document (its `test`), or None (another program's).'''
    return KERNELS.get(doc.get('test')) if isinstance(doc, dict) else None


#: The checks that measure capacity (Capacity): {check: its Capacity}.
CAPACITY = {k.capacity.check: k.capacity for k in KERNELS.values() if k.capacity}

#: The checks that their peers judge where no reference of the site does: {check: the
#: metrics compared}, the capacity checks' and those of the kernels that declare `peers`.
BY_PEERS = {**{check: c.metrics for check, c in CAPACITY.items()},
            **{k.check: k.peers for k in KERNELS.values() if k.peers}}


def check_of_document(doc):
    '''The check a kernel's JSON document is a result of: its kernel's (by `test`), or the
    kernel's capacity check where its config marks a capacity run (mem-test --max:
    MemCapacity); None for another program's.'''
    kernel = of_document(doc)
    if kernel is None:
        return None
    config = doc.get('config')
    if kernel.capacity and isinstance(config, dict) and config.get(kernel.capacity.flag) is True:
        return kernel.capacity.check
    return kernel.check


def document_units(check):
    '''{metric: unit} a document of `check` must carry (its kernel's contract; a capacity
    check's without what its mode does not measure), or None for no kernel's check.'''
    kernel = of_check(check)
    if kernel is None:
        return None
    skip = CAPACITY[check].not_measured if check in CAPACITY else ()
    return {m: u for m, u in kernel.metrics.items() if m not in skip}


def capacity_of_test(test):
    '''The Capacity a node pack's test name runs ('mem-capacity'), or None.'''
    return next((c for c in CAPACITY.values() if c.test == test), None)


def of_check(check):
    '''The Kernel a ReFrame check class runs, or None.'''
    return next((k for k in KERNELS.values()
                 if k.check == check or (k.capacity and k.capacity.check == check)), None)

