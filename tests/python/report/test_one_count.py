'''One count on every page (issue 56): a run's cases counted once, by one model of a case's
outcome (judging.outcome), and the verdict said the same way everywhere. Each of a set of
runs (clean, a failed required preflight setting, unjudged, damaged, a demonstration) is
rendered through every output the product has: `cobalt-bench report`'s last lines (as
bootstrap's and run-suite's end), report.md, report.html, verdict.json, the Prometheus
textfile of `cobalt-bench export prometheus` and `cobalt-bench nodes drain`'s first line.
Each is read back as a reader would and must give the run's counts and verdict; a case its
required settings failed is FAIL in all of them, and what is not the run's verdict
(preflight's own summary, a kernel's own threshold) is labelled, never a verdict word
alone.'''
import html
import json
import re
import subprocess

import pytest

from cobalt_bench.cli import drain as cli_drain
from cobalt_bench.tools import slurm_nodes
from plugins.checkout import BIN, DATA, clean_env

COBALT_BENCH = str(BIN / 'cobalt-bench')
STATES = ('COMPLIANT', 'NOT COMPLIANT', 'INCOMPLETE', 'DEMONSTRATION')
REFERENCES = ("MemTest:\n  '*':\n    measured_speed: [0.5, -0.5, null, 'Gbit/s']\n"
              "Preflight:\n  '*':\n    settings_passed: [1, 0, null, 'settings']\n")
REQUIRED = ("required:\n  MemTest:\n    what: mem-test\n"
            "preflight:\n  - cpu.governor\n  - 'net.*.mtu'\n")


