'''`cobalt-bench runs`: the runs of the results store, their state and checks.'''

import sys

from ..store import listing
from .terminal import say, shown


def command(base, site):
    '''Exit status 0, or 1 when a run listed is damaged (listed with why).'''
    base = listing.store_to_list(base)
    runs = listing.listing(base, site)
    if not runs:
        say(f'no runs in {base}' + (f' for site {site}' if site else ''))
        return 0
    say(f'results store: {base}')
    say(f'{"SITE":<14} {"RUN ID":<24} {"STATE":<9} RECORDED (NOT JUDGED)')
    for r in runs:
        # Names shown first, then padded: an escape shown takes the room it prints in.
        say(f'{shown(r.site):<14} {shown(r.run_id):<24} {r.state:<9} {r.checks}'
            + (f'  ({r.why})' if r.why else ''))
    # What ReFrame or a job recorded is not the site's judgement (a passed preflight whose
    # required setting failed is FAIL there): said, so no one reads it as the run's count.
    say('RECORDED: each case as ReFrame or its job recorded it, before the site judges it; '
        'the run\'s verdict and counts: cobalt-bench report RUN')
    damaged = sum(r.damaged for r in runs)
    if damaged:
        say(f'{damaged} run(s) with damaged results: their files are named above',
            sys.stderr)
    return 1 if damaged else 0
