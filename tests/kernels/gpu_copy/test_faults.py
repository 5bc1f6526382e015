'''gpu-copy under hostile input and signals (issue 14): every bad option value must end in
exit 2 with a message naming the option (no GPU needed: they come before CUDA); a signal
to a run on simulated GPUs (build/tests/gpu-copy-sim, or $GPU_COPY_SIM, where it is
built) stops it with a results block marked "Interrupted" and a JSON document that says
so. The bad values by type and the signal driver are shared by every kernel
(tests/plugins/kernels.py).'''

import os
import signal

import pytest

from plugins.checkout import DATA
from plugins.kernels import (BAD_INT, BAD_REAL, BAD_SIZE, BAD_U64, GPU_COPY_SIM,
                             bad_value_test, check_interrupted, empty_json_cases, interrupt)

OPTIONS = {
    'streams': BAD_INT, 'iterations': BAD_U64, 'alone-iterations': BAD_U64,
    'device-fraction': BAD_REAL, 'threshold': BAD_REAL, 'threshold-per-gpu': BAD_REAL,
    'device-buffer': BAD_SIZE, 'host-buffer': BAD_SIZE, 'chunk': BAD_SIZE,
}

SPECIAL = [
    (['--gpus', '0,,1'], '--gpus'),
    (['--gpus', '0,'], '--gpus'),
    (['--gpus', '-1'], '--gpus'),
    (['--phases', 'write,'], '--phases'),
    (['--phases', ',read'], '--phases'),
    (['--phases', 'write,,read'], '--phases'),
] + empty_json_cases([])


test_bad_value_exits_2_naming_it = bad_value_test('gpu-copy', OPTIONS, [], SPECIAL)


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM')])
def test_gpu_copy_interrupted_on_simulated_gpus(tmp_path, sig, name):
    if not os.access(GPU_COPY_SIM, os.X_OK):
        pytest.skip(f'{GPU_COPY_SIM} is not built (make build/tests/gpu-copy-sim)')
    out = tmp_path / 'r.json'
    bus = '0000:3b:00.0', '0000:86:00.0'
    env = {'GPU_COPY_FAKE_GPUS': f'{bus[0]}=64M@0.5,{bus[1]}=64M@0.5'}
    cmd = [GPU_COPY_SIM, '--sysfs-root', str(DATA / 'gpu-copy' / 'gen3-x8-riser'),
           '--device-buffer', '16M', '--chunk', '1M', '--iterations', '3', '--alone-iterations',
           '2', '-q', '--json', str(out)]
    rc, stdout, stderr, took = interrupt(cmd, sig, 'Copies:', after=0.3, env=env)
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 'of 7 phases run' in block['Interrupted']
