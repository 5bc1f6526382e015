'''`cobalt-bench preflight`: the system settings the compliance document requires (a
Python command of the package, cobalt_bench.preflight, run like a kernel).'''

from .descriptor import Kernel

KERNEL = Kernel(
    name='preflight', family='system', check='Preflight', binaries=('cobalt-bench',),
    units={'required_failed': 'settings', 'required_unknown': 'settings',
             'settings_failed': 'settings', 'settings_passed': 'settings',
             'settings_unknown': 'settings'}, declared=(),
    options_setting='preflight_opts',
    options_doc="`cobalt-bench preflight` options (Preflight), e.g. '--interface ens1f0'",
    findings=True)
