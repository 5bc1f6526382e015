'''OSU micro-benchmarks: the output parser (on the SJTU document's tables and on real
outputs of OSU 5.3 and of every release from 5.6 to 7.5 we could build, tests/data/osu), the site `sjtu` (its references are the document's figures, its job
scripts the document's, checked through `reframe --dry-run`), and the checks run through
the local Slurm cluster against every OSU release the `local` site's Spack environment
builds, loaded as its Spack modules (the `spack_site` fixture; skipped, saying so, where
there is no Spack).'''

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from cobalt_bench.parsers import osu as osu_parse
from cobalt_bench.parsers import osu_install
from conftest import osu_releases

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), '..'))

DATA = os.path.join(REPO, 'tests', 'data', 'osu')
CHECKS = os.path.join(REPO, 'reframe_checks', 'osu.py')
SJTU = os.path.join(REPO, 'site-configs', 'sjtu')

REFRAME = [sys.executable, '-c',
           'import sys; from reframe.frontend.cli import main; '
           'sys.argv[0] = "reframe"; sys.exit(main())']

# The document's clusters: ReFrame partition, column in the comparison tables, mbw_mr file.
CLUSTERS = {
    'sjtu-siyuan1:p64c512g': (0, 'sjtu-mbw_mr-siyuan.txt'),
    'sjtu-pi2:cpu': (1, 'sjtu-mbw_mr-pi2.txt'),
    'sjtu-arm:default': (2, 'sjtu-mbw_mr-arm.txt'),
}
POWERS_1_4M = [1 << i for i in range(23)]


def data(name):
    return osu_parse.parse_file(os.path.join(DATA, name))


def read(path):
    with open(path) as fp:
        return fp.read()


# ---- the parser -----------------------------------------------------------------------

def test_sjtu_latency_table():
    table = data('sjtu-latency.txt')
    assert table.title == 'OSU MPI Latency Test'
    assert table.version == '' and table.major_version is None
    assert [c.name for c in table.columns] == ['Latency (us)'] * 3
    assert table.metrics() == ['latency'] and table.unit('latency') == 'us'
    assert table.sizes == [0] + POWERS_1_4M
    assert [table.column('latency', i)[0] for i in range(3)] == [0.79, 1.55, 1.27]
    assert [table.column('latency', i)[4194304] for i in range(3)] == [286.26, 393.98, 346.91]
    with pytest.raises(KeyError):
        table.column('latency', 3)


def test_sjtu_bcast_table():
    table = data('sjtu-bcast.txt')
    assert table.title == 'OSU MPI Broadcast Latency Test'
    assert [c.name for c in table.columns] == ['Avg Latency(us)'] * 3
    assert table.sizes == POWERS_1_4M[:21]
    assert [table.column('latency', i)[1048576] for i in range(3)] == [169.50, 780.35, 239.25]


@pytest.mark.parametrize('name,version', [('sjtu-mbw_mr-siyuan.txt', '5.7.1'),
                                          ('sjtu-mbw_mr-pi2.txt', '5.7.1'),
                                          ('sjtu-mbw_mr-arm.txt', '5.6.3'),
                                          ('osu-7.4-mbw_mr.txt', '7.4'),
                                          ('osu-5.3-mbw_mr.txt', '5.3')])
def test_mbw_mr_bandwidth_is_size_times_message_rate(name, version):
    # osu_mbw_mr prints both columns of one measurement: MB/s = size x messages/s / 10^6.
    # Every row of every output must agree (to the printed rounding), so a parser that
    # mixed up columns or rows fails here.
    table = data(name)
    assert table.title == 'OSU MPI Multiple Bandwidth / Message Rate Test'
    assert table.version == version
    assert table.params['pairs'] == '1' and table.params['window size'] == '64'
    assert table.metrics() == ['bandwidth', 'message_rate']
    assert (table.unit('bandwidth'), table.unit('message_rate')) == ('MB/s', 'messages/s')
    assert table.sizes[0] == 1 and len(table.sizes) >= 20
    bandwidth, rate = table.column('bandwidth'), table.column('message_rate')
    for size in table.sizes:
        # both columns are printed to 0.01: allow that rounding in each
        rounding = 0.0051 + size * 0.0051 / 1e6
        assert bandwidth[size] == pytest.approx(size * rate[size] / 1e6, abs=rounding), size


