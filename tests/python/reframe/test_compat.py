'''cobalt_bench.reframe.compat: what follows from the ReFrame release that runs the suite
(docs/reframe.md). Run by the pinned ReFrame; the older releases' behaviour is taken by
setting compat.RFM_VERSION (the module decides by it alone), and for real under each
release in tests/integration/reframe/test_reframe_versions.py and .ci/run.'''

import itertools
import json
import os
import shutil
import subprocess

import jsonschema
import pytest
import reframe
import reframe.utility.sanity as sn
from reframe.core.exceptions import ConfigError, SanityError
from reframe.frontend import autodetect

from cobalt_bench.reframe import compat, launch
from cobalt_bench.site.bounds import Bounds, meets, threshold_problem, within
from cobalt_bench.reframe.site import Site
from plugins.checkout import REPO_ROOT, ROOT

REFRAME_VENV = REPO_ROOT / 'scripts' / 'reframe-venv'
ADDED_IN_4_6 = {'platform', 'model', 'vendor'}


@pytest.fixture
def running(monkeypatch):
    '''Set the ReFrame release compat acts for: running((4, 5, 2)).'''
    return lambda version: monkeypatch.setattr(compat, 'RFM_VERSION', tuple(version))


# ---- versions -------------------------------------------------------------------------

@pytest.mark.parametrize('text, version', [('4.10.4', (4, 10, 4)), ('4.5.2', (4, 5, 2)),
                                           ('4.11.0-dev.2', (4, 11, 0)), ('4.7', (4, 7, 0))])
def test_versions_parse(text, version):
    assert compat.parse_version(text) == version


def test_a_version_that_is_none_is_an_error():
    with pytest.raises(ValueError, match='not a ReFrame version'):
        compat.parse_version('dev')


def test_the_pinned_reframe_is_supported():
    assert compat.RFM_VERSION == compat.parse_version(reframe.VERSION)
    assert compat.too_old() == ''
    assert compat.RFM_VERSION >= compat.NEWEST_TESTED


def test_older_than_the_oldest_is_refused_naming_the_range():
    assert compat.too_old((4, 5, 0)) == ''
    reason = compat.too_old((4, 4, 2))
    assert 'ReFrame 4.4.2 is older than the oldest cobalt-bench supports (4.5' in reason
    assert '4.10.x' in reason and 'docs/reframe.md' in reason


