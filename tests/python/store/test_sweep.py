'''A node sweep's directory held against what it was to produce (store.sweep): the batch
host its watchdog found lost is a failure of that node, named with Slurm's state.'''

import os

from cobalt_bench import site as site_mod
from cobalt_bench.judging import verdict as vd
from cobalt_bench.store import reader
from cobalt_bench.store.result import Result
from plugins.checkout import ROOT
from plugins.kernels import kernel
from plugins.stores import capacity_sweep, unpaced_mem_test_doc


def test_the_batch_host_its_watchdog_found_lost_is_a_bad_node(tmp_path):
    doc = unpaced_mem_test_doc(tmp_path, kernel('mem-test'))
    sweep = capacity_sweep(tmp_path, doc, {'n1': 1.0, 'n2': 1.0, 'n3': 1.0, 'n4': 1.0})
    (sweep / 'batch-host-lost').write_text('n1 DOWN+DRAIN 2026-11-27T21:40:00Z\n')
    run = reader.load_run(str(sweep))
    v = vd.decide(run, site_mod.load_site(os.path.join(ROOT, 'site-configs', 'local')))
    lost = [c for c in v.cases if c.check == 'node-sweep']
    assert [(c.nodes, c.result) for c in lost] == [(['n1'], Result.FAIL)]
    assert 'the batch host of the sweep, lost at 2026-11-27T21:40:00Z (Slurm: DOWN+DRAIN)' \
        in lost[0].fail_reason
    assert [b.node for b in v.fleet.bad_nodes] == ['n1']


def test_a_host_outside_the_allocation_or_a_garbled_line_names_nobody(tmp_path):
    doc = unpaced_mem_test_doc(tmp_path, kernel('mem-test'))
    sweep = capacity_sweep(tmp_path, doc, {'n1': 1.0, 'n2': 1.0, 'n3': 1.0})
    (sweep / 'batch-host-lost').write_text('n9 DOWN 2026-11-27T21:40:00Z\ngarbage\n')
    run = reader.load_run(str(sweep))
    assert not [c for c in run.cases if c.check == 'node-sweep']
