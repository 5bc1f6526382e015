# ReFrame checks for the memory family: mem-test (the compliance document's memory test).
#
# The check only runs the kernel and reads its --json document; everything a site is judged
# by comes from the site:
#   - the workload: the partition's `extras['mem_test_opts']` in the site config (or
#     `-S mem_test_opts='...'` on the command line; empty means mem-test's own defaults,
#     the compliance workload);
#   - the numbers: site-configs/<site>/references.yaml, ReFrame's external reference file
#     (`reference = {'$ref': ...}`), looked up under ReFrame's reference prefix, which
#     each site config points at its own directory.
# mem-test itself comes from PATH, which the site config provides (the `cobalt-bench`
# module, or PATH in the partition's env_vars).

import json
import os
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (run_after, run_before, sanity_function,
                                   variable)
from reframe.core.exceptions import SanityError


@sn.deferrable
def _json_metric(doc_fn, name):
    return doc_fn()['metrics'][name]['value']


@rfm.simple_test
class MemTest(rfm.RunOnlyRegressionTest):
    '''mem-test: rate-paced memory pipeline stages per station, spread over NUMA domains.

    Performance variables are the kernel's JSON metrics; references are external.'''

    descr = 'mem-test: rate-paced memory pipeline (compliance memory test)'
    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'mem-test'
    num_tasks = 1
    num_tasks_per_node = 1
    exclusive_access = True
    tags = {'memory', 'compliance'}
    maintainers = ['cobalt-bench']

    #: Per-site references: <reference_prefix>/references.yaml, entry `MemTest`.
    reference = {'$ref': 'references.yaml'}

    #: mem-test options; None: the partition's extras['mem_test_opts'] (if any).
    mem_test_opts = variable(str, type(None), value=None)

    #: Name of the kernel's JSON document in the stage directory.
    json_file = variable(str, value='mem-test.json')

    #: Metrics the JSON document must have, with the unit the contract gives them. Every
    #: other metric in the document becomes a performance variable too (recorded, and
    #: judged where the site's references name it).
    metric_units = variable(
        dict, value={
            'measured_speed': 'Gbit/s',
            'percent_of_desired': '%',
            'average_late': '%',
            'desired_speed': 'Gbit/s',
            'write_speed': 'Gbit/s',
            'read_speed': 'Gbit/s',
            'copy_speed': 'Gbit/s',
            'transpose_speed': 'Gbit/s',
        }
    )

    @run_after('init')
    def keep_json(self):
        # The JSON document goes to the output directory with stdout, for the report.
        self.keep_files = [self.json_file]

    @run_after('setup')
    def set_workload(self):
        opts = self.mem_test_opts
        if opts is None:
            opts = self.current_partition.extras.get('mem_test_opts', '')

        self.executable_opts = shlex.split(opts) + ['--json', self.json_file]

    @run_before('run')
    def forget_json(self):
        self._json_doc = None

    @run_after('setup')
    def use_whole_node(self):
        # One task with every CPU of the node (the kernel places its own threads).
        num_cpus = self.current_partition.processor.num_cpus
        if num_cpus:
            self.num_cpus_per_task = num_cpus

    def _doc(self):
        '''The kernel's --json document (parsed once).'''
        if getattr(self, '_json_doc', None) is None:
            path = os.path.join(self.stagedir, self.json_file)
            try:
                with open(path) as fp:
                    self._json_doc = json.load(fp)
            except (OSError, ValueError) as err:
                raise SanityError(f'cannot read the JSON result {path}: {err}')

            if not isinstance(self._json_doc, dict):
                raise SanityError(f'{path}: not a JSON object')

        return self._json_doc

    @sanity_function
    def validate(self):
        # Exit 0 (compliant) and 1 (not compliant) are both runs to judge against the
        # site's references; 2 (usage error), 3 (cannot run) or anything else is not.
        if self.job.exitcode not in (0, 1):
            raise SanityError(f'mem-test did not run: exit code {self.job.exitcode}')

        doc = self._doc()
        metrics = doc.get('metrics', {})
        missing = [m for m in ['verification_errors', *self.metric_units]
                   if m not in metrics]
        wrong_units = [f'{m} ({metrics[m].get("unit")!r}, expected {u!r})'
                       for m, u in self.metric_units.items()
                       if m in metrics and metrics[m].get('unit') != u]
        return sn.all([
            sn.assert_eq(doc.get('test'), 'mem-test',
                         msg='JSON result is not from mem-test: test={0!r}'),
            sn.assert_false(missing, msg=f'JSON result lacks metrics {missing}'),
            sn.assert_false(wrong_units,
                            msg=f'JSON metrics in unexpected units: {wrong_units}'),
            sn.assert_eq(metrics.get('verification_errors', {}).get('value'), 0,
                         msg='mem-test found {0} verification errors'),
            sn.assert_found(r'^----- Test results -----$', self.stdout,
                            msg='no results block in stdout'),
            sn.assert_found(r'^Measured speed:\s+\S+ Gbit/s', self.stdout,
                            msg='no measured speed in the results block'),
        ])

    @run_before('performance')
    def set_perf_variables(self):
        metrics = self._doc()['metrics']
        units = {name: m.get('unit') or '' for name, m in metrics.items()
                 if isinstance(m, dict) and isinstance(m.get('value'), (int, float))}
        units.update(self.metric_units)
        self.perf_variables = {
            name: sn.make_performance_function(_json_metric(self._doc, name), unit)
            for name, unit in units.items()
        }
