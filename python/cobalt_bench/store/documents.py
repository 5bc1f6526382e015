'''The one reader of the files a run is made of (store.reader), and of what `cobalt-bench
report`, `runs` and `report --compare` are built from: ReFrame's run report (report.json), the kernels' JSON documents (the kernel
contract, docs/kernel-contract.md) and preflight documents.

Nothing here trusts a file: each is parsed and its shape checked, and whatever is wrong is
said with the file and the entry it is in (`runs[0].testcases[1] (MemTest on
local:default): perfvalues 'local:default:percent_of_desired': lower threshold 'abc' is not
a number`). A file that cannot be used at all raises Damaged (a CannotRun: exit 3 where
the command needs it); a damaged entry of a usable file is returned as a problem, so that
the one check it belongs to is marked damaged and the rest of the run still reads.
'''

import json
import math
import os
from sys import intern as _intern
from dataclasses import dataclass

from .. import kernels
from ..errors import CannotRun
from ..fileio import read_bytes
from .metric_entries import MetricEntries
from .result import Result, SettingStatus

try:
    # orjson parses a document three times as fast as json with the unique-keys hook: a
    # node sweep's report reads 200,000 files (bench/fleet-scale). Where it is not
    # installed, or where it cannot say what the strict parser would, json reads alone.
    import orjson as _orjson
except ImportError:                         # pragma: no cover (requirements.txt pins it)
    _orjson = None

# Problems said about one entry are cut to this many characters of the bad value: a
# damaged file may hold anything, megabytes included.
_SHOW = 60


@dataclass(frozen=True)
class Damage:
    '''A file (or an entry of it) that could not be read as what it should be.'''
    path: str
    problem: str

    def __str__(self):
        return f'{self.path}: {self.problem}'


class Damaged(CannotRun):
    '''A file that cannot be used at all: `path` and `problem` say which and why.'''

    def __init__(self, path, problem):
        super().__init__(f'{path}: {problem}')
        self.path = path
        self.problem = problem

    @property
    def damage(self):
        return Damage(self.path, self.problem)


def show(value):
    '''A bad value as a message quotes it: repr, cut short.'''
    text = repr(value)
    return text if len(text) <= _SHOW else text[:_SHOW] + '...'


class _Refused(Exception):
    '''What JSON allows and no result may hold.'''


def _unique_keys(pairs):
    '''An object whose keys are each given once: a document with a key twice ("metrics" in
    two places) says two things, and the last one would win unseen.'''
    # Keys and short strings interned: a sweep's documents repeat the same names and
    # units, each a string of its own as parsed (a third of a report's memory).
    obj = {}
    for k, v in pairs:      # a plain loop: a sixth faster than a comprehension here
        obj[_intern(k)] = _intern(v) if v.__class__ is str and len(v) <= 40 else v
    if len(obj) != len(pairs):      # the common case costs one C call (a sweep: 300,000)
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _Refused(f'the key {show(key)} is given twice in one object')
            seen.add(key)
    return obj


def _no_constant(name):
    '''NaN and Infinity (Python's json accepts them; JSON has none): never a measurement.'''
    raise _Refused(f'{name} is not a number a result may hold (JSON has no {name})')


def _fast_parse(data, share):
    '''The JSON text `data` (bytes) parsed by orjson where that is exactly what the strict
    reader below gives; None where it may not be (orjson absent, or it refused the text:
    the strict reader then says why, in its words).

    orjson refuses NaN, Infinity and numbers out of a double's range, as the strict reader
    does with finite=True (the report.json of finite=False falls through to it), and keeps
    the last of a key given twice, silently. That is found by counting colons: each key of
    the text is followed by one outside a string, and every other colon is inside a string,
    which orjson writes out again as it was given where the text has no \\u escape (one
    could spell a colon). So the object written again holds as many colons as the text
    exactly when no key was dropped.'''
    if _orjson is None or b'\\u' in data:
        return None
    try:
        obj = _orjson.loads(data)
        if _orjson.dumps(obj).count(b':') != data.count(b':'):
            return None
    except (ValueError, TypeError):         # orjson.JSONDecodeError is a ValueError
        return None
    return share_strings(obj) if share else obj