def test_osu_7_layout():
    latency = data('osu-7.4-latency.txt')
    assert (latency.title, latency.version, latency.major_version) == (
        'OSU MPI Latency Test', '7.4', 7)
    assert latency.params['Datatype'] == 'MPI_CHAR'
    assert latency.sizes == POWERS_1_4M            # 7.x: no size 0
    assert [c.name for c in latency.columns] == ['Avg Latency(us)']
    assert latency.metrics() == ['latency']

    full = data('osu-7.4-bcast-full.txt')           # -f
    assert [(c.metric, c.unit) for c in full.columns] == [
        ('latency', 'us'), ('min_latency', 'us'), ('max_latency', 'us'), ('iterations', '')]
    for size, (avg, low, high, iterations) in full.rows.items():
        assert low <= avg <= high and iterations == 100, size

    validated = data('osu-7.4-latency-validation.txt')   # -c
    assert validated.metrics() == ['latency', 'validation']
    assert set(validated.column('validation').values()) == {'Pass'}

    for name, title in [('bw', 'OSU MPI Bandwidth Test'),
                        ('bibw', 'OSU MPI Bi-Directional Bandwidth Test'),
                        ('bcast', 'OSU MPI Broadcast Latency Test'),
                        ('allreduce', 'OSU MPI Allreduce Latency Test'),
                        ('alltoall', 'OSU MPI All-to-All Personalized Exchange Latency Test')]:
        table = data(f'osu-7.4-{name}.txt')
        assert (table.title, table.version) == (title, '7.4')
        assert table.sizes[0] == 1 and all(v > 0 for row in table.rows.values() for v in row)


def test_osu_5_layout():
    latency = data('osu-5.3-latency.txt')
    assert (latency.version, latency.major_version) == ('5.3', 5)
    assert latency.sizes[0] == 0                   # 5.x measures size 0
    assert [c.name for c in latency.columns] == ['Latency (us)']
    assert data('osu-5.3-allreduce.txt').sizes[0] == 4   # 5.x allreduce counts floats
    assert data('osu-5.3-bcast.txt').sizes == POWERS_1_4M[:21]


# Our own runs, one output of each benchmark per release (tests/data/osu/<release>/,
# README there), and the flat osu-5.3-*/osu-7.4-* files: every release the parser has met.
RECORDED = {
    '5.3': {f'osu_{b}': f'osu-5.3-{b}.txt' for b in ('latency', 'mbw_mr', 'bcast', 'allreduce')},
    '7.4': {**{f'osu_{b}': f'osu-7.4-{b}.txt' for b in (
        'latency', 'bw', 'bibw', 'mbw_mr', 'bcast', 'allreduce', 'alltoall')},
        'osu_bcast-f': 'osu-7.4-bcast-full.txt', 'osu_latency-c': 'osu-7.4-latency-validation.txt'},
}
for _release in sorted(os.listdir(DATA)):
    if os.path.isdir(os.path.join(DATA, _release)):
        RECORDED[_release] = {n[:-4]: os.path.join(_release, n)
                              for n in sorted(os.listdir(os.path.join(DATA, _release)))
                              if n.endswith('.txt')}
RECORDED_FILES = [(rel, name, path) for rel, files in sorted(RECORDED.items())
                  for name, path in files.items()]
# Releases that print another version than their own (their configure.ac says so).
PRINTED_VERSION = {'6.0': '5.9', '7.0.1': '7.0', '7.1-1': '7.1'}


def test_recorded_outputs_span_the_release_families():
    # At least five releases over 5.x, 6.x and 7.x; for one release of each family, every
    # benchmark the checks run; the releases from 5.6 to 7.5 whose trees build here.
    assert len(RECORDED) >= 5, sorted(RECORDED)
    assert {'5.6.1', '5.7', '5.9', '6.0', '6.1', '6.2', '7.0.1', '7.1-1', '7.2', '7.3',
            '7.4', '7.5'} <= set(RECORDED), sorted(RECORDED)
    for family in '567':
        complete = [r for r in RECORDED if r.startswith(family) and
                    set(osu_parse.TITLES) <= set(RECORDED[r])]
        assert complete, f'no {family}.x release with every benchmark recorded'


@pytest.mark.parametrize('release,name,path', RECORDED_FILES,
                         ids=[f'{r}-{n}' for r, n, _ in RECORDED_FILES])
