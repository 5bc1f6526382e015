'''`cobalt-bench export prometheus` read by the real thing: Debian's
prometheus-node-exporter with its textfile collector on the exported directory, and a real
Prometheus scraping it, queried through its HTTP API (issue 38). promtool checks the file.'''

import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from plugins.checkout import ROOT, cobalt_cli
from plugins.kernels import kernel
from plugins.stores import capacity_sweep, unpaced_mem_test_doc

TOOLS = {'prometheus': 'prometheus', 'promtool': 'prometheus',
         'prometheus-node-exporter': 'prometheus-node-exporter'}


def need_tools():
    missing = sorted({pkg for cmd, pkg in TOOLS.items() if shutil.which(cmd) is None})
    if missing:
        pytest.skip(f'not installed: {", ".join(missing)} (debian-packages.txt; '
                    './bootstrap.sh installs them)')


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_until(what, predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = predicate()
        except OSError:
            found = None
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f'{what}: not within {timeout} s')


@pytest.fixture
def exported(tmp_path):
    '''A sweep of 4 nodes, n3 at half the memory speed of its peers, exported.'''
    need_tools()
    doc = unpaced_mem_test_doc(tmp_path, kernel('mem-test'))
    sweep = capacity_sweep(tmp_path, doc, {'n1': 1.0, 'n2': 1.01, 'n3': 0.5, 'n4': 0.99})
    textfiles = tmp_path / 'textfiles'
    textfiles.mkdir()
    rc, out, err = cobalt_cli('export', 'prometheus', sweep, '--site', 'local',
                              '--textfile-dir', textfiles)
    assert rc == 0, out + err
    return textfiles, doc['metrics']['measured_speed']['value']


def test_the_file_passes_promtool_and_leaves_no_temporary_file(exported):
    textfiles, _ = exported
    assert [p.name for p in textfiles.iterdir()] == ['cobalt_bench.prom']
    text = (textfiles / 'cobalt_bench.prom').read_text()
    proc = subprocess.run(['promtool', 'check', 'metrics'], input=text, text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'cobalt_bench_node_bad{site="local",node="n3",partition="local:default"} 1' in text


def test_prometheus_scrapes_node_exporter_and_answers_for_a_node(exported, tmp_path):
    textfiles, speed = exported
    exporter_port, prom_port = free_port(), free_port()
    procs = [subprocess.Popen(
        ['prometheus-node-exporter', f'--web.listen-address=127.0.0.1:{exporter_port}',
         '--collector.disable-defaults', '--collector.textfile',
         f'--collector.textfile.directory={textfiles}'],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)]
    config = tmp_path / 'prometheus.yml'
    config.write_text(json.dumps({     # YAML is a superset of JSON
        'global': {'scrape_interval': '1s', 'evaluation_interval': '1s'},
        'scrape_configs': [{'job_name': 'node',
                            'static_configs': [{'targets': [f'127.0.0.1:{exporter_port}']}]}],
    }))
    try:
        exposed = wait_until('node_exporter serving the textfile', lambda: (
            lambda t: t if 'cobalt_bench_node_bad' in t else None)(
                get(f'http://127.0.0.1:{exporter_port}/metrics')))
        assert 'node_textfile_scrape_error 0' in exposed, exposed
        procs.append(subprocess.Popen(
            ['prometheus', f'--config.file={config}',
             f'--storage.tsdb.path={tmp_path / "tsdb"}',
             f'--web.listen-address=127.0.0.1:{prom_port}'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))

        def query(q):
            url = (f'http://127.0.0.1:{prom_port}/api/v1/query?'
                   + urllib.parse.urlencode({'query': q}))
            answer = json.loads(get(url))
            assert answer['status'] == 'success', answer
            return answer['data']['result']

        bad = wait_until('Prometheus answering for node n3',
                         lambda: query('cobalt_bench_node_bad{node="n3"}'))
        assert [r['value'][1] for r in bad] == ['1']
        assert bad[0]['metric']['job'] == 'node'
        assert [r['value'][1] for r in query('cobalt_bench_node_bad{node="n1"}')] == ['0']
        measured = query('cobalt_bench_metric{node="n1",check="MemCapacity",'
                         'metric="measured_speed"}')
        assert len(measured) == 1 and measured[0]['metric']['unit'] == 'Gbit/s'
        assert float(measured[0]['value'][1]) == pytest.approx(speed, rel=1e-9)
        failed = query('cobalt_bench_case_result{result="fail"} == 1')
        assert {r['metric']['node'] for r in failed} == {'n3'}
        # the file's freshness, for staleness alerts: node_exporter's own series
        assert query('node_textfile_mtime_seconds{file=~".*cobalt_bench.prom"}')
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_the_documented_alert_rules_load_and_name_only_exported_series():
    need_tools()
    rules = os.path.join(ROOT, 'docs', 'prometheus', 'cobalt-bench.rules.yml')
    proc = subprocess.run(['promtool', 'check', 'rules', rules], text=True,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and 'SUCCESS: 4 rules found' in proc.stdout, \
        proc.stdout + proc.stderr
    with open(os.path.join(ROOT, 'docs', 'prometheus', 'grafana-dashboard.json')) as fp:
        dashboard = json.load(fp)
    names = set()
    for panel in dashboard['panels']:
        for target in panel['targets']:
            names.update(re.findall(r'\b(cobalt_bench_[a-z_]+)', target['expr']))
    exported = set(re.findall(r'^  (cobalt_bench_[a-z_]+)', prometheus_module_doc(), re.M))
    assert names and names <= exported, names - exported


def prometheus_module_doc():
    from cobalt_bench.report import prometheus
    return prometheus.__doc__
