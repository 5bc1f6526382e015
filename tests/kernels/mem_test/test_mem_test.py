"""mem-test as a user runs it: results block, JSON document, verification,
pacing, --max, and clear errors (exit 2) for bad input."""
import json
import os
import subprocess

import pytest

from plugins.checkout import ROOT, repo_version, results_block

MEM_TEST = os.path.join(ROOT, 'bin', 'mem-test')

# A workload this 2-core machine sustains easily, beside the other test workers' tests
# (make test runs four): 1 station at 2 Gbit/s. (At 8 Gbit/s CI saw sse2's run keep
# 95.9 % of its pace while they ran.)
SMALL = ['--stations', '1', '--desired-rate', '2', '--duration', '1', '--quiet']


def run(*args, env=None, timeout=120):
    if not os.path.exists(MEM_TEST):
        pytest.fail('bin/mem-test is not built: run make first')
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([MEM_TEST, *args], capture_output=True, text=True,
                          timeout=timeout, env=e)


def test_version_and_help():
    r = run('--version')
    assert r.returncode == 0
    version = repo_version()
    assert r.stdout.startswith(f'mem-test (cobalt-bench) {version}')
    r = run('--help')
    assert r.returncode == 0
    for word in ('--desired-rate', '--stations', '--max', '--numa-nodes', '--threshold',
                 '--json', '702 Gbit/s', 'Exit status'):
        assert word in r.stdout


