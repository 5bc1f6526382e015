"""Spack knows the arm partition's target (issue 17): the local-slurm site's aarch64
environment (site-configs/local-slurm/arm/spack.yaml) concretized by the offline Spack
(scripts/spack-offline). Apart from test_arm.py, whose jobs use the local Slurm cluster:
this concretization uses none, and runs beside the cluster's tests (tests/plugins/workers.py).
Needs the arm64 root of `make arm` and the offline Spack (marked needs_setup).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from plugins.checkout import REPO_ROOT
from plugins.setup import CROSS_CC, arm64_root_path

pytestmark = pytest.mark.needs_setup('arm64-root')

ARM_SPACK_ENV = REPO_ROOT / 'site-configs' / 'local-slurm' / 'arm' / 'spack.yaml'


@pytest.mark.needs_setup('spack')
def test_spack_concretizes_cobalt_bench_for_aarch64(tmp_path, spack_offline):
    '''`spack concretize` of the aarch64 environment: cobalt-bench target=aarch64, compiled
    by the cross gcc, against the arm64 root's glibc, hwloc and Open MPI as externals. The
    environment is concretized from a copy whose relative paths (package repository,
    develop checkout) are made absolute, so that Spack's state stays out of the checkout.'''
    import yaml
    if not os.path.exists('/lib/ld-linux-aarch64.so.1'):
        pytest.skip('no /lib/ld-linux-aarch64.so.1: Spack accepts the cross compiler only '
                    'where it runs the dynamic linker it names (Debian: dpkg '
                    '--add-architecture arm64; apt-get install libc6:arm64)')
    spack_env = spack_offline
    env = yaml.safe_load(ARM_SPACK_ENV.read_text())
    env['spack']['repos']['cobalt'] = str(REPO_ROOT / 'spack-repo' / 'spack_repo' / 'cobalt')
    env['spack']['develop']['cobalt-bench']['path'] = str(REPO_ROOT)
    (tmp_path / 'spack.yaml').write_text(yaml.safe_dump(env))
    res = subprocess.run([Path(spack_env['SPACK_ROOT']) / 'bin' / 'spack', '-e', tmp_path,
                          'concretize'], capture_output=True, text=True, timeout=1200,
                         env=spack_env)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    # What it would build, as Spack prints it
    assert 'target=aarch64' in res.stdout.split('cobalt-bench@develop', 1)[1].splitlines()[0]
    lock = json.loads((tmp_path / 'spack.lock').read_text())
    nodes = {n['hash']: n for n in lock['concrete_specs'].values()}
    root = nodes[lock['roots'][0]['hash']]
    assert root['name'] == 'cobalt-bench' and root['arch']['target'] == 'aarch64', root
    deps = {d['name']: nodes[d['hash']] for d in root['dependencies']}
    c = next(nodes[d['hash']] for d in root['dependencies']
             if 'c' in d['parameters']['virtuals'])
    assert c['external']['extra_attributes']['compilers']['c'] == f'/usr/bin/{CROSS_CC}', c
    arm_root = str(arm64_root_path())
    for lib in ('hwloc', 'openmpi', 'glibc'):
        assert deps[lib]['arch']['target'] == 'aarch64', deps[lib]
        assert deps[lib]['external']['path'] == f'{arm_root}/usr', deps[lib]
