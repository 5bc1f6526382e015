'''jobs/eth-test.slurm, as a plain script and through the local Slurm cluster. The
cluster's two nodes share this machine's network stack, so eth-test runs there in its
one-node form: receiver and sender on one node, on the loopback interface.'''

import json
import os
import subprocess

import pytest

from plugins.checkout import DEBIAN_PATH, JOB_STATE, ROOT, clean_env, results_block
from plugins.slurm import finished_job, sbatch
from plugins.workers import ETH_TEST_PORTS

pytestmark = ETH_TEST_PORTS

# A load this machine carries reliably, judged to 1% (as tests/kernels/eth_test/).
RATE = 3.0
TOLERANCE = 0.01
JOB = os.path.join(ROOT, 'jobs', 'eth-test.slurm')
JOB_LOAD = {'ETH_TEST_INTERFACES': 'lo', 'ETH_TEST_SEND_OPTS': '--rate 3 --duration 2',
            'ETH_TEST_RECEIVE_OPTS': f'--threshold {RATE * (1 - TOLERANCE)} --timeout 60'}


def job_env(base=None, **extra):
    return clean_env(base, drop=('ETH_TEST_', *JOB_STATE), **extra)


@pytest.mark.measures
def test_job_without_slurm(tmp_path):
    results = tmp_path / 'results'
    env = job_env(COBALT_BENCH_RESULTS=str(results), PATH=DEBIAN_PATH, **JOB_LOAD)
    r = subprocess.run(['bash', JOB], cwd=tmp_path, env=env, text=True, capture_output=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'one node' in r.stdout
    (result,) = (results / 'slurm').glob('eth-test-*-lo.json')
    doc = json.loads(result.read_text())
    assert doc['test'] == 'eth-test-receive' and doc['config']['interface'] == 'lo'
    assert doc['metrics']['lost_packets']['value'] == 0
    assert results_block(r.stdout.split('eth-test.slurm: interface lo: eth-test-send')[0])
    assert 'interface lo: eth-test-receive exit code 0' in r.stdout
    # no interface named: a usage error, before anything runs
    env.pop('ETH_TEST_INTERFACES')
    r = subprocess.run(['bash', JOB], cwd=tmp_path, env=env, text=True, capture_output=True,
                       timeout=60)
    assert r.returncode == 2 and 'set ETH_TEST_INTERFACES' in r.stdout


@pytest.mark.parametrize('nodes', [1, 2])
@pytest.mark.measures
def test_sbatch(nodes, tmp_path, slurm_cluster):
    # One node: the documented form here. Two: receiver on n1, sender on n2, which on this
    # cluster share one network stack, so loopback reaches across them too.
    results = tmp_path / 'results'
    env = job_env(slurm_cluster.env, COBALT_BENCH_RESULTS=str(results), **JOB_LOAD)
    jobid = sbatch(JOB, tmp_path, env, '-p', 'x86', '-N', str(nodes))
    state = finished_job(jobid, env)
    log = (tmp_path / f'eth-test-{jobid}.out').read_text()
    assert state == ('COMPLETED', '0:0'), log
    assert ('one node (n' if nodes == 1 else 'receiver on n1 (under test), sender on n2') in log
    doc = json.loads((results / 'slurm' / f'eth-test-{jobid}-lo.json').read_text())
    assert doc['compliance']['passed'] is True
    assert doc['metrics']['sent_packets']['value'] == doc['metrics']['received_packets']['value']
    assert (results / 'slurm' / f'eth-test-{jobid}-lo-send.log').exists()