def test_the_venv_script_and_compat_name_the_same_versions():
    def venv(option):
        r = subprocess.run([str(REFRAME_VENV), option], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 0, r.stderr
        return compat.parse_version(r.stdout.strip())

    assert venv('--oldest')[:2] == compat.OLDEST
    assert venv('--pinned') == compat.NEWEST_TESTED == compat.RFM_VERSION


@pytest.mark.parametrize('version, features', [
    ((4, 5, 2), set()),
    ((4, 6, 4), {'processor_info'}),
    ((4, 7, 3), {'processor_info', 'results_storage'}),
    ((4, 8, 4), {'processor_info', 'results_storage', 'zero_references'}),
    ((4, 10, 2), {'processor_info', 'results_storage', 'zero_references'}),
])
def test_what_each_release_has(running, version, features):
    running(version)
    has = {name for name, has in (('processor_info', compat.has_processor_info),
                                  ('results_storage', compat.has_results_storage),
                                  ('zero_references', compat.judges_zero_references))
           if has()}
    assert has == features


def test_the_plugin_base_is_the_releases_own():
    assert compat.PLUGIN_BASE is getattr(reframe, 'RegressionTestPlugin', None) or \
        reframe.RegressionMixin


# ---- the configuration ----------------------------------------------------------------

def configuration():
    return {
        'systems': [{'name': 'sys', 'hostnames': ['.*'], 'partitions': [
            {'name': 'arm', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin'],
             'processor': {'num_cpus': 2, 'arch': 'neoverse_v1', 'platform': 'aarch64'}},
            {'name': 'x86', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin']},
        ]}],
        'storage': [{'enable': True, 'sqlite_db_file': '/tmp/results.db'}],
    }


class Partition:
    '''What processor_platform reads of a ReFrame partition.'''

    def __init__(self, fullname, processor):
        self.fullname = fullname
        self.processor = processor


def test_the_pinned_reframe_takes_the_configuration_as_it_is():
    assert compat.adapt_configuration(configuration()) == configuration()


def test_before_4_7_no_results_database(running):
    running((4, 6, 4))
    adapted = compat.adapt_configuration(configuration())
    assert 'storage' not in adapted
    assert adapted['systems'] == configuration()['systems']


def test_before_4_6_no_processor_platform_but_it_is_kept(running, monkeypatch):
    running((4, 5, 2))
    monkeypatch.setattr(compat, 'processor_keys', lambda: {'arch', 'num_cpus', 'topology'})
    original = configuration()
    adapted = compat.adapt_configuration(original)
    arm, x86 = adapted['systems'][0]['partitions']
    assert arm['processor'] == {'num_cpus': 2, 'arch': 'neoverse_v1'}
    assert 'processor' not in x86 and 'storage' not in adapted
    assert original == configuration(), 'the site\'s own dict is left as it was'

    class NoPlatform:       # ReFrame 4.5's processor: no such attribute
        pass

    assert compat.processor_platform(Partition('sys:arm', NoPlatform())) == 'aarch64'
    assert compat.processor_platform(Partition('sys:x86', NoPlatform())) is None


def test_the_processor_platform_from_reframe_where_it_has_one():
    class Processor:
        platform = 'x86_64'

    assert compat.processor_platform(Partition('any:thing', Processor())) == 'x86_64'


def test_the_pinned_schema_has_the_processor_keys_of_4_6():
    assert ADDED_IN_4_6 <= compat.processor_keys()


def test_a_site_refuses_a_reframe_older_than_the_oldest(running, monkeypatch):
    monkeypatch.delenv('RFM_REFERENCE_PREFIX', raising=False)
    site = Site('local', os.path.join(ROOT, 'site-configs', 'local', 'config.py'))
    running((4, 4, 2))
    with pytest.raises(ConfigError, match='older than the oldest cobalt-bench supports'):
        site.checked(configuration())


@pytest.mark.parametrize('version, storage', [((4, 6, 4), False), ((4, 7, 3), True)])
def test_the_results_database_where_reframe_has_one(running, monkeypatch, version, storage):
    monkeypatch.delenv('RFM_REFERENCE_PREFIX', raising=False)
    site = Site('local', os.path.join(ROOT, 'site-configs', 'local', 'config.py'))
    running(version)
    assert bool(site.storage()) is storage


# ---- the topology a newer ReFrame cached (4.6) -----------------------------------------

def processor_schema_of_4_5():
    '''The pinned schema's processor_info as ReFrame 4.5 had it.'''
    path = os.path.join(os.path.dirname(reframe.__file__), 'schemas', 'config.json')
    with open(path) as fp:
        schema = json.load(fp)
    proc = schema['defs']['processor_info']
    proc['properties'] = {k: v for k, v in proc['properties'].items()
                          if k not in ADDED_IN_4_6}
    proc['additionalProperties'] = False
    return {'$schema': schema['$schema'], 'defs': schema['defs'],
            '$ref': '#/defs/processor_info'}


CACHED = {'arch': 'icelake', 'vendor': 'GenuineIntel', 'model': 'Intel(R) Xeon(R)',
          'platform': 'x86_64', 'num_cpus': 2}


def test_reframe_4_5_gets_a_newer_cached_topology_in_the_sites_own_configuration(
        running, monkeypatch, tmp_path):
    schema = processor_schema_of_4_5()
    with pytest.raises(jsonschema.ValidationError, match='platform'):
        jsonschema.validate(dict(CACHED), schema)     # what ReFrame 4.5 stopped on
    cache = tmp_path / '.reframe' / 'topology' / 'sys-x86'
    cache.mkdir(parents=True)
    (cache / 'processor.json').write_text(json.dumps(CACHED))
    monkeypatch.setenv('HOME', str(tmp_path))
    validate = autodetect._validate_info
    running((4, 5, 2))
    monkeypatch.setattr(compat, 'processor_keys',
                        lambda: set(schema['defs']['processor_info']['properties']))
    adapted = compat.adapt_configuration(configuration())
    proc = adapted['systems'][0]['partitions'][1]['processor']
    assert proc == {'arch': 'icelake', 'num_cpus': 2}
    jsonschema.validate(proc, schema)                  # 4.5 takes it, never reads the file
    assert compat.processor_platform(Partition('sys:x86', proc)) == 'x86_64'
    # ReFrame itself is left as it was, and so is the file.
    assert autodetect._validate_info is validate
    assert json.loads((cache / 'processor.json').read_text()) == CACHED


def test_from_4_6_on_the_cached_topology_is_reframes_business(tmp_path, monkeypatch):
    cache = tmp_path / '.reframe' / 'topology' / 'sys-x86'
    cache.mkdir(parents=True)
    (cache / 'processor.json').write_text(json.dumps(CACHED))
    monkeypatch.setenv('HOME', str(tmp_path))
    assert 'processor' not in compat.adapt_configuration(configuration())['systems'][0][
        'partitions'][1]


# ---- references of 0 (4.8) -------------------------------------------------------------

CASES = [
    # value, reference, lower, upper
    *itertools.product([0.0, 0.5, -0.5], [0.0], [None, -0.1], [None, 0.0, 0.1]),
    *itertools.product([99.7, 99.8, 100.0, 200.0], [100.0], [None, -0.0025, -1, -2],
                       [None, 0.0, 0.5]),
    *itertools.product([-3.0, -2.0, -1.5], [-2.0], [None, -0.5, 0.1], [None, 0.1, 2.0]),
    # Not a number, infinities, and the exact bounds of 8 -0.25 % (site.bounds compares
    # them itself, with the bounds ReFrame computes: issue 39).
    *itertools.product([float('nan'), float('inf'), -float('inf'), 7.98, 8.0 * (1 - 0.0025),
                        8, 8.0 * (1 + 0.1)], [8.0], [None, -0.0025], [None, 0.1]),
]


def judged_by_reframe(value, ref, lower, upper):
    # Thresholds out of range: a SanityError up to 4.8, a ValueError since 4.9.
    try:
        return bool(sn.evaluate(sn.assert_reference(value, ref, lower, upper)))
    except (SanityError, ValueError) as err:
        return 'invalid' if 'invalid' in str(err) else False


def judged_by_the_site(value, ref, lower, upper):
    if threshold_problem(ref, lower, upper):
        return 'invalid'
    met = meets(value, ref, lower, upper)
    # the judges' way (judging.judge.verdict_of): a site.Ref's bounds, worked out once
    assert within(value, Bounds.of(ref, lower, upper)) == met
    return met


@pytest.mark.parametrize('value, ref, lower, upper', CASES)
def test_the_checks_judge_as_the_pinned_reframe(value, ref, lower, upper):
    # SiteReferences judges references of 0 itself before 4.8 with site.bounds: the rule
    # of the pinned ReFrame (4.10), case by case.
    assert judged_by_the_site(value, ref, lower, upper) == \
        judged_by_reframe(value, ref, lower, upper)


def test_nothing_of_reframe_is_replaced(running):
    before = sn.assert_reference
    running((4, 7, 3))
    assert not compat.judges_zero_references()
    import cobalt_bench.reframe  # noqa: F401  (every module of the package loaded)
    import cobalt_bench.reframe.site  # noqa: F401
    assert sn.assert_reference is before


# ---- the command line (launch) ----------------------------------------------------------

@pytest.mark.parametrize('args, extra', [
    (['-C', 'c.py', '-c', 'checks', '-r'], ['--save-log-files']),
    (['-c', 'checks', '--run', '--exec-policy', 'serial'], ['--save-log-files']),
    (['-c', 'checks', '-l'], []),
    (['-r', '--save-log-files'], []),
])
def test_before_4_6_a_run_saves_its_log_files(running, args, extra):
    assert launch.reframe_args(args) == args
    running((4, 5, 2))
    assert launch.reframe_args(args) == args + extra


# ---- scripts/reframe-venv (its usage; making a venv is .ci/run's and by hand) ---------------

def reframe_venv(*args):
    return subprocess.run([str(REFRAME_VENV), *args], capture_output=True, text=True,
                          timeout=60)


def test_the_venv_script_says_how_to_use_it():
    r = reframe_venv('--help')
    assert r.returncode == 0 and 'scripts/reframe-venv VERSION DIR' in r.stdout, r.stderr


@pytest.mark.parametrize('args, message', [
    ((), 'scripts/reframe-venv VERSION DIR'),
    (('4.5.2',), 'scripts/reframe-venv VERSION DIR'),
    (('4.x', '/tmp/x'), "'4.x' is not a ReFrame version"),
    (('--bogus',), "unknown option '--bogus'"),
    (('--oldest', 'extra'), '--oldest takes no argument'),
])
def test_the_venv_script_refuses_a_wrong_command_line(args, message):
    r = reframe_venv(*args)
    assert r.returncode == 2 and message in r.stderr, (r.returncode, r.stderr)


def test_the_venv_script_touches_neither_the_checkout_nor_a_foreign_directory(tmp_path):
    inside = REPO_ROOT / 'not-a-venv-here'
    r = reframe_venv('4.5.2', str(inside))
    assert r.returncode == 2 and 'inside the checkout' in r.stderr, r.stderr
    assert not inside.exists()
    (tmp_path / 'precious').write_text('keep me')
    r = reframe_venv('oldest', str(tmp_path))
    assert r.returncode == 2 and 'neither empty nor a venv' in r.stderr, r.stderr
    assert (tmp_path / 'precious').read_text() == 'keep me'


def test_the_venv_script_passes_shellcheck():
    if shutil.which('shellcheck') is None:
        pytest.skip('shellcheck not installed (Debian package shellcheck)')
    r = subprocess.run(['shellcheck', str(REFRAME_VENV)], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout
