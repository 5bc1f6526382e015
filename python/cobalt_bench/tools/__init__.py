'''Reading what third-party tools leave behind, without ReFrame: the ReFrame checks
(cobalt_bench.reframe), the report (cobalt_bench.report), the Slurm jobs
and the tests all use these same modules.

  osu          the tables the OSU micro-benchmarks print (5.x and 7.x), and what each
               benchmark prints when run without options
  osu_install  where an OSU build keeps its binaries (install prefix or build tree)
  perftest     perftest's bandwidth reports (ib_write_bw ...) and the per-port runs of the
               ib-write-bw-ports script
  ib_ports     a machine's InfiniBand ports (sysfs) and which port receives from which
  dolphin      Dolphin eXpressWare tools: outputs and verdicts
               (its command: python3 -m cobalt_bench.cli.dolphin)
'''

__all__ = ['dolphin', 'ib_ports', 'osu', 'osu_install', 'perftest']
