'''The verdict (cobalt_bench.judging.verdict): COMPLIANT only when every required check of the
site's compliance.yaml ran at its required workload and passed and every required
preflight setting passed; NOT COMPLIANT when one failed; INCOMPLETE when one was skipped,
not run, at another workload or undetermined; DEMONSTRATION for a site that is no
compliance definition. Each state from results as ReFrame and the kernels write them, and
from real runs of the `cobalt2` site on this machine (which has no GPU, no InfiniBand, no
10GbE interface listed: every such check is skipped or cannot run).'''

import json
import os
import re
import subprocess

import pytest

from cobalt_bench import site as refs
from cobalt_bench.judging import judge as jd
from cobalt_bench.judging import verdict as vd
from cobalt_bench.report import markdown as rp_markdown
from cobalt_bench.store.identity import CheckName
from cobalt_bench.report import model as rp_model
from cobalt_bench.store import model as rs
from cobalt_bench.store import reader as rs_reader
from cobalt_bench.store.result import Result
from plugins.checkout import ROOT

RUN_SUITE = os.path.join(ROOT, 'scripts', 'run-suite')


def case(check, result='pass', metrics=(), fail_phase='', fail_reason='', part='node',
         system='cobalt2', docs=()):
    '''A case as the store reads it from report.json: metrics judged by ReFrame with the
    site's references (value, ref, ReFrame's fractional thresholds, verdict).'''
    c = rs.Case(check=check, system=system, partition=part, nodes=['m1'],
                result=Result(result),
                fail_phase=fail_phase, fail_reason=fail_reason, docs=list(docs))
    site = refs.load_site(system)
    name = CheckName.of(check)
    name, params = name.check, name.param_dict
    table = site.references.lookup(name, f'{system}:{part}', params)
    for metric, value in metrics:
        ref = table.get(metric)
        if ref is None:
            c.metrics.append(rs.Metric(metric, value, ''))
            continue
        c.metrics.append(rs.Metric(metric, value, ref.unit or '', ref.value,
                                   lower_thres=ref.lower, upper_thres=ref.upper,
                                   verdict=jd.verdict_of(value, ref)))
    return c


def finding(setting, status='pass'):
    return {'setting': setting, 'status': status, 'value': 'v', 'expected': 'e',
            'fix': 'do it', 'level': 'required', 'affects': []}


PREFLIGHT_OK = {'test': 'preflight', 'host': 'm1', 'metrics': {}, 'findings': [
    finding('cpu.governor'), finding('cpu.turbo'), finding('net.ens1f0.mtu'),
    finding('pcie.gpu.0000:3b:00.0'), finding('pcie.nic.0000:17:00.0')]}


def compliant_cases():
    '''Every check cobalt2 requires, at the document's workload, passing.'''
    return [
        case('MemTest', metrics=[('percent_of_desired', 99.9), ('desired_speed', 702.0),
                                 ('measured_speed', 701.3)]),
        case('GpuCopy', metrics=[('total_write_speed', 190.0), ('total_read_speed', 200.0)]),
        case('EthTest %interface=ens1f0', metrics=[('total_speed', 9.0),
                                                   ('average_loss', 0.0)]),
        case('IbWriteBw', metrics=[('bw_average', 90.0)]),
        case('Preflight', metrics=[('required_failed', 0)], docs=[PREFLIGHT_OK]),
    ]


def decide(cases, site='cobalt2', state='complete'):
    run = rs.Run(path='/nonexistent', kind='reframe', site=site, run_id='t',
                 state=state,
                 cases=cases)
    return vd.decide(run, refs.load_site(site), vd.preflight_docs_of(run))


def test_compliant_only_with_everything_required_passed():
    v = decide(compliant_cases())
    assert v.state == vd.COMPLIANT, v.reasons
    assert v.exit_code() == 0
    # The same run with the run unfinished is not.
    assert decide(compliant_cases(), state='partial').state == vd.INCOMPLETE


