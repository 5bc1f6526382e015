'''cobalt_bench.tools.slurm reads sacct's accounting: the lines below are what sacct 22.05
printed (--noheader --parsable2 --format JobIDRaw,State,ReqMem,MaxRSS) for real jobs of the
local cluster: 558, a mem-test killed by OverMemoryKill (its step used 157 MiB of --mem
100M); 560, one that ended well. Older Slurm writes ReqMem per node as '100Mn' and per CPU
as '2Gc'.'''
import pytest

from cobalt_bench.tools import slurm

SACCT = '''558|FAILED|100M|
558.batch|FAILED||45164K
558.0|CANCELLED by 0||160884K
560|COMPLETED|100M|
560.batch|COMPLETED||12000K
560.0|COMPLETED||90000K
'''


@pytest.fixture
def sacct(monkeypatch):
    asked = []

    def answer(*args):
        asked.append(args)
        return SACCT
    monkeypatch.setattr(slurm, '_sacct', answer)
    return asked


def test_a_step_over_its_jobs_memory_is_read(sacct):
    accounts = slurm.job_accounts(['558', 560, 'x; rm -rf /'])
    assert set(accounts) == {'558', '560'}
    killed, fine = accounts['558'], accounts['560']
    assert (killed.state, killed.requested_bytes, killed.max_rss_bytes) == (
        'FAILED', 100 << 20, 160884 << 10)
    assert killed.over_memory and not fine.over_memory
    # only job ids reach sacct's command line
    assert sacct[0][-1] == '558,560'


@pytest.mark.parametrize('text, expected', [('100M', 100 << 20), ('4000Mn', 4000 << 20),
                                            ('160884K', 160884 << 10), ('2G', 2 << 30),
                                            ('0', 0), ('', None), ('2Gc', None),
                                            ('lots', None)])
def test_sacct_sizes(text, expected):
    assert slurm._bytes(text) == expected


def test_without_sacct_nothing_is_known(monkeypatch):
    monkeypatch.setattr(slurm, '_sacct', lambda *args: None)
    assert slurm.job_accounts(['558']) == {}