def test_every_recorded_release_parses(release, name, path):
    bench, _, option = name.partition('-')
    table = data(path)
    assert table.title == osu_parse.TITLES[bench]
    assert table.version == PRINTED_VERSION.get(release, release), (release, table.version)
    assert set(osu_parse.REQUIRED_METRICS[bench]) <= set(table.metrics())
    assert len(table.rows) >= 10
    assert all(s == 0 or s & (s - 1) == 0 for s in table.sizes), table.sizes
    # What the checks' sanity asks of a table: every default size they declare up to the
    # largest run (run without a smallest size, the release's own first size; size 0 is
    # not asked of 7.x), positive measurements.
    defaults = [s for s in osu_parse.DEFAULT_SIZES[bench] if s <= table.sizes[-1]]
    if option:   # run with -m MIN:MAX in some releases: from MIN on
        defaults = [s for s in defaults if s >= table.sizes[0]]
    missing = [s for s in defaults if s not in table.rows and
               not (s == 0 and table.major_version >= 7)]
    assert not missing, missing
    for row in table.rows.values():
        assert all(v > 0 for c, v in zip(table.columns, row)
                   if c.metric not in osu_parse.NOT_PERFORMANCE)
    if option == 'f':
        assert table.metrics() == ['latency', 'min_latency', 'max_latency', 'iterations']
        assert all(low <= avg <= high for avg, low, high, _ in table.rows.values())
    if option == 'c':
        assert set(table.column('validation').values()) == {'Pass'}
    if bench == 'osu_mbw_mr':
        assert (table.params['pairs'], table.params['window size']) == ('1', '64')
        # Both columns of one measurement (MB/s = size x messages/s / 10^6, each printed
        # to 0.01): a parser that took the wrong header or columns fails here.
        assert [c.name for c in table.columns] == ['MB/s', 'Messages/s']
        bandwidth, rate = table.column('bandwidth'), table.column('message_rate')
        for size in table.sizes:
            assert bandwidth[size] == pytest.approx(
                size * rate[size] / 1e6, abs=0.0051 + size * 0.0051 / 1e6), size
    if table.major_version >= 7 and table.version != '7.0':
        assert table.params['Datatype'] in ('MPI_CHAR', 'MPI_INT'), table.params


def test_datatype_line_between_header_and_rows():
    # OSU 7.1-7.3 point to point print `# Datatype:` after the column header: a parameter,
    # not a row, and the table is the rows after it.
    for release in ('7.1-1', '7.2', '7.3'):
        text = read(os.path.join(DATA, release, 'osu_latency-c.txt'))
        lines = text.splitlines()
        assert lines[1].startswith('# Size') and lines[2] == '# Datatype: MPI_CHAR.', lines[:3]
        table = osu_parse.parse(text)
        assert table.params == {'Datatype': 'MPI_CHAR'}
        assert [c.name for c in table.columns] == ['Latency (us)', 'Validation']
        assert table.sizes == [1 << i for i in range(13)]
        assert table.rows[1][0] == float(lines[3].split()[1])


def test_stray_header_before_the_mbw_mr_header():
    # OSU 5.6.x osu_mbw_mr prints a latency header, its parameters, then its own header:
    # the rows belong to the last header before them.
    text = read(os.path.join(DATA, '5.6.1', 'osu_mbw_mr.txt'))
    assert text.splitlines()[1] == '# Size          Latency (us)'
    table = osu_parse.parse(text)
    assert table.metrics() == ['bandwidth', 'message_rate']
    assert table.params == {'pairs': '1', 'window size': '64'}
    assert table.sizes == [1 << i for i in range(17)]


@pytest.mark.parametrize('path,known', [
    (os.path.join('6.2', 'osu_latency.txt'), None),
    # 7.2's own line there is known; another in its place is not.
    (os.path.join('7.2', 'osu_latency.txt'), '# Datatype: MPI_CHAR.\n'),
])
def test_a_line_the_parser_does_not_know_is_named(path, known):
    # A line between the column header and the rows that is no row: the error names it,
    # instead of a table "without rows".
    text = read(os.path.join(DATA, path))
    if known:
        text = text.replace(known, '', 1)
    odd = text.replace('# Size          Latency (us)\n',
                       '# Size          Latency (us)\n# Warmup iterations: 10\n', 1)
    assert odd != text
    with pytest.raises(osu_parse.OsuParseError,
                       match=r"line 3: not a row of the table under '# Size +Latency \(us\)': "
                             r"'# Warmup iterations: 10'"):
        osu_parse.parse(odd)


