'''smp-mad-stress under hostile input and signals (issue 14): every bad option value must
end in exit 2 with a message naming the option; a real signal to a running
smp-mad-stress (or to the ranks of smp-mad-stress-mpi) must stop it with a results block
marked "Interrupted" and a JSON document that says so. The bad values by type and the
signal driver are shared by every kernel (tests/plugins/kernels.py).'''

import json
import signal

import pytest

from plugins.checkout import results_block
from plugins.kernels import (BAD_DURATION, BAD_INT, BAD_REAL, BAD_U64, MPI_SIGNAL_ENV,
                             bad_value_test, check_interrupted, document_alone_on_stdout,
                             empty_json_cases, interrupt, kernel)

OPTIONS = {
    'dest-depth': BAD_INT, 'local-depth': BAD_INT, 'workers': BAD_INT, 'retries': BAD_INT,
    'port': BAD_INT, 'max-drops': BAD_INT, 'mkey': BAD_U64, 'min-rate': BAD_REAL,
    'duration': BAD_DURATION, 'timeout': BAD_DURATION,
}
# What else a run needs besides the option under test (operands).
OPERANDS = ['--simulate=rtt=50us', '-d', '0.1', '1', 'NodeInfo']

# Lists, specs and the cases of the issue: (args, what the message must name).
SPECIAL = [
    # issue 14, item 6: empty list items are typos, not "all" or "skip"
    (['-L', '1,,2', 'NodeInfo'], '--lids'),
    (['-L', '1,2,', 'NodeInfo'], '--lids'),
    (['-L', ',1', 'NodeInfo'], '--lids'),
    (['-L', '-1', 'NodeInfo'], 'invalid destination'),
    (['-L', '65536', 'NodeInfo'], 'invalid destination'),
    (['-L', '18446744073709551617', 'NodeInfo'], 'invalid destination'),
    (['--paths', '0,1;;0,1,3', 'NodeInfo'], '--paths'),
    (['--paths', '0,1;', 'NodeInfo'], '--paths'),
    (['--paths', '0,1,,3', 'NodeInfo'], 'not a directed route'),
    (['--mkey=-1', '1', 'NodeInfo'], '--mkey'),
    (['--mkey=18446744073709551616', '1', 'NodeInfo'], '--mkey'),
    (['-m', '-1', '1', 'NodeInfo'], 'method'),
    (['--', '1', 'NodeInfo', '-1'], 'attribute modifier'),
    (['1', 'NodeInfo', '4294967296'], 'attribute modifier'),
    (['1', 'NodeInfo', '18446744073709551616'], 'attribute modifier'),
    (['--', '1', '-1'], 'attribute'),
    (['1', '65536'], 'attribute'),
] + [
    ([f'--simulate={spec}', '1', 'NodeInfo'], '--simulate')
    for spec in ('seed=18446744073709551616', 'seed=-1', 'seed=', 'seed=1e3', 'seed= 1',
                 'loss=nan', 'loss=inf', 'loss=-0.1', 'loss=1.1', 'error=nan', 'loss=0x1p-1',
                 'rtt=inf', 'rtt=nan', 'rtt=-1us', 'rtt=1e999s', 'rtt=0x10', 'service=nanus',
                 'jitter=1 us', 'queue=-1', 'queue=1.5', 'queue=99999999999999999999',
                 'dead=1::2', 'dead=1:', 'dead=:1', 'dead=-1', 'dead=0', 'rtt=50us,',
                 ',rtt=50us', 'rtt=50us,,loss=0', 'rtt', '=1', 'speed=1')
] + empty_json_cases(OPERANDS)


test_bad_value_exits_2_naming_it = bad_value_test('smp-mad-stress', OPTIONS, OPERANDS, SPECIAL)


def test_json_to_stdout_is_the_document_alone():
    document_alone_on_stdout([kernel('smp-mad-stress'), '--simulate=rtt=50us', '-d', '0.2',
                              '-q', '--json', '-', '1', 'NodeInfo'])


@pytest.mark.parametrize('sig, name', [(signal.SIGINT, 'SIGINT'), (signal.SIGTERM, 'SIGTERM'),
                                       (signal.SIGHUP, 'SIGHUP')])
def test_smp_mad_stress_interrupted(tmp_path, sig, name):
    '''Issue 14, item 1: smp-mad-stress died at once, with no message and no result.'''
    out = tmp_path / 'r.json'
    rc, stdout, stderr, took = interrupt(
        [kernel('smp-mad-stress'), '--simulate=rtt=200us', '-L', '1,2', '-d', '60', '-q',
         '--json', str(out), 'NodeInfo'], sig, 'Window:')
    assert took < 5
    block, doc = check_interrupted(rc, stdout, out.read_text(), sig, name)
    assert 0 < doc['duration_s'] < 30
    m = doc['metrics']
    assert m['mads_answered']['value'] > 0 and m['drops']['value'] == 0
    # MAD/s over the time up to the signal, as the table says
    assert float(block['MAD rate'].split()[0]) == pytest.approx(m['mad_rate']['value'], abs=0.1)
    assert 'Not compliant: interrupted by ' + name in stdout


def test_smp_mad_stress_mpi_interrupted_through_mpirun(tmp_path):
    '''mpirun passes SIGINT on to every rank as SIGTERM: the ranks stop after the same
    round and rank 0 still reports. (mpirun itself then exits 1, Open MPI's choice.)'''
    out = tmp_path / 'r.json'
    cmd = ['mpirun', '--oversubscribe', '-n', '2', kernel('smp-mad-stress-mpi'),
           '--simulate=rtt=200us', '-d', '60', '-q', '--json', str(out), '1', 'NodeInfo']
    rc, stdout, stderr, took = interrupt(cmd, signal.SIGINT, 'MPI:', after=1.5,
                                         env=MPI_SIGNAL_ENV, timeout=60)
    assert rc != 0
    block = results_block(stdout)
    assert 'Interrupted' in block, stdout
    doc = json.loads(out.read_text())
    assert doc['interrupted'] is True and doc['compliance']['passed'] is False
    assert len(doc['ranks']) == 2
