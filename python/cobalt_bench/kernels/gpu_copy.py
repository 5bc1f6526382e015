'''gpu-copy: host<->GPU copies to every NVIDIA GPU, with the PCIe links (src/gpu-copy).'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='gpu-copy', family='gpu', check='GpuCopy', binaries=('gpu-copy', 'cb-pcie-links'),
    declared=('total_write_speed', 'total_read_speed', 'theoretical_link_speed', 'gpus',
              'degraded_links', 'verification_errors'),
    options_setting='gpu_copy_opts',
    options_doc="gpu-copy options (GpuCopy); '': every GPU, the compliance workload",
    number_lists={'gpus': ()}, config_numbers=('threshold_per_gpu_gbits',),
    plots=('gpu_copy_per_gpu',))
