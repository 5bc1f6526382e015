'''References derived from data (site.derive, issue 28 item 5), from stores built from the
recorded real run (plugins.stores) and a copy of the site local-slurm: the median and a
tolerance from the spread, the file read back by the site's own loader, the source runs
judged passing by the existing judge and a slowed node failing, runs with failed cases
refused.'''

import statistics

import pytest

from cobalt_bench.judging.judge import verdict_of
from cobalt_bench.site import derive as dv
from cobalt_bench.site.loader import load_site
from cobalt_bench.store.reader import load_run
from cobalt_bench.store.result import Result
from plugins.stores import reframe_run, site_copy, stamp

OK, BAD = Result.PASS, Result.FAIL
SPEEDS = {'n1': 8.0, 'n2': 7.99, 'n3': 8.01, 'n4': 7.98}


@pytest.fixture
def site(tmp_path):
    return load_site(str(site_copy(tmp_path / 'sites')))


def clean_runs(tmp_path, days=(1, 2)):
    results = tmp_path / 'results'
    return [load_run(reframe_run(results, stamp(d), {n: (v + d / 1000, OK)
                                                     for n, v in SPEEDS.items()}))
            for d in days]


def derived(d, metric):
    (e,) = [e for e in d.entries if e.metric == metric]
    return e


def test_median_and_spread_of_clean_runs(tmp_path, site):
    runs = clean_runs(tmp_path)
    d = dv.derive(runs, site)
    assert not d.refused and not d.left_out
    values = [v + day / 1000 for day in (1, 2) for v in SPEEDS.values()]
    e = derived(d, 'measured_speed')
    assert (e.check, e.partition, e.unit) == ('MemTest', 'local-slurm:x86', 'Gbit/s')
    assert e.value == pytest.approx(statistics.median(values))
    # The site's entry judges a lower bound only: so does the derived one; the values
    # spread less than 1%, so the floor is the tolerance.
    assert e.upper is None and e.lower == -0.01
    assert all(verdict_of(x, _ref(e)) is Result.PASS for x in values)
    assert len(e.samples) == 8 and {s.node for s in e.samples} == set(SPEEDS)
    # desired_speed is judged on both sides (site's entry); all values equal: the 1% floor.
    ds = derived(d, 'desired_speed')
    assert (ds.value, ds.lower, ds.upper) == (8.0, -0.01, 0.01)


def _ref(e):
    from cobalt_bench.site.references import Ref
    return Ref(e.value, e.lower, e.upper, e.unit)


def test_the_derived_file_loads_and_judges_the_source_passing_and_a_slow_node_failing(
        tmp_path, site):
    runs = clean_runs(tmp_path)
    d = dv.derive(runs, site)
    old = open(site.references_path).read()
    text = dv.merged_text(old, d)
    (tmp_path / 'new.yaml').write_text(text)
    refs = dv.read_back(text, site, d)
    # The site's loader reads the written file as the site's references.
    with open(site.references_path, 'w') as fp:
        fp.write(text)
    again = load_site(site.dir)
    looked = again.references.lookup('MemTest', 'local-slurm:x86')
    assert looked['measured_speed'].value == derived(d, 'measured_speed').value
    assert refs.lookup('MemTest', 'local-slurm:x86').keys() == looked.keys()
    for run in runs:
        for case in run.cases:
            for m in case.metrics:
                if m.name in looked:
                    assert verdict_of(m.value, looked[m.name]) is Result.PASS, m
    # A node really slower (5%) fails the derived references.
    assert verdict_of(8.0 * 0.95, looked['measured_speed']) is Result.FAIL
    # Each derived entry carries its provenance; what was not derived is kept as written.
    flat = ' '.join(line.strip().lstrip('#').strip() for line in text.splitlines())
    assert '# derived ' in text and f'local-slurm/{stamp(1)}' in flat and '4 node(s)' in flat
    for kept in ('CbLinkTest:', 'OsuPt2Pt:', "    total_speed: [0.3, -0.01, null, 'Gbit/s']",
                 "    measured_speed: [1.0, -0.0025, null, 'Gbit/s']"):
        assert kept in text
    assert '&mem_test_small' in text
    # Derived again from the same runs: the same file (the old provenance replaced).
    d2 = dv.derive(runs, site)
    assert dv.merged_text(text, d2) == text


