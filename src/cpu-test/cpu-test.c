/* cpu-test: every usable core of the node loaded at once with verified FMA streams in
 * the widest vector instruction set the CPU has; FLOP/s per core and per node, the clock,
 * the spread between the cores and, over a burn-in, the drop (src/cpu-test/README.md).
 *
 * main() runs the stages on one run state (ct_run, run.h): parse the options, plan
 * (cores, ISA, clock), run (one bound thread per core, sampled every interval), collect,
 * diagnose and emit (the JSON document and the results block of
 * docs/kernel-contract.md). */
#include "../common/cb_common.h"
#include "report.h"
#include "run.h"

int main(int argc, char **argv)
{
    static ct_run run;
    cb_prog = "cpu-test";
    ct_config_parse(&run.cfg, argc, argv);
    /* from here a signal stops the measurement and still reports it */
    cb_signals_install();
    ct_plan(&run);
    ct_print_plan(&run);
    ct_start(&run);
    ct_watch(&run);
    ct_collect(&run);
    ct_diagnose(&run);
    return ct_emit(&run);
}
