'''The text report of a cb-linktest results file, for terminals: the run, the bandwidth
distribution, each host's worst link, the slowest pairs with their retest, the flagged
links and the payload errors. Returned as lines: the command line prints them.'''

from .analysis import fmt_time


def text_lines(np, s, top):
    '''The lines of the text report of the Analysis s, at most `top` flagged links and
    payload errors listed; when no pair was tested (s.pairs_tested 0), the run and that.'''
    out = [f'cb-linktest results {s.path}',
           f'  run:      {s.run_line()}',
           f'  test:     {s.test_line()}',
           f'  command:  {s.meta.get("command", "?")}']
    if not s.pairs_tested:
        out.append('No pair was tested.')
        return out
    out.append(f'Pairs tested: {s.pairs_tested} of {s.pairs_all}')
    b = s.bw_pairs
    out.append(f'Bandwidth [Gbit/s]: min {b.min():.3f}  median {np.median(b):.3f}  '
               f'mean {b.mean():.3f}  max {b.max():.3f}')
    out.append(f'Time per message:   min {fmt_time(np.nanmin(s.t_pairs))}  median '
               f'{fmt_time(s.median)}  max {fmt_time(np.nanmax(s.t_pairs))}')
    if s.per_host:
        out.append('Per host (links to other hosts): worst and median bandwidth [Gbit/s]')
        for h, ranks, worst, median in s.per_host:
            out.append(f'  {h:<24} {ranks:>5} ranks  worst {worst:9.3f}  '
                       f'median {median:9.3f}')
    if s.retests:
        out.append('Slowest pairs (parallel test, then alone):')
        for a, b_, first, again in s.retests:
            out.append(f'  {a:>6} <-> {b_:<6} {s.hosts[a]} <-> {s.hosts[b_]}: '
                       f'{fmt_time(first)} ({s.gbits(first):.3f} Gbit/s), retest '
                       f'{fmt_time(again)} ({s.gbits(again):.3f} Gbit/s)')
    out += [f'{label}: {text}' for label, text in s.a2a_lines()]
    out += [f'All-to-all: {label}: {text}' for label, text in s.all_to_all]
    rules = s.rules()
    if rules:
        retest = {(a, b_): again for a, b_, _, again in s.retests}
        out.append(f'Flagged links ({" or ".join(rules)}): {len(s.flagged)}')
        for a, b_, t, b_gbits, ratio in s.flagged[:top]:
            again = retest.get((a, b_))
            extra = f', retest {fmt_time(again)}' if again is not None else ''
            out.append(f'  {a:>6} <-> {b_:<6} {s.hosts[a]} <-> {s.hosts[b_]}: {fmt_time(t)} '
                       f'({b_gbits:.3f} Gbit/s, {ratio:.1f} x median){extra}')
        if len(s.flagged) > top:
            out.append(f'  ... and {len(s.flagged) - top} more')
    if s.errors:
        out.append(f'PAYLOAD ERRORS (--check-buffers) in {len(s.errors)} pair test(s):')
        out += [f'  {a} <-> {b_} ({s.hosts[a]} <-> {s.hosts[b_]})' for a, b_ in s.errors[:top]]
    return out

