'''What cobalt-bench knows about one of its kernels, declared once: the settings of the
ReFrame checks, the validation of its JSON document, the report's plots and hints, and
the tests' list of binaries are derived from it (kernels/__init__.py lists them all).
'''

from dataclasses import dataclass, field

from . import described


@dataclass(frozen=True)
class Capacity:
    '''A kernel's capacity mode: the same program run unpaced, measuring what a node can do
    rather than whether it meets the site's rate. No reference judges it: each node is
    compared with its peers (judging.fleet), so it is a check of its own.'''
    #: The config key of the document that marks such a run (mem-test --max: `max`).
    flag: str
    #: Its check (reframe_checks/) and the node pack's name of it (jobs/lib/node-pack.sh).
    check: str
    test: str
    #: The metrics compared with the peers.
    metrics: tuple
    #: The kernel's metrics such a run does not measure (mem-test --max: average_late).
    not_measured: tuple
    #: The partition extras key with its options (added to the flag), their default and
    #: what they mean (cobalt_bench.reframe.settings).
    options_setting: str
    options_default: str
    options_doc: str


@dataclass(frozen=True)
class Kernel:
    #: The program, and the `test` of the JSON documents it writes (the kernel contract).
    name: str
    #: The check family its failures belong to (memory, gpu, ethernet, interconnect,
    #: system): the preflight findings that may explain a failure name these.
    family: str
    #: The ReFrame check class that runs it (reframe_checks/).
    check: str
    #: What `make` builds for it into bin/ (src/<kernel>/kernel.mk).
    binaries: tuple
    #: The metrics its document must carry (the check's sanity rule; every other numeric
    #: metric is recorded too). Their units are the kernel's own (its C table, read from
    #: kernels.described): `metrics` gives both.
    declared: tuple
    #: The partition extras key with its options, its default ('' : the kernel's own,
    #: the compliance workload) and what it means (cobalt_bench.reframe.settings).
    options_setting: str
    options_doc: str
    options_default: str = ''
    #: Per-part lists of its document (mem-test's `domains`): {key: (number fields)}.
    number_lists: dict = field(default_factory=dict)
    #: config keys of its document that must be numbers, and that name a file.
    config_numbers: tuple = ()
    config_files: tuple = ()
    #: Its document carries preflight's `findings` list (checked by store.documents).
    findings: bool = False
    #: The report's plots of its documents (cobalt_bench.report.plots, by name).
    plots: tuple = ()
    #: doc -> [line]: what a failure of its result may mean, for the report.
    hints: object = None
    #: Its capacity mode (Capacity), or None.
    capacity: object = None
    #: The metrics by which its peers judge its own check where no reference of the site
    #: does (cpu-test: what a node computes is known from its peers, not in advance), as
    #: a capacity check is judged; (): its check is judged by the site's references only.
    peers: tuple = ()
    #: {metric: unit} of a kernel of this package's own Python (preflight), which has no C
    #: table to describe it; None for the C kernels.
    units: dict = None

    @property
    def metrics(self):
        '''{metric: unit} its document must carry, in the contract's units.'''
        if self.units is not None:
            return self.units
        return described.units_of(self.name, self.declared)
