'''The base of every check that runs one of cobalt-bench's own kernels.

A kernel (mem-test, gpu-copy, eth-test-receive, ...) writes the JSON document of the kernel
contract (docs/kernel-contract.md): sanity and every performance variable come from it, not
from the human text. What a site is judged by comes from the site:
  - the workload: the partition's `extras['cobalt_bench']['<opts_extra>']` in the site
    config (or `-S <check>.kernel_opts='...'` on the command line; empty: the kernel's own
    defaults, the compliance workload);
  - the numbers: the site's references.yaml, in ReFrame's external reference format,
    attached to the check by cobalt-bench (references.py: under ReFrame's reference
    prefix, which each site config points at its own directory; none: unjudged).
The kernel comes from PATH, which the site provides (the `cobalt-bench` module, or PATH in
the partition's env_vars).

What follows from the kernel's name is derived from its descriptor (cobalt_bench.kernels):
a check sets `kernel = 'mem-test'` and gets `executable = 'mem-test'`, `json_file =
'mem-test.json'`, the site setting `opts_extra = 'mem_test_opts'` and the metrics its
document must carry (`metric_units`); it sets any of them only where it differs.

    from cobalt_bench.reframe import KernelJsonTest

    @rfm.simple_test
    class MemTest(KernelJsonTest):
        kernel = 'mem-test'
'''

import json
import os
import platform

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from .. import kernels, paths
from ..kernels import described
from ..judging import sanity
from ..store.exit_status import Ending, ExitStatus
from ..tools import slurm
from . import compat
from .settings import SETTINGS, SiteSettings, shell_arg, shell_args, typed_name

__all__ = ['KernelJsonTest']


@sn.deferrable
def _json_metric(doc_fn, name):
    return doc_fn()['metrics'][name]['value']


