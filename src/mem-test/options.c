/* mem-test's options, declared once (cb_options.h); see src/mem-test/README.md. */
#include "options.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* --ops LIST: a comma-separated subset of the operations, into an op mask. */
static void parse_ops(const char *opt, const char *arg, void *dest)
{
    unsigned mask = 0;
    char tok[32];
    const char *cursor = arg;
    int r;
    while ((r = cb_list_next(&cursor, ",", tok, sizeof tok)) == 1) {
        int found = 0;
        for (int o = 0; o < MT_NOPS; o++)
            if (strcmp(tok, mt_op_names[o]) == 0) {
                mask |= 1u << o;
                found = 1;
            }
        if (!found)
            cb_usage_error("invalid operation '%s' for %s: expected write, read, copy or transpose",
                           tok, opt);
    }
    if (r < 0) /* "copy,", ",copy", "copy,,read": an empty item is a typo, not "all" */
        cb_usage_error("invalid list '%s' for %s: an empty (or overlong) item; expected write, "
                       "read, copy or transpose separated by commas", arg, opt);
    if (!mask)
        cb_usage_error("%s selects no operation", opt);
    *(unsigned *)dest = mask;
}

#define P(field) offsetof(mt_config, p.field)
#define C(field) offsetof(mt_config, field)

static const cb_opt opts[] = {
    {.name = "stations", .letter = 's', .type = CB_OPT_INT, .doc_key = "stations", .off = P(stations), .min = 1,
     .max = 100000, .def = "18", .arg = "N", .help = "input streams on this node",
     .section = "Workload:"},
    {.name = "input-rate", .type = CB_OPT_DOUBLE, .doc_key = "input_rate_gbits", .unit = "Gbit/s", .off = P(input_gbits), .min = 1e-6, .max = 1e6,
     .def = "3", .arg = "GBITS", .help = "per-station input rate in Gbit/s"},
    {.name = "reduction", .type = CB_OPT_INT, .doc_key = "reduction", .off = P(reduction), .min = 1, .max = 1024,
     .def = "2", .arg = "N", .help = "data reduction factor of the later stages"},
    {.name = "packet-size", .type = CB_OPT_SIZE, .doc_key = "packet_bytes", .off = P(packet_bytes), .min = 64,
     .max = 1 << 20, .def = "9000", .arg = "BYTES", .help = "packet payload, multiple of 8"},
    {.name = "small-block", .type = CB_OPT_INT, .doc_key = "small_block_packets", .off = P(small_packets), .min = 1, .max = 1 << 16,
     .def = "128", .arg = "N", .help = "packets per block of the first stages"},
    {.name = "large-block", .type = CB_OPT_INT, .doc_key = "large_block_packets", .off = P(large_packets), .min = 1, .max = 1 << 16,
     .def = "1024", .arg = "N", .help = "packets per block of the later stages"},
    {.name = "sample-bytes", .type = CB_OPT_SIZE, .doc_key = "sample_bytes", .off = P(sample_bytes), .min = 4, .max = 16,
     .def = "8", .arg = "N",
     .help = "bytes per sample in the corner turns: 4, 8 or 16;\n"
             "8 is dual-polarisation complex 16-bit"},
    {.name = "desired-rate", .letter = 'r', .type = CB_OPT_DOUBLE, .unit = "Gbit/s", .off = C(desired_gbits),
     .min = 1e-6, .max = 1e7, .arg = "GBITS",
     .help = "set the node's desired speed directly (scales the\n"
             "input rate; give it or --input-rate, not both)"},
    {.name = "ops", .type = CB_OPT_CUSTOM, .off = P(op_mask), .parse = parse_ops,
     .def = "write,read,copy,transpose", .arg = "LIST",
     .help = "run only these operations: write,read,copy,transpose\n"
             "(default all; the desired speed counts only these)"},
    {.name = "duration", .letter = 'd', .type = CB_OPT_DURATION, .doc_key = "requested_duration_s", .off = C(duration_s),
     .min = 0.01, .max = 7 * 86400.0, .def = "10", .arg = "SECONDS",
     .help = "length of the run, rounded up to whole schedule\nperiods (10, 90s, 5m)",
     .section = "Run:"},
    {.name = "max", .letter = 'm', .type = CB_OPT_FLAG, .doc_key = "max", .off = C(max_mode),
     .help = "run unpaced and report the highest sustained speed"},
    {.name = "numa-nodes", .letter = 'n', .type = CB_OPT_INTLIST, .off = C(nodes), .arg = "LIST",
     .help = "NUMA nodes to use, e.g. 0,1 or 0-3 (default all)"},
    {.name = "threads-per-domain", .letter = 'T', .type = CB_OPT_INT, .off = C(threads_per_domain),
     .min = 1, .max = CB_MAX_CPUS, .arg = "N",
     .help = "worker threads per domain (default one per core)"},
    {.name = "threshold", .letter = 't', .type = CB_OPT_DOUBLE, .unit = "%", .off = C(threshold), .min = 0,
     .max = 1000, .def = "99.75", .arg = "PCT", .help = "compliant when measured >= PCT% of the desired\nspeed"},
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = C(json_path), .arg = "FILE",
     .help = "write the JSON result document to FILE ('-' = stdout)", .section = "Output:"},
    CB_OPT_QUIET_ROW(mt_config, quiet),
    {0}};

