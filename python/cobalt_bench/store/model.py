'''The results model: a run, its cases (a check on a partition, or a job's document) and
their metrics, as read from the store (store.reader). Every field is declared here; the
judges (cobalt_bench.judging) never change these objects: a judged case is a new Case
(replace, below) carrying the site's judgement.
'''

import dataclasses
import os
from dataclasses import dataclass, field
from operator import attrgetter

from .result import Result, RunState


#: Result.RECORDED once: an enum member read from its class costs a lookup of the enum
#: machinery, and Metric.judged is asked of every metric several times.
_RECORDED = Result.RECORDED


@dataclass(slots=True)
class Metric:
    name: str
    value: object
    unit: str
    ref: object = None          # reference value, None when not judged
    # ReFrame's thresholds as recorded: fractions of `ref` (its reference tuple).
    lower_thres: object = None
    upper_thres: object = None
    # PASS, FAIL, XFAIL, XPASS as ReFrame recorded it; UNKNOWN where the record keeps
    # none (a perflog); RECORDED: no reference.
    verdict: Result = Result.RECORDED
    # The absolute bounds, once judged (judging.bounds, ReFrame's rule); None: open.
    lower: object = None
    upper: object = None
    # The site.Ref (file, check, partition key, metric) it was judged by, when the site's
    # references are known (the report shows it).
    entry: object = None

    def __post_init__(self):
        # A word given is typed here, once; a Result (every judged copy's) is kept as it is:
        # Result() of a member costs more than the rest of a copy.
        if self.verdict.__class__ is not Result:
            self.verdict = Result(self.verdict)

    @property
    def judged(self):
        return self.verdict is not _RECORDED


@dataclass(slots=True)
class Case:
    '''One test case: a check on a system:partition (and node list), or a job document.'''
    check: str
    system: str = ''
    partition: str = ''
    environ: str = ''
    nodes: list = field(default_factory=list)
    result: Result = Result.UNKNOWN
    fail_phase: str = ''
    fail_reason: str = ''
    jobid: str = ''
    tags: list = field(default_factory=list)
    metrics: list = field(default_factory=list)
    docs: list = field(default_factory=list)     # kernel JSON documents (dicts)
    doc_paths: list = field(default_factory=list)
    stdout: str = ''            # path of the job's stdout, if kept
    dirs: list = field(default_factory=list)     # output/stage directories found
    # What of this case could not be read: [documents.Damage(path, problem)] (a truncated
    # kernel document, a perfvalues entry with a non-numeric bound, ...). Non-empty: the
    # result is DAMAGED unless ReFrame already failed the case.
    damaged: list = field(default_factory=list)
    reframe_result: object = None   # the Result as ReFrame (or the document) gave it
    # A job document's `cobalt-bench judge` record (the .judged.json beside it): the site
    # partition it was judged on and the command line that produced it ('' : none).
    judged_partition: str = ''
    command: str = ''
    # The kernel's exit status as its job recorded it (store.exit_status.ExitStatus, from
    # the `cobalt-bench judge` record beside a job document; None: not recorded).
    exit_status: object = None
    # The node a job's judgement record says the kernel ran on ('' : not recorded).
    node: str = ''
    # Why its document is not the result of the node it was found for ('' : it is): a
    # sweep's node directory holding a document of another node of the allocation.
    foreign: str = ''
    # ReFrame's earlier tries of this case in the same run (--max-retries) that failed:
    # the result is its last try's, these are what a retry hid (store.history counts them).
    failed_tries: int = 0
    # A job document's Slurm job state (sacct) where the run did not finish: its document
    # is marked interrupted, or the job left none ('' : not asked, or not known).
    job_state: str = ''
    # (the most memory a step of its job used, the memory the job requested per node), in
    # bytes, where the step used more (sacct): Slurm's memory limit killed it. None: not.
    memory_overrun: tuple | None = None
    # The site's required preflight settings that failed on its hosts, which made the case
    # FAIL whatever the check itself said (judging.outcome; () : none).
    failed_settings: tuple = ()

    def __post_init__(self):
        if self.result.__class__ is not Result:       # as Metric's: typed once
            self.result = Result(self.result)
        if self.reframe_result is not None and self.reframe_result.__class__ is not Result:
            self.reframe_result = Result(self.reframe_result)

    @property
    def where(self):
        return f'{self.system}:{self.partition}' if self.system else self.partition or '-'

    @property
    def kernel(self):
        return next((d.get('test') for d in self.docs if d.get('test')), '')

    def metric(self, name):
        return next((m for m in self.metrics if m.name == name), None)


class _Copier:
    '''dataclasses.replace for one class of the model, its fields looked up once: a sweep of
    10,000 nodes judges 100,000 cases and 300,000 metrics, each a copy, and
    dataclasses.replace reads the class's fields anew on every call (three times the cost
    of the copy itself).'''

    def __init__(self, cls):
        names = tuple(f.name for f in dataclasses.fields(cls))
        assert all(f.init for f in dataclasses.fields(cls)), cls     # passed by position
        self.cls, self.values = cls, attrgetter(*names)
        self.index = {name: i for i, name in enumerate(names)}

    def __call__(self, obj, changes):
        values = list(self.values(obj))
        for name, value in changes.items():
            i = self.index.get(name)
            if i is None:
                raise TypeError(f'{self.cls.__name__} has no field {name!r}')
            values[i] = value
        return self.cls(*values)    # __init__ and __post_init__, as dataclasses.replace


_COPIERS = {Metric: _Copier(Metric), Case: _Copier(Case)}


def replace(obj, **changes):
    '''A copy of `obj` with `changes`: dataclasses.replace, faster for a Metric or a Case
    (the same __init__ and __post_init__ run; an unknown field is a TypeError).'''
    copier = _COPIERS.get(type(obj))
    return copier(obj, changes) if copier else dataclasses.replace(obj, **changes)


@dataclass
class Recorded:
    '''The job records a reader took into a run's cases as it read their documents.'''
    every: bool = False     # every document's record was looked for (a directory's run)
    sites: set = field(default_factory=set)         # the site directories they name


@dataclass
class Run:
    path: str
    kind: str                   # 'reframe' (a run directory) or 'jobs' (job documents)
    site: str = ''
    run_id: str = ''
    state: RunState = RunState.COMPLETE
    state_why: str = ''
    session: dict = field(default_factory=dict)
    cases: list = field(default_factory=list)
    sources: list = field(default_factory=list)   # what was read, for the report's footer
    # Every documents.Damage(path, problem) met while reading the run, the cases' included
    # (a damaged report.json too: then the cases come from the perflogs, the run is
    # PARTIAL and report_damage names it). Empty: every file read was whole.
    damaged: list = field(default_factory=list)
    report_damage: object = None  # documents.Damage of an unusable report.json, or None
    # The nodes' inventories (store.inventory.Inventory) found beside the results.
    inventories: list = field(default_factory=list)
    # A directory of job documents: the `cobalt-bench judge` records the reader read with
    # the documents beside them, and took into their cases (job_record.with_job_judgements
    # reads the others).
    recorded: Recorded = field(default_factory=Recorded)

    def __post_init__(self):
        self.state = RunState(self.state)

    @property
    def label(self):
        if self.site and self.run_id:
            return f'{self.site}/{self.run_id}'
        return self.site or self.run_id or os.path.basename(self.path)


KIND_REFRAME, KIND_JOBS = 'reframe', 'jobs'
