'''What gpu-copy and cb-linktest --use-gpu-memory wrote on a real GPU (an NVIDIA H200 in a
Firecracker VM, issue 34: tests/data/gpu-copy/recorded-h200/), read and judged here as a
site would, on any machine:

- gpu-copy's JSON document of the compliance workload passes the kernel contract and is
  judged by the one judge (`cobalt-bench judge`) from a site's references: above them a pass,
  below them a failure naming the metric; its text output's results block gives the same
  figures as its document;
- the recorded PCIe link of that GPU (a root bus with no port above it, as a VM shows it):
  `gpu-copy --explain-links` reads it as Gen5 x16, 504.12 Gbit/s, and names the missing port;
- bench/gpu-copy's side-by-side figures (gpu-copy against cudaMemcpyAsync on pinned memory)
  met the goal of 0.95;
- cb-linktest with its message buffers in GPU memory checked every timed message: no wrong
  byte, staged through pinned host memory (Debian's Open MPI is not CUDA-aware).'''
import json
import os
import re
import shutil
import subprocess

import pytest

from plugins.checkout import ROOT, clean_env, results_block
from plugins.kernels import needs_gpu_copy_binary

RECORDED = os.path.join(ROOT, 'tests', 'data', 'gpu-copy', 'recorded-h200')
COBALT_BENCH = os.path.join(ROOT, 'bin', 'cobalt-bench')


def recorded(name):
    with open(os.path.join(RECORDED, name)) as fp:
        return fp.read()


def judge(doc, site, tmp_path):
    return subprocess.run([COBALT_BENCH, 'judge', '--site', str(site), '--exit-status', '0',
                           str(doc)], env=clean_env(SLURMD_NODENAME='gpu1'), cwd=str(tmp_path),
                          text=True, capture_output=True, timeout=120)


def site_with_gpu_reference(tmp_path, gbits):
    '''A site of only references: GpuCopy's write and read speeds at `gbits`.'''
    site = tmp_path / f'site-{gbits:g}'
    site.mkdir()
    (site / 'references.yaml').write_text(
        'GpuCopy:\n'
        "  '*':\n"
        f"    total_write_speed: [{gbits}, 0, null, 'Gbit/s']\n"
        f"    total_read_speed: [{gbits}, 0, null, 'Gbit/s']\n")
    return site


@pytest.mark.parametrize('gbits, code, result', [(400.0, 0, 'PASS'), (450.0, 1, 'FAIL')])
def test_the_h200_document_is_judged_by_the_sites_references(gbits, code, result, tmp_path):
    doc = tmp_path / 'gpu-copy-21.json'
    shutil.copy(os.path.join(RECORDED, 'gpu-copy.json'), doc)
    r = judge(doc, site_with_gpu_reference(tmp_path, gbits), tmp_path)
    assert r.returncode == code, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if 'judged as GpuCopy' in ln)
    assert line.endswith(result) or f': {result}:' in line, r.stdout
    if result == 'FAIL':
        # the metric that fell short is named with its measured value
        assert re.search(r'total_write_speed\D+442\.3', r.stdout), r.stdout


def test_the_h200_text_and_document_agree():
    doc = json.loads(recorded('gpu-copy.json'))
    block = results_block(recorded('gpu-copy.out'))
    m = doc['metrics']
    assert float(block['Total write speed'].split()[0]) == pytest.approx(
        m['total_write_speed']['value'], abs=0.01)
    assert float(block['Total read speed'].split()[0]) == pytest.approx(
        m['total_read_speed']['value'], abs=0.01)
    assert m['verification_errors']['value'] == 0 and m['verified_phases']['value'] == 3
    (gpu,) = doc['gpus']
    assert gpu['name'] == 'NVIDIA H200' and gpu['link_state'] == 'under load'
    # a copy cannot beat its link: Gen5 x16 carries 504.12 Gbit/s per direction
    assert 0 < gpu['write_speed_gbits'] <= gpu['link_theoretical_gbits'] == pytest.approx(
        504.12, abs=0.01)


@needs_gpu_copy_binary
def test_the_h200_link_on_a_root_bus_is_explained():
    gpu_copy = os.path.join(ROOT, 'bin', 'gpu-copy')
    if not os.access(gpu_copy, os.X_OK):
        pytest.fail(f'{gpu_copy} is not built: run make')
    r = subprocess.run([gpu_copy, '--explain-links', '--sysfs-root',
                        os.path.join(ROOT, 'tests', 'data', 'gpu-copy', 'h200-vm')],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ('link root bus (no port visible) -> 0000:00:06.0 (the GPU): Gen5 x16 (32.0 GT/s) '
            '= 504.12 Gbit/s per direction') in r.stdout
    assert '?' not in r.stdout


def test_the_bench_met_its_goal_on_the_h200():
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)), float(m.group(4)))
            for m in re.finditer(r'^(write|read)\s+([\d.]+) Gbit/s\s+([\d.]+) Gbit/s\s+([\d.]+)',
                                 recorded('bench-gpu-copy.out'), re.M)}
    assert set(rows) == {'write', 'read'}
    for ours, reference, ratio in rows.values():
        assert ratio == pytest.approx(ours / reference, abs=0.001)
        assert ratio >= 0.95


def test_cb_linktest_checked_its_gpu_buffers():
    doc = json.loads(recorded('cb-linktest-gpu.json'))
    cfg, m = doc['config'], doc['metrics']
    assert cfg['use_gpu_memory'] and cfg['check_buffers']
    assert cfg['memory_buffer_allocator'] == 'CUDA_memory_allocator'
    assert m['verification_errors']['value'] == 0 and m['wrong_bytes']['value'] == 0
    assert m['pairs_tested']['value'] == m['pairs_expected']['value'] == 1
    # stdout and rank 0's stderr, as recorded (2>&1): the monitoring lines are stderr's
    out = '\n'.join(ln for ln in recorded('cb-linktest-gpu.out').splitlines()
                    if not ln.startswith('timings['))
    assert 'staged through pinned host memory (the MPI is not CUDA-aware)' in out
    assert results_block(out)['Verdict'] == 'PASSED'
