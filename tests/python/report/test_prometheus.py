'''The judgement in Prometheus's text format (report.prometheus): each family declared
once, each series once, labels of the fixed set only, every label value escaped as the
format requires. (promtool and a real Prometheus read it in
tests/integration/monitoring.)'''

import re

from cobalt_bench import site as site_mod
from cobalt_bench.judging import verdict as vd
from cobalt_bench.report.prometheus import label_value, render_prometheus
from cobalt_bench.store import reader
from plugins.checkout import ROOT
from plugins.kernels import kernel
from plugins.stores import capacity_sweep, unpaced_mem_test_doc

LABELS = {'site', 'run', 'state', 'node', 'partition', 'check', 'metric', 'unit', 'result'}
SERIES = re.compile(r'^(cobalt_bench_[a-z_]+)\{(.*)\} (\S+)$')
LABEL = re.compile(r'([a-z_]+)="((?:[^"\\]|\\.)*)"')


def exported(tmp_path, factors):
    doc = unpaced_mem_test_doc(tmp_path, kernel('mem-test'))
    run = reader.load_run(str(capacity_sweep(tmp_path, doc, factors)))
    v = vd.decide(run, site_mod.load_site(f'{ROOT}/site-configs/local'))
    return render_prometheus(run, v, 'local'), v


def parse(text):
    families, series = [], []
    for line in text.splitlines():
        if line.startswith('# TYPE '):
            families.append(line.split()[2])
            continue
        if line.startswith('#'):
            continue
        m = SERIES.match(line)
        assert m, line
        labels = LABEL.findall(m[2])
        assert ','.join(f'{k}="{v}"' for k, v in labels) == m[2], line
        float(m[3])
        series.append((m[1], tuple(labels), float(m[3])))
    return families, series


def test_each_family_once_each_series_once_and_only_the_fixed_labels(tmp_path):
    text, v = exported(tmp_path, {'n1': 1.0, 'n2': 1.0, 'n3': 0.5})
    families, series = parse(text)
    assert len(families) == len(set(families))
    assert len(series) == len({(n, labels) for n, labels, _ in series})
    assert {k for _, labels, _ in series for k, _ in labels} <= LABELS
    values = {(n, dict(labels).get('node'), dict(labels).get('state')): value
              for n, labels, value in series}
    assert values[('cobalt_bench_node_bad', 'n3', None)] == 1
    assert values[('cobalt_bench_node_bad', 'n1', None)] == 0
    assert values[('cobalt_bench_run_bad_nodes', None, None)] == 1
    states = {s: value for (n, _, s), value in values.items() if n == 'cobalt_bench_run_verdict'}
    assert states == {s.value: float(s == v.state) for s in vd.STATES}
    # no run id in any series but run_info: one series per run would never end
    assert [n for n, labels, _ in series if 'run' in dict(labels)] == ['cobalt_bench_run_info']


def test_a_host_name_with_quotes_and_a_newline_is_escaped_not_injected(tmp_path):
    text, _ = exported(tmp_path, {'n1': 1.0, 'n"2\n': 1.0, 'n3': 1.0})
    families, series = parse(text)      # every line still one series of the fixed labels
    assert any(dict(labels).get('node') == 'n\\"2\\n' for _, labels, _ in series)
    assert label_value('a\\b"c\nd') == 'a\\\\b\\"c\\nd'


def test_a_file_name_node_exporter_would_not_read_is_a_usage_error(tmp_path):
    from plugins.checkout import cobalt_cli
    for name in ('cobalt.txt', '.hidden.prom', 'sub/dir.prom'):
        rc, out, err = cobalt_cli('export', 'prometheus', tmp_path, '--textfile-dir',
                                  tmp_path, '--file-name', name)
        assert rc == 2 and 'a plain file name ending in .prom' in err, (name, out, err)
    rc, out, err = cobalt_cli('export', 'prometheus', tmp_path, '--textfile-dir',
                              tmp_path / 'absent')
    assert rc == 3 and 'is not a directory' in err, out + err
