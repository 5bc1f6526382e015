'''A case's check parsed once (store.identity.CheckName): the names ReFrame gives a case
(display names with --distribute's and --repeat's parameters, a perflog's unique name) and
a job document's kernel, read the one way every reader of the store reads them.'''

from cobalt_bench.store.identity import CheckName


def test_distribute_names_are_stripped():
    # As ReFrame 4.10.4 names a --distribute case (checked with make_test as
    # reframe/frontend/testgenerators.py does: 'Foo %x=lo %.part=sys:x86 %.nid=n1').
    name = CheckName.of('MemTest %.part=local-slurm:x86 %.nid=n1')
    assert (name.check, name.label, name.node, name.params) == ('MemTest', 'MemTest', 'n1', ())
    name = CheckName.of('EthTest %interface=lo %.part=sys:x86 %.nid=n12')
    assert name.label == 'EthTest %interface=lo' and name.node == 'n12'
    assert name.param_dict == {'interface': 'lo'}
    assert CheckName.of('MemTest %.repeat_no=3').label == 'MemTest'


def test_a_perflogs_variant_name_is_its_check():
    # Without report.json the cases come from the perflogs, named by ReFrame's unique name.
    assert CheckName.of('MemTest_3').check == 'MemTest'
    assert CheckName.of('Something_3').check == 'Something_3'
    assert CheckName.of('OsuPt2Pt_2', checks={'OsuPt2Pt'}).check == 'OsuPt2Pt'
    # a parameterised case is never read as a variant
    assert CheckName.of('MemTest_3 %x=1').check == 'MemTest_3'


def test_a_job_documents_kernel_and_nothing_are_names_too():
    assert CheckName.of('mem-test').label == 'mem-test'
    assert CheckName.of('') == CheckName('') and CheckName.of(None) == CheckName('')
