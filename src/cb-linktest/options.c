/* cb-linktest's options: one table (src/common/cb_options.h), then the rules that
 * join several options. The long names and letters are JSC LinkTest's where the
 * meaning is the same (-w, -n, -s, -m, -o, -v, --num-slowest, --bisection, ...). */
#include "options.h"
#include "../common/cb_options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>

const char *const lt_pattern_names[] = {"semidirectional", "unidirectional", "bidirectional"};
/* LinkTest's allocator names (the usage document's), then ours */
const char *const lt_alloc_names[] = {"DEFAULT", "aligned-memory_allocator", "pinned-memory-map_allocator",
                                      "POSIX_aligned-memory_allocator", "huge-pages", "CUDA_memory_allocator"};
/* the short spellings accepted beside them (any case, '-' or '_') */
static const char *const alloc_short[] = {"default", "aligned", "pinned-memory-map", "posix-aligned", "huge-pages",
                                          "cuda"};
#define LT_SUPPORTED_MODES "mpi"

/* -m/--mode (also LINKTEST_VCLUSTER_IMPL, or a cb-linktest.LAYER executable name, as
 * LinkTest reads them): the transport layer; this build has MPI only. */
static void check_mode(const char *mode, const char *from)
{
    if (strcasecmp(mode, "mpi") != 0)
        cb_usage_error("transport layer '%s' (%s) is not available: this build supports [%s]", mode, from,
                       LT_SUPPORTED_MODES);
}

static void parse_mode(const char *opt, const char *arg, void *dest)
{
    check_mode(arg, opt);
    *(const char **)dest = arg;
}

/* Compare allocator names ignoring case and '-' against '_'. */
static int same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a == '_' ? '-' : (char)tolower((unsigned char)*a);
        char y = *b == '_' ? '-' : (char)tolower((unsigned char)*b);
        if (x != y)
            return 0;
    }
    return !*a && !*b;
}