def test_a_run_with_a_failed_case_is_refused(tmp_path, site):
    results = tmp_path / 'results'
    # (three nodes: fewer derive nothing, issue 37)
    good = load_run(reframe_run(results, stamp(1), {'n1': (8.0, OK), 'n2': (8.0, OK),
                                                    'n3': (8.0, OK)}))
    bad = load_run(reframe_run(results, stamp(2), {'n1': (8.0, OK), 'n2': (6.0, BAD),
                                                   'n3': (8.0, OK)}))
    d = dv.derive([good, bad], site)
    assert d.refused and d.refused[0][0] == f'local-slurm/{stamp(2)}' and not d.entries
    assert 'n2' in d.refused[0][1]
    # Allowed: the run is used, the failed case's values are left out.
    d = dv.derive([good, bad], site, allow_bad=True)
    assert not d.refused and len(d.left_out) == 1
    assert 6.0 not in derived(d, 'measured_speed').values
    assert len(derived(d, 'measured_speed').values) == 5


def test_a_retried_failure_and_a_flagged_node_are_refused(tmp_path, site):
    results = tmp_path / 'results'
    run = load_run(reframe_run(results, stamp(1), {'n1': (8.0, OK), 'n2': (8.0, OK)},
                               retried=('n2',)))
    assert dv.derive([run], site).refused
    other = load_run(reframe_run(results, stamp(2), {'n1': (8.0, OK), 'n2': (8.0, OK)}))
    assert dv.derive([other], site, flagged={'n1'}).refused
    assert not dv.derive([other], site).refused


def test_a_partial_run_is_refused_even_when_allowed(tmp_path, site):
    run = reframe_run(tmp_path / 'results', stamp(1), {'n1': (8.0, OK)})
    (run / 'INCOMPLETE').write_text('interrupted: test\n')
    d = dv.derive([load_run(run)], site, allow_bad=True)
    assert d.refused and 'partial' in d.refused[0][1]


def test_a_given_tolerance(tmp_path, site):
    d = dv.derive(clean_runs(tmp_path), site, tolerance=2.5)
    e = derived(d, 'measured_speed')
    assert (e.lower, e.upper) == (-0.025, None) and '2.5% as given' in e.how


def test_numbers_read_back_as_numbers():
    import yaml
    for x in (1e-05, 1e9, 8.0, 0.0, -0.0025, 123456.7):
        assert yaml.safe_load(dv._num(x)) == x
    assert dv._num(None) == 'null'
    assert dv._round_up(0.0012341) == 0.001235 and dv._round_up(-0.5) == -0.5


# ---- poisoned inputs (issue 37) ----------------------------------------------------------

def test_two_nodes_derive_nothing_and_say_so(tmp_path, site):
    run = load_run(reframe_run(tmp_path / 'results', stamp(1), {'n1': (8.0, OK),
                                                                'n2': (4.0, OK)}))
    d = dv.derive([run], site)
    assert not d.entries
    assert any('2 node(s); a reference needs 3 or more' in n for n in d.notes), d.notes


def test_a_spread_as_wide_as_the_value_derives_nothing(tmp_path, site, monkeypatch):
    # no current reference to judge by: the values alone would give -100 %
    monkeypatch.setattr(site.references, 'lookup', lambda *a, **k: {})
    run = load_run(reframe_run(tmp_path / 'results', stamp(1),
                               {'n1': (8.0, OK), 'n2': (0.01, OK), 'n3': (8.0, OK),
                                'n4': (0.02, OK), 'n5': (8.0, OK)}))
    d = dv.derive([run], site, metrics=('measured_speed',))
    assert not [e for e in d.entries if e.metric == 'measured_speed']
    assert any('a tolerance that wide judges nothing' in n for n in d.notes), d.notes


def test_a_run_below_todays_reference_derives_nothing(tmp_path, site):
    """It passed at 4 Gbit/s under the lax references of its day (ReFrame's verdict in
    the run says pass); today's reference is 8: it must not halve it."""
    run = load_run(reframe_run(tmp_path / 'results', stamp(1),
                               {n: (4.0, OK) for n in ('n1', 'n2', 'n3')}))
    d = dv.derive([run], site)
    assert not [e for e in d.entries if e.metric == 'measured_speed']
    assert any('fail the current reference (8)' in n for n in d.notes), d.notes


def test_a_run_named_twice_counts_once(tmp_path, site):
    (run,) = clean_runs(tmp_path, days=(1,))
    d = dv.derive([run, run], site)
    assert len(derived(d, 'measured_speed').samples) == len(SPEEDS)
