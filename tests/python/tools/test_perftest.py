'''perftest ib_write_bw: the output parser (cobalt_bench.tools.perftest) on the COBALT2
compliance document's recorded output, and the choice of sending and receiving ports from
a sysfs tree (cobalt_bench.tools.ib_ports). The check under ReFrame and its port
runner: tests/integration/reframe/test_infiniband_check.py.'''

import pytest

from cobalt_bench.tools import ib_ports
from cobalt_bench.tools import perftest as perftest_parse
from plugins.tools import PERFTEST_RECORDED


def recorded():
    return PERFTEST_RECORDED.read_text()


# ---- the parser -----------------------------------------------------------------------

def test_parse_the_documents_output():
    report = perftest_parse.parse(recorded())
    assert report.rows == [{'bytes': 65536, 'iterations': 5000, 'bw_peak': 51.05,
                            'bw_average': 51.04, 'msg_rate': 0.097356}]
    assert report.units == {'bytes': '', 'iterations': '', 'bw_peak': 'Gb/sec',
                            'bw_average': 'Gb/sec', 'msg_rate': 'Mpps'}
    assert report.last('bw_average') == 51.04
    # The figures parsed are consistent, as perftest computes them: bytes x 8 x message
    # rate = bandwidth (65536 B x 8 x 0.097356 Mpps = 51.04 Gb/s).
    (row,) = report.rows
    assert row['bytes'] * 8 * row['msg_rate'] * 1e6 / 1e9 == \
        pytest.approx(report.last('bw_average'), abs=0.01)


def test_parse_without_report_gbits_keeps_the_unit():
    text = recorded().replace('[Gb/sec]', '[MB/sec]')
    assert perftest_parse.parse(text).units['bw_average'] == 'MB/sec'


@pytest.mark.parametrize('text,message', [
    ('', 'no perftest bandwidth table'),
    (' Did not detect devices \n', 'no perftest bandwidth table'),
    ('#bytes     #iterations    BW peak[Gb/sec]\n-----\n', 'without rows'),
    ('#bytes     #iterations    BW peak[Gb/sec]\n65536   5000\n', '2 values for 3 columns'),
])
def test_malformed_output_is_an_error(text, message):
    with pytest.raises(perftest_parse.PerftestParseError, match=message):
        perftest_parse.parse(text)


def test_port_runs():
    text = ('# ib_write_bw sender mlx4_0:1 receiver mlx4_1:1\n' + recorded() +
            '# ib_write_bw sender mlx4_0:1 exit code 0\n'
            '# ib_write_bw sender mlx4_1:1 receiver mlx4_0:1\n'
            " Couldn't connect to localhost:18516\n"
            '# ib_write_bw sender mlx4_1:1 exit code 1\n'
            '# ib_write_bw sender mlx4_0:2 receiver mlx4_1:1\n' + recorded())
    first, second, third = perftest_parse.parse_port_runs(text)
    assert (first.sender, first.receiver, first.exit_code) == ('mlx4_0:1', 'mlx4_1:1', 0)
    assert first.report.last('bw_average') == 51.04 and not first.error
    assert (second.exit_code, second.report) == (1, None)
    assert 'no perftest bandwidth table' in second.error
    # A run cut off (the job was killed): no exit code, whatever table it printed.
    assert (third.sender, third.exit_code) == ('mlx4_0:2', None)


# ---- which port sends to which ----------------------------------------------------------

def test_pairs_each_port_sends_once_to_another_device():
    assert ib_ports.pairs(['mlx4_0:1', 'mlx4_1:1'], sysfs='/nonexistent') == [
        ('mlx4_0:1', 'mlx4_1:1'), ('mlx4_1:1', 'mlx4_0:1')]
    # Two-port cards: every port sends, each to a port of the other device.
    assert ib_ports.pairs(['mlx4_0:1', 'mlx4_0:2', 'mlx4_1:1', 'mlx4_1:2'],
                          sysfs='/nonexistent') == [
        ('mlx4_0:1', 'mlx4_1:1'), ('mlx4_0:2', 'mlx4_1:1'),
        ('mlx4_1:1', 'mlx4_0:1'), ('mlx4_1:2', 'mlx4_0:1')]
    # One device: nobody to send to.
    assert ib_ports.pairs(['mlx5_0:1', 'mlx5_0:2'], sysfs='/nonexistent') == []


def fake_sysfs(root, devices):
    '''A /sys/class/infiniband-shaped tree: device -> (PCI address, ports).'''
    for dev, (pci, ports) in devices.items():
        card = root / 'pci' / pci
        card.mkdir(parents=True)
        (root / 'ib' / dev / 'ports').mkdir(parents=True)
        (root / 'ib' / dev / 'device').symlink_to(card)
        for port in ports:
            (root / 'ib' / dev / 'ports' / str(port)).mkdir()
    return str(root / 'ib')


def test_pairs_prefer_another_card(tmp_path):
    # mlx5_0 and mlx5_1 are two functions of one card; mlx5_2 is another card. The
    # document: "The sending and receiving devices must be on physically distinct cards."
    sysfs = fake_sysfs(tmp_path, {'mlx5_0': ('0000:81:00.0', [1]),
                                  'mlx5_1': ('0000:81:00.1', [1]),
                                  'mlx5_2': ('0000:c1:00.0', [1])})
    ports = ib_ports.ports(sysfs)
    assert ports == ['mlx5_0:1', 'mlx5_1:1', 'mlx5_2:1']
    assert ib_ports.pairs(ports, sysfs) == [
        ('mlx5_0:1', 'mlx5_2:1'), ('mlx5_1:1', 'mlx5_2:1'), ('mlx5_2:1', 'mlx5_0:1')]
    assert ib_ports.ports(str(tmp_path / 'none')) == []