def _shared(obj):
    '''`obj` (a dict or a list) with its short string values interned; its containers'
    values, to be shared in turn.'''
    inner = []
    pairs = obj.items() if obj.__class__ is dict else enumerate(obj)
    for k, v in pairs:
        kind = v.__class__
        if kind is str:
            if len(v) <= 40:
                obj[k] = _intern(v)
        elif kind is dict or kind is list:
            inner.append(v)
    return inner


def share_strings(obj, depth=4):
    '''`obj` (a parsed JSON value) with its short strings shared with every other
    document's (interned, as _unique_keys does; orjson shares the keys) down to `depth`
    levels: a kernel document's top level, its sections (config, compliance, each domain,
    each finding), their entries (each metric's unit) and a finding's `affects`. A sweep's
    documents repeat the same units and names: as a string each, a fifth of a document's
    memory. A walk of every level would cost as much as the parse.'''
    if obj.__class__ is dict or obj.__class__ is list:
        for inner in _shared(obj):
            if depth > 1:
                share_strings(inner, depth - 1)
    return obj


def read_json(path, finite=True, share=True):
    '''The parsed JSON text of `path`; Damaged saying why not (absent, unreadable, not
    UTF-8, cut short or not JSON, nested too deeply to read, a key given twice in one
    object, and where `finite`, NaN or Infinity anywhere). ReFrame's report.json is read
    with finite=False: its entries are checked one by one, so that one bad number damages
    its check and not the run. `share`: its short strings shared with other documents'
    (one kept in memory; a record read for a few fields and dropped is read without, and
    a job document shares them once its metrics are held compact: share_strings).'''
    try:
        data = read_bytes(path)
    except OSError as err:
        raise Damaged(path, f'cannot read: {err.strerror or err}')
    parsed = _fast_parse(data, share)
    if parsed is not None:
        return parsed
    try:
        # Bytes decoded at once: a text stream's incremental decoder costs a fifth of a
        # small document's parse.
        text = data.decode('utf-8')
    except UnicodeDecodeError as err:
        raise Damaged(path, f'not UTF-8 text ({err.reason} at byte {err.start})')
    if not text.strip():
        raise Damaged(path, 'empty file')
    try:
        return json.loads(text, object_pairs_hook=_unique_keys,
                          **({'parse_constant': _no_constant} if finite else {}))
    except _Refused as err:
        raise Damaged(path, f'not a usable JSON document: {err}')
    except RecursionError:
        # json's C parser recurses per nesting level: 100,000 `[` exceed the interpreter's
        # recursion limit. No document this suite writes is nested more than a few deep.
        raise Damaged(path, 'not a usable JSON document: nested too deeply')
    except ValueError as err:
        where = ''
        if isinstance(err, json.JSONDecodeError):
            if err.pos >= len(text.rstrip()) or err.msg.startswith('Unterminated string'):
                raise Damaged(path, 'not valid JSON: the text ends in the middle of the '
                                    f'document (truncated? line {err.lineno})')
            where = f' (line {err.lineno}, column {err.colno})'
            err = err.msg
        raise Damaged(path, f'not valid JSON: {err}{where}')


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer(value):
    return isinstance(value, int) and not isinstance(value, bool)


#: Fields of a kernel's per-part lists (mem-test's `domains`, gpu-copy's `gpus`) that are
#: integers wherever they appear: a NUMA node is a number (-1: none), never a name.
INTEGERS = ('numa_node',)


def _kind(value):
    return {dict: 'an object', list: 'a list', str: 'a string', bool: 'a boolean',
            type(None): 'null', int: 'a number', float: 'a number'}.get(type(value),
                                                                        type(value).__name__)


# ---- ReFrame's run report ------------------------------------------------------------------