static void parse_allocator(const char *opt, const char *arg, void *dest)
{
    for (int i = 0; i < LT_ALLOC_COUNT; i++)
        if (same_name(arg, lt_alloc_names[i]) || same_name(arg, alloc_short[i])) {
            *(int *)dest = i;
            return;
        }
    cb_usage_error("invalid value '%s' for %s: expected DEFAULT, aligned-memory_allocator, "
                   "pinned-memory-map_allocator, POSIX_aligned-memory_allocator, huge-pages or "
                   "CUDA_memory_allocator (or aligned, pinned-memory-map, POSIX_aligned, cuda)", arg, opt);
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
    {.name = "num-warmup-messages", .letter = 'w', .type = CB_OPT_LONG, .doc_key = "num_warmup_messages", .off = F(warmup), .min = 0,
     .max = 1000000000L, .arg = "N", .help = "messages before timing, per pair and step",
     .section = "Required (as in JSC LinkTest):"},
    {.name = "num-messages", .letter = 'n', .type = CB_OPT_LONG, .doc_key = "num_messages", .off = F(nmsg), .min = 1,
     .max = 1000000000L, .arg = "N", .help = "timed messages per pair and step"},
    {.name = "size-messages", .letter = 's', .type = CB_OPT_SIZE, .doc_key = "size_messages", .off = F(size), .min = 1,
     .max = 2147483647L, .arg = "BYTES", .help = "message size in bytes (4096, 64K, 16M; at most 2G-1)"},

    {.name = "unidirectional", .type = CB_OPT_FLAG, .off = F(unidirectional),
     .help = "lower rank sends, higher receives (default is\nsemidirectional: ping-pong)",
     .section = "Pattern:"},
    {.name = "bidirectional", .type = CB_OPT_FLAG, .off = F(bidirectional),
     .help = "both ranks of a pair send and receive at once"},
    {.name = "bisection", .type = CB_OPT_FLAG, .doc_key = "bisection", .off = F(bisection),
     .help = "only pairs across the halves: ranks 0..N/2-1\nagainst N/2..N-1, in N/2 steps"},
    {.name = "group-processes-by-hostname", .type = CB_OPT_FLAG, .doc_key = "group_processes_by_hostname", .off = F(group_host),
     .help = "test only pairs on different hosts (with\n--bisection: hosts split into two halves)"},
    {.name = "serial-tests", .type = CB_OPT_FLAG, .doc_key = "serial_tests", .off = F(serial),
     .help = "run the pairs of a step one after another"},
    {.name = "randomize-steps", .type = CB_OPT_FLAG, .doc_key = "randomize_steps", .off = F(randomize),
     .help = "run the steps in a random order"},
    {.name = "seed-randomize-steps", .type = CB_OPT_U64, .doc_key = "seed_randomize_steps", .off = F(seed), .min = 0,
     .max = 9223372036854775807.0, .def = "9876543210", .arg = "N", .help = "seed of that order"},
    {.name = "num-slowest", .type = CB_OPT_LONG, .doc_key = "num_slowest", .off = F(num_slowest), .min = 0, .max = 100000,
     .def = "10", .arg = "K", .help = "slowest pairs retested serially"},
    {.name = "check-buffers", .type = CB_OPT_FLAG, .doc_key = "check_buffers", .off = F(check_buffers),
     .help = "verify the payload of every timed message: each\ncarries its own pattern, checked "
             "outside the\ntimed region; a wrong byte is an error"},
    {.name = "min-iterations", .type = CB_OPT_LONG, .doc_key = "min_iterations", .off = F(min_iterations), .min = 1,
     .max = 1000000000L, .def = "1", .arg = "N", .help = "repeat the whole test at least N times"},
    {.name = "min-runtime", .type = CB_OPT_DURATION, .doc_key = "min_runtime", .off = F(min_runtime), .min = 0,
     .max = 365 * 86400.0, .def = "0", .arg = "SECONDS",
     .help = "repeat it for at least SECONDS (or 30m, 2h; the\nmatrix keeps each pair's slowest time)"},
    {.name = "all-to-all", .type = CB_OPT_FLAG, .doc_key = "all_to_all", .off = F(all_to_all),
     .help = "also time MPI_Alltoall (-s bytes to every rank)\nbefore and after the test"},
    {.name = "num-randomize-tasks", .type = CB_OPT_LONG, .doc_key = "num_randomize_tasks", .off = F(num_randomize_tasks), .min = 0,
     .max = 1000000, .def = "0", .arg = "V",
     .help = "after the test in rank order, repeat it for V\nrandom permutations of the task IDs"},
    {.name = "seed-randomize-tasks", .type = CB_OPT_U64, .doc_key = "seed_randomize_tasks", .off = F(seed_tasks), .min = 0,
     .max = 9223372036854775807.0, .def = "29309775", .arg = "N", .help = "seed of those permutations"},
    {.name = "memory-buffer-allocator", .type = CB_OPT_CUSTOM, .off = F(allocator),
     .parse = parse_allocator, .arg = "NAME", .section = "Buffers:",
     .help = "DEFAULT (posix_memalign; 2 MiB aligned with\ntransparent huge pages from 2 MiB), "
             "aligned-memory_allocator\n(aligned_alloc), pinned-memory-map_allocator (mmap +\n"
             "mlock), POSIX_aligned-memory_allocator\n(posix_memalign, 4 KiB pages), huge-pages (always\n"
             "2 MiB + THP), CUDA_memory_allocator (= --use-gpu-memory)"},
    {.name = "no-huge-pages", .type = CB_OPT_FLAG, .off = F(small_pages),
     .help = "= --memory-buffer-allocator POSIX_aligned-memory_allocator"},
    {.name = "multi-buffer", .type = CB_OPT_FLAG, .doc_key = "multi_buffer", .off = F(multi_buffer),
     .help = "send and receive from a ring of buffers, one after\nthe other"},
    {.name = "num-multi-buffer", .type = CB_OPT_LONG, .doc_key = "num_multi_buffer", .off = F(num_multi_buffer), .min = 0,
     .max = 1000000000L, .def = "0", .arg = "K",
     .help = "buffers in each ring (2..max(-n, -w); 0: that maximum;\nimplies --multi-buffer)"},
    {.name = "randomize-buffers", .type = CB_OPT_FLAG, .doc_key = "randomize_buffers", .off = F(randomize_buffers),
     .help = "fill the buffers with pseudo-random bytes (default:\nzeros)"},
    {.name = "seed-randomize-buffers", .type = CB_OPT_U64, .doc_key = "seed_randomize_buffers", .off = F(seed_buffers), .min = 0,
     .max = 9223372036854775807.0, .def = "1234567890", .arg = "N", .help = "seed of those bytes"},
    {.name = "use-gpu-memory", .type = CB_OPT_FLAG, .doc_key = "use_gpu_memory", .off = F(use_gpu),
     .help = "message buffers on each rank's local GPU (CUDA;\nCUDA-aware MPI, else staged through "
             "pinned host\nmemory); exit 3 when no GPU is visible"},

    {.name = "mode", .letter = 'm', .type = CB_OPT_CUSTOM, .off = F(mode), .parse = parse_mode,
     .arg = "mpi", .help = "transport layer: this build supports [" LT_SUPPORTED_MODES "]",
     .section = "LinkTest compatibility:"},
    {.name = "no-sion-file", .type = CB_OPT_FLAG, .doc_key = "no_sion_file", .off = F(no_sion),
     .help = "LinkTest's SION file is our .npz: = --no-output"},
    {.name = "parallel-sion-file", .type = CB_OPT_FLAG, .doc_key = "parallel_sion_file", .off = F(parallel_sion),
     .help = "accepted; the .npz is always streamed through rank 0"},

    {.name = "min-bandwidth", .type = CB_OPT_DOUBLE, .unit = "Gbit/s", .off = F(min_bw_gbits), .min = 1e-9, .max = 1e9,
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
    /* spellings in the prose and examples of LinkTest's usage document */
    {.name = "randomize", .replaced_by = "randomize-steps"},
    {.name = "use-gpus", .replaced_by = "use-gpu-memory"},
    {.name = "memory_buffer_allocator", .replaced_by = "memory-buffer-allocator"},
    {.name = "num_multi_buf", .replaced_by = "num-multi-buffer"},
    {0}};
#undef F

/* The document's metrics, each unit written once (cb_metric_def). */
const cb_metric_def lt_metrics[] = {
    {"alltoall_before_time", "us", CB_LOWER, "the slowest rank's all-to-all before the test"},
    {"alltoall_before_bandwidth", "Gbit/s", CB_HIGHER, "the all-to-all before the test, per rank"},
    {"alltoall_after_time", "us", CB_LOWER, "the slowest rank's all-to-all after the test"},
    {"alltoall_after_bandwidth", "Gbit/s", CB_HIGHER, "the all-to-all after the test, per rank"},
    {"min_bandwidth", "Gbit/s", CB_HIGHER, "the slowest pair's bandwidth"},
    {"min_bandwidth_bytes", "B/s", CB_HIGHER, "min_bandwidth in bytes per second"},
    {"max_time", "us", CB_LOWER, "the slowest pair's time per message"},
    {"avg_bandwidth", "Gbit/s", CB_HIGHER, "the pairs' mean bandwidth"},
    {"avg_bandwidth_bytes", "B/s", CB_HIGHER, "avg_bandwidth in bytes per second"},
    {"avg_time", "us", CB_LOWER, "the pairs' mean time per message"},
    {"max_bandwidth", "Gbit/s", CB_HIGHER, "the fastest pair's bandwidth"},
    {"min_time", "us", CB_LOWER, "the fastest pair's time per message"},
    {"parallel_max_time", "us", CB_LOWER, "the slowest pair's time with every pair at once"},
    {"parallel_min_bandwidth", "Gbit/s", CB_HIGHER,
     "the slowest pair's bandwidth with every pair at once"},
    {"pairs_tested", "pairs", CB_NEITHER, "pairs measured"},
    {"pairs_expected", "pairs", CB_NEITHER, "pairs the plan has"},
    {"verification_errors", "pairs", CB_LOWER, "pairs whose messages arrived wrong: corruption"},
    {"wrong_bytes", "bytes", CB_LOWER, "bytes that arrived wrong"},
    {0},
};

const cb_cmd lt_cmd = {
    .metrics = lt_metrics,
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
            "retest_time[K], error_pairs[E,2], task_memory_kib[N,4], alltoall_time[2,N]\n"
            "(--all-to-all), task_order[V,N] (--num-randomize-tasks), meta (JSON text).\n"
            "Fault injection, for testing: CB_LINKTEST_DELAY=I-J:USEC[,K-L:USEC...] delays every\n"
            "message rank min(I,J) sends to the other by USEC us (slow links); CB_LINKTEST_CORRUPT=R[:K]\n"
            "flips one byte of timed message K (default: the last) that rank R sends in its\n"
            "first pair test (a corrupted transfer, for --check-buffers).\n"
            "Monitoring on stderr (rank 0): phase timings, memory per task, the allocator.\n"
            "\n"
            "SIGINT, SIGTERM or SIGHUP (mpirun and srun pass them to every rank) stops the\n"
            "test before the next step, skips the retest, and writes what was measured: the\n"
            "results file, the JSON document (\"interrupted\": true) and the results block.\n"
            "\n"
            "Exit status: 0 ran and met the judging options, 1 did not (or a payload\n"
            "failed verification, or a pair was not tested), 2 usage error (also an odd\n"
            "number of ranks; --json with --plan), 3 could not run (MPI, memory, results\n"
            "file, no GPU for --use-gpu-memory), 128 + the signal's number when interrupted\n"
            "(130 SIGINT, 143 SIGTERM).\n",
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
    const char *missing = !cb_opts_given(&lt_cmd, "num-warmup-messages") ? "--num-warmup-messages (-w)"
                          : !cb_opts_given(&lt_cmd, "num-messages")      ? "--num-messages (-n)"
                          : !cb_opts_given(&lt_cmd, "size-messages")     ? "--size-messages (-s)"
                                                                      : NULL;
    if (missing)
        cb_usage_error("%s is required (as are -w, -n and -s)", missing);
    if (c->json_path && cb_json_path_ok(c->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", c->json_path);
    if (!c->no_output && cb_json_path_ok(c->output) != 0)
        cb_usage_error("cannot write --output %s: its directory does not exist or is not writable", c->output);
}

/* The transport layer as LinkTest finds it: --mode, else the executable's suffix
 * (linktest.LAYER), else LINKTEST_VCLUSTER_IMPL; this build has mpi only. */
static void resolve_mode(lt_config *c, const char *argv0)
{
    const char *base = strrchr(argv0, '/') ? strrchr(argv0, '/') + 1 : argv0;
    const char *dot = strrchr(base, '.'), *env = getenv("LINKTEST_VCLUSTER_IMPL");
    if (c->mode) {
        c->mode_from = "--mode";
    } else if (dot && dot[1]) {
        c->mode = dot + 1;
        c->mode_from = "the executable's name";
    } else if (env && *env) {
        c->mode = env;
        c->mode_from = "LINKTEST_VCLUSTER_IMPL";
    } else {
        c->mode = "mpi";
        c->mode_from = "the default";
    }
    check_mode(c->mode, c->mode_from);
}

/* LinkTest's options that join others. */
static void check_linktest(lt_config *c)
{
    if (c->no_sion)
        c->no_output = 1; /* LinkTest's SION file is our .npz */
    if (c->small_pages) {
        if (c->allocator != LT_ALLOC_DEFAULT && c->allocator != LT_ALLOC_POSIX)
            cb_usage_error("--no-huge-pages and --memory-buffer-allocator %s exclude each other",
                           lt_alloc_names[c->allocator]);
        c->allocator = LT_ALLOC_POSIX;
    }
    if (c->allocator == LT_ALLOC_CUDA)
        c->use_gpu = 1; /* LinkTest's allocator for GPU memory */
    else if (c->use_gpu && c->allocator != LT_ALLOC_DEFAULT)
        cb_usage_error("--use-gpu-memory allocates on the GPU: --memory-buffer-allocator %s is for host memory",
                       lt_alloc_names[c->allocator]);
    if (c->use_gpu)
        c->allocator = LT_ALLOC_CUDA;
    long most = c->nmsg > c->warmup ? c->nmsg : c->warmup;
    if (cb_opts_given(&lt_cmd, "num-multi-buffer") && c->num_multi_buffer != 0) {
        if (c->num_multi_buffer < 2 || c->num_multi_buffer > most)
            cb_usage_error("--num-multi-buffer %ld: must be between 2 and %ld (the larger of -n and -w), "
                           "or 0 for that", c->num_multi_buffer, most);
        c->multi_buffer = 1;
    }
    if (c->multi_buffer && c->num_multi_buffer == 0)
        c->num_multi_buffer = most < 2 ? 2 : most;
}

/* The options, checked; exits 2 (or 0 for --help / --version). */
void lt_options_parse(lt_config *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    for (int i = 0; i < argc; i++)
        snprintf(c->argv_line + strlen(c->argv_line), sizeof c->argv_line - strlen(c->argv_line),
                 "%s%s", i ? " " : "", argv[i]);
    cb_opts_parse(&lt_cmd, c, argc, argv);
    if (c->unidirectional && c->bidirectional)
        cb_usage_error("--unidirectional and --bidirectional exclude each other");
    c->pattern = c->unidirectional ? LT_UNI : c->bidirectional ? LT_BI : LT_SEMI;
    if (c->plan_n) {
        check_plan(c);
        return;
    }
    if (c->plan_hosts || c->plan_print)
        cb_usage_error("--plan-hosts and --plan-print go with --plan N");
    resolve_mode(c, argv[0]);
    check_run(c);
    check_linktest(c);
}
