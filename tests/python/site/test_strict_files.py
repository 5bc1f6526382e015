'''A site's files and the results are read strictly (issue 37): a key given twice in
references.yaml or in a JSON document, NaN or Infinity in a document, a compliance.yaml
title that is no line of text, or one whose aliases expand without bound, are each an error
naming the file (exit 3 for a command), never last-one-wins, a crash or a minute's work.'''
import json
import os
import shutil
import time

import pytest

from cobalt_bench import site as site_mod
from cobalt_bench.site.files import MAX_VALUES, SiteError
from cobalt_bench.store.documents import Damaged, read_json
from plugins.checkout import ROOT

LOCAL = os.path.join(ROOT, 'site-configs', 'local')
MEM_TEST_DOC = os.path.join(ROOT, 'tests', 'data', 'store', 'mem-test.json')


@pytest.fixture
def site(tmp_path):
    where = tmp_path / 'site'
    where.mkdir()
    shutil.copy(os.path.join(LOCAL, 'references.yaml'), where)
    return where


def test_a_second_check_block_in_references_yaml_is_an_error(site):
    with open(site / 'references.yaml', 'a') as fp:
        fp.write("\nMemTest:\n  'local:default':\n    measured_speed: [1.0, -0.1, null, "
                 "'Gbit/s']\n")
    with pytest.raises(SiteError) as err:
        site_mod.load_site(str(site))
    assert "the key 'MemTest' is given twice (first on line" in str(err.value)
    assert 'references.yaml' in str(err.value)


def test_a_repeated_metric_line_is_an_error_and_merged_keys_are_not(site):
    (site / 'references.yaml').write_text(
        "MemTest:\n  'local:default': &base\n    measured_speed: [8.0, -0.1, null, 'Gbit/s']\n"
        "    measured_speed: [1.0, -0.1, null, 'Gbit/s']\n")
    with pytest.raises(SiteError) as err:
        site_mod.load_site(str(site))
    assert "the key 'measured_speed' is given twice (first on line 3)" in str(err.value)
    # YAML's merge: a key of the anchor overridden on purpose is no duplicate
    (site / 'references.yaml').write_text(
        "MemTest:\n  'local:default': &base\n    measured_speed: [8.0, -0.1, null, 'Gbit/s']\n"
        "    desired_speed: [8.0, -0.001, 0.001, 'Gbit/s']\n"
        "  'other:default':\n    <<: *base\n    measured_speed: [4.0, -0.1, null, 'Gbit/s']\n")
    loaded = site_mod.load_site(str(site))
    assert loaded.references.lookup('MemTest', 'other:default')['measured_speed'].value == 4.0


def test_a_title_that_is_no_text_and_an_alias_bomb_are_refused_at_once(site):
    (site / 'compliance.yaml').write_text('title: [a, b]\n')
    with pytest.raises(SiteError, match='title: a line of text, not a list'):
        site_mod.load_site(str(site))
    levels = ['  - &a0 [x, x, x, x, x, x, x, x, x, x]'] + [
        f'  - &a{i} [' + ', '.join([f'*a{i - 1}'] * 10) + ']' for i in range(1, 9)]
    (site / 'compliance.yaml').write_text('title:\n' + '\n'.join(levels) + '\n')  # 10^9
    start = time.monotonic()
    with pytest.raises(SiteError) as err:
        site_mod.load_site(str(site))
    assert f'expands to more than {MAX_VALUES:,} values' in str(err.value)
    assert time.monotonic() - start < 20      # refused while counting, never expanded


@pytest.mark.parametrize('change, said', [
    (lambda t: t.replace('"metrics": {', '"metrics": {"measured_speed": {"value": 1}, ', 1),
     "the key 'measured_speed' is given twice in one object"),
    (lambda t: t.replace('"verification_errors": {"value": 0',
                         '"verification_errors": {"value": Infinity', 1),
     'Infinity is not a number a result may hold'),
    (lambda t: t.replace('"verification_errors": {"value": 0',
                         '"verification_errors": {"value": NaN', 1),
     'NaN is not a number a result may hold')])
def test_a_json_document_is_read_strictly(change, said, tmp_path):
    with open(MEM_TEST_DOC) as fp:
        text = json.dumps(json.load(fp))
    changed = change(text)
    assert changed != text
    path = tmp_path / 'mem-test-7.json'
    path.write_text(changed)
    with pytest.raises(Damaged) as err:
        read_json(str(path))
    assert said in err.value.problem
