'''A document's metrics held compactly once read (store.metric_entries): the same entries
as the file's, a new dict each; names and units shared between documents; anything not
exactly {"value": number, "unit": text} left as parsed.'''

import copy
import glob
import json
import os
import pickle

import pytest

from cobalt_bench.judging import sanity
from cobalt_bench.store import metric_entries, reader
from cobalt_bench.store.documents import (Damaged, kernel_doc_problems,
                                          looks_like_kernel_doc, read_json)
from cobalt_bench.store.metric_entries import MetricEntries, compact
from plugins.checkout import ROOT


def _doc(**metrics):
    return {'test': 'mem-test', 'host': 'n1', 'metrics': metrics}


def _plain(entries):
    '''The metrics as a dict of dicts again, in order.'''
    return {name: dict(entry) for name, entry in entries.items()}


def test_compact_entries_say_what_the_file_said():
    text = json.dumps(_doc(measured_speed={'value': 7.5, 'unit': 'Gbit/s'},
                           verified_blocks={'value': 806, 'unit': 'blocks'},
                           average_late={'value': 0.0, 'unit': '%'}))
    doc = compact(json.loads(text))
    m = doc['metrics']
    assert m.__class__ is MetricEntries
    assert m == json.loads(text)['metrics'] and json.loads(text)['metrics'] == m
    assert list(m) == ['measured_speed', 'verified_blocks', 'average_late']
    assert len(m) == 3 and 'average_late' in m and 'nothing' not in m
    assert m['verified_blocks'] == {'value': 806, 'unit': 'blocks'}
    assert type(m['verified_blocks']['value']) is int
    assert m.get('nothing') is None and m.get('nothing', {}) == {}
    with pytest.raises(KeyError):
        m['nothing']
    assert list(m.triples()) == [('measured_speed', 7.5, 'Gbit/s'),
                                 ('verified_blocks', 806, 'blocks'), ('average_late', 0.0, '%')]
    # Each entry is a new dict: changing one changes nothing held.
    m['measured_speed']['value'] = 0
    assert m['measured_speed']['value'] == 7.5
    assert json.dumps(_plain(m)) == json.dumps(json.loads(text)['metrics'])


@pytest.mark.parametrize('entry', [
    {'value': 1.0, 'unit': 'x', 'note': 'more'},      # a key more
    {'unit': 'x', 'value': 1.0},                      # another order
    {'value': True, 'unit': 'x'},                     # a bool
    {'value': None, 'unit': 'x'},
    {'value': '1.0', 'unit': 'x'},
    {'value': 1.0, 'unit': None},
    {'value': 1.0},
    [1.0, 'x'],
    {'value': 1.0, 'value2': 'x'},
], ids=repr)
def test_a_metrics_object_not_exactly_value_and_unit_stays_as_parsed(entry):
    doc = _doc(first={'value': 2.0, 'unit': 'y'}, odd=entry)
    kept = copy.deepcopy(doc['metrics'])
    assert compact(doc)['metrics'].__class__ is dict
    assert doc['metrics'] == kept


def test_empty_or_missing_metrics_stay_as_they_are():
    assert compact([1, 2]) == [1, 2] and compact('text') == 'text'
    assert compact(_doc())['metrics'] == {}
    assert compact({'test': 'x'}) == {'test': 'x'}
    assert compact({'test': 'x', 'metrics': None})['metrics'] is None


def test_documents_of_one_layout_share_names_and_units():
    a = compact(_doc(s={'value': 1.0, 'unit': 'Gbit/s'}, e={'value': 0, 'unit': 'errors'}))
    b = compact(_doc(s={'value': 2.0, 'unit': 'Gbit/s'}, e={'value': 3, 'unit': 'errors'}))
    c = compact(_doc(s={'value': 2.0, 'unit': 'MB/s'}, e={'value': 3, 'unit': 'errors'}))
    assert a['metrics']._layout is b['metrics']._layout
    assert c['metrics']._layout is not a['metrics']._layout
    assert b['metrics']['e'] == {'value': 3, 'unit': 'errors'} and c['metrics']['s']['unit'] == 'MB/s'


def test_past_the_shared_layouts_a_document_is_still_exact(monkeypatch):
    monkeypatch.setattr(metric_entries, 'MAX_LAYOUTS', 0)
    doc = compact(_doc(unshared_name={'value': 4.0, 'unit': 'u'}))
    assert doc['metrics'] == {'unshared_name': {'value': 4.0, 'unit': 'u'}}
    assert ('unshared_name',) not in {k[0] for k in metric_entries._LAYOUTS}


def test_a_worker_s_document_unpickles_whole_and_shared():
    doc = compact(_doc(s={'value': 1.5, 'unit': 'Gbit/s'}, n={'value': 7, 'unit': 'blocks'}))
    again = pickle.loads(pickle.dumps(doc))
    assert again == doc and again['metrics'].__class__ is MetricEntries
    assert again['metrics']._layout is doc['metrics']._layout


