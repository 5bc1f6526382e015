# A ReFrame configuration as a centre writes it for another test suite (shaped like the
# EESSI test-suite's site configurations): its own features (cpu, gpu) and extras
# (mem_per_node, gpu_vendor), a login partition, GPU devices, an InfiniBand partition, no
# cobalt-bench helper. cobalt-bench's checks must load in it, each made for exactly the
# partitions it fits (cobalt_bench.reframe.placement), with cobalt-bench's own settings in
# their namespace of the extras where the site gives any.
#
# tests/integration/reframe/test_any_site.py runs it; the partitions with a batch
# scheduler are only listed, never run.

site_configuration = {
    'systems': [
        {
            'name': 'hpc',
            'descr': 'A cluster configured for another suite',
            'hostnames': ['.*'],
            'modules_system': 'nomod',
            'partitions': [
                {
                    'name': 'login',
                    'descr': 'Login nodes',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['default'],
                },
                {
                    'name': 'cpu',
                    'descr': 'CPU nodes, run here',
                    'scheduler': 'local',
                    'launcher': 'local',
                    'environs': ['default'],
                    'features': ['cpu'],
                    'max_jobs': 1,
                    'extras': {
                        'mem_per_node': 24,
                        'cobalt_bench': {
                            'mem_test_opts': '--stations 1 --desired-rate 1 --duration 1',
                        },
                    },
                },
                {
                    'name': 'cpu-mpi',
                    'descr': 'CPU nodes, MPI jobs',
                    'scheduler': 'slurm',
                    'launcher': 'mpirun',
                    'access': ['-p cpu'],
                    'environs': ['default'],
                    'features': ['cpu'],
                    'extras': {'mem_per_node': 256},
                },
                {
                    'name': 'gpu',
                    'descr': 'GPU nodes',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': ['-p gpu'],
                    'environs': ['default'],
                    'features': ['gpu'],
                    'devices': [{'type': 'gpu', 'num_devices': 4}],
                    'resources': [{'name': '_rfm_gpu',
                                   'options': ['--gres=gpu:{num_gpus_per_node}']}],
                    'extras': {'mem_per_node': 512, 'gpu_vendor': 'nvidia'},
                },
                {
                    'name': 'ib',
                    'descr': 'Nodes on the InfiniBand fabric',
                    'scheduler': 'slurm',
                    'launcher': 'srun',
                    'access': ['-p ib'],
                    'environs': ['default'],
                    'features': ['cpu', 'infiniband'],
                    'extras': {'mem_per_node': 256},
                },
            ],
        },
    ],
    'environments': [
        {'name': 'default', 'cc': 'cc', 'cxx': 'c++', 'ftn': 'gfortran'},
    ],
}