@pytest.mark.parametrize('text,message', [
    ('', 'no OSU table'),
    ('# OSU MPI Latency Test v7.4\nsrun: error: task 1 failed\n', 'no OSU table'),
    ('# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n', 'without rows'),
    ('# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n1    0.5    0.7\n',
     '2 values for 1 columns'),
    ('# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n1    nan?\n',
     'not a number'),
    ('# OSU MPI Latency Test v7.4\n# Size       Avg Latency(us)\n2    0.5\n1    0.5\n',
     'out of order'),
])
def test_malformed_output_is_an_error(text, message):
    with pytest.raises(osu_parse.OsuParseError, match=message):
        osu_parse.parse(text)


def test_table_ends_at_the_first_line_that_is_not_a_row():
    text = read(os.path.join(DATA, 'osu-7.4-latency.txt'))
    cut = text.replace('8192 ', 'srun: Job step aborted\n8192 ', 1)
    table = osu_parse.parse(cut)
    assert table.sizes[-1] == 4096


# ---- finding OSU in both layouts ------------------------------------------------------

@pytest.mark.parametrize('layout', [
    'libexec/osu-micro-benchmarks/mpi/pt2pt',    # make install, 5.x and 7.x
    'mpi/pt2pt',                                 # 5.x build tree
    'c/mpi/pt2pt/standard',                      # 7.x build tree
    '',                                          # a directory of binaries
])
def test_finder_knows_both_layouts(layout, tmp_path, monkeypatch):
    # An executable named osu_latency in each layout (the layout is what is tested); the
    # Python finder (ReFrame checks) and the shell one (job scripts) must both find it.
    root = tmp_path / 'osu'
    binary = root / layout / 'osu_latency'
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    monkeypatch.setenv('COBALT_OSU_PATH', f'/nonexistent:{root}')
    monkeypatch.setenv('PATH', '/usr/bin:/bin')
    assert osu_install.find('osu_latency') == str(binary)
    assert osu_install.find('osu_bcast') is None
    assert 'osu_bcast is neither on PATH nor under COBALT_OSU_PATH' in \
        osu_install.not_found_reason('osu_bcast')

    lib = os.path.join(REPO, 'jobs', 'lib', 'osu-common.sh')
    shell = subprocess.run(['bash', '-c', f'. {lib}; _osu_find osu_latency; '
                            '_osu_find osu_bcast || echo missing'],
                           text=True, capture_output=True, env=dict(os.environ), timeout=30)
    assert shell.stdout.split() == [str(binary), 'missing'], shell.stderr


# ---- site sjtu: references and job scripts --------------------------------------------

def sjtu_references():
    with open(os.path.join(SJTU, 'references.yaml')) as fp:
        return yaml.safe_load(fp)


def expected_sjtu_figures():
    '''{partition: {benchmark: {perf variable: figure}}} from the document's tables.'''
    latency, bcast = data('sjtu-latency.txt'), data('sjtu-bcast.txt')
    figures = {}
    for part, (column, mbw_file) in CLUSTERS.items():
        mbw = data(mbw_file)
        figures[part] = {
            'osu_latency': {f'latency_{s}': v
                            for s, v in latency.column('latency', column).items()},
            'osu_mbw_mr': {**{f'bandwidth_{s}': v for s, v in mbw.column('bandwidth').items()},
                           **{f'message_rate_{s}': v
                              for s, v in mbw.column('message_rate').items()}},
            'osu_bcast': {f'latency_{s}': v for s, v in bcast.column('latency', column).items()},
        }
    return figures


def test_sjtu_references_are_every_figure_of_the_document():
    refs = sjtu_references()
    tolerances = refs['tolerances']
    for check, benchmarks in [('OsuPt2Pt', ['osu_latency', 'osu_mbw_mr']),
                              ('OsuCollective', ['osu_bcast'])]:
        assert refs[check]['$index'] == ['$partition', 'benchmark']
        assert sorted(k for k in refs[check] if k != '$index') == sorted(CLUSTERS)

    for part, benchmarks in expected_sjtu_figures().items():
        for bench, figures in benchmarks.items():
            check = 'OsuCollective' if bench == 'osu_bcast' else 'OsuPt2Pt'
            entries = refs[check][part][bench]
            assert sorted(entries) == sorted(figures), (part, bench)
            for name, figure in figures.items():
                value, lower, upper, unit = entries[name]
                assert value == figure, (part, bench, name)
                if name.startswith('latency'):
                    tol = tolerances['bcast' if bench == 'osu_bcast' else 'latency']
                    assert (lower, upper, unit) == (None, tol, 'us')
                elif name.startswith('bandwidth'):
                    assert (lower, upper, unit) == (tolerances['bandwidth'], None, 'MB/s')
                else:
                    assert (lower, upper, unit) == (
                        tolerances['message_rate'], None, 'messages/s')


