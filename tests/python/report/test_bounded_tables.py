'''The report's bounded tables (report.rows.bounded) made from a stream of rows: at most
`limit` of each kind held (a sweep of 10,000 nodes has 280,000 judged values), the same
rows shown and counted as the whole list would give: all of them in the run's order where
they fit, else those that did not pass first, then others up to the limit. The node
tables (report.fleet) likewise: the worst of 380,000 values found without sorting them all.'''
import random

from cobalt_bench.report.rows import bounded


def whole_list(pairs, limit):
    '''The rule, said on the whole list at once: the more notable (a larger level) first.'''
    if len(pairs) <= limit:
        return [r for r, _ in pairs], 0, 0
    notable = [r for r, n in sorted((p for p in pairs if p[1]), key=lambda p: -int(p[1]))]
    others = [r for r, n in pairs if not n]
    shown = (notable + others)[:limit]
    left = max(0, len(notable) - limit)
    return shown, left, len(pairs) - len(shown) - left


def test_a_stream_gives_what_the_whole_list_gives():
    rnd = random.Random(39)
    for _ in range(500):
        n, limit = rnd.randrange(0, 60), rnd.randrange(0, 25)
        share = rnd.random()
        pairs = [(f'row {i}', rnd.random() < share) for i in range(n)]
        assert bounded(iter(pairs), limit) == whole_list(pairs, limit), (pairs, limit)
        # levels: a failed measurement (2) before a case its required settings failed (1)
        pairs = [(f'row {i}', rnd.choice((0, 1, 2)) * (rnd.random() < share))
                 for i in range(n)]
        assert bounded(iter(pairs), limit) == whole_list(pairs, limit), (pairs, limit)


def test_in_order_where_they_fit():
    pairs = [('a', False), ('b', True), ('c', False)]
    assert bounded(pairs, 3) == (['a', 'b', 'c'], 0, 0)
    assert bounded(pairs, 2) == (['b', 'a'], 0, 1)


def test_the_node_tables_rows_are_the_worst_first_of_all(monkeypatch):
    '''report.fleet.node_tables picks the MAX_ROWS shown of the values within their peers
    from those at or above the MAX_ROWS-th highest score only: the same rows, in the same
    order, as sorting all of them (ties in score broken by node, check, metric).'''
    from types import SimpleNamespace

    from cobalt_bench.judging import fleet as fl
    from cobalt_bench.report import fleet as rp_fleet
    monkeypatch.setattr(rp_fleet, 'MAX_ROWS', 7)
    rnd = random.Random(36)
    dists = []
    for metric in ('a', 'b', 'c'):
        values = [fl.NodeValue(f'n{i}', f'MemTest n{i}', 1.0,
                               score=rnd.choice([0.0, 0.5, 1.0, 2.5]),
                               flagged=rnd.random() < 0.05, failed=rnd.random() < 0.03)
                  for i in range(60)]
        dists.append(fl.Distribution('p', 'MemTest', metric, 'GB/s', fl.Direction.LOWER, values))
    model = SimpleNamespace(judgement=SimpleNamespace(fleet=fl.Fleet(distributions=dists)),
                            flaky=[])
    [(part, rows, left)] = rp_fleet.node_tables(model)
    pairs = sorted(((d, v) for d in dists for v in d.values),
                   key=lambda dv: (not dv[1].failed, not dv[1].flagged, -dv[1].score,
                                   dv[1].node, dv[0].check, dv[0].metric))
    bad = [p for p in pairs if p[1].failed or p[1].flagged]
    rest = [p for p in pairs if not (p[1].failed or p[1].flagged)]
    assert [(r[0], r[2]) for r in rows] == [(v.node, d.metric) for d, v in bad + rest[:7]]
    assert left == len(rest) - 7
