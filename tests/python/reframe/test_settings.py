'''The site settings (cobalt_bench.reframe.settings): the partition `extras` keys the checks
read, declared once with type and default. An unknown key or a value of the wrong type is
a ConfigError naming the partition, the key and what is allowed, both from the table
itself and through real ReFrame runs of the checks with a generated site configuration;
every site configuration of the repository passes; the checks read extras only through
the table; what follows from a kernel's name is derived by the base class; a check file
imports only reframe and cobalt_bench.'''

import ast
import glob
import json
import os
import re
import subprocess

import pytest
from reframe.core.exceptions import ConfigError

from cobalt_bench.reframe import settings
from plugins.checkout import REFRAME, ROOT

CHECKS = os.path.join(ROOT, 'reframe_checks')


# ---- the table ------------------------------------------------------------------------

def ours(**settings_):
    """A partition's extras with cobalt-bench's settings in their namespace."""
    return {'cobalt_bench': settings_}


def test_unknown_key_is_rejected_naming_partition_key_and_the_allowed_keys():
    with pytest.raises(ConfigError) as err:
        settings.check_extras(ours(mem_test_opts='', mem_tset_opts='-s 1'), 'site:part')
    msg = str(err.value)
    assert "partition 'site:part': extras['cobalt_bench']: unknown key 'mem_tset_opts'" in msg
    assert "did you mean 'mem_test_opts'?" in msg
    for key in ('mem_test_opts', 'osu_collective_tasks', 'eth_test_interfaces', 'dolphin'):
        assert key in msg


@pytest.mark.parametrize('key, value, expected', [
    ('osu_collective_tasks', '4', 'int'),          # a number as a string
    ('linktest_tasks', True, 'int'),               # a bool is not a task count
    ('mem_test_opts', ['--stations', '1'], 'str'),  # options are one string
    ('eth_test_interfaces', 'lo', 'List[str]'),    # one interface, not a list of them
    ('mpi_launcher_options', [1], 'List[str]'),
    ('osu_env_vars', {'OMPI_MCA_x': 1}, 'Dict[str,str]'),
    ('osu_sizes', ['8'], 'List[int] or None'),
    ('mem_test_opts', None, 'str'),                # None only where the default is None
])
def test_wrongly_typed_value_is_rejected_naming_key_and_type(key, value, expected):
    with pytest.raises(ConfigError) as err:
        settings.check_extras(ours(**{key: value}), 'site:part')
    msg = str(err.value)
    assert (f"partition 'site:part': extras['cobalt_bench'][{key!r}] must be {expected}, "
            "not ") in msg
    assert repr(value) in msg


def test_dolphin_keys_are_checked_too():
    good = {'nodes': {'a': 4, 'b': 8}, 'pair': ['a', 'b'], 'run_on': '',
            'tools': {'scipp': '/opt/DIS/bin/scipp'}, 'server_start_s': 2.5}
    settings.check_extras(ours(dolphin=good), 'site:part')
    with pytest.raises(ConfigError, match=r"extras\['cobalt_bench'\]\['dolphin'\]: unknown key "
                                          r"'node' \(did you mean 'nodes'\?\)"):
        settings.check_extras(ours(dolphin={'node': {'a': 4}}), 'site:part')
    with pytest.raises(ConfigError, match=r"\['dolphin'\]\['nodes'\] must be "
                                          r"Dict\[str,int\], not dict \{'a': '4'\}"):
        settings.check_extras(ours(dolphin={'nodes': {'a': '4'}}), 'site:part')


