'''The GpuCopy check (reframe_checks/gpu.py) on simulated GPUs (gpu-copy's host-memory
simulation): run on the partition with the `gpu` feature only, judged by the site's
references.'''

import json
import os
import subprocess

from plugins.checkout import REFRAME, ROOT
from plugins.kernels import GPU_COPY_RISER_SIM, GPU_COPY_SMALL

SITE = '''from cobalt_bench.reframe.site import Site
SITE = Site('gpusim', __file__)
site_configuration = SITE.checked({{
    'systems': [{{
        'name': 'gpusim', 'hostnames': ['.*'], 'modules_system': 'nomod', 'prefix': SITE.prefix,
        'partitions': [
            {{'name': 'gpu', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin'],
              'features': ['gpu'], 'max_jobs': 1,
              'env_vars': [['PATH', '{bindir}:$PATH'], ['GPU_COPY_FAKE_GPUS', {fake!r}]],
              'extras': {{'cobalt_bench': {{'gpu_copy_opts': {opts!r}}}}}}},
            {{'name': 'cpu', 'scheduler': 'local', 'launcher': 'local', 'environs': ['builtin'],
              'max_jobs': 1}},
            # AMD's GPUs, said the ways real configurations say it: no GpuCopy there.
            {{'name': 'mi250', 'scheduler': 'local', 'launcher': 'local',
              'environs': ['builtin'], 'features': ['gpu', 'amdgpu'], 'max_jobs': 1,
              'devices': [{{'type': 'gpu', 'arch': 'gfx90a', 'num_devices': 8}}]}},
            {{'name': 'pvc', 'scheduler': 'local', 'launcher': 'local',
              'environs': ['builtin'], 'features': ['gpu'], 'max_jobs': 1,
              'extras': {{'gpu_vendor': 'INTEL'}}}},
            # NVIDIA's GPUs said, none visible when it runs: a skip that names it.
            {{'name': 'nogpu', 'scheduler': 'local', 'launcher': 'local',
              'environs': ['builtin'], 'features': ['gpu', 'nvgpu'], 'max_jobs': 1,
              'env_vars': [['PATH', '{bindir}:$PATH']],
              'extras': {{'gpu_vendor': 'NVIDIA', 'cobalt_bench': {{'gpu_copy_opts': {opts!r}}}}}}},
        ],
    }}],
    'general': SITE.general(),
    'logging': SITE.logging(),
}})
'''


def reframe_sim(sim, tmp_path, write_ref):
    '''GpuCopy through ReFrame on a site with a `gpu` partition (simulated GPUs) and a
    `cpu` partition without that feature.'''
    bindir = tmp_path / 'bin'
    bindir.mkdir(exist_ok=True)
    if not (bindir / 'gpu-copy').exists():
        (bindir / 'gpu-copy').symlink_to(sim)
    site = tmp_path / 'site'
    site.mkdir(exist_ok=True)
    (site / 'config.py').write_text(SITE.format(
        bindir=bindir, fake=GPU_COPY_RISER_SIM['GPU_COPY_FAKE_GPUS'],
        opts=' '.join(GPU_COPY_SMALL)))
    (site / 'references.yaml').write_text(
        'GpuCopy:\n  gpusim:gpu:\n'
        f'    total_write_speed: [{write_ref}, 0, null, Gbit/s]\n'
        '    total_read_speed: [0.5, 0, null, Gbit/s]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env.update(COBALT_BENCH_RESULTS=str(tmp_path / 'results'), COBALT_BENCH_RUN_ID='run')
    proc = subprocess.run([*REFRAME, '-C', str(site / 'config.py'), '-c',
                           os.path.join(ROOT, 'reframe_checks', 'gpu.py'), '-r', '--nocolor'],
                          cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=300)
    with open(tmp_path / 'results' / 'gpusim' / 'run' / 'report.json') as fp:
        report = json.load(fp)
    return proc, [tc for run in report['runs'] for tc in run['testcases']]


def test_reframe_check_on_gpu_partition_only(gpu_copy_sim, tmp_path):
    proc, cases = reframe_sim(gpu_copy_sim, tmp_path, 0.5)
    assert proc.returncode == 0, proc.stdout
    # only the partitions whose GPUs are NVIDIA's get the check; where none is visible
    # at run time it is skipped, naming what is missing
    assert sorted((tc['name'], tc['partition'], tc['result']) for tc in cases) == [
        ('GpuCopy', 'gpu', 'pass'), ('GpuCopy', 'nogpu', 'skip')], proc.stdout
    assert 'gpu-copy not run: it cannot run here (exit status 3' in proc.stdout, proc.stdout
    cases = [tc for tc in cases if tc['partition'] == 'gpu']
    perf = {k.split(':')[-1]: v for k, v in cases[0]['perfvalues'].items()}
    for metric in ('total_write_speed', 'total_read_speed', 'theoretical_link_speed', 'degraded_links'):
        assert metric in perf
    assert perf['total_write_speed'][1:3] == [0.5, 0]
    assert perf['degraded_links'][0] == 1


def test_reframe_check_fails_below_reference(gpu_copy_sim, tmp_path):
    proc, cases = reframe_sim(gpu_copy_sim, tmp_path, 1e6)
    assert proc.returncode != 0
    (tc,) = [tc for tc in cases if tc['partition'] == 'gpu']
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'performance'
    assert 'total_write_speed' in tc['fail_reason']
