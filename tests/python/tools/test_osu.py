'''OSU micro-benchmarks: the output parser (on the SJTU document's tables and on real
outputs of OSU 5.3 and of every release from 5.6 to 7.5 we could build, tests/data/osu),
and the finder of an OSU install (cobalt_bench.tools.osu_install and the job scripts'
jobs/lib/osu-common.sh). The checks (site `sjtu`, and real OSU through the local Slurm
cluster): tests/integration/osu/.'''

import os
import subprocess

import pytest

from cobalt_bench.tools import osu as osu_parse
from cobalt_bench.tools import osu_install
from plugins.checkout import DATA, ROOT

DATA = str(DATA / 'osu')
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

    lib = os.path.join(ROOT, 'jobs', 'lib', 'osu-common.sh')
    shell = subprocess.run(['bash', '-c', f'. {lib}; _osu_find osu_latency; '
                            '_osu_find osu_bcast || echo missing'],
                           text=True, capture_output=True, env=dict(os.environ), timeout=30)
    assert shell.stdout.split() == [str(binary), 'missing'], shell.stderr
