'''Preflight: the system settings the COBALT2 compliance document requires or recommends,
read from sysfs/procfs, each with its value, what is expected and the command that fixes it.

Required (the document: "all tests must show compliance under the following system
settings", "Jumbo frames must be enabled for the participating NICs", and its purpose, "the
absence of avoidable performance bottlenecks ... performance-degrading riser cards and
inefficient PCIe"):
  - CPU frequency governor `performance` on every online CPU                    (cpu.py)
  - turbo disabled (intel_pstate/no_turbo = 1, or cpufreq boost = 0 for acpi-cpufreq/AMD)
  - jumbo frames (MTU >= 9000) on the tested Ethernet interfaces                (network.py)
  - GPU and NIC PCIe links at their maximum width and speed (judged by cb-pcie-links,
    the rule gpu-copy applies too; unknown where that tool is not installed)    (pcie.py)
Recommended (the document's tips):
  - the network sysctls of data/net-sysctls.tsv (net.core.{r,w}mem_{max,default},
    net.core.netdev_max_backlog, net.ipv4.udp_mem) at least at their tips' values; the
    same file is eth-test-send/receive's preflight list                         (network.py)
  - real-time priority available (`chrt -f 1 <command>`)                        (cpu.py)
  - a NUMA layout where every node with CPUs has memory, balanced across nodes
    (stations, NICs and GPUs are spread over NUMA domains)                      (cpu.py)

A file that is absent (no cpufreq in a VM, no PCIe link attributes for a virtual device)
makes the finding `unknown`, never `pass`. Statuses (store.result.SettingStatus): pass,
fail, warn (probably fine, look again: an idle GPU lowers its link speed), unknown, skip
(nothing to check: no GPU). The findings and their summary: finding.py.

Everything is read through a Tree (system.py), so `--root DIR` judges a recorded tree
(DIR/sys/..., DIR/proc/...) and `--record DIR` writes such a tree: every file this package
read, with sysfs's relative symbolic links, so it can be judged elsewhere. checks.py runs
every check on one tree; document.py makes the JSON document and the text; the command,
`cobalt-bench preflight`, is cobalt_bench.cli.preflight, the only part that prints.

This module names the package's public API: the report and the verdict use the statuses,
findings_of and summary; eth-test's tests the network tips.
'''

from .checks import inspect, open_tree, run_checks
from .cpu import CPU_BOUND, check_governor, check_numa, check_realtime, check_turbo
from .document import (TEST_VERSION, check_json_dest, document, findings_of,
                       format_findings, json_text, load, results_block, write_json)
from .finding import (FAIL, PASS, RECOMMENDED, REQUIRED, SKIP, UNKNOWN, WARN, Finding,
                      summary)
from .network import JUMBO_MTU, NET_SYSCTLS, check_mtu, check_net_sysctls, load_net_sysctls
from .pcie import PCIE_LINKS_TOOL, check_pcie, pcie_links_tool
from .system import RecordingTree, Tree

__all__ = [
    'PASS', 'FAIL', 'WARN', 'UNKNOWN', 'SKIP', 'REQUIRED', 'RECOMMENDED', 'Finding',
    'summary', 'Tree', 'RecordingTree', 'CPU_BOUND', 'check_governor', 'check_turbo',
    'check_numa', 'check_realtime', 'JUMBO_MTU', 'NET_SYSCTLS', 'load_net_sysctls',
    'check_mtu', 'check_net_sysctls', 'PCIE_LINKS_TOOL', 'pcie_links_tool', 'check_pcie',
    'run_checks', 'open_tree', 'inspect', 'TEST_VERSION', 'document', 'load', 'findings_of',
    'check_json_dest', 'json_text', 'write_json', 'format_findings', 'results_block',
]
