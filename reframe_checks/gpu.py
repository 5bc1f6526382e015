# ReFrame checks for the GPU family: gpu-copy (the compliance document's PCIe test).
#
# Runs only on partitions that declare the feature `gpu` in the site config
# (`'features': ['gpu']`); ReFrame does not generate the test for any other partition
# (`reframe -l` shows none there; with -r it reports nothing to run for them). The
# workload comes from the partition's extras['gpu_copy_opts'] (or -S kernel_opts=...;
# empty: gpu-copy's defaults, the compliance workload on every GPU), the numbers from the
# site's references.yaml (entry GpuCopy); see lib/cobalt_kernel.py.
#
# GPUs for Slurm: the partition lists them as a device, `'devices': [{'type': 'gpu',
# 'num_devices': 4}]`, and defines ReFrame's GPU resource
# `'resources': [{'name': '_rfm_gpu', 'options': ['--gres=gpu:{num_gpus_per_node}']}]`;
# the check asks for all of them (the compliance test copies to every GPU at once).

import os
import sys

import reframe as rfm
from reframe.core.builtins import run_after

sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))
from cobalt_kernel import KernelJsonTest  # noqa: E402


@rfm.simple_test
class GpuCopy(KernelJsonTest):
    '''gpu-copy: host <-> GPU copies on every GPU at once, and the links that explain them.'''

    descr = 'gpu-copy: PCIe bandwidth to every NVIDIA GPU (compliance GPU test)'
    valid_systems = ['+gpu']
    executable = 'gpu-copy'
    kernel = 'gpu-copy'
    opts_extra = 'gpu_copy_opts'
    json_file = 'gpu-copy.json'
    exclusive_access = True
    tags = {'gpu', 'pcie', 'compliance'}
    metric_units = {
        'total_write_speed': 'Gbit/s',
        'total_read_speed': 'Gbit/s',
        'theoretical_link_speed': 'Gbit/s',
        'gpus': 'GPUs',
        'degraded_links': 'links',
        'verification_errors': 'errors',
    }

    @run_after('setup')
    def use_all_gpus(self):
        gpus = sum(d.num_devices for d in self.current_partition.select_devices('gpu'))
        if gpus:
            self.num_gpus_per_node = gpus

        # One task with every CPU: gpu-copy binds one thread per GPU near that GPU.
        num_cpus = self.current_partition.processor.num_cpus
        if num_cpus:
            self.num_cpus_per_task = num_cpus
