/* cb-linktest's options: one table (src/common/cb_options.h), then the rules that
 * join several options. The long names and letters are JSC LinkTest's where the
 * meaning is the same (-w, -n, -s, -m, -o, -v, --num-slowest, --bisection, ...). */
#include "linktest.h"
#include "../common/cb_options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const lt_pattern_names[] = {"semidirectional", "unidirectional", "bidirectional"};

/* -m/--mode: LinkTest's transport layer; we have MPI only. */
static void parse_mode(const char *opt, const char *arg, void *dest)
{
    if (strcmp(arg, "mpi") != 0)
        cb_usage_error("invalid value '%s' for %s: cb-linktest supports only mpi", arg, opt);
    *(const char **)dest = arg;
}

/* --max-time: microseconds per message (a bare number, as always), or a
 * duration with its unit (500us, 2ms, 0.1s). */
static void parse_usec(const char *opt, const char *arg, void *dest)
{
    double us = NAN, s, v;
    if (cb_parse_f64(arg, &v) == 0) /* the one strict parser: no nan, inf or hex */
        us = v;
    else if (cb_parse_duration(arg, &s) == 0) /* 500us, 2ms, 0.1s */
        us = s * 1e6;
    if (!isfinite(us))
        cb_usage_error("invalid value '%s' for %s: expected microseconds per message like 67109, "
                       "or a duration like 500us, 2ms, 0.1s", arg, opt);
    if (us < 1e-6 || us > 1e12)
        cb_usage_error("invalid value '%s' for %s: must be between 1e-06 and 1e+12 us", arg, opt);
    *(double *)dest = us;
}

/* -v: LinkTest's spelling of --version (-V in every cobalt-bench kernel). */
static void print_version(const char *opt, const char *arg, void *dest)
{
    if (arg)
        cb_usage_error("option '%s' takes no value", opt);
    cb_print_version(LT_TEST_VERSION);
    exit(CB_EXIT_OK);
}

