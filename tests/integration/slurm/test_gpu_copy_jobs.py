'''jobs/gpu-copy.slurm: run directly in a cobalt-bench tree whose gpu-copy is the
simulation, and through the local Slurm cluster, which has no GPU to give it.'''

import json
import os
import shutil
import subprocess

from plugins.checkout import ROOT
from plugins.kernels import (GPU_COPY_RISER_SIM, GPU_COPY_SMALL, needs_gpu_copy_binary,
                             no_gpu_only)


def test_job_script_runs_gpu_copy(gpu_copy_sim, tmp_path):
    script = os.path.join(ROOT, 'jobs', 'gpu-copy.slurm')
    assert '#SBATCH --gres=gpu\n' in open(script).read()
    # A cobalt-bench tree whose bin/gpu-copy is the simulation: the script finds the
    # module of the tree it belongs to, and the module puts that bin/ on PATH.
    tree = tmp_path / 'tree'
    for sub in ('bin', 'jobs', 'modulefiles/cobalt-bench'):
        (tree / sub).mkdir(parents=True)
    (tree / 'bin' / 'gpu-copy').symlink_to(gpu_copy_sim)
    shutil.copy(script, tree / 'jobs')
    shutil.copytree(os.path.join(ROOT, 'jobs', 'lib'), tree / 'jobs' / 'lib')  # what it sources
    shutil.copy(os.path.join(ROOT, 'modulefiles', 'cobalt-bench', '0.1.0.lua'),
                tree / 'modulefiles' / 'cobalt-bench')
    env = {k: v for k, v in os.environ.items() if not k.startswith(('SLURM_', 'COBALT_BENCH_'))}
    env.update(GPU_COPY_RISER_SIM, COBALT_BENCH_RESULTS=str(tmp_path),
               GPU_COPY_OPTS=' '.join(GPU_COPY_SMALL + ['--threshold', '0']))
    r = subprocess.run([str(tree / 'jobs' / 'gpu-copy.slurm')], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'{tree}/bin/gpu-copy' in r.stdout and 'gpu-copy exit code 0' in r.stdout
    (json_file,) = (tmp_path / 'slurm').glob('gpu-copy-*.json')
    assert json.loads(json_file.read_text())['config']['iterations'] == 3


@needs_gpu_copy_binary
@no_gpu_only
def test_job_through_slurm(slurm_cluster, tmp_path):
    script = os.path.join(ROOT, 'jobs', 'gpu-copy.slurm')
    env = dict(slurm_cluster.env, COBALT_BENCH_RESULTS=str(tmp_path))
    # the job asks for a GPU, which the local cluster does not have
    r = slurm_cluster.run(['sbatch', '-p', 'x86', script], cwd=tmp_path)
    assert r.returncode != 0 and 'gres' in r.stderr.lower()
    # without the GPU request it runs, and gpu-copy's "cannot run" is the job's exit code
    r = subprocess.run(['sbatch', '--wait', '--gres=none', '-p', 'x86', '-o', str(tmp_path / 'job.out'),
                        script], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    log = (tmp_path / 'job.out').read_text()
    assert 'no NVIDIA GPU' in log and 'gpu-copy exit code 3' in log