def test_every_required_check_skipped_is_incomplete():
    cases = [case(n, result='skip', fail_reason='no such hardware') for n in
             ('MemTest', 'GpuCopy', 'EthTest %interface=', 'IbWriteBw', 'Preflight')]
    v = decide(cases)
    assert v.state == vd.INCOMPLETE and v.exit_code() == 1
    for name in ('MemTest', 'GpuCopy', 'EthTest', 'IbWriteBw', 'Preflight'):
        assert any(r.startswith('MISSING') and name in r and 'skipped' in r
                   for r in v.reasons), (name, v.reasons)
    assert any('preflight' in r and 'no preflight results' in r for r in v.reasons)


def test_one_failed_required_check_is_not_compliant():
    cases = compliant_cases()
    cases[1] = case('GpuCopy', result='fail', fail_phase='performance',
                    metrics=[('total_write_speed', 150.0), ('total_read_speed', 200.0)])
    v = decide(cases)
    assert v.state == vd.NOT_COMPLIANT and v.exit_code() == 1
    assert v.reasons[0].startswith('FAILED: GpuCopy on cobalt2:node')
    assert 'total_write_speed = 150 Gbit/s, required >= 180' in v.reasons[0]
    # Failures outrank what is missing: still NOT COMPLIANT with a skipped check besides.
    cases[3] = case('IbWriteBw', result='skip')
    assert decide(cases).state == vd.NOT_COMPLIANT


def test_another_workload_is_incomplete_and_says_which():
    cases = compliant_cases()
    cases[0] = case('MemTest', result='fail', fail_phase='performance',
                    metrics=[('percent_of_desired', 100.0), ('desired_speed', 8.0)])
    v = decide(cases)
    assert v.state == vd.INCOMPLETE
    assert any('another workload' in r and 'desired_speed = 8 Gbit/s' in r
               for r in v.reasons), v.reasons


def test_a_required_preflight_setting_that_fails_is_a_failure():
    cases = compliant_cases()
    doc = json.loads(json.dumps(PREFLIGHT_OK))
    doc['findings'][2]['status'] = 'fail'
    cases[4] = case('Preflight', metrics=[('required_failed', 0)], docs=[doc])
    v = decide(cases)
    assert v.state == vd.NOT_COMPLIANT
    assert any(r.startswith('FAILED: preflight net.ens1f0.mtu on m1') for r in v.reasons)
    doc['findings'][2]['status'] = 'unknown'
    assert decide(cases).state == vd.INCOMPLETE
    del doc['findings'][3]                      # no GPU link checked at all
    doc['findings'][2]['status'] = 'pass'
    v = decide(cases)
    assert v.state == vd.INCOMPLETE
    assert any('pcie.gpu.*' in r and 'no such setting was checked' in r for r in v.reasons)


def test_a_demonstration_site_is_never_compliant():
    cases = [case('MemTest', system='local', part='default',
                  metrics=[('percent_of_desired', 100.0), ('desired_speed', 8.0),
                           ('measured_speed', 8.0)])]
    v = decide(cases, site='local')
    assert v.state == vd.DEMONSTRATION and v.exit_code() == 0
    assert v.reasons[0].startswith("site 'local' is a demonstration")
    assert 'not a compliance verdict' in v.headline
    # A check that ran and failed its demonstration references: still a demonstration,
    # but the exit status says something failed.
    cases[0] = case('MemTest', system='local', part='default', result='fail',
                    fail_phase='performance', metrics=[('measured_speed', 1.0)])
    v = decide(cases, site='local')
    assert v.state == vd.DEMONSTRATION and v.exit_code() == 1 and v.checks_failed


def test_a_reference_metric_the_result_lacks_is_named(tmp_path, repo_root):
    # The reference says measured_sped: ReFrame passes it silently, the verdict does not.
    site = tmp_path / 'cobalt2'
    import shutil
    shutil.copytree(repo_root / 'site-configs' / 'cobalt2', site,
                    ignore=shutil.ignore_patterns('__pycache__'))
    ref = site / 'references.yaml'
    ref.write_text(ref.read_text().replace(
        "    desired_speed: [702.0", "    measured_sped: [702.0, -0.1, null, 'Gbit/s']\n"
        "    desired_speed: [702.0"))
    cases = compliant_cases()
    run = rs.Run(path='/nonexistent', kind='reframe', site='cobalt2', run_id='t',
                 cases=cases)
    v = vd.decide(run, refs.load_site(str(site)), vd.preflight_docs_of(run))
    assert v.state == vd.INCOMPLETE
    (line,) = [r for r in v.reasons if 'measured_sped' in r]
    assert str(ref) in line and 'check MemTest' in line
    assert "partition 'cobalt2:node'" in line and 'judges nothing' in line


