# ReFrame checks for the GPU family: gpu-copy (the compliance document's PCIe test).
#
# Runs only on partitions whose GPUs are NVIDIA's (placement 'nvidia gpu': the feature
# `gpu` or GPU devices, and no other vendor named by extras 'gpu_vendor', a feature such as
# 'amdgpu' or a device arch such as 'gfx90a'); ReFrame does not generate the test for any
# other partition. Where no NVIDIA GPU is visible at run time gpu-copy exits 3 and the
# check is skipped, naming what is missing. The
# workload comes from the partition's extras['cobalt_bench']['gpu_copy_opts'] (or -S
# kernel_opts=...; empty: gpu-copy's defaults, the compliance workload on every GPU), the
# numbers from the
# site's references.yaml (entry GpuCopy); see cobalt_bench.reframe.KernelJsonTest.
#
# GPUs for Slurm: the partition lists them as a device, `'devices': [{'type': 'gpu',
# 'num_devices': 4}]`, and defines ReFrame's GPU resource
# `'resources': [{'name': '_rfm_gpu', 'options': ['--gres=gpu:{num_gpus_per_node}']}]`;
# the check asks for all of them (the compliance test copies to every GPU at once).

import reframe as rfm
from reframe.core.builtins import run_after

from cobalt_bench.reframe import KernelJsonTest


@rfm.simple_test
class GpuCopy(KernelJsonTest):
    '''gpu-copy: host <-> GPU copies on every GPU at once, and the links that explain them.'''

    descr = 'gpu-copy: PCIe bandwidth to every NVIDIA GPU (compliance GPU test)'
    placement = 'nvidia gpu'
    kernel = 'gpu-copy'
    exclusive_access = True
    whole_node = True     # one task with every CPU: gpu-copy binds one thread per GPU
    tags = {'gpu', 'pcie', 'compliance'}

    @run_after('setup')
    def use_all_gpus(self):
        gpus = sum(d.num_devices for d in self.current_partition.select_devices('gpu'))
        if gpus:
            self.num_gpus_per_node = gpus
