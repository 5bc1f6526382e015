'''The results model's copies (store.model.replace): the judges make one of every case and
of every judged metric, so the copy must be dataclasses.replace's, field for field, and
type what it is given as the constructor does.'''

import dataclasses

import pytest

from cobalt_bench.store.model import Case, Metric, Run, replace
from cobalt_bench.store.result import Result


def _metric():
    return Metric('measured_speed', 7.9, 'Gbit/s', ref=8.0, lower_thres=-0.05,
                  verdict=Result.PASS, lower=7.6, entry=object())


def _case():
    return Case('mem-test', 'sys', 'part', nodes=['n1'], result=Result.FAIL, jobid='12',
                metrics=[_metric()], docs=[{'test': 'mem-test'}], reframe_result=Result.PASS,
                exit_status=None, memory_overrun=(2, 1), failed_tries=2)


@pytest.mark.parametrize('make, changes', [
    (_metric, {}),
    (_metric, {'verdict': Result.FAIL, 'upper': 9.0, 'entry': None}),
    (_case, {}),
    (_case, {'result': Result.PASS, 'fail_phase': 'sanity', 'metrics': []}),
])
def test_a_copy_is_dataclasses_replaces(make, changes):
    obj = make()
    copy = replace(obj, **changes)
    assert copy == dataclasses.replace(obj, **changes)
    assert copy is not obj
    # every field not changed is the very object the original holds (a shallow copy)
    for f in dataclasses.fields(obj):
        if f.name not in changes:
            assert getattr(copy, f.name) is getattr(obj, f.name)


def test_a_word_given_to_a_copy_is_typed_as_by_the_constructor():
    assert replace(_metric(), verdict='fail').verdict is Result.FAIL
    assert replace(_case(), result='xfail', reframe_result='skip').result is Result.XFAIL
    assert Case('x', result='pass').result is Result.PASS
    with pytest.raises(ValueError):
        replace(_metric(), verdict='no such word')


def test_an_unknown_field_is_an_error_as_with_dataclasses():
    with pytest.raises(TypeError):
        replace(_metric(), no_such_field=1)
    with pytest.raises(TypeError):
        replace(_case(), no_such_field=1)


def test_other_classes_are_copied_by_dataclasses_replace():
    run = Run('/x', 'jobs', site='s')
    copy = replace(run, site='t')
    assert (copy.site, copy.path, run.site) == ('t', '/x', 's')