def report_testcases(report, path):
    '''(session_info, [(where, testcase)], [Damage]) of a parsed report.json: `where` names
    the entry (runs[i].testcases[j]). Damaged if the file is not a run report at all.'''
    if not isinstance(report, dict):
        raise Damaged(path, f'is {_kind(report)}, not ReFrame\'s run report (an object '
                            'with "session_info" and "runs")')
    if 'runs' not in report:
        raise Damaged(path, 'has no "runs": not ReFrame\'s run report')
    runs = report['runs']
    if not isinstance(runs, list):
        raise Damaged(path, f'"runs" is {_kind(runs)}, not a list')
    session = report.get('session_info', {})
    # Where the run's files were (prefix_output, prefix_stage) is read from here: without
    # it the documents of a moved run would be looked for elsewhere.
    if not isinstance(session, dict):
        raise Damaged(path, f'"session_info" is {_kind(session)}, not an object')
    bad = [k for k in ('prefix_output', 'prefix_stage')
           if session.get(k) is not None and not isinstance(session[k], str)]
    if bad:
        raise Damaged(path, f'session_info.{bad[0]} is {show(session[bad[0]])}, not a path')
    damage = []
    cases = []
    old = str(session.get('data_version', '')).startswith('3.')
    for i, r in enumerate(runs):
        if not isinstance(r, dict) or not isinstance(r.get('testcases', []), list):
            damage.append(Damage(path, f'runs[{i}] is not an object with a "testcases" '
                                       'list'))
            continue
        for j, tc in enumerate(r.get('testcases', [])):
            where = f'runs[{i}].testcases[{j}]'
            if not isinstance(tc, dict):
                damage.append(Damage(path, f'{where} is {_kind(tc)}, not a test case'))
                continue
            cases.append((where, _upgraded(tc) if old else tc))
    return session, cases, damage


# ReFrame before 4.7 writes report.json data_version 3.x: result words 'success', 'failure',
# 'skipped', 'aborted'; 'system' as 'system:partition'; 'environment', 'hash', 'nodelist';
# the performance variables as a list 'perfvars' of {name, value, reference, thres_lower,
# thres_upper, unit}; the check's variables (json_file) under 'check_vars'.
_RESULTS_3 = {'success': Result.PASS.value, 'failure': Result.FAIL.value,
              'skipped': Result.SKIP.value, 'aborted': Result.ABORT.value}


def _upgraded(tc):
    '''A test case of a data_version 3 report.json in the form of data_version 4 (ReFrame
    4.7 on), which the rest of the reader reads; what is malformed stays so, for
    testcase_problems and perf_entry to name.'''
    tc = dict(tc)
    system = tc.get('system')
    if isinstance(system, str) and 'partition' not in tc:
        tc['system'], _, tc['partition'] = system.partition(':')
    for new, old in (('environ', 'environment'), ('hashcode', 'hash'),
                     ('job_nodelist', 'nodelist')):
        if new not in tc and old in tc:
            tc[new] = tc[old]
    check_vars = tc.get('check_vars')
    if 'json_file' not in tc and isinstance(check_vars, dict):
        tc['json_file'] = check_vars.get('json_file')
    if isinstance(tc.get('result'), str):
        tc['result'] = _RESULTS_3.get(tc['result'], tc['result'])
    if tc.get('jobid') == 'None':
        tc['jobid'] = None
    perfvars = tc.get('perfvars')
    if 'perfvalues' not in tc and isinstance(perfvars, list):
        where = f"{tc.get('system')}:{tc.get('partition')}"
        tc['perfvalues'] = {
            f"{where}:{pv.get('name')}": [pv.get('value'), pv.get('reference'),
                                         pv.get('thres_lower'), pv.get('thres_upper'),
                                         pv.get('unit')]
            for pv in perfvars if isinstance(pv, dict)}
    return tc


_TC_STRINGS = ('name', 'display_name', 'unique_name', 'system', 'partition', 'environ',
               'result', 'fail_phase', 'fail_reason', 'hashcode', 'outputdir', 'stagedir',
               'job_stdout', 'json_file')


