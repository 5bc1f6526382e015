'''A run that did not finish is never a pass (issue 27): a kernel's document marked
`"interrupted": true` (scancel, a time limit, Ctrl-C) is judged as a run that stopped, by
`cobalt-bench judge` and the report of job documents alike, and by the ReFrame checks'
sanity rule, whatever its figures say.'''

import json
import shutil

from cobalt_bench.judging import sanity
from plugins.checkout import DATA, cobalt_cli

DOC = DATA / 'store' / 'mem-test.json'


def interrupted_doc(tmp_path):
    doc = json.loads(DOC.read_text())
    doc['interrupted'] = True
    path = tmp_path / 'mem-test-7.json'
    path.write_text(json.dumps(doc))
    return path


def test_the_whole_document_passes_and_the_interrupted_one_does_not(tmp_path, monkeypatch):
    monkeypatch.delenv('COBALT_BENCH_SITE', raising=False)
    whole = tmp_path / 'whole.json'
    shutil.copy(DOC, whole)
    rc, out, _ = cobalt_cli('judge', '--site', 'local', whole)
    assert rc == 0 and ': PASS' in out, out     # the same figures, finished
    rc, out, _ = cobalt_cli('judge', '--site', 'local', interrupted_doc(tmp_path))
    assert rc != 0, out
    assert ': PASS' not in out and 'was interrupted' in out, out


def test_the_report_of_job_documents_is_incomplete_naming_the_cause(tmp_path, monkeypatch):
    monkeypatch.delenv('COBALT_BENCH_SITE', raising=False)
    store = tmp_path / 'slurm'
    store.mkdir()
    interrupted_doc(store)
    rc, out, _ = cobalt_cli('report', store, '--site', 'local', '--format', 'md')
    assert rc != 0, out
    assert 'was interrupted' in out and 'the checks that ran passed' not in out, out


def test_the_checks_sanity_rule_refuses_it(tmp_path):
    doc = json.loads(interrupted_doc(tmp_path).read_text())
    problems = sanity.document_problems(doc, 'mem-test', {})
    assert any('was interrupted' in p for p in problems), problems
    assert not sanity.document_problems(json.loads(DOC.read_text()), 'mem-test', {})
