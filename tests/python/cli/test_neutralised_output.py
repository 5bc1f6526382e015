'''What a results store says is shown, never obeyed (issue 27, point 10): check names,
fail reasons, hosts, units and run names reach report.md as text (no raw HTML, no link,
no heading of their own), and the terminal of `cobalt-bench report`, `judge` and `runs`
as visible characters (no escape sequence, no carriage return).

The run is tests/data/store (a real MemTest case of the site `local`) with hostile
strings planted in a copy. The commands run in this process (cli.main).
'''

import json
import os
import re
import shutil

import pytest

from plugins.checkout import DATA, ROOT, cobalt_cli

STORE_DATA = DATA / 'store'
MEMTEST = os.path.join('output', 'local', 'default', 'builtin', 'MemTest')

# What a terminal obeys: C0 controls but the newline that ends each line, DEL, C1.
CONTROL = re.compile('[\x00-\x09\x0b-\x1f\x7f-\x9f]')
ESC = '\x1b'
CLEAR = f'{ESC}[2J{ESC}]0;owned{chr(7)}'


pytestmark = pytest.mark.usefixtures('no_store_settings')


cobalt = cobalt_cli


def make_run(store, site, run_id, change):
    run = store / site / run_id
    (run / MEMTEST).mkdir(parents=True)
    doc = json.loads((STORE_DATA / 'mem-test.json').read_text())
    (run / MEMTEST / 'mem-test.json').write_text(json.dumps(doc))
    text = (STORE_DATA / 'report.json').read_text()
    report = json.loads(text.replace('@RUN@', json.dumps(str(run))[1:-1])
                        .replace('@SITE@', os.path.join(ROOT, 'site-configs', 'local')))
    change(report['runs'][0]['testcases'][0])
    (run / 'report.json').write_text(json.dumps(report))
    return run


def hostile_markdown(tc):
    tc.update(display_name='<script>alert(1)</script>', result='fail',
              fail_phase='sanity<img src=x onerror=alert(2)>',
              fail_reason='see [x](javascript:alert(3)) and <https://evil.example>\r'
                          '# CR heading\n## LF heading | a cell',
              job_nodelist=['n1\r\n# node heading', '`code` ![i](javascript:x)'])
    tc['perfvalues']['local:default:measured_speed'][4] = 'Gbit/s<b>bold</b>'


def md_lines(md):
    return re.split(r'\r\n|\r|\n', md)


def test_markdown_is_text(tmp_path):
    run = make_run(tmp_path / 'results', 'local', 'run', hostile_markdown)
    rc, out, err = cobalt('report', run)
    assert rc == 1, out + err
    md = (run / 'report' / 'report.md').read_text()
    assert '\r' not in md
    # raw HTML and autolinks: every `<` that would open one is escaped
    raw = re.compile(r'(?<!\\)<(script|img|b>|https:)')
    assert not raw.search(md), [line for line in md_lines(md) if raw.search(line)]
    assert not re.search(r'(?<!\\)\]\(javascript:', md)
    assert not [line for line in md_lines(md) if re.match(r'#+ (CR|LF|node) heading', line)]
    # The text is there, shown: escaped, not dropped.
    assert r'\<script>alert(1)\</script>' in md and r'[x\](javascript:alert(3))' in md
    # A cell keeps its columns: the reason's `|` is escaped.
    (row,) = [line for line in md_lines(md) if line.startswith('| \\<script>') and 'fail' in
              line.lower() and 'LF heading' in line and 'own verdict' not in line]
    assert len(re.split(r'(?<!\\)\|', row)) == len(
        re.split(r'(?<!\\)\|', next(line for line in md_lines(md) if line.startswith(
            '| check | partition | node(s) | result')))), row
    html = (run / 'report' / 'report.html').read_text()
    assert '<script>' not in html and '&lt;script&gt;' in html


def visible(*texts):
    '''The control characters in texts (none wanted) as reprs.'''
    return [repr(m.group()) for t in texts for m in CONTROL.finditer(t)]


def hostile_terminal(tc):
    tc.update(display_name=f'Mem{CLEAR}Test', result='fail', fail_phase=f'sanity{ESC}[8m',
              fail_reason=f'bad\rOK: all passed{ESC}[1A{chr(0x9b)}2J',
              job_nodelist=[f'n1{ESC}[31m'])
    tc['perfvalues']['local:default:measured_speed'][4] = f'Gbit/s{ESC}[5m'


def failing_metric(tc):
    hostile_terminal(tc)
    tc['perfvalues']['local:default:measured_speed'][5] = 'fail'


def test_report_terminal_output_is_visible(tmp_path):
    store = tmp_path / 'results'
    # Judged by the installed site `local`: the fail reason is a reason of the verdict.
    run = make_run(store, 'local', f'run{ESC}]0;x{chr(7)}', hostile_terminal)
    # a damaged file of the run too: its name and problem are printed on stderr
    os.symlink('/nonexistent', run / MEMTEST / f'x{ESC}[2J.json')
    rc, out, err = cobalt('report', run)
    assert rc == 1 and 'verdict:' in out, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    assert '\\x1b[2J' in out and 'bad\\rOK: all passed' in out
    assert 'x\\x1b[2J.json' in err
    # The HTML report shows them as the terminal does: the page holds no escape byte
    # (issue 37: report.html kept the raw bytes of documents and perflogs).
    page = (run / 'report' / 'report.html').read_text()
    assert ESC not in page and chr(0x9b) not in page, visible(page)[:5]
    assert '\\x1b' in page and 'bad\\x0dOK: all passed' in page
    # A failing metric's unit; a site of a name no site has.
    other = make_run(store, f'lo{ESC}[2Jcal', 'run', failing_metric)
    rc, out, err = cobalt('report', other)
    assert 'Gbit/s\\x1b[5m' in out, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    rc, out, err = cobalt('runs', '--results', store)
    assert 'run\\x1b]0;x\\x07' in out and 'lo\\x1b[2Jcal' in out, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    rc, out, err = cobalt('report', '--compare', run, other)
    assert rc == 1 and 'cobalt-bench compare: local/run\\x1b' in out, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    rc, out, err = cobalt('report', '--compare', run, run)
    assert rc == 2 and 'run\\x1b]0;x\\x07' in err, out + err
    assert not visible(out, err), (visible(out, err), out, err)


def test_judge_terminal_output_is_visible(tmp_path):
    doc = json.loads((STORE_DATA / 'mem-test.json').read_text())
    doc['host'] = f'n1{CLEAR}'
    doc['metrics']['measured_speed']['unit'] = f'Gbit/s{ESC}[5m\r'
    path = tmp_path / 'mem-test-7.json'
    path.write_text(json.dumps(doc))
    other = dict(doc, test=f'own{CLEAR}')
    (tmp_path / 'other-8.json').write_text(json.dumps(other))
    rc, out, err = cobalt('judge', '--site', 'local', path, tmp_path / 'other-8.json')
    assert rc in (0, 1) and 'judged as' in out, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    assert '\\x1b[2J' in out


def test_an_error_message_is_visible(tmp_path):
    # A run that cannot be read: its name and problem go to stderr, visibly.
    bad = tmp_path / f'doc{ESC}[2J.json'
    bad.write_text('{"test": "mem-test", "metrics": 5}')
    rc, out, err = cobalt('report', bad)
    assert rc == 3 and 'doc\\x1b[2J.json' in err, out + err
    assert not visible(out, err), (visible(out, err), out, err)
    shutil.rmtree(tmp_path / 'report', ignore_errors=True)