def testcase_problems(tc):
    '''What is wrong in one test case of report.json (a list of strings, empty if none),
    and the cleaned fields: strings where strings belong, lists of strings where lists.
    The perfvalues are checked by perf_entry.'''
    problems = []
    clean = {}
    for key in _TC_STRINGS:
        value = tc.get(key)
        if value is None or isinstance(value, str):
            clean[key] = value
        elif key in ('fail_reason', 'hashcode'):
            clean[key] = str(value)
        else:
            problems.append(f'"{key}" is {_kind(value)} {show(value)}, not a string')
            clean[key] = None
    jobid = tc.get('jobid')
    clean['jobid'] = '' if jobid is None else str(jobid) if isinstance(jobid, (str, int)) \
        else None
    if clean['jobid'] is None:
        problems.append(f'"jobid" is {_kind(jobid)} {show(jobid)}')
        clean['jobid'] = ''
    for key in ('job_nodelist', 'tags'):
        value = tc.get(key)
        value = [] if value is None else value
        if isinstance(value, dict) and key == 'tags':
            value = list(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            problems.append(f'"{key}" is not a list of strings: {show(value)}')
            value = []
        clean[key] = value
    perf = tc.get('perfvalues')
    perf = {} if perf is None else perf
    if not isinstance(perf, dict):
        problems.append(f'"perfvalues" is {_kind(perf)}, not an object')
        perf = {}
    clean['perfvalues'] = perf
    return clean, problems


def perf_entry(key, entry):
    '''(value, ref, lower, upper, unit, result) of one perfvalues entry of report.json, or
    a string saying what is wrong with it. ReFrame writes [value, ref, lower threshold,
    upper threshold, unit, result]; the reference and thresholds come from the site's
    references.yaml, so a non-numeric bound there ends up here.'''
    name = f'perfvalues {show(key)}'
    if not isinstance(entry, list) or not 1 <= len(entry) <= 6:
        return f'{name} is {show(entry)}, not [value, reference, lower, upper, unit, result]'
    value, ref, lower, upper, unit, result = (list(entry) + [None] * 6)[:6]
    for label, v in (('value', value), ('reference', ref), ('lower threshold', lower),
                     ('upper threshold', upper)):
        if v is not None and not _number(v):
            origin = '' if label == 'value' else ' (from the site\'s references.yaml)'
            return f'{name}: {label} {show(v)} is not a number{origin}'
        if label != 'value' and _number(v) and not math.isfinite(v):
            return f'{name}: {label} {show(v)} is not finite'
    if unit is not None and not isinstance(unit, str):
        return f'{name}: unit {show(unit)} is not a string'
    if result is not None and not isinstance(result, str):
        return f'{name}: result {show(result)} is not a string'
    return value, ref, lower, upper, unit, result


# ---- kernel documents ----------------------------------------------------------------------

def looks_like_kernel_doc(doc):
    '''Meant as a kernel document (the contract's envelope keys), valid or not: a JSON file
    of a test's directory that is not one is somebody else's and is left alone.'''
    return isinstance(doc, dict) and ('test' in doc or 'metrics' in doc)


def kernel_doc_problems(doc):
    '''What in a kernel JSON document breaks the contract, as far as the report reads it
    (strings naming the entry; empty: fine).'''
    if not isinstance(doc, dict):
        return [f'is {_kind(doc)}, not a kernel document (an object with "test" and '
                '"metrics")']
    problems = []
    if not isinstance(doc.get('test'), str) or not doc.get('test'):
        problems.append(f'"test" is {show(doc.get("test"))}, not the program\'s name')
    metrics = doc.get('metrics')
    if metrics.__class__ is MetricEntries:
        pass        # held so once checked (store.metric_entries): each entry is whole
    elif not isinstance(metrics, dict):
        problems.append(f'"metrics" is {_kind(metrics)}, not an object')
    else:
        for name, m in metrics.items():
            # The common entry answered by its types alone (a sweep: 1.5 million of them).
            if m.__class__ is dict:
                value, unit = m.get('value'), m.get('unit')
                if (value is None or value.__class__ is float or value.__class__ is int) \
                        and (unit is None or unit.__class__ is str):
                    continue
            if not isinstance(m, dict):
                problems.append(f'metrics.{name} is {_kind(m)}, not {{"value", "unit"}}')
            elif m.get('value') is not None and not _number(m.get('value')):
                problems.append(f'metrics.{name}.value {show(m.get("value"))} is not a '
                                'number')
            elif m.get('unit') is not None and not isinstance(m.get('unit'), str):
                problems.append(f'metrics.{name}.unit {show(m.get("unit"))} is not a string')
    for key in ('host', 'started', 'version', 'test_version'):
        if doc.get(key) is not None and not isinstance(doc.get(key), str):
            problems.append(f'"{key}" is {_kind(doc.get(key))}, not a string')
    for key in ('config', 'compliance'):
        if doc.get(key) is not None and not isinstance(doc.get(key), dict):
            problems.append(f'"{key}" is {_kind(doc.get(key))}, not an object')
    comp = doc.get('compliance')
    if isinstance(comp, dict) and comp.get('passed') not in (True, False, None):
        problems.append(f'compliance.passed is {show(comp.get("passed"))}, not true/false')
    problems += _kernel_problems(doc)
    return problems


def _kernel_problems(doc):
    '''The checks the kernel's descriptor declares for its document (cobalt_bench.kernels):
    the figures the report and its plots format as numbers, where a string would break
    them. A document of a program no descriptor names gets every kernel's checks.'''
    own = kernels.of_document(doc)
    rules = [own] if own else list(kernels.KERNELS.values())
    problems = []
    for key in dict.fromkeys(k for r in rules for k in r.number_lists):
        items = doc.get(key)
        if items is not None and not (isinstance(items, list)
                                      and all(isinstance(d, dict) for d in items)):
            problems.append(f'"{key}" is not a list of objects')
            continue
        numbers = [n for r in rules for n in r.number_lists.get(key, ())]
        for i, d in enumerate(items or []):
            bad = [k for k in numbers if d.get(k) is not None and not _number(d.get(k))]
            if bad:
                problems.append(f'{key}[{i}].{bad[0]} is {show(d[bad[0]])}, not a number')
            bad = [k for k in INTEGERS if k in d and not _integer(d[k])]
            if bad:
                problems.append(f'{key}[{i}].{bad[0]} is {show(d[bad[0]])}, not an integer')
    config = doc.get('config') if isinstance(doc.get('config'), dict) else {}
    for key in dict.fromkeys(k for r in rules for k in r.config_files):
        if config.get(key) is not None and not isinstance(config.get(key), str):
            problems.append(f'config.{key} is {show(config[key])}, not a file name')
    for key in dict.fromkeys(k for r in rules for k in r.config_numbers):
        if config.get(key) is not None and not _number(config.get(key)):
            problems.append(f'config.{key} is {show(config[key])}, not a number')
    if own and own.findings:
        problems += findings_problems(doc)
    return problems


# The fields of a finding (preflight.Finding): these must be strings, `affects` a list.
FINDING_STRINGS = ('setting', 'status', 'value', 'expected', 'fix', 'level')
FINDING_OPTIONAL = ('source', 'note')
STATUSES = tuple(SettingStatus)


def findings_problems(doc):
    '''What is wrong in a preflight document's `findings` (preflight.Finding's fields).'''
    findings = doc.get('findings')
    if not isinstance(findings, list):
        return [f'"findings" is {_kind(findings)}, not a list']
    problems = []
    for i, f in enumerate(findings):
        if not isinstance(f, dict):
            problems.append(f'findings[{i}] is {_kind(f)}, not an object')
            continue
        bad = [k for k in FINDING_STRINGS if not isinstance(f.get(k), str)]
        bad += [k for k in FINDING_OPTIONAL if not isinstance(f.get(k, ''), str)]
        if bad:
            problems.append(f'findings[{i}].{bad[0]} is {show(f.get(bad[0]))}, not a string')
        elif f['status'] not in STATUSES:
            problems.append(f'findings[{i}].status {show(f["status"])} is not one of '
                            + ', '.join(STATUSES))
        affects = f.get('affects', [])
        if not isinstance(affects, list) or not all(isinstance(a, str) for a in affects):
            problems.append(f'findings[{i}].affects is not a list of strings')
    return problems


def _raise_problems(path, problems):
    if problems:
        raise Damaged(path, '; '.join(problems[:3])
                      + (f' (and {len(problems) - 3} more)' if len(problems) > 3 else ''))


def load_preflight(path):
    '''A preflight document (cobalt-bench preflight --json FILE); Damaged if not one.'''
    doc = read_json(path)
    if not isinstance(doc, dict) or doc.get('test') != 'preflight':
        raise Damaged(path, 'not a preflight JSON document (cobalt-bench preflight --json '
                            'FILE writes one)')
    _raise_problems(path, kernel_doc_problems(doc))
    return doc


def relpath(path, start):
    '''`path` as the report shows it: relative to the run directory where inside it.'''
    try:
        rel = os.path.relpath(path, start)
    except ValueError:
        return path
    return path if rel.startswith('..') else rel