def reframe_env(results, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith('RFM_')}
    env.update(COBALT_BENCH_RESULTS=str(results), COBALT_BENCH_RUN_ID='run', **extra)
    return env


def run_reframe(args, results, env=None, timeout=600):
    env = env or reframe_env(results)
    return subprocess.run([*REFRAME, *args, '--nocolor'], cwd=str(results), env=env,
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=timeout)


def load_report(path):
    with open(path) as fp:
        report = json.load(fp)
    return [tc for run in report['runs'] for tc in run['testcases']]


# What the document's job scripts say, per system: the Slurm partition line, the modules
# in order, how the benchmark starts, and the limits the ARM cluster raises.
DOCUMENT_JOBS = {
    'sjtu-siyuan1': ('p64c512g', ['#SBATCH --partition=64c512g'],
                     ['openmpi', 'osu-micro-benchmarks/5.7.1-gcc-11.2.0-openmpi'],
                     'mpirun -np {n} {bench}', []),
    'sjtu-pi2': ('cpu', ['#SBATCH --partition=cpu'],
                 ['gcc/9.2.0', 'openmpi/4.0.5-gcc-9.2.0',
                  'osu-micro-benchmarks/5.7.1-gcc-9.2.0-openmpi-4.0.5'],
                 'mpirun -np {n} {bench}', []),
    'sjtu-arm': ('default', [], ['osu-micro-benchmarks/5.6.3-gcc-9.3.0-openmpi'],
                 'srun --mpi=pmi2 {bench}', ['ulimit -l unlimited', 'ulimit -s unlimited']),
}
BENCHMARKS = {'osu_latency': 2, 'osu_bw': 2, 'osu_bibw': 2, 'osu_mbw_mr': 2,
              'osu_bcast': 4, 'osu_allreduce': 4, 'osu_alltoall': 4}


@pytest.fixture(scope='module')
def sjtu_dry_runs(tmp_path_factory):
    '''One `reframe --dry-run` per SJTU system: {system: (testcases, output)}.'''
    runs = {}
    for system in DOCUMENT_JOBS:
        results = tmp_path_factory.mktemp(system)
        proc = run_reframe(['-C', os.path.join(SJTU, 'config.py'), '--system', system,
                            '-c', CHECKS, '--dry-run'], results, timeout=300)
        assert proc.returncode == 0, proc.stdout
        runs[system] = (load_report(results / 'sjtu' / 'run' / 'report.json'), proc.stdout)
    return runs


@pytest.mark.parametrize('system', list(DOCUMENT_JOBS))
def test_sjtu_dry_run_job_scripts(system, sjtu_dry_runs):
    testcases, output = sjtu_dry_runs[system]
    partition, sbatch_partition, modules, launch, limits = DOCUMENT_JOBS[system]
    assert sorted(tc['benchmark'] for tc in testcases) == sorted(BENCHMARKS), output
    for tc in testcases:
        bench, tasks = tc['benchmark'], BENCHMARKS[tc['benchmark']]
        assert (tc['system'], tc['partition'], tc['environ']) == (system, partition, 'osu')
        assert tc['result'] == 'pass', (tc['fail_phase'], tc['fail_reason'])
        script = read(os.path.join(tc['stagedir'], 'rfm_job.sh')).splitlines()
        sbatch = [line for line in script if line.startswith('#SBATCH')]
        # As the document: exclusive nodes, 2 tasks (4 for collectives), 1 per node.
        for line in [f'#SBATCH --ntasks={tasks}', '#SBATCH --ntasks-per-node=1',
                     '#SBATCH --exclusive', *sbatch_partition]:
            assert line in sbatch, (bench, line, script)
        assert not any('--partition' in line or line.startswith('#SBATCH -p')
                       for line in sbatch if line not in sbatch_partition), script
        body = [line for line in script if not line.startswith('#')]
        assert [line for line in body if line.startswith('module')] == [
            f'module load {m}' for m in modules], script
        assert [line for line in body if line.startswith('ulimit')] == limits
        assert body[-1] == launch.format(n=tasks, bench=bench), script


