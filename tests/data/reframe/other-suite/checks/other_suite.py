# Another suite's checks (written here, in the style of a site's own suite), run beside
# cobalt-bench's in tests/integration/reframe/test_other_suite_beside.py: their results
# must be the same with and without cobalt-bench's checks in the same invocation.

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, sanity_function


class _PrintsLoss(rfm.RunOnlyRegressionTest):
    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'echo'
    executable_opts = ['loss=0.5']

    @sanity_function
    def printed(self):
        return sn.assert_found(r'loss=', self.stdout)

    @performance_function('%')
    def loss(self):
        return sn.extractsingle(r'loss=(\S+)', self.stdout, 1, float)


@rfm.simple_test
class OtherZeroLoss(_PrintsLoss):
    '''A reference of 0 with an upper bound of 0: ReFrame before 4.8 judges nothing with it
    (0 * (1 + t) reads as no bound), from 4.8 on it fails 0.5: whatever the release
    decides, cobalt-bench loaded beside it must not change it.'''
    reference = {'*': {'loss': (0, None, 0, '%')}}


if tuple(int(p) for p in rfm.VERSION.split('-')[0].split('.')[:2]) >= (4, 10):
    @rfm.simple_test
    class OtherExternalRef(_PrintsLoss):
        '''Its references in the suite's own references.yaml under ReFrame's reference
        prefix (ReFrame 4.10's '$ref'): the same prefix a site may set for everything.'''
        reference = {'$ref': 'references.yaml'}
