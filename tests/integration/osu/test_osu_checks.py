'''The OSU checks (reframe_checks/osu.py): the site `sjtu` (its references are the
document's figures, its job scripts the document's, checked through `reframe --dry-run`),
and the checks run through the local Slurm cluster against every OSU release the `local`
site's Spack environment builds, loaded as its Spack modules (the `spack_site` fixture,
marked needs_setup('spack'): skipped, naming `scripts/spack-offline env`, where the offline
Spack is not prepared).'''

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cobalt_bench.tools import osu as osu_parse
from plugins.checkout import DATA, REFRAME, ROOT
from plugins.spack import osu_releases

CHECKS = os.path.join(ROOT, 'reframe_checks', 'osu.py')
SJTU = os.path.join(ROOT, 'site-configs', 'sjtu')

# The document's clusters: ReFrame partition, column in the comparison tables, mbw_mr file.
CLUSTERS = {
    'sjtu-siyuan1:p64c512g': (0, 'sjtu-mbw_mr-siyuan.txt'),
    'sjtu-pi2:cpu': (1, 'sjtu-mbw_mr-pi2.txt'),
    'sjtu-arm:default': (2, 'sjtu-mbw_mr-arm.txt'),
}


def data(name):
    """One of the SJTU document's tables (tests/data/osu), parsed."""
    return osu_parse.parse_file(DATA / 'osu' / name)


def read(path):
    return Path(path).read_text()


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

LOCAL_SLURM = os.path.join(ROOT, 'site-configs', 'local-slurm', 'config.py')
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
@pytest.mark.needs_setup('spack')
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
    local_refs = yaml.safe_load(read(os.path.join(ROOT, 'site-configs', 'local-slurm',
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


@pytest.mark.needs_setup('spack')
def test_local_slurm_unmet_reference_and_missing_sizes_fail(tmp_path, slurm_cluster,
                                                            spack_site):
    osu = spack_osu(spack_site, osu_releases()[0])
    # A copy of the site whose latency reference no machine meets.
    site = tmp_path / 'site-configs'
    shutil.copytree(os.path.join(ROOT, 'site-configs'), site,
                    ignore=shutil.ignore_patterns('__pycache__', 'cluster', 'slurm', '.spack*'))
    refs_path = site / 'local-slurm' / 'references.yaml'
    refs = yaml.safe_load(refs_path.read_text())
    refs['OsuPt2Pt']['local-slurm:.*']['osu_latency']['latency_8'] = [0.001, None, 0, 'us']
    refs_path.write_text(yaml.safe_dump(refs))
    env = reframe_env(tmp_path, SLURM_CONF=slurm_cluster.env['SLURM_CONF'],
                      COBALT_BENCH_ROOT=ROOT)
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
