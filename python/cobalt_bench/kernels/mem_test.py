'''mem-test: DRAM traffic of a streaming application per NUMA domain (src/mem-test).'''

from .descriptor import Capacity, Kernel

DOMAIN_NUMBERS = ('desired_speed_gbits', 'measured_speed_gbits', 'average_late_percent')


def hints(doc):
    '''A late share says the node does not keep up; late only on some NUMA nodes points
    at their memory population.'''
    out = []
    late = doc.get('metrics', {}).get('average_late', {}).get('value')
    if isinstance(late, (int, float)) and late > 0:
        out.append(f'mem-test: {late:.3g}% of the blocks finished after their deadline: '
                   'the node does not keep up with the paced workload')
        domains = doc.get('domains') or []
        slow = [d for d in domains if (d.get('average_late_percent') or 0) > 0]
        if slow and len(slow) < len(domains):
            out.append('late blocks only on NUMA node(s) '
                       + ', '.join(str(d.get('numa_node')) for d in slow)
                       + ': look at those nodes\' memory population')
    return out


KERNEL = Kernel(
    name='mem-test', family='memory', check='MemTest', binaries=('mem-test',),
    declared=('measured_speed', 'percent_of_desired', 'average_late', 'desired_speed',
              'write_speed', 'read_speed', 'copy_speed', 'transpose_speed',
              'verification_errors'),
    options_setting='mem_test_opts',
    options_doc="mem-test options (MemTest); '': mem-test's defaults, the compliance workload",
    number_lists={'domains': DOMAIN_NUMBERS},
    plots=('mem_test_domains',), hints=hints,
    # Unpaced (--max): the node's sustained memory speed, against its peers'.
    capacity=Capacity(
        flag='max', check='MemCapacity', test='mem-capacity', metrics=('measured_speed',),
        not_measured=('average_late',),
        options_setting='mem_capacity_opts', options_default='--duration 5',
        options_doc="mem-test options of MemCapacity, after --max (the node's sustained "
                    "memory speed, compared with its peers); default: the compliance "
                    "workload's buffers for 5 s"))