@pytest.mark.parametrize('system', list(DOCUMENT_JOBS))
def test_sjtu_dry_run_references_are_the_document_figures(system, sjtu_dry_runs):
    # ReFrame itself resolves the external references for each partition and benchmark;
    # its dry-run report has them beside every performance variable.
    testcases, _ = sjtu_dry_runs[system]
    part = f'{system}:{DOCUMENT_JOBS[system][0]}'
    figures = expected_sjtu_figures()[part]
    judged = set()
    for tc in testcases:
        perf = {k[len(part) + 1:]: v for k, v in tc['perfvalues'].items()}
        for name, (value, ref, lower, upper, unit, _) in perf.items():
            assert value is None   # a dry run measures nothing
            if tc['benchmark'] in figures and name in figures[tc['benchmark']]:
                assert ref == figures[tc['benchmark']][name], (tc['benchmark'], name)
                judged.add((tc['benchmark'], name))
            else:
                assert ref == 0, (tc['benchmark'], name)   # recorded, not judged

    expected = {(bench, name) for bench, names in figures.items() for name in names}
    # The document's latency table has size 0 and OSU 5.x measures it: all are judged.
    assert judged == expected


def test_sjtu_dry_run_writes_no_results(sjtu_dry_runs):
    for testcases, output in sjtu_dry_runs.values():
        assert 'DRY' in output
        for tc in testcases:
            assert not os.path.exists(os.path.join(tc['stagedir'], 'rfm_job.out'))


# ---- site local-slurm: real OSU through Slurm -------------------------------------------

LOCAL_SLURM = os.path.join(REPO, 'site-configs', 'local-slurm', 'config.py')
# Short runs: sizes 1 B to 4 KiB, 200 iterations.
SHORT = ['-S', 'osu_opts=-m 1:4096 -i 200 -x 20', '-S', 'sizes=1,8,1024,4096']


def tasks_of(tc):
    return '4' if tc['benchmark'] in ('osu_bcast', 'osu_allreduce', 'osu_alltoall') else '2'


def spack_osu(spack_site, release):
    '''ReFrame's options that load a release's Spack modules, as a site would.'''
    return ['--module-path', str(spack_site.lmod_core),
            *[a for m in spack_site.osu_module(release).split() for a in ('-m', m)]]