#define F(field) offsetof(lt_config, field)
static const cb_opt opts[] = {
    {.name = "num-warmup-messages", .letter = 'w', .type = CB_OPT_LONG, .off = F(warmup), .min = 0,
     .max = 1000000000L, .arg = "N", .help = "messages before timing, per pair and step",
     .section = "Required (as in JSC LinkTest):"},
    {.name = "num-messages", .letter = 'n', .type = CB_OPT_LONG, .off = F(nmsg), .min = 1,
     .max = 1000000000L, .arg = "N", .help = "timed messages per pair and step"},
    {.name = "size-messages", .letter = 's', .type = CB_OPT_SIZE, .off = F(size), .min = 1,
     .max = 2147483647L, .arg = "BYTES", .help = "message size in bytes (4096, 64K, 16M; at most 2G-1)"},

    {.name = "unidirectional", .type = CB_OPT_FLAG, .off = F(unidirectional),
     .help = "lower rank sends, higher receives (default is\nsemidirectional: ping-pong)",
     .section = "Pattern:"},
    {.name = "bidirectional", .type = CB_OPT_FLAG, .off = F(bidirectional),
     .help = "both ranks of a pair send and receive at once"},
    {.name = "bisection", .type = CB_OPT_FLAG, .off = F(bisection),
     .help = "only pairs across the halves: ranks 0..N/2-1\nagainst N/2..N-1, in N/2 steps"},
    {.name = "group-processes-by-hostname", .type = CB_OPT_FLAG, .off = F(group_host),
     .help = "test only pairs on different hosts (with\n--bisection: hosts split into two halves)"},
    {.name = "serial-tests", .type = CB_OPT_FLAG, .off = F(serial),
     .help = "run the pairs of a step one after another"},
    {.name = "randomize-steps", .type = CB_OPT_FLAG, .off = F(randomize),
     .help = "run the steps in a random order"},
    {.name = "seed-randomize-steps", .type = CB_OPT_U64, .off = F(seed), .min = 0,
     .max = 9223372036854775807.0, .def = "9876543210", .arg = "N", .help = "seed of that order"},
    {.name = "num-slowest", .type = CB_OPT_LONG, .off = F(num_slowest), .min = 0, .max = 100000,
     .def = "10", .arg = "K", .help = "slowest pairs retested serially"},
    {.name = "check-buffers", .type = CB_OPT_FLAG, .off = F(check_buffers),
     .help = "verify every payload received (the last message\nof each pair and step); a "
             "mismatch is an error"},
    {.name = "min-iterations", .type = CB_OPT_LONG, .off = F(min_iterations), .min = 1,
     .max = 1000000000L, .def = "1", .arg = "N", .help = "repeat the whole test at least N times"},
    {.name = "min-runtime", .type = CB_OPT_DURATION, .off = F(min_runtime), .min = 0,
     .max = 365 * 86400.0, .def = "0", .arg = "SECONDS",
     .help = "repeat it for at least SECONDS (or 30m, 2h; the\nmatrix keeps each pair's slowest time)"},
    {.name = "no-huge-pages", .type = CB_OPT_FLAG, .off = F(small_pages),
     .help = "message buffers on 4 KiB pages (default: buffers of\n2 MiB and more ask for "
             "transparent huge pages)"},
    {.name = "mode", .letter = 'm', .type = CB_OPT_CUSTOM, .off = F(mode), .parse = parse_mode,
     .arg = "mpi", .help = "transport layer; only mpi (LinkTest compatible)"},

    {.name = "min-bandwidth", .type = CB_OPT_DOUBLE, .off = F(min_bw_gbits), .min = 1e-9, .max = 1e9,
     .arg = "GBITS", .help = "every pair at least GBITS Gbit/s (after retest)",
     .section = "Judging (exit 1 when not met):"},
    {.name = "max-time", .type = CB_OPT_CUSTOM, .off = F(max_time_us), .parse = parse_usec,
     .arg = "USEC", .help = "no pair slower than USEC us per message (or a\nduration: 500us, 2ms, 0.1s)"},

    {.name = "output", .letter = 'o', .type = CB_OPT_STRING, .off = F(output),
     .def = "cb-linktest.npz", .arg = "FILE", .help = "results file", .section = "Output:"},
    {.name = "no-output", .type = CB_OPT_FLAG, .off = F(no_output), .help = "write no results file"},
    CB_OPT_JSON_ROW(lt_config, json_path),
    {.name = "quiet", .letter = 'q', .type = CB_OPT_FLAG, .off = F(quiet), .help = "no line per step"},

    {.name = "plan", .type = CB_OPT_LONG, .off = F(plan_n), .min = 2, .max = 100000000L, .arg = "N",
     .help = "build and validate the schedule for N ranks and\nprint a summary with a coverage verdict",
     .section = "Plan (no MPI):"},
    {.name = "plan-hosts", .type = CB_OPT_LONG, .off = F(plan_hosts), .min = 1, .max = 100000000L,
     .arg = "H", .help = "as if the N ranks ran on H hosts (block\ndistribution); with "
                         "--group-processes-by-hostname"},
    {.name = "plan-print", .type = CB_OPT_FLAG, .off = F(plan_print),
     .help = "list the pairs of every step (N <= 256)"},

    {.name = "version", .letter = 'v', .type = CB_OPT_CUSTOM, .parse = print_version,
     .optional_arg = 1, .help = "version (LinkTest's -v; -V as in every kernel)",
     .section = "Information:"},

    {.name = "group-by-hostname", .replaced_by = "group-processes-by-hostname"},
    {.name = "seed", .replaced_by = "seed-randomize-steps"},
    {0}};
#undef F

