'''verdict.json as written (report.write): the same object json.load reads back, key for
key in order, whatever it holds; one key of the top object a line and each element of a
list a line of its own, written in pieces (the C encoder, not the stdlib's pure-Python
one that an indent needs: 6 s of a 10,000-node report, issue 39).'''
import json

from cobalt_bench.report import write


VERDICT = {
    'state': 'NOT COMPLIANT',
    'headline': 'a "quoted" line\nand a second one, \u00e9 \u202e',
    'reasons': [f'reason {i}' for i in range(10)],
    'site': '',
    'demonstration': None,
    'items': [{'status': 'failed', 'what': f'MemTest on n{i}', 'required': i % 2 == 0,
               'value': float('nan') if i == 3 else i / 7} for i in range(25)],
    'unjudged': [],
    'bad_nodes': [{'node': 'n1', 'why': ['a', {'b': [1, 2]}]}],
    'outlier_threshold': 4.0,
    'empty': {},
}


def written(obj, tmp_path, batch):
    path = tmp_path / 'verdict.json'
    file = write._Json(obj)
    file.BATCH = batch
    file.write(str(path))
    return path.read_text()


def test_it_reads_back_as_written_in_any_batch(tmp_path):
    for batch in (1, 2, 7, 4096):
        text = written(VERDICT, tmp_path, batch)
        back = json.loads(text)
        assert list(back) == list(VERDICT)
        # NaN is NaN (not equal to itself): compared through the same encoder.
        assert json.dumps(back) == json.dumps(VERDICT)
        assert text.endswith('}\n')


def test_one_key_and_one_list_element_a_line(tmp_path):
    lines = written(VERDICT, tmp_path, 4096).splitlines()
    assert lines[0] == '{' and lines[-1] == '}'
    assert lines[1] == '  "state": "NOT COMPLIANT",'
    items = [line for line in lines if line.startswith('    {"status"')]
    assert len(items) == 25 and all(json.loads(line.rstrip(',')) for line in items)
    assert '  "unjudged": [],' in lines and '  "empty": {}' in lines
    # '{', a line a key, a line an element of the 3 lists that have some, their ']', '}':
    # a line break in a value stays inside its string.
    assert len(lines) == 1 + len(VERDICT) + (10 + 25 + 1) + 3 + 1


def test_not_an_object(tmp_path):
    assert json.loads(written([1, 'a'], tmp_path, 1)) == [1, 'a']