# Judged by the site's references (OSU latencies on a shared 2-core machine). Seen once in
# CI: OSU 7.0.1's osu_bibw itself segfaulting (rank 0, address 0) under Open MPI over TCP;
# Slurm's KillOnBadExit ends the step at once, and the one rerun covers it too.
@pytest.mark.measures
@pytest.mark.parametrize('release', osu_releases())
def test_local_slurm_runs_osu(release, tmp_path, slurm_cluster, spack_site):
    binaries = spack_site.osu_binaries(release)
    env = reframe_env(tmp_path, SLURM_CONF=slurm_cluster.env['SLURM_CONF'])
    proc = run_reframe(['-C', LOCAL_SLURM, '-c', CHECKS, '-r', '--exec-policy', 'serial',
                        *spack_osu(spack_site, release), *SHORT], tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    testcases = load_report(tmp_path / 'local-slurm' / 'run' / 'report.json')
    # Every OSU check, each passing sanity and judged by the site's references.
    assert sorted(tc['benchmark'] for tc in testcases) == sorted(BENCHMARKS)
    local_refs = yaml.safe_load(read(os.path.join(REPO, 'site-configs', 'local-slurm',
                                                  'references.yaml')))
    judged = 0
    for tc in testcases:
        assert tc['result'] == 'pass', (tc['fail_phase'], tc['fail_reason'])
        assert release.startswith(tc['osu_version']), tc['osu_version']
        perf = {k.split(':')[-1]: v for k, v in tc['perfvalues'].items()}
        metrics = {'osu_mbw_mr': ['bandwidth', 'message_rate']}.get(
            tc['benchmark'], ['bandwidth'] if tc['benchmark'] in ('osu_bw', 'osu_bibw')
            else ['latency'])
        # Every declared size of every metric, measured (and some judged: see
        # site-configs/local-slurm/references.yaml).
        sizes = [s for s in (1, 8, 1024, 4096)
                 if s >= osu_parse.DEFAULT_SIZES[tc['benchmark']][0]]
        assert sorted(perf) == sorted(f'{m}_{s}' for m in metrics for s in sizes)
        assert all(v[0] > 0 for v in perf.values()), perf
        # Judged by site-configs/local-slurm/references.yaml where it names a size run here.
        entry = 'OsuCollective' if tasks_of(tc) == '4' else 'OsuPt2Pt'
        refs = {k: v for k, v in local_refs[entry]['local-slurm:.*'][tc['benchmark']].items()
                if k in perf}
        judged += len(refs)
        assert all(perf[k][1] == ref[0] for k, ref in refs.items()), (refs, perf)
        script = read(os.path.join(tc['outputdir'], 'rfm_job.sh'))
        assert f'srun --mpi=pmix {binaries[tc["benchmark"]]} -m 1:4096' in script
        assert f'#SBATCH --ntasks={tasks_of(tc)}\n' in script
        # The OSU table is kept with the outputs, and it is what the check reported.
        table = osu_parse.parse_file(os.path.join(tc['outputdir'], 'rfm_job.out'))
        assert table.column(metrics[0])[8] == perf[f'{metrics[0]}_8'][0]
    assert judged >= 5, 'the references judged almost nothing'


def test_local_slurm_unmet_reference_and_missing_sizes_fail(tmp_path, slurm_cluster,
                                                            spack_site):
    osu = spack_osu(spack_site, osu_releases()[0])
    # A copy of the site whose latency reference no machine meets.
    site = tmp_path / 'site-configs'
    shutil.copytree(os.path.join(REPO, 'site-configs'), site,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm', '.spack*'))
    refs_path = site / 'local-slurm' / 'references.yaml'
    refs = yaml.safe_load(refs_path.read_text())
    refs['OsuPt2Pt']['local-slurm:.*']['osu_latency']['latency_8'] = [0.001, None, 0, 'us']
    refs_path.write_text(yaml.safe_dump(refs))
    env = reframe_env(tmp_path, SLURM_CONF=slurm_cluster.env['SLURM_CONF'],
                      COBALT_BENCH_ROOT=REPO)
    proc = run_reframe(['-C', str(site / 'local-slurm' / 'config.py'), '-c', CHECKS, '-r',
                        '-n', '%benchmark=osu_latency', *osu, *SHORT], tmp_path, env)
    assert proc.returncode != 0, proc.stdout
    (tc,) = load_report(tmp_path / 'local-slurm' / 'run' / 'report.json')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'performance'), proc.stdout
    assert 'latency_8' in tc['fail_reason']

    # Sizes the OSU options do not measure: a sanity failure that names them.
    results = tmp_path / 'sizes'
    results.mkdir()
    env['COBALT_BENCH_RESULTS'] = str(results)
    proc = run_reframe(['-C', LOCAL_SLURM, '-c', CHECKS, '-r', '-n', '%benchmark=osu_latency',
                        *osu, '-S', 'osu_opts=-m 1:4096 -i 100 -x 10', '-S', 'sizes=8,65536'],
                       results, env)
    (tc,) = load_report(results / 'local-slurm' / 'run' / 'report.json')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'sanity'), proc.stdout
    assert 'sizes [65536] missing from the output' in tc['fail_reason']


def test_without_osu_every_check_is_skipped(tmp_path):
    # No COBALT_OSU_PATH and no OSU on PATH: each check says what is missing. (Skipping
    # happens before anything is submitted: no Slurm needed.)
    path = ':'.join(d for d in os.environ.get('PATH', '').split(':')
                    if d and not os.path.exists(os.path.join(d, 'osu_latency')))
    env = reframe_env(tmp_path, PATH=path)
    env.pop('COBALT_OSU_PATH', None)
    proc = run_reframe(['-C', LOCAL_SLURM, '-c', CHECKS, '-r'], tmp_path, env)
    assert proc.returncode == 0, proc.stdout
    testcases = load_report(tmp_path / 'local-slurm' / 'run' / 'report.json')
    assert sorted(tc['benchmark'] for tc in testcases) == sorted(BENCHMARKS)
    assert {tc['result'] for tc in testcases} == {'skip'}
    for bench in BENCHMARKS:
        assert re.search(rf'SKIP .*%benchmark={bench} .*\[OSU micro-benchmarks not found: '
                         rf'{bench} is neither on PATH nor under COBALT_OSU_PATH', proc.stdout)
