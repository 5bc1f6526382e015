'''The one JSON reader (store.documents.read_json): orjson where it says exactly what the
strict reader says, the strict reader wherever it may not (a key given twice, NaN or
Infinity, a \\u escape, anything orjson refuses); and the strings a sweep's documents
repeat shared between them.'''

import glob
import json
import os

import pytest

from cobalt_bench import fileio
from cobalt_bench.store import documents
from cobalt_bench.store.documents import Damaged, read_json
from plugins.checkout import DATA, ROOT

pytestmark = pytest.mark.skipif(documents._orjson is None,
                                reason='orjson is not installed (requirements.txt pins it)')


@pytest.fixture
def strict(monkeypatch):
    '''read_json with the strict reader alone, as where orjson is not installed.'''
    def read(path, **kw):
        with monkeypatch.context() as m:
            m.setattr(documents, '_orjson', None)
            return read_json(path, **kw)
    return read


def _recorded_json():
    '''Every JSON file the tests keep as recorded data: documents of every kernel, ReFrame
    reports, records, inventories.'''
    found = sorted(glob.glob(os.path.join(ROOT, 'tests', '**', '*.json'), recursive=True))
    assert len(found) >= 8, found
    return found


def test_every_recorded_file_reads_as_the_strict_reader_reads_it(strict):
    fast = 0
    for path in _recorded_json():
        try:
            want = ('ok', strict(path))
        except Damaged as err:
            want = ('damaged', err.problem)
        try:
            got = ('ok', read_json(path))
        except Damaged as err:
            got = ('damaged', err.problem)
        assert got == want, path
        with open(path, 'rb') as fp:
            fast += documents._fast_parse(fp.read(), share=False) is not None
    assert fast >= len(_recorded_json()) // 2       # and orjson read most of them


@pytest.mark.parametrize('text', [
    '{"test": "mem-test", "test": "cpu-test"}',
    '{"metrics": {"a": {"value": 1, "value": 2}}}',
    # The dropped value holds colons: the counts still differ.
    '{"host": "a:b:c", "metrics": {}, "host": "d"}',
    '[{"k": 1}, {"k": 2, "k": 3}]',
    # A \\u escape in the text (one could spell a colon): the strict reader reads it.
    '{"a": "\\u003a", "b": 1, "b": 2}',
])
def test_a_key_given_twice_is_refused_however_it_is_hidden(tmp_path, text):
    path = tmp_path / 'doc.json'
    path.write_text(text)
    with pytest.raises(Damaged, match='is given twice in one object'):
        read_json(str(path))


@pytest.mark.parametrize('text, said', [
    ('{"value": NaN}', 'NaN is not a number a result may hold'),
    ('{"value": -Infinity}', '-Infinity is not a number a result may hold'),
    ('{"value": 1', 'the text ends in the middle of the document'),
    ('', 'empty file'),
    ('{"value": 1} x', 'not valid JSON: Extra data'),
    ('[' * 5000 + ']' * 5000, 'nested too deeply'),
    ('\ufeff{"value": 1}', 'not valid JSON: Unexpected UTF-8 BOM'),
])
def test_what_orjson_refuses_is_said_by_the_strict_reader(tmp_path, text, said):
    path = tmp_path / 'doc.json'
    path.write_text(text)
    with pytest.raises(Damaged, match=said):
        read_json(str(path))


def test_numbers_past_a_double_read_as_the_strict_reader_reads_them(tmp_path, strict):
    # orjson refuses them; json reads 1e400 as inf and big integers exactly.
    path = tmp_path / 'doc.json'
    path.write_text('{"big": 123456789012345678901234567890, "huge": 1e400}')
    assert read_json(str(path)) == strict(str(path))
    assert read_json(str(path))['big'] == 123456789012345678901234567890


def test_the_escapes_and_text_orjson_reads_are_the_strict_readers(tmp_path, strict):
    path = tmp_path / 'doc.json'
    path.write_text(json.dumps({'host': 'nöde:1', 'quote': 'a "b": c', 'list': [1.5, -0.0],
                                'nested': {'x': [{'y': 'z:'}]}}, ensure_ascii=False))
    assert read_json(str(path)) == strict(str(path))
    assert documents._fast_parse(path.read_bytes(), share=False) is not None


def test_documents_share_their_units_and_names(tmp_path):
    doc = json.loads((DATA / 'store' / 'mem-test.json').read_text())
    paths = []
    for host in ('n1', 'n2'):
        doc['host'] = host
        paths.append(tmp_path / f'{host}.json')
        paths[-1].write_text(json.dumps(doc, indent=2))
    a, b = (read_json(str(p)) for p in paths)
    assert a['metrics']['measured_speed']['unit'] is b['metrics']['measured_speed']['unit']
    assert a['config']['ops'][0] is b['config']['ops'][0]
    assert a['test'] is b['test'] and a['host'] == 'n1' and b['host'] == 'n2'
    assert read_json(str(paths[0]), share=False) == a     # a record read for a field


@pytest.mark.parametrize('size', [0, 1, fileio.READ_SIZE - 1, fileio.READ_SIZE,
                                  3 * fileio.READ_SIZE + 7])
def test_a_file_is_read_whole_whatever_its_size(tmp_path, size):
    path = tmp_path / 'f'
    data = os.urandom(size)
    path.write_bytes(data)
    assert fileio.read_bytes(str(path)) == data


def test_what_cannot_be_read_is_said_as_the_system_says_it(tmp_path):
    with pytest.raises(documents.Damaged, match=r'^.*: cannot read: Is a directory$'):
        documents.read_json(str(tmp_path))
    with pytest.raises(documents.Damaged, match='cannot read: No such file or directory'):
        documents.read_json(str(tmp_path / 'absent.json'))
