'''cobalt-bench's kernels, one descriptor each (kernels.descriptor.Kernel): everything the
Python side derives from a kernel (check settings, document validation, plots, hints, the
tests' binaries) reads it from here. A new kernel adds one module here and one line below.
'''

from . import cb_linktest, eth_test, gpu_copy, mem_test, preflight, smp_mad_stress
from .descriptor import Kernel  # noqa: F401  (the descriptor's type, for users)

#: Every kernel, by name (its documents' `test`).
KERNELS = {k.name: k for k in (mem_test.KERNEL, gpu_copy.KERNEL, eth_test.KERNEL,
                               cb_linktest.KERNEL, smp_mad_stress.KERNEL, preflight.KERNEL)}


def of_document(doc):
    '''The Kernel that wrote a JSON document (its `test`), or None (another program's).'''
    return KERNELS.get(doc.get('test')) if isinstance(doc, dict) else None


def of_check(check):
    '''The Kernel a ReFrame check class runs, or None.'''
    return next((k for k in KERNELS.values() if k.check == check), None)

