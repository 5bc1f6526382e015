/* cpu-test's options and metrics, declared once (cb_options.h); see
 * src/cpu-test/README.md. */
#include "options.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#define C(field) offsetof(ct_config, field)

const char *const ct_isa_choices[] = {"auto", "avx512", "avx2", "neon", "scalar", NULL};

static const cb_opt opts[] = {
    {.name = "duration", .letter = 'd', .type = CB_OPT_DURATION, .doc_key = "requested_duration_s",
     .off = C(duration_s), .min = 0.1, .max = 7 * 86400.0, .def = "10", .arg = "SECONDS",
     .help = "how long every core computes (10, 90s, 5m)", .section = "Run:"},
    {.name = "burn", .letter = 'b', .type = CB_OPT_DOUBLE, .unit = "min", .doc_key = "burn_minutes",
     .off = C(burn_min), .min = 0.01, .max = 7 * 1440.0, .arg = "MINUTES",
     .help = "burn-in: keep every core loaded this many minutes\n"
             "(instead of --duration) and report the drop from\n"
             "the first interval to the sustained rate"},
    {.name = "interval", .letter = 'i', .type = CB_OPT_DURATION, .doc_key = "interval_s",
     .off = C(interval_s), .min = 0.1, .max = 3600, .def = "1", .arg = "SECONDS",
     .help = "length of each interval of the per-interval figures"},
    {.name = "isa", .type = CB_OPT_CHOICE, .doc_key = "requested_isa", .off = C(isa_choice),
     .choices = ct_isa_choices, .def = "auto", .arg = "NAME",
     .help = "vector instruction set: auto (the widest this CPU\n"
             "runs), avx512, avx2, neon or scalar"},
    {.name = "threads", .letter = 'T', .type = CB_OPT_INT, .doc_key = "requested_threads",
     .off = C(threads), .min = 1, .max = CB_MAX_CPUS, .arg = "N",
     .help = "use only the first N usable cores (default every\n"
             "core this process may run on, one thread each)",
     .section = "Placement:"},
    {.name = "cpus", .letter = 'c', .type = CB_OPT_INTLIST, .doc_key = "requested_cpus",
     .off = C(cpus), .max = CB_MAX_CPUS - 1, .arg = "LIST",
     .help = "run one thread on each of these CPUs, e.g. 0-3,8"},
    {.name = "desired-gflops", .letter = 'r', .type = CB_OPT_DOUBLE, .unit = "GFLOP/s",
     .doc_key = "desired_gflops_per_core", .off = C(desired_gflops), .min = 1e-3, .max = 1e6,
     .arg = "GFLOPS",
     .help = "compliant only when the slowest core sustains at\n"
             "least this many GFLOP/s (default: no rate judged)",
     .section = "Compliance:"},
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = C(json_path), .arg = "FILE",
     .help = "write the JSON result document to FILE ('-' = stdout)", .section = "Output:"},
    CB_OPT_QUIET_ROW(ct_config, quiet),
    {0}};

const cb_metric_def ct_metrics[] = {
    {"node_gflops", "GFLOP/s", CB_HIGHER, "double-precision FLOP/s of all cores together"},
    {"core_gflops_median", "GFLOP/s", CB_HIGHER, "the median core's FLOP/s over the run"},
    {"core_gflops_min", "GFLOP/s", CB_HIGHER, "the slowest core's FLOP/s over the run"},
    {"core_gflops_max", "GFLOP/s", CB_NEITHER, "the fastest core's FLOP/s over the run"},
    {"slowest_core_ratio", "%", CB_HIGHER, "the slowest core's FLOP/s as a share of the median core's"},
    {"first_interval_gflops", "GFLOP/s", CB_NEITHER, "node FLOP/s in the first interval"},
    {"sustained_gflops", "GFLOP/s", CB_HIGHER,
     "node FLOP/s sustained: the median interval of the run's last third"},
    {"throttle_drop", "%", CB_LOWER,
     "how far sustained_gflops fell below first_interval_gflops (negative: it rose)"},
    {"clock_ghz", "GHz", CB_NEITHER,
     "the median core's clock: its cycles (perf_event) or the TSC's nominal rate, as "
     "config clock_source says"},
    {"flop_per_cycle", "FLOP/cycle", CB_HIGHER, "the median core's FLOP per cycle of clock_ghz"},
    {"desired_gflops", "GFLOP/s", CB_NEITHER, "--desired-gflops: the rate each core must sustain"},
    {"percent_of_desired", "%", CB_HIGHER, "core_gflops_min as a share of desired_gflops"},
    {"cores", "cores", CB_NEITHER, "cores computing, one thread bound to each"},
    {"verified_blocks", "blocks", CB_NEITHER, "blocks of FMA streams whose results were checked"},
    {"verification_errors", "errors", CB_LOWER, "blocks whose results were wrong: a faulty core"},
    {0},
};

const cb_cmd ct_cmd = {
    .name = "cpu-test",
    .test_version = CT_TEST_VERSION,
    .opts = opts,
    .metrics = ct_metrics,
    .about =
"Load every usable core of this node at once with verified floating-point work and\n"
"report its FLOP rate, per core and per node, its clock and the spread between the\n"
"cores; with --burn, hold the load and report how far the rate drops.\n"
"\n"
"Workload: one thread bound to each core this process may run on (its CPU affinity,\n"
"e.g. a Slurm job's cpuset; the first CPU of each core, so one thread per core with\n"
"SMT), each running independent chains of double-precision fused multiply-adds\n"
"x = x + a * x in the widest vector instruction set the CPU has (avx512, avx2 with\n"
"FMA, neon; scalar elsewhere), with enough chains to hide the FMA latency. An FMA\n"
"counts as 2 FLOP per vector lane. Durations take ms, s, m, h (--duration 5m).\n",
    .more =
"Every block of every chain is verified: its results are compared bit for bit with\n"
"those computed once with scalar fma() at the start (an FMA rounds once, so every\n"
"correct unit gives the same bits). A mismatch is a verification error and fails the\n"
"run (exit 1); its figures are not valid.\n"
"\n"
"The clock is the core's cycles where perf_event counts them, else the TSC's nominal\n"
"rate (x86), else none (config clock_source says which).\n"
"\n"
CB_HELP_INTERRUPTED
"\n"
"Exit status: 0 compliant (no verification error; the desired rate met where given),\n"
"1 not compliant or verification failed, 2 usage error, 3 could not run (an --isa\n"
"this CPU lacks), 128 + the signal's number when interrupted (130 SIGINT, 143\n"
"SIGTERM, 129 SIGHUP).\n",
};

void ct_config_parse(ct_config *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    cb_opts_parse(&ct_cmd, cfg, argc, argv);
    if (cb_opts_given(&ct_cmd, "burn")) {
        if (cb_opts_given(&ct_cmd, "duration"))
            cb_usage_error("--burn and --duration both set the length of the run; give one");
        cfg->duration_s = cfg->burn_min * 60;
    }
    if (cb_opts_given(&ct_cmd, "threads") && cb_opts_given(&ct_cmd, "cpus"))
        cb_usage_error("--threads and --cpus both choose the cores; give one");
    if (ceil(cfg->duration_s / cfg->interval_s) > CT_MAX_INTERVALS)
        cb_usage_error("--interval %g s makes more than %d intervals of a %g s run; give a "
                       "longer interval", cfg->interval_s, CT_MAX_INTERVALS, cfg->duration_s);
    if (cfg->json_path && cb_json_path_ok(cfg->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable",
                       cfg->json_path);
}