def _recorded_kernel_docs():
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', '**', '*.json'), recursive=True)):
        try:
            doc = read_json(path)
        except Damaged:
            continue
        if looks_like_kernel_doc(doc) and not kernel_doc_problems(doc):
            out.append((path, doc))
    assert len(out) >= 4, out
    return out


def test_every_recorded_kernel_document_compacts_to_itself():
    held = 0
    for path, doc in _recorded_kernel_docs():
        as_read = copy.deepcopy(doc)
        done = compact(doc)
        assert done == as_read, path
        assert not kernel_doc_problems(done), path
        metrics = done.get('metrics')
        if metrics.__class__ is MetricEntries:
            held += 1
            assert json.dumps(_plain(metrics)) == json.dumps(as_read['metrics']), path
    assert held >= 3, held


@pytest.mark.parametrize('change', [
    lambda m: m.pop('verified_blocks'),
    lambda m: m['measured_speed'].update(unit='MB/s'),
    lambda m: m['verification_errors'].update(value=3),
], ids=['missing', 'unit', 'errors'])
def test_the_sanity_rule_says_the_same_of_a_compact_document(change):
    units = {'measured_speed': 'Gbit/s', 'verified_blocks': 'blocks',
             'verification_errors': 'errors'}
    doc = _doc(measured_speed={'value': 7.5, 'unit': 'Gbit/s'},
               verified_blocks={'value': 806, 'unit': 'blocks'},
               verification_errors={'value': 0, 'unit': 'errors'})
    change(doc['metrics'])
    plain = sanity.document_problems(doc, 'mem-test', units)
    assert plain
    held = compact(copy.deepcopy(doc))
    assert held['metrics'].__class__ is MetricEntries
    assert sanity.document_problems(held, 'mem-test', units) == plain
    assert sanity.verification_errors(held) == sanity.verification_errors(doc)


def test_a_directory_of_job_documents_is_read_compact(tmp_path):
    doc = _doc(measured_speed={'value': 7.5, 'unit': 'Gbit/s'},
               verified_blocks={'value': 806, 'unit': 'blocks'},
               cores={'value': 2, 'unit': 'cores', 'note': 'of 2'})
    (tmp_path / 'mem-test-1.json').write_text(json.dumps(doc))
    plain = _doc(measured_speed={'value': 7.5, 'unit': 'Gbit/s'})
    (tmp_path / 'mem-test-2.json').write_text(json.dumps(plain))
    run = reader.load_run(str(tmp_path))
    by_job = {c.jobid: c for c in run.cases}
    # An entry with more than a value and a unit: that document is kept as parsed, its
    # case the same.
    assert by_job['1'].docs[0]['metrics'].__class__ is dict
    assert [(m.name, m.value) for m in by_job['1'].metrics] == [
        ('measured_speed', 7.5), ('verified_blocks', 806), ('cores', 2)]
    assert by_job['2'].docs[0]['metrics'].__class__ is MetricEntries
    assert [(m.name, m.value, m.unit) for m in by_job['2'].metrics] == [
        ('measured_speed', 7.5, 'Gbit/s')]


def test_an_infinite_value_stays_as_parsed_and_is_no_measurement(tmp_path):
    # The strict reader reads a number past a double as infinity: never held compact.
    path = tmp_path / 'mem-test-3.json'
    path.write_text('{"test": "mem-test", "metrics": {"measured_speed": '
                    '{"value": 1e999, "unit": "Gbit/s"}}}')
    doc = compact(read_json(str(path)))
    assert doc['metrics'].__class__ is dict
    assert sanity.document_problems(doc, 'mem-test', {'measured_speed': 'Gbit/s'}) == [
        "JSON metrics without a finite value: ['measured_speed']"]


def test_what_a_layout_says_is_asked_again_of_other_units():
    doc = compact(_doc(measured_speed={'value': 7.5, 'unit': 'Gbit/s'}))
    other = compact(_doc(measured_speed={'value': 1.0, 'unit': 'Gbit/s'}))
    assert doc['metrics'].layout is other['metrics'].layout
    assert sanity.document_problems(doc, 'mem-test', {'measured_speed': 'Gbit/s'}) == []
    assert sanity.document_problems(other, 'mem-test', {'measured_speed': 'MB/s'}) == [
        "JSON metrics in unexpected units: [\"measured_speed ('Gbit/s', expected 'MB/s')\"]"]
    assert sanity.document_problems(other, 'mem-test', {'average_late': '%'}) == [
        "JSON result lacks metrics ['average_late']"]
    assert sanity.document_problems(doc, 'mem-test', {'measured_speed': 'Gbit/s'}) == []