def test_job_documents_without_a_site_are_not_judged(tmp_path):
    doc = {'test': 'mem-test', 'version': '0.1.0', 'host': 'n1',
           'metrics': {'percent_of_desired': {'value': 100.0, 'unit': '%'}},
           'compliance': {'threshold': 99.75, 'passed': True}}
    (tmp_path / 'mem-test-3.json').write_text(json.dumps(doc))
    run = rs_reader.load_run(str(tmp_path))
    model = rp_model.build(run, with_plots=False)
    # The kernel said "passed"; without a site nothing judged it: not COMPLIANT.
    assert model.verdict == vd.INCOMPLETE
    assert any('no site to judge' in r for r in model.judgement.reasons)
    md = rp_markdown.render_markdown(model)
    assert 'mem-test: passed (its threshold 99.75)' in md       # labelled, kept apart
    assert "kernel's own verdict (not the site's)" in md


# ---- real runs of the cobalt2 site on this machine ----------------------------------------

def run_cobalt2(tmp_path, *checks):
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RFM_', 'COBALT_BENCH_'))}
    env['COBALT_BENCH_RESULTS'] = str(tmp_path)
    args = [a for c in checks for a in ('-n', c)]
    proc = subprocess.run([RUN_SUITE, 'cobalt2', *args, '--nocolor'], env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
    run = re.search(r'^results: (.+)$', proc.stdout, re.M).group(1)
    with open(os.path.join(run, 'report', 'verdict.json')) as fp:
        return proc, run, json.load(fp)


def test_cobalt2_run_with_its_hardware_checks_skipped_is_incomplete(tmp_path):
    if os.path.isdir('/sys/class/infiniband') and os.listdir('/sys/class/infiniband'):
        pytest.skip('this machine has InfiniBand: IbWriteBw would run')
    proc, run, verdict = run_cobalt2(tmp_path, 'IbWriteBw', 'EthTest')
    assert list(verdict)[0] == 'state' and verdict['state'] == 'INCOMPLETE', proc.stdout
    text = '\n'.join(verdict['reasons'])
    assert re.search(r'MISSING: IbWriteBw on cobalt2:node.*skipped: no InfiniBand', text)
    assert re.search(r"MISSING: EthTest %interface= on cobalt2:node.*skipped", text)
    assert 'MISSING: MemTest: not run' in text
    # run-suite ends with the verdict line, its reasons and the HTML page.
    tail = proc.stdout[proc.stdout.rindex('verdict: '):]
    assert tail.startswith('verdict: INCOMPLETE')
    assert f'report: {run}/report/report.html' in tail
    assert proc.returncode == 1
    html = open(os.path.join(run, 'report', 'report.html')).read()
    assert 'class="verdict v-INCOMPLETE">INCOMPLETE<' in html


def test_cobalt2_preflight_failure_is_not_compliant(tmp_path):
    # This machine fails settings the document requires (no jumbo frames on its NIC): a
    # real preflight run makes the cobalt2 verdict NOT COMPLIANT, naming them.
    proc, run, verdict = run_cobalt2(tmp_path, 'Preflight')
    failed = [r for r in verdict['reasons'] if r.startswith('FAILED')]
    with open(next(p for p in (os.path.join(d, f) for d, _, fs in
                               os.walk(run) for f in fs)
                   if p.endswith('preflight.json'))) as fp:
        doc = json.load(fp)
    required_failing = [f['setting'] for f in doc['findings'] if f['status'] == 'fail' and
                        any(re.fullmatch(p.replace('.', r'\.').replace('*', '.*'),
                                         f['setting'])
                            for p in ('cpu.governor', 'cpu.turbo', 'net.*.mtu',
                                      'pcie.gpu.*', 'pcie.nic.*'))]
    if not required_failing:
        pytest.skip('this machine passes every required setting the preflight can read')
    assert verdict['state'] == 'NOT COMPLIANT', verdict
    for s in required_failing:
        assert any(f'preflight {s} on' in r for r in failed), (s, failed)
