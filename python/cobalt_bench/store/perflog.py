'''ReFrame's performance logs as cobalt-bench writes them (the site configurations'
perflog handler, cobalt_bench.reframe.site) and reads them back (a run without
report.json): one format, declared here for both.

ReFrame's filelog handler writes perflogs/<system>/<partition>/<Check>.log, a header line
naming the fields and one `|`-separated record per run of the check; each performance
variable adds <name>_value, <name>_unit, <name>_ref, <name>_lower_thres and
<name>_upper_thres.
'''

import math
import os

from . import confine
from .documents import Damage
from .model import Case, Metric
from .result import Result

#: The fields of a record, then of each performance variable (ReFrame's check_* and
#: check_perf_* log attributes, without their prefixes).
RECORD_FIELDS = ('result', 'job_completion_time', 'name', 'jobid')
PERFVAR_FIELDS = ('value', 'unit', 'ref', 'lower_thres', 'upper_thres')

#: The handler's `format` and `format_perfvars` (ReFrame's configuration keys).
FORMAT = '|'.join(f'%(check_{f})s' for f in RECORD_FIELDS) + '|%(check_perfvalues)s'
FORMAT_PERFVARS = ''.join(f'%(check_perf_{f})s|' for f in PERFVAR_FIELDS)

#: How the header line starts: a record never does (its first field is a result word).
HEADER_START = RECORD_FIELDS[0] + '|'


def _num(text):
    '''A number of a perflog field; None for none; a str for anything else.'''
    if text in (None, '', 'None', 'null'):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def read_run(run, collect_docs, mark_damaged):
    '''Cases from the performance logs (a run without report.json): the last record of
    each check's log, with its references. `collect_docs` and `mark_damaged`: the
    reader's (store.reader), which find a case's documents and mark what is damaged.
    What leaves the run (store.confine) is not read: it is named in run.damaged.'''
    base = os.path.join(run.path, 'perflogs')
    refused = confine.escapes(base, run.path)
    if refused:
        run.damaged.append(Damage(base, refused))
        return
    for dirpath, _, files in sorted(os.walk(base)):
        for name in sorted(f for f in files if f.endswith('.log')):
            rel = os.path.relpath(dirpath, base).split(os.sep)
            system, partition = (rel + ['', ''])[:2]
            log = os.path.join(dirpath, name)
            refused = confine.file_problem(log, run.path)
            if refused:
                run.damaged.append(Damage(log, refused))
                continue
            try:
                with open(log, encoding='utf-8') as fp:
                    lines = [line.rstrip('\n') for line in fp if line.strip()]
            except (OSError, UnicodeDecodeError) as err:
                run.damaged.append(Damage(log, f'cannot read: {err}'))
                continue
            header = next((line.split('|') for line in lines if line.startswith(HEADER_START)),
                          None)
            records = [line.split('|') for line in lines if not line.startswith(HEADER_START)]
            if not header or not records:
                continue
            fields = dict(zip(header, records[-1]))
            case = Case(check=fields.get('name', name[:-4]), system=system,
                        partition=partition,
                        result=Result.of(fields.get('result', ''), Result.UNKNOWN),
                        jobid=fields.get('jobid', ''))
            for key in header:
                if not key.endswith('_value'):
                    continue
                metric = key[:-len('_value')]
                value = _num(fields.get(key))
                ref = _num(fields.get(f'{metric}_ref'))
                lower = _num(fields.get(f'{metric}_lower_thres'))
                upper = _num(fields.get(f'{metric}_upper_thres'))
                unit = fields.get(f'{metric}_unit', '')
                bad = [(label, v) for label, v in (('reference', ref),
                                                   ('lower threshold', lower),
                                                   ('upper threshold', upper))
                       if isinstance(v, str) or (v is not None and not math.isfinite(v))]
                if bad:
                    case.damaged.append(Damage(log, f'{case.check}, {metric}: {bad[0][0]} '
                                       f'{bad[0][1]!r} is not a number (from the site\'s '
                                       'references.yaml)'))
                    continue
                if ref in (0, None) and lower is None and upper is None:
                    case.metrics.append(Metric(metric, value, unit))
                else:
                    # A perflog keeps no verdict per variable: the judges decide it
                    # (judging.bounds), by ReFrame's rule, from these thresholds.
                    case.metrics.append(Metric(metric, value, unit, ref, lower_thres=lower,
                                               upper_thres=upper, verdict=Result.UNKNOWN))
            # The test's directory: output/ if it passed, else stage/.
            dirs = [os.path.join(run.path, sub, system, partition, env, case.check)
                    for sub in ('output', 'stage')
                    for env in (os.listdir(os.path.join(run.path, sub, system, partition))
                                if os.path.isdir(os.path.join(run.path, sub, system,
                                                              partition)) else [])]
            collect_docs(case, dirs, run.path)
            # The environment is the directory the documents were in: a case of the
            # perflogs keys (compare) as the same case of a report.json.
            if case.dirs:
                case.environ = os.path.basename(os.path.dirname(case.dirs[0]))
            mark_damaged(case, run.path)
            run.cases.append(case)
        run.sources.append(base)