class KernelJsonTest(rfm.RunOnlyRegressionTest, SiteSettings):
    '''Runs `executable` with the site's options and `--json`, judges its JSON document.'''

    valid_prog_environs = ['*']
    num_tasks = 1
    num_tasks_per_node = 1
    maintainers = ['cobalt-bench']

    #: The kernel's name: the `test` field its JSON document must carry, and (unless set)
    #: the executable.
    kernel = variable(str)

    #: Kernel options; None: the partition's setting opts_extra (or the setting's default).
    kernel_opts = variable(str, type(None), value=None)

    #: The site setting (partition extras key) holding this kernel's options; None: the
    #: descriptor's (kernels.<kernel>.KERNEL.options_setting: mem-test's 'mem_test_opts').
    opts_extra = variable(str, type(None), value=None)

    #: Name of the kernel's JSON document in the stage directory; None: '<kernel>.json'.
    json_file = variable(str, type(None), value=None)

    #: Metrics the document must have, with the unit the contract gives them; None: the
    #: descriptor's (kernels.<kernel>.KERNEL.metrics). Every other numeric metric becomes
    #: a performance variable too (recorded, and judged where the site's references name
    #: it).
    metric_units = variable(dict, type(None), value=None)

    #: One task with every CPU of the node (for kernels that place their own threads).
    whole_node = variable(bool, value=False)

    #: The executable is one of cobalt-bench's Python commands (`cobalt-bench preflight`),
    #: installed for the architecture it was built on, not a compiled kernel.
    python_command = variable(bool, value=False)

    @run_after('init')
    def derive_from_kernel(self):
        if not hasattr(self, 'executable'):     # a check that names none runs the kernel
            self.executable = self.kernel
        descriptor = kernels.KERNELS.get(self.kernel)
        if self.opts_extra is None:
            self.opts_extra = (descriptor.options_setting if descriptor else
                               self.kernel.replace('-', '_') + '_opts')
        if self.metric_units is None:
            self.metric_units = dict(descriptor.metrics) if descriptor else {}
        if self.opts_extra not in SETTINGS:
            raise ValueError(f'{type(self).__name__}: opts_extra {self.opts_extra!r} is not '
                             'a site setting (declare it in cobalt_bench.reframe.settings)')
        if self.json_file is None:
            self.json_file = f'{self.kernel}.json'

        # The JSON document goes to the output directory with stdout, for the report.
        self.keep_files = [self.json_file]

    @run_after('setup')
    def set_options(self):
        opts = self.kernel_opts
        if opts is None:
            opts = self.site_setting(self.opts_extra)

        # Quoted word by word: a site's options are arguments, never shell. Its typed
        # options (mem_test: {'stations': 1}) follow, checked against the kernel's own
        # description when the configuration was loaded.
        typed = SETTINGS.get(typed_name(self.opts_extra))
        words = (described.option_args(typed.program, self.site_setting(typed.name))
                 if typed is not None and typed.program else [])
        self.executable_opts = (shell_args(opts) + [shell_arg(w) for w in words]
                                + ['--json', self.json_file])

    @run_after('setup')
    def python_for_the_node(self):
        # A partition of another architecture (the local cluster's emulated aarch64 node) can
        # run a Python command only from a build for that architecture (bin/<arch>/): without
        # one, skip and say what is missing instead of failing on an exec error there.
        # the instruction set (ReFrame's processor `platform`, as `uname -m` says it), not
        # the microarchitecture (`arch`: zen2, neoverse_v1)
        arch = compat.processor_platform(self.current_partition)
        if not self.python_command or not arch or arch == platform.machine():
            return
        tree = paths.root()
        command = self.executable.split()[0]
        built = tree and os.access(os.path.join(tree, 'bin', arch, command), os.X_OK)
        self.skip_if(not built, f'no {arch} build of {command} (Python) for partition '
                                f'{self.current_partition.fullname}: it needs python3 and '
                                f'bin/{arch}/{command} on the nodes')

    @run_after('setup')
    def end_in_a_known_state(self):
        # As the job scripts do (jobs/README.md). At its time limit Slurm signals srun too,
        # which kills the step at once: the kernel lost its document; SIGTERM to the steps
        # 30 to 60 s before the limit lets it write the document marked interrupted. And a
        # job whose node failed is not run again (elsewhere, under the same job id, hiding
        # the failure): it ends NODE_FAIL, which the check names.
        if self.current_partition.scheduler.registered_name in ('slurm', 'squeue'):
            self.job.options += ['--signal=TERM@30', '--no-requeue']

    @run_after('setup')
    def use_whole_node(self):
        num_cpus = self.current_partition.processor.num_cpus
        if self.whole_node and num_cpus:
            self.num_cpus_per_task = num_cpus

    def _doc(self):
        '''The kernel's --json document (parsed once).'''
        if getattr(self, '_json_doc', None) is None:
            path = os.path.join(self.stagedir, self.json_file)
            try:
                with open(path) as fp:
                    self._json_doc = json.load(fp)
            except FileNotFoundError:
                # Exited 0 or 1 without one: a launcher that failed (mpirun refusing to
                # start) or a kernel that died before writing it; what it said is why.
                raise SanityError(f'{self.kernel} wrote no JSON result ({self.json_file}): '
                                  f'the launcher or the kernel failed before it: '
                                  f'{self._said()}')
            except (OSError, ValueError) as err:
                raise SanityError(f'cannot read the JSON result {path}: {err}')

            if not isinstance(self._json_doc, dict):
                raise SanityError(f'{path}: not a JSON object')

        return self._json_doc

    def _signal(self):
        '''The signal that ended the kernel, where the scheduler says (ReFrame's local
        scheduler: job.signal; Slurm: sacct's ExitCode of the job's steps, as ReFrame
        gives only the signal's number as the exit code there), else None.'''
        signal = getattr(self.job, 'signal', None)
        code = self.job.exitcode
        if signal or code is None or ExitStatus.of(code).ending is not Ending.CRASH:
            return signal      # a status of the contract, or a signal already known
        if self.current_partition.scheduler.registered_name in ('slurm', 'squeue'):
            return slurm.step_signal(self.job.jobid)
        return None

    def _slurm_end(self):
        '''Why Slurm ended the job, where it did: its state (a step's OUT_OF_MEMORY, which
        ReFrame's job state, the allocation's, does not show) and a step over the job's
        --mem (sacct), asked only of a job whose kernel did not end with 0.'''
        state = getattr(self.job, 'state', None)
        code = self.job.exitcode
        account = None
        if code not in (None, 0) and \
                self.current_partition.scheduler.registered_name in ('slurm', 'squeue'):
            account = slurm.job_accounts([self.job.jobid]).get(str(self.job.jobid))
        over = account and account.over_memory and (account.max_rss_bytes,
                                                    account.requested_bytes)
        return '; '.join(filter(None, [
            sanity.unfinished_job_reason(account.state if account else state),
            sanity.memory_overrun_reason(over or None)]))

    def _stderr_lines(self):
        try:
            with open(os.path.join(self.stagedir, str(self.stderr))) as fp:
                return [line.strip() for line in fp if line.strip()]
        except OSError:
            return []

    def _said(self):
        '''The kernel's last message on stderr (what it says is missing).'''
        lines = self._stderr_lines()
        return lines[-1][:300] if lines else 'it said nothing on stderr'

    def _interrupted(self):
        '''[why the kernel's document says it was interrupted], [] when it does not or there
        is no readable document.'''
        try:
            return [reason for reason in [sanity.interrupted_reason(self._doc())] if reason]
        except SanityError:
            return []

    @sanity_function
    def validate(self):
        # One rule (store.exit_status): 0 and 1 are runs to judge by the references; 2
        # (usage) and 3 (cannot run here) are not run; a signal or any other status is a
        # failure of the node, named. A job that Slurm ended (cancelled, time limit, node
        # failure, out of memory) did not finish, whatever its exit code.
        unfinished = self._slurm_end()
        status = sanity.exit_status(self.job.exitcode, self._signal())
        ended = sanity.exit_reason(self.kernel, status)
        not_started = sanity.launch_failure(self.kernel, self._stderr_lines())
        if not_started:     # srun's exit status (2) would read as the kernel's usage error
            raise SanityError(not_started)
        if status is not None and status.ending is Ending.CANNOT_RUN and not unfinished:
            # Absent hardware (no NVIDIA GPU, no InfiniBand port) on a partition that fits:
            # not run, with what the kernel says is missing.
            self.skip(f'{ended}: {self._said()}')
        if ended:
            raise SanityError('; '.join(filter(None, [f'{ended}: {self._said()}', unfinished,
                                                      *self._interrupted()])))
        try:
            doc = self._doc()
        except SanityError as err:
            raise SanityError('; '.join(filter(None, [unfinished, str(err)])))
        if unfinished:
            raise SanityError('; '.join([unfinished, *self._interrupted()]))
        problems = sanity.document_problems(doc, self.kernel, self.metric_units)
        checks = [
            sn.assert_false(problems, msg='; '.join(problems)),
            sn.assert_found(r'^----- Test results -----$', self.stdout,
                            msg='no results block in stdout'),
        ]
        return sn.all(checks)

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

