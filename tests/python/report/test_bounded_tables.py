'''The report's bounded tables (report.rows.bounded) made from a stream of rows: at most
`limit` of each kind held (a sweep of 10,000 nodes has 280,000 judged values), the same
rows shown and counted as the whole list would give: all of them in the run's order where
they fit, else those that did not pass first, then others up to the limit.'''
import random

from cobalt_bench.report.rows import bounded


def whole_list(pairs, limit):
    '''The rule, said on the whole list at once.'''
    if len(pairs) <= limit:
        return [r for r, _ in pairs], 0, 0
    notable = [r for r, n in pairs if n]
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


def test_in_order_where_they_fit():
    pairs = [('a', False), ('b', True), ('c', False)]
    assert bounded(pairs, 3) == (['a', 'b', 'c'], 0, 0)
    assert bounded(pairs, 2) == (['b', 'a'], 0, 1)
