"""cpu-test as a user runs it: the results block and the JSON document (its figures
consistent with one another), one thread per core of the process's affinity, each ISA
path, the desired rate, the burn-in, and the aarch64 build run under qemu-user."""
import json
import math
import os
import statistics
import subprocess

import pytest

from plugins.checkout import REPO_ROOT, ROOT, repo_version, results_block
from plugins.kernels import cpu_isas

CPU_TEST = os.path.join(ROOT, 'bin', 'cpu-test')
SHORT = ['--duration', '0.3', '--quiet']


def run(*args, env=None, timeout=120, prefix=()):
    if not os.path.exists(CPU_TEST):
        pytest.fail('bin/cpu-test is not built: run make first')
    return subprocess.run([*prefix, CPU_TEST, *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def run_doc(tmp_path, *args, rc=0, **kw):
    out = tmp_path / 'r.json'
    r = run(*args, '--json', str(out), **kw)
    assert r.returncode == rc, r.stdout + r.stderr
    return r, json.loads(out.read_text())


def test_version_and_help():
    r = run('--version')
    assert r.returncode == 0 and r.stdout.startswith(f'cpu-test (cobalt-bench) {repo_version()}')
    assert 'Test version 1.0' in r.stdout
    r = run('--help')
    assert r.returncode == 0
    for word in ('--duration', '--burn', '--interval', '--isa', '--threads', '--cpus',
                 '--desired-gflops', '--json', 'avx512', 'neon', 'scalar', 'bit for bit',
                 'Exit status'):
        assert word in r.stdout, word


def whole_intervals(doc):
    step = doc['config']['interval_s']
    return [i['node_gflops'] for i in doc['intervals'] if i['seconds'] >= 0.9 * step]


def test_results_block_and_document_agree(tmp_path):
    r, doc = run_doc(tmp_path, '--duration', '2', '--interval', '0.5', '--quiet')
    block = results_block(r.stdout)
    m = {k: v['value'] for k, v in doc['metrics'].items()}
    units = {k: v['unit'] for k, v in doc['metrics'].items()}
    assert doc['test'] == 'cpu-test' and doc['interrupted'] is False
    assert 1.9 < doc['duration_s'] < 2.5
    # the units of the kernel's table, written once in C
    described = json.loads(run('--describe').stdout)
    assert units == {d['name']: d['unit'] for d in described['metrics'] if d['name'] in units}
    assert units['node_gflops'] == 'GFLOP/s' and units['throttle_drop'] == '%'
    assert 'desired_gflops' not in m  # no rate asked, none judged
    assert doc['compliance'] == {'threshold': None, 'passed': True}
    # the config: the options from their table, then what the run derived
    c = doc['config']
    assert c['requested_duration_s'] == 2 and c['interval_s'] == 0.5
    assert c['requested_isa'] == 'auto' and c['isa'] == cpu_isas()[0]
    assert c['vector_bits'] == 64 * c['vector_doubles']
    assert c['flop_per_block'] == 2 * c['vector_doubles'] * c['accumulators'] * c['block_steps']
    assert c['clock_source'] in ('perf_event', 'tsc', 'none')
    # per core: every core of the affinity, one each; they add up to the node
    cores = doc['cores']
    assert [k['cpu'] for k in cores] == c['cpus'] and m['cores'] == len(cores)
    assert set(c['cpus']) <= os.sched_getaffinity(0)
    rates = [k['gflops'] for k in cores]
    assert all(x > 0 for x in rates)
    assert m['node_gflops'] == pytest.approx(sum(rates), rel=1e-9)
    assert m['core_gflops_min'] == min(rates) and m['core_gflops_max'] == max(rates)
    assert m['core_gflops_median'] == pytest.approx(statistics.median(rates), rel=1e-12)
    assert m['slowest_core_ratio'] == pytest.approx(100 * min(rates) / statistics.median(rates))
    # every block verified, none wrong; the blocks are the FLOP counted
    assert m['verification_errors'] == 0 and sum(k['verification_errors'] for k in cores) == 0
    assert m['verified_blocks'] == sum(k['verified_blocks'] for k in cores) > 0
    flop = sum(k['verified_blocks'] for k in cores) * c['flop_per_block']
    assert m['node_gflops'] * 1e9 * doc['duration_s'] <= flop  # blocks after the last sample too
    # the intervals: the first and the sustained rate, the drop between them
    whole = whole_intervals(doc)
    assert len(whole) >= 3 and doc['intervals'][-1]['end_s'] == pytest.approx(doc['duration_s'])
    assert m['first_interval_gflops'] == whole[0]
    assert m['sustained_gflops'] == statistics.median(whole[-max(1, len(whole) // 3):])
    assert m['throttle_drop'] == pytest.approx(100 * (whole[0] - m['sustained_gflops']) / whole[0])
    # the clock: the median core's, FLOP per cycle of it
    if c['clock_source'] == 'none':
        assert m['clock_ghz'] is None and m['flop_per_cycle'] is None
    else:
        assert 0.1 < m['clock_ghz'] < 10
        assert m['flop_per_cycle'] == pytest.approx(
            statistics.median(k['flop_per_cycle'] for k in cores))
    # the results block says the same, rounded
    assert block['Test version'] == '1.0'
    assert block['ISA'].startswith(f"{c['isa']}, {c['vector_bits']}-bit vectors")
    assert block['Node FLOP rate'] == f"{m['node_gflops']:.2f} GFLOP/s on {len(cores)} " \
                                      f"core{'s' if len(cores) > 1 else ''}"
    assert block['Slowest core'].endswith(f"{m['slowest_core_ratio']:.2f}% of the median core")
    assert block['Throttle drop'].startswith(f"{m['throttle_drop']:.2f}%")
    assert block['Errors'] == f"0 of {m['verified_blocks']} blocks verified"
    assert list(block)[-1] == 'Errors'


def test_one_thread_per_core_of_the_affinity(tmp_path):
    # what taskset (or a Slurm job's cpuset) gives the process is what it loads
    cpu = max(os.sched_getaffinity(0))
    _, doc = run_doc(tmp_path, *SHORT, prefix=['taskset', '-c', str(cpu)])
    assert doc['config']['cpus'] == [cpu] and doc['metrics']['cores']['value'] == 1
    _, doc = run_doc(tmp_path, *SHORT, '--threads', '1')
    assert len(doc['cores']) == 1 and doc['config']['requested_threads'] == 1
    cpu = min(os.sched_getaffinity(0))
    _, doc = run_doc(tmp_path, *SHORT, '--cpus', str(cpu))
    assert doc['config']['cpus'] == [cpu] and doc['config']['requested_cpus'] == [cpu]


def siblings_first():
    """The first CPU of each core of this process's affinity, from sysfs."""
    mine, first = sorted(os.sched_getaffinity(0)), []
    for cpu in mine:
        path = f'/sys/devices/system/cpu/cpu{cpu}/topology/core_cpus_list'
        try:
            text = open(path).read().strip()
        except OSError:
            first.append(cpu)
            continue
        sib = set()
        for part in text.split(','):
            lo, _, hi = part.partition('-')
            sib.update(range(int(lo), int(hi or lo) + 1))
        if min(s for s in sib if s in mine) == cpu:
            first.append(cpu)
    return first


def test_default_cores_are_one_cpu_per_core(tmp_path):
    _, doc = run_doc(tmp_path, *SHORT)
    assert doc['config']['cpus'] == siblings_first()


@pytest.mark.parametrize('isa', ['avx512', 'avx2', 'neon', 'scalar'])
def test_each_isa_runs_verified(tmp_path, isa):
    if isa not in cpu_isas():
        r = run('--isa', isa, *SHORT)
        assert r.returncode == 3 and r.stdout == '', r.stdout + r.stderr
        assert f'--isa {isa}: this CPU does not run it (it runs {", ".join(cpu_isas())})' \
            in r.stderr
        return
    _, doc = run_doc(tmp_path, '--isa', isa, *SHORT)
    lanes = {'avx512': 8, 'avx2': 4, 'neon': 2, 'scalar': 1}[isa]
    c = doc['config']
    assert c['requested_isa'] == isa == c['isa'] and c['vector_doubles'] == lanes
    assert doc['metrics']['verified_blocks']['value'] > 0
    assert doc['metrics']['verification_errors']['value'] == 0


def test_desired_rate_judges_the_slowest_core(tmp_path):
    r, doc = run_doc(tmp_path, *SHORT, '--desired-gflops', '100000', rc=1)
    m = doc['metrics']
    assert doc['compliance'] == {'threshold': 100000, 'passed': False}
    assert m['desired_gflops'] == {'value': 100000, 'unit': 'GFLOP/s'}
    assert m['percent_of_desired']['value'] == pytest.approx(
        100 * m['core_gflops_min']['value'] / 100000)
    assert results_block(r.stdout)['Desired rate'].startswith('100000.00 GFLOP/s per core')
    _, doc = run_doc(tmp_path, *SHORT, '--desired-gflops', '0.001')
    assert doc['compliance'] == {'threshold': 0.001, 'passed': True}


def test_burn_holds_the_load_and_reports_the_drop(tmp_path):
    r, doc = run_doc(tmp_path, '--burn', '0.05', '--interval', '0.5', '--quiet')
    c, m = doc['config'], doc['metrics']
    assert c['burn_minutes'] == 0.05 and c['requested_duration_s'] == pytest.approx(3)
    assert doc['duration_s'] == pytest.approx(3, abs=0.3)
    assert len(whole_intervals(doc)) >= 5
    assert math.isfinite(m['throttle_drop']['value'])
    assert m['throttle_drop']['unit'] == '%' and m['slowest_core_ratio']['unit'] == '%'
    for k in doc['cores']:
        assert k['first_interval_gflops'] > 0 and k['sustained_gflops'] > 0


# ---- the aarch64 build (make CC=aarch64-linux-gnu-gcc), run in the arm64 root -------------
CROSS = 'aarch64-linux-gnu-gcc'
ARM64_ROOT = str(REPO_ROOT / 'scripts' / 'arm64-root')


@pytest.fixture(scope='module')
def aarch64_cpu_test():
    """bin/aarch64/cpu-test and its unit test, cross-built here; skipped where there is no
    cross compiler or no arm64 root to run them in (`make arm` builds it). qemu-user
    alone (qemu-aarch64-static -L) does not start threads here: the root does."""
    if os.uname().machine == 'aarch64':
        pytest.skip('this machine is aarch64: the native tests cover it')
    if subprocess.run(['which', CROSS], capture_output=True).returncode != 0:
        pytest.skip(f'no cross compiler {CROSS}')
    if subprocess.run([ARM64_ROOT, 'check'], capture_output=True).returncode != 0:
        pytest.skip('no arm64 root to run aarch64 programs in (make arm)')
    r = subprocess.run(['make', '-C', ROOT, f'CC={CROSS}', 'bin/aarch64/cpu-test',
                        'build/aarch64/tests/test_cputest'], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return os.path.join(ROOT, 'bin', 'aarch64', 'cpu-test')


def in_root(*args, env=None):
    return subprocess.run([ARM64_ROOT, 'run', *args], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **(env or {})))


def test_aarch64_build_runs_neon_verified(aarch64_cpu_test, tmp_path):
    with open(aarch64_cpu_test, 'rb') as fp:
        assert fp.read(20)[18] == 183  # ELF e_machine: aarch64
    unit = in_root(os.path.join(ROOT, 'build', 'aarch64', 'tests', 'test_cputest'))
    assert unit.returncode == 0 and 'isa neon: 32 chains match' in unit.stdout, unit.stderr
    out = tmp_path / 'arm.json'
    r = in_root(aarch64_cpu_test, '-d', '0.5', '-q', '--json', str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc['config']['arch'] == 'aarch64' and doc['config']['isa'] == 'neon'
    assert doc['config']['vector_bits'] == 128
    assert doc['metrics']['verification_errors']['value'] == 0
    assert doc['metrics']['verified_blocks']['value'] > 0
    # under qemu no cycle counter: said, not made up
    assert doc['config']['clock_source'] == 'none' and doc['metrics']['clock_ghz']['value'] is None
    r = in_root(aarch64_cpu_test, '-d', '0.3', '-q', '--json', str(out),
                env={'CPU_TEST_FAULT': 'lane'})
    assert r.returncode == 1 and 'VERIFICATION FAILED' in r.stdout, r.stdout + r.stderr
    assert json.loads(out.read_text())['metrics']['verification_errors']['value'] == 1
    r = in_root(aarch64_cpu_test, '--isa', 'avx512', '-d', '0.3')
    assert r.returncode == 3 and 'it runs neon, scalar' in r.stderr