def test_paced_run_results_and_json(tmp_path):
    out = tmp_path / 'r.json'
    r = run(*SMALL, '--json', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    block = results_block(r.stdout)
    assert block['Test version'] == '1.0'
    assert block['Desired speed'] == '2.00 Gbit/s'
    measured = float(block['Measured speed'].split()[0])
    late = float(block['Average late'].rstrip('%'))
    doc = json.loads(out.read_text())
    for key in ('test', 'version', 'host', 'started', 'duration_s', 'config', 'metrics',
                'compliance', 'domains'):
        assert key in doc
    m = doc['metrics']
    assert doc['test'] == 'mem-test'
    assert doc['interrupted'] is False  # a whole run (signals: test_faults.py)
    assert m['desired_speed'] == {'value': pytest.approx(2), 'unit': 'Gbit/s'}
    assert m['measured_speed']['unit'] == 'Gbit/s'
    assert abs(m['measured_speed']['value'] - measured) < 0.01
    assert abs(m['measured_speed_bytes']['value'] - measured * 1e9 / 8) < 1e7
    assert abs(m['average_late']['value'] - late) < 0.001
    assert m['verification_errors']['value'] == 0
    assert m['verified_blocks']['value'] > 0
    # the four operations add up to the total
    total = sum(m[f'{op}_speed']['value'] for op in ('write', 'read', 'copy', 'transpose'))
    assert abs(total - m['measured_speed']['value']) < 1e-6 * total + 1e-9
    # per-domain figures cover every NUMA node and add up to the node's stations
    assert sum(d['stations'] for d in doc['domains']) == 1
    assert doc['compliance'] == {'threshold': 99.75,
                                 'passed': m['percent_of_desired']['value'] >= 99.75}
    # paced: it cannot run faster than asked
    assert m['percent_of_desired']['value'] <= 100.5


def test_unreachable_rate_is_not_compliant(tmp_path):
    # 20000 Gbit/s of DRAM traffic is far beyond this machine: exit 1, late blocks.
    out = tmp_path / 'r.json'
    r = run('--stations', '2', '--desired-rate', '20000', '--duration', '1', '--quiet',
            '--json', str(out))
    assert r.returncode == 1, r.stdout
    doc = json.loads(out.read_text())
    assert doc['compliance']['passed'] is False
    assert doc['metrics']['percent_of_desired']['value'] < 99.75
    assert doc['metrics']['average_late']['value'] > 0


def test_threshold_option_changes_verdict(tmp_path):
    r = run(*SMALL, '--threshold', '1000')
    assert r.returncode == 1
    assert 'Measured speed' in r.stdout


def test_max_mode_reports_headroom(tmp_path):
    out = tmp_path / 'r.json'
    r = run('--max', '--stations', '2', '--duration', '1', '--quiet', '--json', str(out))
    assert r.returncode in (0, 1)
    doc = json.loads(out.read_text())
    assert doc['config']['max'] is True
    assert 'average_late' not in doc['metrics']
    assert results_block(r.stdout)['Average late'].startswith('n/a')
    # unpaced runs far above the tiny desired speed of a restricted workload
    r2 = run('--max', '--stations', '2', '--desired-rate', '1', '--duration', '1', '--quiet')
    assert r2.returncode == 0
    assert float(results_block(r2.stdout)['Measured speed'].split()[0]) > 1


def test_ops_restricts_workload(tmp_path):
    out = tmp_path / 'r.json'
    r = run('--stations', '1', '--ops', 'copy', '--duration', '0.5', '--quiet', '--json', str(out))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['ops'] == ['copy']
    assert 'transpose_speed' not in doc['metrics']
    assert doc['metrics']['desired_speed']['value'] == pytest.approx(18.0)  # 3x2x2 + 1.5x2x2


@pytest.mark.parametrize('op', ['write', 'read', 'copy', 'transpose'])
def test_verification_catches_a_skipped_operation(tmp_path, op):
    # MEM_TEST_FAULT skips the data movement of one block of that operation.
    out = tmp_path / 'r.json'
    r = run(*SMALL, '--json', str(out), env={'MEM_TEST_FAULT': op})
    assert r.returncode == 1, r.stdout
    assert 'VERIFICATION FAILED' in r.stdout
    doc = json.loads(out.read_text())
    assert doc['metrics']['verification_errors']['value'] == 1
    assert doc['compliance']['passed'] is False


def cpu_flags():
    with open('/proc/cpuinfo') as fp:
        for line in fp:
            if line.startswith(('flags', 'Features')):
                return set(line.split(':', 1)[1].split())
    return set()


def kernel_levels():
    """The kernel levels mem-test can run on this machine, lowest first."""
    if os.uname().machine != 'x86_64':
        return ['generic']
    flags = cpu_flags()
    return ['generic', 'sse2'] + (['avx2'] if 'avx2' in flags else []) + \
        (['avx512'] if 'avx512f' in flags else [])


@pytest.mark.parametrize('kernels', ['generic', 'sse2', 'avx2', 'avx512'])
def test_each_kernel_path_is_verified_every_block(tmp_path, kernels):
    # MEM_TEST_KERNELS forces a path; MEM_TEST_FAULT=transpose-element lets one block's
    # corner turn run on it and corrupts one transposed element: the check must catch it.
    if kernels not in kernel_levels():
        pytest.skip(f'this CPU does not run the {kernels} kernels')
    out = tmp_path / 'clean.json'
    r = run(*SMALL, '--ops', 'copy,transpose', '--json', str(out),
            env={'MEM_TEST_KERNELS': kernels})
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['kernels'] == kernels
    assert doc['metrics']['verification_errors']['value'] == 0
    assert doc['metrics']['verified_blocks']['value'] > 0
    out = tmp_path / 'fault.json'
    r = run(*SMALL, '--ops', 'transpose', '--json', str(out),
            env={'MEM_TEST_KERNELS': kernels, 'MEM_TEST_FAULT': 'transpose-element'})
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'VERIFICATION FAILED' in r.stdout
    doc = json.loads(out.read_text())
    assert doc['config']['kernels'] == kernels
    assert doc['metrics']['verification_errors']['value'] == 1
    assert doc['compliance']['passed'] is False


def test_kernels_default_to_the_best_and_refuse_unknown_or_missing(tmp_path):
    out = tmp_path / 'r.json'
    r = run(*SMALL, '--ops', 'transpose', '--json', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(out.read_text())['config']['kernels'] == kernel_levels()[-1]
    r = run(*SMALL, env={'MEM_TEST_KERNELS': 'neon9'})
    assert r.returncode == 2 and 'MEM_TEST_KERNELS=neon9: expected generic, sse2, avx2 or avx512' in r.stderr
    missing = [k for k in ('avx2', 'avx512') if k not in kernel_levels()]
    if not missing:
        pytest.skip('this CPU runs every kernel level')
    r = run(*SMALL, env={'MEM_TEST_KERNELS': missing[-1]})
    assert r.returncode == 2, r.stdout + r.stderr
    assert f'MEM_TEST_KERNELS={missing[-1]}: this CPU does not have that instruction set' in r.stderr
    assert 'Test results' not in r.stdout


@pytest.mark.parametrize('args, message', [
    (['--bogus'], "unknown option '--bogus'"),
    (['--desired-rate', 'fast'], "invalid value 'fast' for --desired-rate"),
    (['--desired-rate', '-5'], "invalid value '-5' for --desired-rate"),
    (['--duration', '-1'], "invalid value '-1' for --duration"),
    (['--duration', 'abc'], "invalid value 'abc' for --duration"),
    (['--threads-per-domain', '0'], "invalid value '0' for --threads-per-domain"),
    (['--stations', '0'], "invalid value '0' for --stations"),
    (['--numa-nodes', '4096'], 'NUMA node 4096 does not exist'),
    (['--numa-nodes', '0,,1'], "invalid list '0,,1' for --numa-nodes"),
    (['--ops', 'scatter'], "invalid operation 'scatter'"),
    (['--packet-size', '9001'], '--packet-size must be a multiple of 8'),
    (['--desired-rate', '5', '--input-rate', '3'], 'give one'),
    (['--json', '/nonexistent/dir/r.json'], 'cannot write --json'),
    (['--duration'], "option '--duration' needs a value"),
    (['extra'], "unexpected argument 'extra'"),
])
def test_bad_input_exits_2(args, message):
    r = run(*args)
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert message in r.stderr
    assert 'Test results' not in r.stdout


def test_failed_run_keeps_earlier_result(tmp_path):
    out = tmp_path / 'r.json'
    out.write_text('{"earlier": true}\n')
    r = run('--bogus', '--json', str(out))
    assert r.returncode == 2
    assert json.loads(out.read_text()) == {'earlier': True}
    assert os.listdir(tmp_path) == ['r.json']  # no temporary left behind


def test_numa_node_selection_and_threads(tmp_path):
    out = tmp_path / 'r.json'
    r = run(*SMALL, '--numa-nodes', '0', '--threads-per-domain', '1', '--json', str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [d['numa_node'] for d in doc['domains']] == [0]
    assert len(doc['domains'][0]['cpus']) == 1
    assert doc['config']['threads'] == 1


def test_only_the_cpus_of_its_affinity_are_used(tmp_path):
    '''The CPUs a job got (its affinity: taskset, Slurm's task plugins, mpirun's binding)
    are all mem-test uses: a node that lost half of its CPUs to its jobs measures half.'''
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip('one CPU: no part of the machine to bind to')
    out = tmp_path / 'one.json'
    proc = subprocess.run(['taskset', '-c', str(cpus[-1]), os.path.join(ROOT, 'bin', 'mem-test'),
                           '--max', '--stations', '1', '--duration', '0.2', '--json', str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['threads'] == 1, doc['config']
    assert [d['cpus'] for d in doc['domains']] == [[cpus[-1]]], doc['domains']
    assert f'1 thread on CPUs {cpus[-1]},' in proc.stdout, proc.stdout


def test_band_height_is_the_cpus_own_unless_forced(tmp_path):
    # The table by microarchitecture (memops.c, tuning_here): on AMD CPUs with AVX-512
    # (Zen 4 and later) 16-row bands and a prefetch 256 bytes ahead; on Intel CPUs with
    # AMX (Sapphire Rapids and later; /proc/cpuinfo's amx_tile flag) 32-row bands, 768
    # bytes, and the copy's source prefetched 768 bytes ahead; 64 rows and 768 bytes
    # elsewhere, the copy without a prefetch. The document names the row.
    # MEM_TEST_BAND_ROWS forces a height, verified like any other; anything else is exit 2.
    cpuinfo = open('/proc/cpuinfo').read()
    flags = cpu_flags()
    avx512 = 'avx512' in kernel_levels()
    out = tmp_path / 'own.json'
    r = run(*SMALL, '--ops', 'transpose', '--json', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    if 'AuthenticAMD' in cpuinfo and avx512:
        own = ('amd-avx512', 16, 256, 0)
    elif 'GenuineIntel' in cpuinfo and avx512 and 'amx_tile' in flags:
        own = ('intel-amx', 32, 768, 768)
    else:
        own = ('default', 64, 768, 0)
    config = json.loads(out.read_text())['config']
    assert (config['transpose_tuning'], config['transpose_band_rows'],
            config['transpose_prefetch_bytes'], config['copy_prefetch_bytes']) == own
    for rows in ('8', '32'):
        out = tmp_path / f'{rows}.json'
        r = run(*SMALL, '--ops', 'transpose', '--json', str(out),
                env={'MEM_TEST_BAND_ROWS': rows, 'MEM_TEST_FAULT': 'transpose-element'})
        assert r.returncode == 1, r.stdout + r.stderr
        doc = json.loads(out.read_text())
        assert doc['config']['transpose_band_rows'] == int(rows)
        assert doc['config']['transpose_tuning'] == own[0]  # the height alone is forced
        assert doc['metrics']['verification_errors']['value'] == 1
    for bad in ('24', 'sixteen', '-8'):
        r = run(*SMALL, env={'MEM_TEST_BAND_ROWS': bad})
        assert r.returncode == 2, r.stdout + r.stderr
        assert f'MEM_TEST_BAND_ROWS={bad}: not one of the band heights 8, 16, 32, 64' in r.stderr
