'''The one loader of a site's references.yaml and compliance.yaml (cobalt_bench.site):
every reference that would judge nothing is an error naming the file, check, partition and
metric, for `cobalt-bench judge`, the report and ReFrame itself (the site configs validate
through it when ReFrame loads them); the lookup is ReFrame's.'''

import os
import shutil
import subprocess

import pytest
import yaml

from cobalt_bench import site as refs
from plugins.checkout import REFRAME, ROOT

COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')

SYSTEMS = ['local']
PARTS = ['local:default']

GOOD = {'MemTest': {'local:default': {
    'percent_of_desired': [100.0, -0.0025, None, '%'],
    'desired_speed': [8.0, -0.001, 0.001, 'Gbit/s']}}}


def write(tmp_path, doc, raw=None):
    path = tmp_path / 'references.yaml'
    path.write_text(raw if raw is not None else yaml.safe_dump(doc))
    return str(path)


def with_entry(check='MemTest', part='local:default', metric='percent_of_desired',
               value=(100.0, -0.0025, None, '%')):
    return {check: {part: {metric: list(value) if isinstance(value, tuple) else value}}}


# (case, document or raw text, what the message must name)
BAD = [
    ('empty file', None, ''),
    ('list-shaped', ['MemTest'], 'not be a list'),
    ('scalar', None, 'not be a str'),
    ('yaml error', None, 'not valid YAML'),
    ('check typo', with_entry(check='MemTset'), "check MemTset"),
    ('partition typo', with_entry(part='local:defualt'), "partition 'local:defualt'"),
    ('system typo', with_entry(part='lcoal'), "partition 'lcoal'"),
    ('non-numeric bound', with_entry(value=(100.0, 'abc', None, '%')),
     "metric 'percent_of_desired'"),
    ('non-numeric value', with_entry(value=('fast', -0.1, None, '%')),
     "metric 'percent_of_desired'"),
    ('bool value', with_entry(value=(True, -0.1, None, '%')), "metric 'percent_of_desired'"),
    ('too short', with_entry(value=[100.0, -0.1]), "metric 'percent_of_desired'"),
    ('not a list', with_entry(value=100.0), "metric 'percent_of_desired'"),
    ('both bounds null', with_entry(value=(100.0, None, None, '%')), 'judges nothing'),
    ('lower above value', with_entry(value=(100.0, 0.5, None, '%')),
     'invalid low threshold'),
    ('upper below value', with_entry(value=(100.0, None, -0.5, '%')),
     'invalid high threshold'),
    ('empty check', {'MemTest': {}}, 'check MemTest'),
    ('empty partition', {'MemTest': {'local:default': {}}}, "partition 'local:default'"),
    ('unit not a string', with_entry(value=(100.0, -0.1, None, 5)), "metric"),
    ('regex partition matching none', {'OsuPt2Pt': {
        '$index': ['$partition', 'benchmark'],
        'other:.*': {'osu_bw': {'bandwidth_8': [1.0, 0, None, 'MB/s']}}}},
     "partition 'other:.*'"),
    ('bad $xfail', with_entry(value=['$xfail', 'known']), '$xfail'),
]


@pytest.mark.parametrize('case, doc, named', BAD, ids=[b[0] for b in BAD])
def test_a_reference_that_judges_nothing_is_an_error(case, doc, named, tmp_path):
    raw = {'empty file': '', 'scalar': 'just text\n',
           'yaml error': 'MemTest: [unclosed\n'}.get(case)
    path = write(tmp_path, doc, raw)
    with pytest.raises(refs.SiteError) as err:
        refs.load_references(path, SYSTEMS, PARTS)
    message = str(err.value)
    assert message.startswith(path), message          # the file, always
    assert named in message, message


def test_the_sites_of_the_tree_are_valid():
    for site in sorted(os.listdir(os.path.join(ROOT, 'site-configs'))):
        if os.path.isfile(os.path.join(ROOT, 'site-configs', site, 'config.py')):
            s = refs.load_site(site)
            assert s.partitions and s.references.checks, site


def test_lookup_follows_reframes_scopes_and_index(tmp_path):
    # Scoped: the partition's own entry wins, then the system's, then '*' (ScopedDict).
    doc = {'MemTest': {'*': {'a': [1.0, -0.1, None, 'x'], 'b': [2.0, -0.1, None, 'x']},
                       'local': {'b': [3.0, -0.1, None, 'x']},
                       'local:default': {'c': [4.0, -0.1, None, 'x']}},
           'OsuPt2Pt': {'$index': ['$partition', 'benchmark'],
                        'local:def.*': {'osu_bw': {'bw': [5.0, -0.1, None, 'MB/s']}},
                        'local:default': {'osu_latency': {'lat': [6.0, None, 0.1, 'us']}}},
           'tolerances': {'latency': 0.2}}            # an anchors' holder: ignored
    r = refs.load_references(write(tmp_path, doc), SYSTEMS, PARTS)
    got = {m: (ref.value, ref.key) for m, ref in r.lookup('MemTest', 'local:default').items()}
    assert got == {'a': (1.0, ('*',)), 'b': (3.0, ('local',)), 'c': (4.0, ('local:default',))}
    # Indexed: the exact key first (osu_latency), else the first matching pattern.
    assert set(r.lookup('OsuPt2Pt', 'local:default', {'benchmark': 'osu_latency'})) == {'lat'}
    assert r.lookup('OsuPt2Pt', 'local:default', {'benchmark': 'osu_bw'}) == {}
    assert r.lookup('OsuPt2Pt', 'local:other', {'benchmark': 'osu_bw'}) == {}
    assert r.lookup('GpuCopy', 'local:default') == {}