static const cb_cmd cmd = {
    .name = "cb-linktest",
    .test_version = LT_TEST_VERSION,
    .usage = "-w WARMUP -n MESSAGES -s BYTES [OPTION]...\n"
             "       (started by mpirun -n N or srun -n N, N even)\n"
             "       cb-linktest --plan N [--bisection] [--plan-print]    (no MPI needed)",
    .about = "Test every link between pairs of MPI ranks (N even): in each of N-1 steps all\n"
             "ranks run in pairs at once, every pair meets exactly once; the slowest pairs\n"
             "are retested one at a time, to tell a bad link from load. Writes the N x N\n"
             "matrix of times to a NumPy .npz file (see cb-linktest-report).\n",
    .more = "Times are per message, one way: a ping-pong round trip counts two messages.\n"
            "Bandwidth = message size / time, in Gbit/s (10^9 bit/s), per direction.\n"
            "Results file (NumPy .npz, np.load(FILE)): time[N,N] seconds per message\n"
            "(NaN: not tested), hosts[N], slowest_pairs[K,2], slowest_time[K],\n"
            "retest_time[K], error_pairs[E,2], meta (JSON text: options, version, ...).\n"
            "Fault injection, for testing: CB_LINKTEST_DELAY=I-J:USEC delays every message\n"
            "rank min(I,J) sends to the other by USEC us (a slow link); CB_LINKTEST_CORRUPT=R\n"
            "flips one byte of rank R's first payload (a corrupted transfer, for --check-buffers).\n"
            "\n"
            "SIGINT, SIGTERM or SIGHUP (mpirun and srun pass them to every rank) stops the\n"
            "test before the next step, skips the retest, and writes what was measured: the\n"
            "results file, the JSON document (\"interrupted\": true) and the results block.\n"
            "\n"
            "Exit status: 0 ran and met the judging options, 1 did not (or a payload\n"
            "failed verification, or a pair was not tested), 2 usage error (also an odd\n"
            "number of ranks; --json with --plan), 3 could not run (MPI, memory, results\n"
            "file), 128 + the signal's number when interrupted (130 SIGINT, 143 SIGTERM).\n",
    .opts = opts,
};

static void check_plan(const lt_config *c)
{
    /* --plan measures nothing: it prints the schedule's summary, and there is no result
     * document to write; accepting --json and writing nothing misled (issue 14) */
    if (c->json_path)
        cb_usage_error("--json goes with a measurement; --plan N only prints the schedule's summary "
                       "(no JSON document)");
    if (c->plan_n % 2)
        cb_usage_error("--plan %ld: the number of ranks must be even", c->plan_n);
    if (c->plan_n > 2147483647L / 2)
        cb_usage_error("--plan %ld: too many ranks", c->plan_n);
    if (c->plan_hosts && !c->group_host)
        cb_usage_error("--plan-hosts places ranks on hosts for --group-processes-by-hostname; give that too");
    if (c->plan_hosts > c->plan_n)
        cb_usage_error("--plan-hosts %ld: more hosts than the %ld ranks", c->plan_hosts, c->plan_n);
    if (c->plan_print && c->plan_n > LT_PLAN_PRINT_MAX)
        cb_usage_error("--plan-print lists pairs only for up to %d ranks", LT_PLAN_PRINT_MAX);
}

static void check_run(const lt_config *c)
{
    const char *missing = !cb_opts_given(&cmd, "num-warmup-messages") ? "--num-warmup-messages (-w)"
                          : !cb_opts_given(&cmd, "num-messages")      ? "--num-messages (-n)"
                          : !cb_opts_given(&cmd, "size-messages")     ? "--size-messages (-s)"
                                                                      : NULL;
    if (missing)
        cb_usage_error("%s is required (as are -w, -n and -s)", missing);
    if (c->json_path && cb_json_path_ok(c->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", c->json_path);
    if (!c->no_output && cb_json_path_ok(c->output) != 0)
        cb_usage_error("cannot write --output %s: its directory does not exist or is not writable", c->output);
}

/* The options, checked; exits 2 (or 0 for --help / --version). */
void lt_options_parse(lt_config *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < argc; i++)
        snprintf(c->argv_line + strlen(c->argv_line), sizeof c->argv_line - strlen(c->argv_line),
                 "%s%s", i ? " " : "", argv[i]);
    cb_opts_parse(&cmd, c, argc, argv);
    if (c->unidirectional && c->bidirectional)
        cb_usage_error("--unidirectional and --bidirectional exclude each other");
    c->pattern = c->unidirectional ? LT_UNI : c->bidirectional ? LT_BI : LT_SEMI;
    if (c->plan_n) {
        check_plan(c);
        return;
    }
    if (c->plan_hosts || c->plan_print)
        cb_usage_error("--plan-hosts and --plan-print go with --plan N");
    check_run(c);
}