/* Per operation: its speed over the run, and while a thread was busy with it. */
#define OP_SPEEDS(op)                                                                              \
    {op "_speed", "Gbit/s", CB_HIGHER, "bytes of the " op " operation over the run's time"},       \
    {op "_busy_speed", "Gbit/s", CB_HIGHER,                                                        \
     "per-thread " op " speed while busy with it, summed over the threads"}

const cb_metric_def mt_metrics[] = {
    {"desired_speed", "Gbit/s", CB_NEITHER, "the memory traffic the workload asks of the node"},
    {"measured_speed", "Gbit/s", CB_HIGHER, "the memory traffic the node sustained"},
    {"measured_speed_bytes", "B/s", CB_HIGHER, "measured_speed in bytes per second"},
    {"percent_of_desired", "%", CB_HIGHER, "measured_speed as a share of desired_speed"},
    {"average_late", "%", CB_LOWER, "blocks finished after their deadline (paced runs only)"},
    OP_SPEEDS("write"), OP_SPEEDS("read"), OP_SPEEDS("copy"), OP_SPEEDS("transpose"),
    {"verified_blocks", "blocks", CB_NEITHER, "blocks whose data were checked"},
    {"verification_errors", "errors", CB_LOWER, "blocks whose data were wrong: corruption"},
    {"missed_blocks", "blocks", CB_LOWER, "blocks not processed within the run"},
    {0},
};
#undef OP_SPEEDS

const cb_cmd mt_cmd = {
    .name = "mem-test",
    .test_version = MT_TEST_VERSION,
    .opts = opts,
    .metrics = mt_metrics,
    .about =
"Emulate the DRAM traffic of a streaming application on this node, spread over\n"
"its NUMA domains, at a desired rate, and report whether the node sustains it.\n"
"\n"
"Workload model (per station, i.e. one input data stream):\n"
"  at the input rate R:  NIC->DRAM write, kernel->user copy, user->staging\n"
"                        transpose (blocks of --small-block packets), network-\n"
"                        exchange copy, GPU-staging transpose, DRAM->GPU read\n"
"                        (blocks of --large-block packets);\n"
"  after the data reduction, at R / --reduction: GPU->DRAM write, output-staging\n"
"                        copy, user->kernel copy, DRAM->NIC read.\n"
"  Copies and transposes count twice (read + write). Desired speed =\n"
"  stations x R x (10 + 6 / reduction): 18 x 3 x 13 = 702 Gbit/s by default.\n"
"  A transpose is the corner turn of a block of packets x samples into\n"
"  samples x packets order (station-time order into time-station order).\n"
"  Stations are spread evenly over the NUMA domains; each domain runs one\n"
"  thread per core, bound to it, with all buffers on that domain.\n"
"  Sizes take K, M, G suffixes (--packet-size 9K), durations ms, s, m, h\n"
"  (--duration 5m); a plain number is bytes or seconds.\n",
    .more =
"Every block is verified: tags stamped into each source are looked for in the\n"
"destination (copies and transposes), fills are spot-checked and reads summed\n"
"against the known sum. A mismatch fails the run.\n"
"\n"
"Copies and corner turns run the best kernels this CPU has (avx512, avx2, sse2;\n"
"generic elsewhere); MEM_TEST_KERNELS=generic|sse2|avx2|avx512 forces a lower one,\n"
"MEM_TEST_BAND_ROWS=8|16|32|64 the corner turn's band height (default 64; 16 on AMD\n"
"CPUs with AVX-512, 32 on Intel CPUs with AMX).\n"
"\n"
CB_HELP_INTERRUPTED
"\n"
"Exit status: 0 compliant, 1 not compliant or verification failed,\n"
"2 usage error, 3 could not run, 128 + the signal's number when interrupted\n"
"(130 SIGINT, 143 SIGTERM, 129 SIGHUP).\n",
};

void mt_config_parse(mt_config *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof *cfg);
    cb_opts_parse(&mt_cmd, cfg, argc, argv);
    int desired = cb_opts_given(&mt_cmd, "desired-rate");
    if (desired && cb_opts_given(&mt_cmd, "input-rate"))
        cb_usage_error("--desired-rate and --input-rate both set the rate; give one");
    const char *why = mt_params_check(&cfg->p);
    if (why)
        cb_usage_error("%s", why);
    if (desired)
        mt_set_desired(&cfg->p, cfg->desired_gbits);
    if (cfg->json_path && cb_json_path_ok(cfg->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable",
                       cfg->json_path);
}