def test_valid_extras_pass_and_absent_keys_take_their_default():
    settings.check_extras({**ours(mem_test_opts='--stations 1', osu_sizes=None,
                                  osu_collective_tasks=4, ib_ports=['mlx5_0:1']),
                           # ReFrame adds these two to every partition itself
                           'scheduler': 'local', 'launcher': 'local'}, 'site:part')
    assert settings.value({}, 'linktest_opts') == '-w 2 -n 4 -s 16777216'
    assert settings.value({}, 'osu_collective_tasks') == 4
    assert settings.value(ours(osu_collective_tasks=2), 'osu_collective_tasks') == 2
    assert settings.value({}, 'dolphin')['run_on'] == 'ssh -o BatchMode=yes {host}'
    assert settings.value(ours(dolphin={'run_on': ''}), 'dolphin')['run_on'] == ''
    for s in settings.SETTINGS.values():
        assert s.doc and (s.default is None or s.accepts(s.default)), s.name


def test_other_suites_keys_are_left_alone():
    # EESSI-style extras beside cobalt-bench's namespace, and a namespace-less partition
    foreign = {'mem_per_node': 512, 'gpu_vendor': 'nvidia', 'mem_tset_opts': 3}
    settings.check_extras({**foreign, **ours(mem_test_opts='-d 1')}, 'site:part')
    settings.check_extras(foreign, 'site:part')
    assert settings.value(foreign, 'mem_test_opts') == settings.SETTINGS['mem_test_opts'].default


def test_keys_outside_the_namespace_are_never_read_whatever_their_names():
    # cobalt-bench's names written flat (the layout before the namespace) are another
    # suite's keys now: neither read nor checked.
    flat = {'osu_collective_tasks': '2', 'mem_per_node': 512}
    settings.check_extras(flat, 'site:part')
    assert settings.value(flat, 'osu_collective_tasks') == \
        settings.SETTINGS['osu_collective_tasks'].default


def test_a_namespace_that_is_not_a_mapping_is_an_error():
    with pytest.raises(ConfigError, match=r"extras\['cobalt_bench'\] must be a dict"):
        settings.check_extras({'cobalt_bench': ['mem_test_opts']}, 'site:part')


# ---- a kernel's typed options (checked against its own --describe) --------------------

def test_typed_kernel_options_are_checked_against_the_kernels_description():
    settings.check_extras(ours(mem_test={'stations': 1, 'desired_rate': 8, 'duration': '2s',
                                         'max': False, 'numa_nodes': [0]}), 'site:part')
    assert settings.SETTINGS['mem_test'].program == 'mem-test'
    assert settings.SETTINGS['mem_capacity'].program == 'mem-test'
    assert settings.SETTINGS['linktest'].program == 'cb-linktest'


@pytest.mark.parametrize('options, message', [
    ({'statons': 1}, "['mem_test']: 'statons' is no option of mem-test (did you mean "
                     "'stations'?)"),
    ({'stations': 0}, "['mem_test']['stations']: 0 is out of range: mem-test --stations "
                      "takes 1 to 100000"),
    ({'desired_rate': 1e9}, "['mem_test']['desired_rate']: 1000000000.0 is out of range: "
                            "mem-test --desired-rate takes 1e-06 to 1e+07 Gbit/s"),
    ({'stations': '1'}, "['mem_test']['stations']: mem-test --stations takes int (int), "
                        "not str '1'"),
    ({'max': 'yes'}, "['mem_test']['max']: mem-test --max takes flag (bool), not str 'yes'"),
    ({'json': 'x.json'}, "'json' is no option of mem-test"),    # the check's own
])
def test_a_typed_option_that_is_wrong_names_partition_option_and_range(options, message):
    with pytest.raises(ConfigError) as err:
        settings.check_extras(ours(mem_test=options), 'site:part')
    assert str(err.value).startswith("partition 'site:part': extras['cobalt_bench']"), err.value
    assert message in str(err.value), err.value


# ---- through ReFrame --------------------------------------------------------------------