def test_the_scoped_lookup_is_reframes_scopeddict(tmp_path):
    # site.references writes ReFrame's scoped lookup out (importing ReFrame costs every
    # command a quarter of a second); ReFrame's own ScopedDict must find the same.
    from reframe.utility import ScopedDict
    data = {'*': {'a': [1.0, -0.1, None, 'x'], 'b': [2.0, -0.1, None, 'x']},
            'local': {'b': [3.0, -0.1, None, 'x'], 'd': [7.0, -0.1, None, 'x']},
            'local:default': {'c': [4.0, -0.1, None, 'x'], 'a': [8.0, -0.1, None, 'x']},
            'other:default': {'e': [5.0, -0.1, None, 'x']}}
    r = refs.load_references(write(tmp_path, {'MemTest': data}), SYSTEMS + ['other'],
                             PARTS + ['other:default'])
    scoped = ScopedDict(data)
    for partition in ('local:default', 'local:other', 'other:default', 'none:x'):
        expected = {}
        for metric in 'abcde':
            try:
                expected[metric] = scoped[f'{partition}:{metric}'][0]
            except KeyError:
                pass
        got = {m: ref.value for m, ref in r.lookup('MemTest', partition).items()}
        assert got == expected, partition


def test_a_required_check_without_reference_is_an_error(tmp_path):
    path = write(tmp_path, GOOD)
    r = refs.load_references(path, SYSTEMS, PARTS)
    comp = tmp_path / 'compliance.yaml'
    comp.write_text(yaml.safe_dump({'required': {'MemTest': {}, 'GpuCopy': {}}}))
    with pytest.raises(refs.SiteError) as err:
        refs.load_compliance(str(comp), r)
    assert str(comp) in str(err.value) and 'GpuCopy' in str(err.value)
    assert 'no reference' in str(err.value)
    # A workload metric must be one the references judge.
    comp.write_text(yaml.safe_dump({'required': {'MemTest': {'workload': ['stations']}}}))
    with pytest.raises(refs.SiteError, match="metric 'stations'"):
        refs.load_compliance(str(comp), r)
    for bad in ('[]', 'required: [MemTest]\n', 'requried: {MemTest: {}}\n',
                'required: {NoSuchCheck: {}}\n', 'title: nothing required\n'):
        comp.write_text(bad)
        with pytest.raises(refs.SiteError, match=str(comp)):
            refs.load_compliance(str(comp), r)
    # No compliance.yaml: a demonstration, said so.
    assert 'no compliance.yaml' in refs.load_compliance(str(tmp_path / 'none.yaml'),
                                                        r).demonstration


def copy_site(repo_root, tmp_path, site, change):
    sites = tmp_path / 'site-configs'
    shutil.copytree(repo_root / 'site-configs', sites,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm'))
    path = sites / site / 'references.yaml'
    text = path.read_text()
    path.write_text(change(text))
    return sites / site


@pytest.mark.parametrize('change, named', [
    (lambda t: t.replace("'local:default':", "'local:defualt':", 1),
     "partition 'local:defualt'"),
    (lambda t: t.replace('MemTest:', 'MemTset:', 1), 'check MemTset'),
    (lambda t: t.replace("[100.0, -0.0025, null, '%']", "[100.0, abc, null, '%']", 1),
     "metric 'percent_of_desired'"),
    (lambda t: '', 'is empty'),
    (lambda t: '- MemTest\n', 'not be a list'),
])
def test_reframe_and_cobalt_bench_refuse_the_same_bad_references(change, named, repo_root,
                                                                  tmp_path):
    site = copy_site(repo_root, tmp_path, 'local', change)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_ROOT=str(repo_root), COBALT_BENCH_RESULTS=str(tmp_path / 'r'))
    # ReFrame stops before any test runs, with the loader's message.
    rf = subprocess.run([*REFRAME, '-C', str(site / 'config.py'), '-c',
                         str(repo_root / 'reframe_checks'), '-n', 'MemTest', '-r',
                         '--nocolor'], cwd=str(tmp_path), env=env, text=True,
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert rf.returncode == 1, rf.stdout
    assert 'failed to load configuration' in rf.stdout and named in rf.stdout, rf.stdout
    assert str(site / 'references.yaml') in rf.stdout
    assert 'Traceback' not in rf.stdout
    assert not (tmp_path / 'r' / 'local').exists() or not any(
        (tmp_path / 'r' / 'local').glob('*/report.json'))
    # cobalt-bench judge says the same, exit 3.
    doc = tmp_path / 'mem-test-1.json'
    doc.write_text('{"test": "mem-test", "metrics": {}}')
    cb = subprocess.run([COBALT_BENCH, 'judge', '--site', str(site), str(doc)], env=env,
                        text=True, capture_output=True, timeout=120)
    assert cb.returncode == 3, cb.stdout + cb.stderr
    assert named in cb.stderr and 'Traceback' not in cb.stderr
