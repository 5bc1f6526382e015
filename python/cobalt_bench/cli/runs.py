'''`cobalt-bench runs`: the runs of the results store, their state and checks.'''

import sys

from ..store import listing


def command(base, site):
    '''Exit status 0, or 1 when a run listed is damaged (listed with why).'''
    base = listing.store_to_list(base)
    runs = listing.listing(base, site)
    if not runs:
        print(f'no runs in {base}' + (f' for site {site}' if site else ''))
        return 0
    print(f'results store: {base}')
    print(f'{"SITE":<14} {"RUN ID":<24} {"STATE":<9} CHECKS')
    for r in runs:
        print(f'{r.site:<14} {r.run_id:<24} {r.state:<9} {r.checks}'
              + (f'  ({r.why})' if r.why else ''))
    damaged = sum(r.damaged for r in runs)
    if damaged:
        print(f'{damaged} run(s) with damaged results: their files are named above',
              file=sys.stderr)
    return 1 if damaged else 0