SITE = '''from cobalt_bench.reframe.site import Site
SITE = Site('settings', __file__)
site_configuration = {{
    'systems': [{{
        'name': 'settings', 'hostnames': ['.*'], 'modules_system': 'nomod',
        'prefix': SITE.prefix,
        'partitions': [
            {{'name': 'good', 'scheduler': 'local', 'launcher': 'local',
              'environs': ['builtin'],
              'extras': {{'cobalt_bench': {{'mem_test_opts': '--duration 1'}}}}}},
            {{'name': 'typo', 'scheduler': 'local', 'launcher': 'local',
              'environs': ['builtin'], 'extras': {extras!r}}},
        ],
    }}],
    'general': SITE.general(),
}}
'''


def reframe(tmp_path, extras, checks, *options, path=None):
    site = tmp_path / 'site'
    site.mkdir(exist_ok=True)
    (site / 'config.py').write_text(SITE.format(extras=extras))
    (site / 'references.yaml').write_text('{}\n')    # nothing judged
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path / 'results'), COBALT_BENCH_RUN_ID='run')
    if path:
        env['PATH'] = path
    return subprocess.run([*REFRAME, '-C', str(site / 'config.py'), '-c', str(checks),
                           '--nocolor', *options], cwd=str(tmp_path), env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)


def test_reframe_reports_an_unknown_key_and_generates_no_check(tmp_path):
    proc = reframe(tmp_path, ours(mem_tset_opts='--duration 1'),
                   os.path.join(CHECKS, 'memory.py'), '-l')
    out = proc.stdout
    assert ("skipping test 'MemTest': config error: partition 'settings:typo': "
            "extras['cobalt_bench']: unknown key 'mem_tset_opts' (did you mean "
            "'mem_test_opts'?)") in out, out
    assert 'Found 0 check(s)' in out, out
    # the same configuration without the typo generates it
    proc = reframe(tmp_path, ours(mem_test_opts='--duration 1'),
                   os.path.join(CHECKS, 'memory.py'), '-l')
    assert '- MemTest /' in proc.stdout and 'config error' not in proc.stdout, proc.stdout


def test_reframe_reports_a_wrongly_typed_value_for_every_family(tmp_path):
    proc = reframe(tmp_path, ours(osu_collective_tasks='4'), CHECKS, '-l')
    out = proc.stdout
    for check in ('MemTest', 'OsuCollective', 'IbWriteBw', 'DolphinStatic', 'Preflight'):
        assert (f"skipping test '{check}': config error: partition 'settings:typo': "
                "extras['cobalt_bench']['osu_collective_tasks'] must be int, not str '4'"
                ) in out, out
    # EthTest's parameters come from the settings: its file is not loaded
    assert re.search(r"skipping test file '\S*reframe_checks/network\.py': config error: "
                     r"partition 'settings:typo': extras\['cobalt_bench'\]"
                     r"\['osu_collective_tasks'\] must be int", out), out
    assert 'Found 0 check(s)' in out, out


@pytest.mark.parametrize('config', sorted(glob.glob(os.path.join(ROOT, 'site-configs', '*',
                                                                 'config.py'))))