def cobalt_bench(*args):
    return subprocess.run([COBALT_BENCH, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=clean_env())


def preflight_doc(tmp_path, tree):
    '''A real preflight document of a recorded sysfs tree (compliant or noncompliant).'''
    dest = tmp_path / f'preflight-{tree}.json'
    proc = cobalt_bench('preflight', '--root', DATA / 'sysfs' / tree, '--json', dest, '-q')
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(dest.read_text())


def make_run(tmp_path, name, tree, memtest='whole', references=REFERENCES,
             demonstration=None):
    '''(run directory, site directory): a node's job documents (mem-test recorded on a real
    machine, preflight of a recorded tree, both of one host) and a site that judges them.'''
    site = tmp_path / f'site-{name}'
    site.mkdir()
    (site / 'references.yaml').write_text(references)
    (site / 'compliance.yaml').write_text(
        f'title: {name}\n' + (f'demonstration: {demonstration}\n' if demonstration else '')
        + REQUIRED)
    run = tmp_path / name
    run.mkdir()
    pre = preflight_doc(tmp_path, tree)
    mem = json.loads((DATA / 'store' / 'mem-test.json').read_text())
    mem['host'] = pre['host']
    text = json.dumps(mem)
    (run / 'mem-test-7.json').write_text(text if memtest == 'whole' else text[:len(text) // 2])
    (run / 'preflight-7.json').write_text(json.dumps(pre))
    return run, site


#: "2 pass, 1 fail", as every output writes a run's counts
COUNTS = r'(\d+ [a-z]+(?:, \d+ [a-z]+)*)'


def parse_counts(text):
    '''{result: n} of "2 pass, 1 fail" (as every output writes them).'''
    return {r: int(n) for n, r in re.findall(r'(\d+) ([a-z]+)', text)}


def table(md, heading):
    '''The rows (lists of cells) of the Markdown table under `## heading`.'''
    part = md.split(f'\n## {heading}\n', 1)[1].split('\n## ', 1)[0]
    rows = [[c.strip() for c in line.strip('|').split(' | ')] for line in part.splitlines()
            if line.startswith('| ') and not line.startswith('| check |')]
    return rows


def html_table(page, heading):
    part = page.split(f'<h2>{heading}</h2>', 1)[1].split('</table>', 1)[0]
    return [[html.unescape(c) for c in re.findall(r'<td[^>]*>(.*?)</td>', row)]
            for row in re.findall(r'<tr[^>]*>(.*?)</tr>', part, re.S) if '<td' in row]


def tally(cells):
    out = {}
    for c in cells:
        out[c.lower()] = out.get(c.lower(), 0) + 1
    return out


def outputs(run, site, tmp_path, monkeypatch, capsys):
    '''{output: (state, counts)} of every output of one run.'''
    said = {}
    proc = cobalt_bench('report', run, '--site', site)
    assert proc.returncode in (0, 1) and 'Traceback' not in proc.stderr, proc.stderr
    last = re.search(rf'^{re.escape(run.name)}: ({"|".join(STATES)}) \(([^;)]*)',
                     proc.stdout, re.M)
    assert last, proc.stdout
    said['report: last line'] = last.group(1), parse_counts(last.group(2))
    head = re.search(r'^verdict: ([A-Z ]+?)(?: \(|$)', proc.stdout, re.M)
    said['report: first line'] = head.group(1), said['report: last line'][1]

    out = run / 'report'
    md = (out / 'report.md').read_text()
    state = re.search(r'^\*\*Verdict: ([A-Z ]+)\*\*', md, re.M).group(1)
    ran = re.search(r'Ran and passed:\*\* (\d+) of (\d+) check case\(s\) \(([^)]*)\)', md)
    judged = re.search(r'^- (\d+) check case\(s\), as judged: (.*)$', md, re.M)
    counts = parse_counts(ran.group(3))
    assert int(ran.group(2)) == int(judged.group(1)) == sum(counts.values())
    assert int(ran.group(1)) == counts.get('pass', 0) + counts.get('xfail', 0)
    said['report.md: first screen'] = state, counts
    said['report.md: summary'] = state, parse_counts(judged.group(2))
    said['report.md: Checks table'] = state, tally(r[3] for r in table(md, 'Checks'))

    page = (out / 'report.html').read_text()
    state = re.search(r'<span class="verdict v-[^"]*">([^<]+)</span>', page).group(1)
    text = re.sub(r'\s+', ' ', html.unescape(re.sub(r'<[^>]+>', ' ', page)))
    ran = re.search(r'Ran and passed: (\d+) of (\d+) check case\(s\) \(([^)]*)\)', text)
    judged = re.search(r'(\d+) check case\(s\), as judged: ((?:\d+ [a-z]+(?:, )?)+)', text)
    said['report.html: first screen'] = state, parse_counts(ran.group(3))
    said['report.html: summary'] = state, parse_counts(judged.group(2))
    said['report.html: Checks table'] = state, tally(r[3] for r in html_table(page, 'Checks'))

    verdict = json.loads((out / 'verdict.json').read_text())
    assert verdict['cases'] == sum(verdict['counts'].values())
    said['verdict.json'] = verdict['state'], verdict['counts']

    textfile = tmp_path / f'prom-{run.name}'
    textfile.mkdir()
    proc = cobalt_bench('export', 'prometheus', run, '--site', site, '--textfile-dir', textfile)
    assert proc.returncode == 0, proc.stderr
    prom = (textfile / 'cobalt_bench.prom').read_text()
    state = re.search(r'^cobalt_bench_run_verdict\{[^}]*state="([^"]+)"\} 1$', prom, re.M)
    cases = {r: int(n) for r, n in re.findall(
        r'^cobalt_bench_run_cases\{[^}]*result="([a-z]+)"\} (\d+)$', prom, re.M) if int(n)}
    said['prometheus: run_cases'] = state.group(1), cases
    said['prometheus: case_result'] = state.group(1), tally(re.findall(
        r'^cobalt_bench_case_result\{[^}]*result="([a-z]+)"\} 1$', prom, re.M))
    m = re.search(rf'^{re.escape(run.name)}: ([A-Z ]+?)(?: \(.*\))? \({COUNTS}\); wrote',
                  proc.stdout, re.M)
    said['export: its line'] = m.group(1), parse_counts(m.group(2))

    # nodes drain: its first line, before Slurm is asked (here it knows none of the nodes)
    monkeypatch.setattr(slurm_nodes, 'node_states', lambda names: {})
    capsys.readouterr()
    assert cli_drain.drain_command(str(run), site=str(site)) == 0
    first = capsys.readouterr().out.splitlines()[0]
    m = re.match(rf'{re.escape(run.name)}: ([A-Z ]+?)(?: \(.*\))? \({COUNTS}\); \d+ bad',
                 first)
    assert m, first
    said['nodes drain'] = m.group(1), parse_counts(m.group(2))
    return said, verdict


RUNS = {
    # name: (sysfs tree, mem-test document, references, demonstration, state, counts)
    'clean': ('compliant', 'whole', REFERENCES, None, 'COMPLIANT', {'pass': 2}),
    'failed-preflight': ('noncompliant', 'whole', REFERENCES, None, 'NOT COMPLIANT',
                         {'pass': 1, 'fail': 1}),
    # MemTest's reference is for another partition's only
    'unjudged': ('compliant', 'whole', REFERENCES.replace("MemTest:\n  '*'",
                                                          "MemTest:\n  'other:gpu'"),
                 None, 'INCOMPLETE', {'pass': 1, 'unjudged': 1}),
    'damaged': ('compliant', 'truncated', REFERENCES, None, 'INCOMPLETE',
                {'pass': 1, 'damaged': 1}),
    'demonstration': ('noncompliant', 'whole', REFERENCES, 'a test bench', 'DEMONSTRATION',
                      {'pass': 1, 'fail': 1}),
}


@pytest.mark.parametrize('name', sorted(RUNS))
def test_every_output_gives_the_same_counts_and_verdict(name, tmp_path, monkeypatch,
                                                        capsys):
    tree, memtest, references, demonstration, state, counts = RUNS[name]
    run, site = make_run(tmp_path, name, tree, memtest, references, demonstration)
    said, verdict = outputs(run, site, tmp_path, monkeypatch, capsys)
    assert len(said) == 13
    wrong = {k: v for k, v in said.items() if v != (state, counts)}
    assert not wrong, (wrong, state, counts)


def test_a_case_its_required_settings_failed_is_failed_once_everywhere(tmp_path,
                                                                       monkeypatch, capsys):
    run, site = make_run(tmp_path, 'failed-preflight', 'noncompliant')
    said, verdict = outputs(run, site, tmp_path, monkeypatch, capsys)
    md = (run / 'report' / 'report.md').read_text()
    (row,) = [r for r in table(md, 'Checks') if r[0] == 'preflight']
    assert row[3] == 'FAIL' and row[4].startswith('required preflight setting(s) failed: '
                                                  'cpu.governor, net.ens1f0.mtu')
    assert '(the check itself: PASS)' in row[4]
    # its own measurement met its reference, and says whose the case's FAIL is
    (metric,) = [r for r in table(md, 'Judged measurements') if r[0] == 'preflight']
    assert metric[8] == 'PASS (the case: FAIL, by required settings)'
    # the failed settings are said once each, as reasons; the case's item is not said again
    failed = [r for r in verdict['reasons'] if r.startswith('FAILED')]
    assert len(failed) == 2 and all(r.startswith('FAILED: preflight ') for r in failed)
    (item,) = [i for i in verdict['items'] if i['what'].startswith('preflight on ')]
    assert item['status'] == 'failed' and item['required'] and \
        item['why'] == row[4]
    # the host's own failing settings name it a bad node, by them
    assert [b['node'] for b in verdict['bad_nodes']] == ['cobalt-bad']


def test_a_demonstration_counts_the_failed_settings_and_says_so(tmp_path, monkeypatch,
                                                                capsys):
    run, site = make_run(tmp_path, 'demonstration', 'noncompliant', demonstration='a bench')
    proc = cobalt_bench('report', run, '--site', site)
    # The demonstration's measurements passed: its exit status (README's bootstrap); the
    # machine's failed settings are counted and said in its headline, not hidden.
    assert proc.returncode == 0, proc.stdout
    head = proc.stdout.splitlines()[0]
    assert head.startswith('verdict: DEMONSTRATION (not a compliance verdict; the measurements '
                           'passed') and 'required preflight settings failed' in head
    assert re.search(r'^demonstration: DEMONSTRATION \(1 pass, 1 fail\)$', proc.stdout, re.M)


def test_what_is_not_the_runs_verdict_is_labelled(tmp_path):
    run, site = make_run(tmp_path, 'demonstration', 'noncompliant', demonstration='a bench')
    proc = cobalt_bench('preflight', '--root', DATA / 'sysfs' / 'noncompliant')
    block = proc.stdout.split('----- Test results -----')[1]
    assert 'COMPLIANT' not in block and 'Verdict' not in block
    assert "Own summary:       10 failed (by preflight's own list; not the run's verdict)" \
        in block
    cobalt_bench('report', run, '--site', site)
    for page in ('report.md', 'report.html'):
        text = (run / 'report' / page).read_text()
        text = html.unescape(re.sub(r'<style>.*?</style>|<[^>]+>', ' ', text,
                                    flags=re.S))        # the words a reader sees
        verdicts = set(re.findall(r'\b(NOT COMPLIANT|COMPLIANT|INCOMPLETE|DEMONSTRATION)\b',
                                  text))
        assert verdicts == {'DEMONSTRATION'}, (page, verdicts)
        assert "its own summary, not the site's verdict" in text
        assert "kernel's own verdict (not the site's)" in text