def test_every_site_configuration_is_valid(config, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run([*REFRAME, '-C', config, '-c', CHECKS, '-l', '--nocolor'],
                          cwd=str(tmp_path), env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert 'config error' not in proc.stdout and 'skipping' not in proc.stdout, proc.stdout
    assert '- MemTest /' in proc.stdout


def test_kernel_name_gives_executable_json_file_and_setting(tmp_path):
    proc = reframe(tmp_path, {}, CHECKS, '--describe')
    described = {t['name']: t for t in json.loads(proc.stdout[proc.stdout.index('['):])}
    mem = described['MemTest']
    assert (mem['executable'], mem['json_file'], mem['opts_extra']) == (
        'mem-test', 'mem-test.json', 'mem_test_opts')
    eth = [t for t in described.values() if t['name'].startswith('EthTest')][0]
    assert (eth['executable'], eth['json_file'], eth['opts_extra']) == (
        'eth-test-receive', 'eth-test-receive.json', 'eth_test_receive_opts')
    # where a check differs from its kernel's name it says so
    pre = described['Preflight']
    assert (pre['executable'], pre['json_file'], pre['opts_extra']) == (
        'cobalt-bench preflight', 'preflight.json', 'preflight_opts')


# ---- the check files ------------------------------------------------------------------------

CHECK_FILES = sorted(glob.glob(os.path.join(CHECKS, '*.py')))


@pytest.mark.parametrize('path', CHECK_FILES, ids=os.path.basename)
def test_a_check_file_imports_only_reframe_and_cobalt_bench(path):
    with open(path) as fp:
        tree = ast.parse(fp.read(), path)
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported
    assert all(m.split('.')[0] in ('reframe', 'cobalt_bench') for m in imported), imported


def test_checks_read_extras_only_through_the_settings_table():
    sources = CHECK_FILES + glob.glob(os.path.join(ROOT, 'python', 'cobalt_bench', 'reframe',
                                                   '*.py'))
    read = set()
    for path in sources:
        with open(path) as fp:
            code = '\n'.join(line for line in fp if not line.lstrip().startswith('#'))
        if not path.endswith('settings.py'):    # the table reads them for all
            assert '.extras' not in code, f'{path} reads extras around the settings table'
        read.update(re.findall(r"site_setting\('(\w+)'\)", code))
        read.update(re.findall(r"values_of_partitions\('(\w+)'\)", code))
    assert read, 'no check reads a site setting?'
    assert read <= set(settings.SETTINGS), read - set(settings.SETTINGS)


# ---- options are arguments, never shell ------------------------------------------------

HOSTILE = ['$(touch {mark})', 'a;touch {mark}', '`touch {mark}`', 'x|touch {mark}',
           'a\ntouch {mark}', "it's", 'q"uote\\d', '&& touch {mark}', '$((1+1))']


@pytest.mark.parametrize('word', HOSTILE)
def test_an_option_word_reaches_the_program_as_it_is(word, tmp_path):
    mark = tmp_path / 'ran'
    word = word.format(mark=mark)
    proc = subprocess.run(['bash', '-c', 'printf "%s\\0" ' + settings.shell_arg(word)],
                          text=True, capture_output=True, timeout=30)
    assert proc.stdout == word + '\0' and not mark.exists()


def test_the_jobs_environment_still_expands_in_options():
    opts = '-L $LIDS --name ${NAME}x $(id)'
    words = ' '.join(settings.shell_args(opts))
    proc = subprocess.run(['bash', '-c', f'printf "%s\\n" {words}'], text=True,
                          capture_output=True, timeout=30,
                          env={'LIDS': '1,2', 'NAME': 'n', 'PATH': os.environ['PATH']})
    assert proc.stdout.splitlines() == ['-L', '1,2', '--name', 'nx', '$(id)']


def test_a_site_with_typed_kernel_options_runs_them(tmp_path):
    # MemTest on a partition whose mem-test options are typed: the job runs mem-test with
    # them as arguments, after the options string (here the default, '').
    extras = ours(mem_test={'stations': 1, 'desired_rate': 1, 'duration': 1})
    env_path = os.path.join(ROOT, 'bin') + os.pathsep + os.environ.get('PATH', '')
    proc = reframe(tmp_path, extras, os.path.join(CHECKS, 'memory.py'), '-r',
                   '--system', 'settings:typo', '-n', '^MemTest$', path=env_path)
    assert 'PASSED' in proc.stdout and 'FAILED' not in proc.stdout, proc.stdout
    scripts = glob.glob(str(tmp_path / 'results' / 'settings' / 'run' / '**' / 'rfm_job.sh'),
                        recursive=True)
    assert scripts, proc.stdout
    text = open(scripts[0]).read()
    assert 'mem-test --stations 1 --desired-rate 1 --duration 1 --json mem-test.json' in text, \
        text
