/* cb-linktest: an MPI all-pairs link test. Every pair of ranks meets exactly
 * once in a schedule of steps (schedule.h); in each step all pairs of the
 * step run a ping-pong (or one-way, or two-way) exchange at once and time it.
 * The slowest pairs are retested one at a time afterwards, which tells a bad
 * link from one that was only slow under the load of the parallel test. The
 * full N x N matrix of times goes to a NumPy .npz file (npz.h), streamed row
 * by row through rank 0, so no rank holds more than O(N) of it.
 *
 * The options follow JSC LinkTest's names where the meaning is the same; the
 * implementation is our own. */
#include "../common/cb_common.h"
#include "npz.h"
#include "schedule.h"

#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TEST_VERSION "1.0"
#define HOST_LEN 64
#define PLAN_PRINT_MAX 256
#define PLAN_EXHAUSTIVE_MAX 8192
#define PLAN_SAMPLE_RANKS 64
#define MAX_ERROR_PAIRS 1000

enum { TAG_DATA = 1, TAG_ACK, TAG_RESULT, TAG_ROW };
enum pattern { SEMI, UNI, BI };
static const char *pattern_names[] = {"semidirectional", "unidirectional", "bidirectional"};
static const char *pattern_descr[] = {
    "semidirectional (ping-pong: one message each way in turn)",
    "unidirectional (lower rank sends, higher rank receives)",
    "bidirectional (both ranks send and receive at once)"};

static struct {
    long warmup, nmsg, size;
    int have_warmup, have_nmsg, have_size;
    enum pattern pattern;
    int bisection, serial, randomize, group_host, check_buffers, quiet, no_output, small_pages;
    uint64_t seed;
    long num_slowest, min_iterations;
    double min_runtime;
    const char *output, *json_path;
    double min_bw_gbits, max_time_us;   /* compliance thresholds; 0 = none */
    long plan_n, plan_hosts;
    int plan_print;
    char argv_line[4096];
} opt = {.seed = 9876543210ULL, .num_slowest = 10, .min_iterations = 1,
         .output = "cb-linktest.npz"};

/* ---- help ------------------------------------------------------------------ */
static void usage(FILE *f)
{
    fprintf(f,
"Usage: mpirun -n N cb-linktest -w WARMUP -n MESSAGES -s BYTES [OPTION]...\n"
"       srun -n N cb-linktest -w WARMUP -n MESSAGES -s BYTES [OPTION]...\n"
"       cb-linktest --plan N [--bisection] [--plan-print]    (no MPI needed)\n"
"Test every link between pairs of MPI ranks (N even): in each of N-1 steps all\n"
"ranks run in pairs at once, every pair meets exactly once; the slowest pairs\n"
"are retested one at a time, to tell a bad link from load. Writes the N x N\n"
"matrix of times to a NumPy .npz file (see cb-linktest-report).\n"
"\n"
"Required (as in JSC LinkTest):\n"
"  -w, --num-warmup-messages=N  messages before timing, per pair and step\n"
"  -n, --num-messages=N         timed messages per pair and step\n"
"  -s, --size-messages=BYTES    message size in bytes (1 .. 2147483647)\n"
"Pattern:\n"
"      --unidirectional         lower rank sends, higher receives (default is\n"
"                               semidirectional: ping-pong)\n"
"      --bidirectional          both ranks of a pair send and receive at once\n"
"      --bisection              only pairs across the halves: ranks 0..N/2-1\n"
"                               against N/2..N-1, in N/2 steps\n"
"      --group-processes-by-hostname, --group-by-hostname\n"
"                               test only pairs on different hosts (with\n"
"                               --bisection: hosts split into two halves)\n"
"      --serial-tests           run the pairs of a step one after another\n"
"      --randomize-steps        run the steps in a random order\n"
"      --seed-randomize-steps=N, --seed=N  seed of that order (9876543210)\n"
"      --num-slowest=K          slowest pairs retested serially (default 10)\n"
"      --check-buffers          verify every payload received (the last message\n"
"                               of each pair and step); a mismatch is an error\n"
"      --min-iterations=N       repeat the whole test at least N times (1)\n"
"      --min-runtime=SECONDS    repeat it for at least SECONDS (0); the matrix\n"
"                               keeps each pair's slowest time over iterations\n"
"      --no-huge-pages          message buffers on 4 KiB pages (default: buffers of\n"
"                               2 MiB and more ask for transparent huge pages)\n"
"  -m, --mode=mpi               transport layer; only mpi (LinkTest compatible)\n"
"Judging (exit 1 when not met):\n"
"      --min-bandwidth=GBITS    every pair at least GBITS Gbit/s (after retest)\n"
"      --max-time=USEC          no pair slower than USEC us per message\n"
"Output:\n"
"  -o, --output=FILE            results file (default cb-linktest.npz)\n"
"      --no-output              write no results file\n"
"  -j, --json=FILE              write the JSON result document ('-' = stdout)\n"
"  -q, --quiet                  no line per step\n"
"Plan (no MPI):\n"
"      --plan=N                 build and validate the schedule for N ranks and\n"
"                               print a summary with a coverage verdict\n"
"      --plan-hosts=H           as if the N ranks ran on H hosts (block\n"
"                               distribution); with --group-by-hostname\n"
"      --plan-print             list the pairs of every step (N <= %d)\n"
"  -h, --help                   this help\n"
"  -V, -v, --version            version\n"
"\n"
"Times are per message, one way: a ping-pong round trip counts two messages.\n"
"Bandwidth = message size / time, in Gbit/s (10^9 bit/s), per direction.\n"
"Results file (NumPy .npz, np.load(FILE)): time[N,N] seconds per message\n"
"(NaN: not tested), hosts[N], slowest_pairs[K,2], slowest_time[K],\n"
"retest_time[K], error_pairs[E,2], meta (JSON text: options, version, ...).\n"
"Testing only: CB_LINKTEST_DELAY=I-J:USEC delays every message rank min(I,J)\n"
"sends to the other by USEC us (a slow link); CB_LINKTEST_CORRUPT=R flips one\n"
"byte of rank R's first payload (a corrupted transfer, for --check-buffers).\n"
"\n"
"Exit status: 0 ran and met the judging options, 1 did not (or a payload\n"
"failed verification, or a pair was not tested), 2 usage error (also an odd\n"
"number of ranks), 3 could not run (MPI, memory, results file).\n",
            PLAN_PRINT_MAX);
}

/* Rank as the launcher tells it, before MPI_Init: only rank 0 prints usage errors. */
static int launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

/* Tasks the launcher started, or 0 if unknown: MPI should see as many. */
static int launcher_size(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v && getenv("SLURM_PROCID"))
        v = getenv("SLURM_STEP_NUM_TASKS");
    if (!v)
        v = getenv("PMI_SIZE");
    return v ? atoi(v) : 0;
}

static void parse_args(int argc, char **argv)
{
    enum { O_UNI = 256, O_BI, O_BISECT, O_GROUP, O_SERIAL, O_RAND, O_SEED, O_SLOWEST, O_CHECK,
           O_MINIT, O_MINRT, O_MINBW, O_MAXT, O_NOOUT, O_PLAN, O_PLANHOSTS, O_PLANPRINT, O_SMALLPG };
    static const struct option opts[] = {
        {"num-warmup-messages", required_argument, 0, 'w'},
        {"num-messages", required_argument, 0, 'n'},
        {"size-messages", required_argument, 0, 's'},
        {"unidirectional", no_argument, 0, O_UNI},
        {"bidirectional", no_argument, 0, O_BI},
        {"bisection", no_argument, 0, O_BISECT},
        {"group-processes-by-hostname", no_argument, 0, O_GROUP},
        {"group-by-hostname", no_argument, 0, O_GROUP},
        {"serial-tests", no_argument, 0, O_SERIAL},
        {"randomize-steps", no_argument, 0, O_RAND},
        {"seed-randomize-steps", required_argument, 0, O_SEED},
        {"seed", required_argument, 0, O_SEED},
        {"num-slowest", required_argument, 0, O_SLOWEST},
        {"check-buffers", no_argument, 0, O_CHECK},
        {"min-iterations", required_argument, 0, O_MINIT},
        {"min-runtime", required_argument, 0, O_MINRT},
        {"mode", required_argument, 0, 'm'},
        {"no-huge-pages", no_argument, 0, O_SMALLPG},
        {"min-bandwidth", required_argument, 0, O_MINBW},
        {"max-time", required_argument, 0, O_MAXT},
        {"output", required_argument, 0, 'o'},
        {"no-output", no_argument, 0, O_NOOUT},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"plan", required_argument, 0, O_PLAN},
        {"plan-hosts", required_argument, 0, O_PLANHOSTS},
        {"plan-print", no_argument, 0, O_PLANPRINT},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    for (int i = 0; i < argc; i++)
        snprintf(opt.argv_line + strlen(opt.argv_line), sizeof opt.argv_line - strlen(opt.argv_line),
                 "%s%s", i ? " " : "", argv[i]);
    int uni = 0, bi = 0;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":w:n:s:m:o:j:qhVv", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'w': opt.warmup = cb_opt_long("--num-warmup-messages", optarg, 0, 1000000000L); opt.have_warmup = 1; break;
        case 'n': opt.nmsg = cb_opt_long("--num-messages", optarg, 1, 1000000000L); opt.have_nmsg = 1; break;
        case 's': opt.size = cb_opt_long("--size-messages", optarg, 1, 2147483647L); opt.have_size = 1; break;
        case O_UNI: uni = 1; opt.pattern = UNI; break;
        case O_BI: bi = 1; opt.pattern = BI; break;
        case O_BISECT: opt.bisection = 1; break;
        case O_GROUP: opt.group_host = 1; break;
        case O_SERIAL: opt.serial = 1; break;
        case O_RAND: opt.randomize = 1; break;
        case O_SEED: opt.seed = (uint64_t)cb_opt_long("--seed-randomize-steps", optarg, 0, 9223372036854775807L); break;
        case O_SLOWEST: opt.num_slowest = cb_opt_long("--num-slowest", optarg, 0, 100000); break;
        case O_CHECK: opt.check_buffers = 1; break;
        case O_MINIT: opt.min_iterations = cb_opt_long("--min-iterations", optarg, 1, 1000000000L); break;
        case O_SMALLPG: opt.small_pages = 1; break;
        case O_MINRT: opt.min_runtime = cb_opt_double("--min-runtime", optarg, 0, 365 * 86400.0); break;
        case 'm':
            if (strcmp(optarg, "mpi") != 0)
                cb_usage_error("invalid value '%s' for --mode: cb-linktest supports only mpi", optarg);
            break;
        case O_MINBW: opt.min_bw_gbits = cb_opt_double("--min-bandwidth", optarg, 1e-9, 1e9); break;
        case O_MAXT: opt.max_time_us = cb_opt_double("--max-time", optarg, 1e-6, 1e12); break;
        case 'o': opt.output = optarg; break;
        case O_NOOUT: opt.no_output = 1; break;
        case 'j': opt.json_path = optarg; break;
        case 'q': opt.quiet = 1; break;
        case O_PLAN: opt.plan_n = cb_opt_long("--plan", optarg, 2, 100000000L); break;
        case O_PLANHOSTS: opt.plan_hosts = cb_opt_long("--plan-hosts", optarg, 1, 100000000L); break;
        case O_PLANPRINT: opt.plan_print = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': case 'v': cb_print_version(TEST_VERSION); exit(0);
        case ':': cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cb_usage_error("unexpected argument '%s'", argv[optind]);
    if (uni && bi)
        cb_usage_error("--unidirectional and --bidirectional exclude each other");
    if (opt.plan_n) {
        if (opt.plan_n % 2)
            cb_usage_error("--plan %ld: the number of ranks must be even", opt.plan_n);
        if (opt.plan_n > 2147483647L / 2)
            cb_usage_error("--plan %ld: too many ranks", opt.plan_n);
        if (opt.plan_hosts && !opt.group_host)
            cb_usage_error("--plan-hosts places ranks on hosts for --group-processes-by-hostname; give that too");
        if (opt.plan_hosts > opt.plan_n)
            cb_usage_error("--plan-hosts %ld: more hosts than the %ld ranks", opt.plan_hosts, opt.plan_n);
        if (opt.plan_print && opt.plan_n > PLAN_PRINT_MAX)
            cb_usage_error("--plan-print lists pairs only for up to %d ranks", PLAN_PRINT_MAX);
        return;
    }
    if (opt.plan_hosts || opt.plan_print)
        cb_usage_error("--plan-hosts and --plan-print go with --plan N");
    const char *missing = !opt.have_warmup ? "--num-warmup-messages (-w)"
                          : !opt.have_nmsg ? "--num-messages (-n)"
                          : !opt.have_size ? "--size-messages (-s)" : NULL;
    if (missing)
        cb_usage_error("%s is required (as are -w, -n and -s)", missing);
    if (opt.json_path && cb_json_path_ok(opt.json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", opt.json_path);
    if (!opt.no_output && cb_json_path_ok(opt.output) != 0)
        cb_usage_error("cannot write --output %s: its directory does not exist or is not writable", opt.output);
}

/* ---- formatting ------------------------------------------------------------ */
static const char *fmt_time(double s, char *buf, size_t len)
{
    if (!isfinite(s))
        snprintf(buf, len, "n/a");
    else if (s < 1e-6)
        snprintf(buf, len, "%.1f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, len, "%.2f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else
        snprintf(buf, len, "%.3f s", s);
    return buf;
}

static double gbits(double seconds) { return seconds > 0 ? opt.size * 8.0 / seconds / 1e9 : 0; }

/* ---- plan (no MPI) ----------------------------------------------------------- */
static int plan_main(void)
{
    int n = (int)opt.plan_n;
    int *host_of = NULL;
    if (opt.group_host) {
        long hosts = opt.plan_hosts ? opt.plan_hosts : 1;
        host_of = malloc(sizeof(int) * (size_t)n);
        if (!host_of)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int r = 0; r < n; r++) /* block distribution, as srun places tasks */
            host_of[r] = (int)((long long)r * hosts / n);
    }
    uint64_t t0 = cb_now_ns();
    lt_sched s;
    if (lt_sched_init(&s, n, host_of, opt.group_host, opt.bisection) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot build the schedule for %d ranks (out of memory)", n);
    if (opt.randomize)
        lt_sched_randomize(&s, opt.seed);
    double build_s = (cb_now_ns() - t0) / 1e9;

    printf("cb-linktest plan: %d ranks", n);
    if (opt.group_host)
        printf(" on %d host%s (block distribution), pairs on different hosts only", s.ngroups,
               s.ngroups == 1 ? "" : "s");
    printf(", %s\n", opt.bisection ? "bisection: the first half of the ranks against the second"
                                   : "all pairs");
    if (opt.group_host)
        printf("Groups:           %d, at most %d rank%s each; %d rounds of %d steps\n", s.ngroups,
               s.gsize, s.gsize == 1 ? "" : "s", s.rounds, s.gsize);
    printf("Steps:            %ld%s\n", s.nsteps, opt.randomize ? " (in randomized order)" : "");

    /* pairs per step: every step for moderate N, a sample of steps beyond */
    int all_steps = n <= PLAN_EXHAUSTIVE_MAX;
    long nsamp = all_steps ? s.nsteps : (s.nsteps < 32 ? s.nsteps : 32);
    long pmin = -1, pmax = 0;
    double psum = 0;
    for (long k = 0; k < nsamp; k++) {
        long step = all_steps || nsamp == s.nsteps ? k : (long)(cb_mix64(opt.seed + (uint64_t)k) % (uint64_t)s.nsteps);
        long p = lt_pairs_in_step(&s, step);
        pmin = pmin < 0 || p < pmin ? p : pmin;
        pmax = p > pmax ? p : pmax;
        psum += (double)p;
    }
    printf("Pairs per step:   min %ld, avg %.1f, max %ld (of %d possible)%s\n", pmin < 0 ? 0 : pmin,
           nsamp ? psum / (double)nsamp : 0, pmax, n / 2,
           all_steps || nsamp == s.nsteps ? "" : " [sampled steps]");
    long long want = lt_expected_pairs(&s);
    printf("Pairs to test:    %lld\n", want);
    double sched_kib = (sizeof(int) * (3.0 * n + s.ngroups + 1) + sizeof(long) * (double)s.nsteps) / 1024;
    printf("Memory per rank:  schedule %.1f KiB, matrix row %.1f KiB (O(N); rank 0 streams the matrix)\n",
           sched_kib, n * sizeof(double) / 1024.0);

    if (opt.plan_print) {
        for (long k = 0; k < s.nsteps; k++) {
            printf("step %ld:", k + 1);
            for (int r = 0; r < n; r++) {
                int q = lt_partner(&s, r, s.order[k]);
                if (q > r)
                    printf(" %d-%d", r, q);
            }
            printf("\n");
        }
    }

    char why[256] = "";
    t0 = cb_now_ns();
    int bad;
    const char *how;
    if (n <= PLAN_EXHAUSTIVE_MAX) {
        bad = lt_sched_check_exhaustive(&s, why, sizeof why);
        how = "exhaustive: every step pairs each rank at most once, every pair to test meets exactly once, no other pair";
    } else {
        bad = lt_sched_check_sampled(&s, PLAN_SAMPLE_RANKS, opt.seed, why, sizeof why);
        how = "sampled: for 64 ranks (first, last, random), the partners over all steps are a "
              "permutation of all the ranks each should meet, and every pairing is mutual";
    }
    double check_s = (cb_now_ns() - t0) / 1e9;
    printf("Check:            %s (built in %.3f s, checked in %.3f s)\n", how, build_s, check_s);
    printf("Coverage:         %s%s%s\n", bad ? "FAILED: " : "OK", bad ? why : "", "");
    lt_sched_free(&s);
    free(host_of);
    return bad ? CB_EXIT_NOT_COMPLIANT : CB_EXIT_OK;
}

/* ---- the MPI run ------------------------------------------------------------- */
static struct {
    int rank, size;
    lt_sched sched;
    char *sbuf, *rbuf;
    double *row;            /* time per message with each partner; NaN: not tested */
    int *host_id;           /* [size] */
    int nhosts;
    char *hosts;            /* rank 0: [size][HOST_LEN] */
    int delay_a, delay_b;   /* CB_LINKTEST_DELAY pair, -1: none */
    double delay_us;
    int corrupt_rank, corrupt_pending;
    double errors;          /* bad bytes this rank found (as receiver) */
} g = {.delay_a = -1, .delay_b = -1, .corrupt_rank = -1};

static void mpi_check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "cb-linktest: rank %d: %s failed: %s\n", g.rank, what, msg);
        MPI_Abort(MPI_COMM_WORLD, CB_EXIT_CANNOT_RUN);
    }
}

static uint64_t payload_seed(int from, int to, long tag)
{
    return cb_mix64(((uint64_t)(uint32_t)from << 32) ^ (uint64_t)(uint32_t)to ^ ((uint64_t)tag << 48) ^
                    0x6c696e6b74657374ULL);
}

static void fill_payload(char *buf, size_t n, uint64_t seed)
{
    size_t words = n / 8;
    uint64_t *w = (uint64_t *)buf;
    for (size_t i = 0; i < words; i++)
        w[i] = cb_mix64(seed + i);
    uint64_t tail = cb_mix64(seed + words);
    memcpy(buf + words * 8, &tail, n - words * 8);
}

/* Bytes of buf that differ from the payload seed makes. */
static double check_payload(const char *buf, size_t n, uint64_t seed)
{
    size_t words = n / 8;
    const uint64_t *w = (const uint64_t *)buf;
    double bad = 0;
    for (size_t i = 0; i < words; i++) {
        uint64_t want = cb_mix64(seed + i), x = w[i] ^ want;
        for (; x; x >>= 8)
            bad += (x & 0xff) != 0;
    }
    uint64_t tail = cb_mix64(seed + words);
    const unsigned char *t = (const unsigned char *)&tail;
    for (size_t i = words * 8; i < n; i++)
        bad += (unsigned char)buf[i] != t[i - words * 8];
    return bad;
}

static void slow_link_delay(int peer)
{
    if (g.delay_us > 0 && ((g.rank == g.delay_a && peer == g.delay_b) ||
                           (g.rank == g.delay_b && peer == g.delay_a)))
        cb_sleep_until_ns(cb_now_ns() + (uint64_t)(g.delay_us * 1e3));
}

typedef struct { double t, errors; } pair_result;

/* One pair's exchange: warm-up, timed messages, payload check. Both ranks
 * return the time the lower rank measured and the errors both found. */
static pair_result pair_test(int peer, long tag)
{
    int lower = g.rank < peer;
    int n = (int)opt.size;
    if (opt.check_buffers) {
        fill_payload(g.sbuf, (size_t)n, payload_seed(g.rank, peer, tag));
        memset(g.rbuf, 0, (size_t)n);
        if (g.corrupt_pending) {
            g.sbuf[n / 2] ^= 0x5a; /* a transfer that corrupts one byte */
            g.corrupt_pending = 0;
        }
    }
    MPI_Comm w = MPI_COMM_WORLD;
    long total = opt.warmup + opt.nmsg;
    uint64_t t0 = cb_now_ns();
    double t = 0;
    switch (opt.pattern) {
    case SEMI:
        for (long m = 0; m < total; m++) {
            if (m == opt.warmup)
                t0 = cb_now_ns();
            if (lower) {
                slow_link_delay(peer);
                mpi_check(MPI_Send(g.sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
                mpi_check(MPI_Recv(g.rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
            } else {
                mpi_check(MPI_Recv(g.rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
                mpi_check(MPI_Send(g.sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
            }
        }
        t = (cb_now_ns() - t0) / 1e9 / (2.0 * opt.nmsg);
        break;
    case UNI:
        for (int phase = 0; phase < 2; phase++) {
            long count = phase ? opt.nmsg : opt.warmup;
            if (!count)
                continue;
            if (phase)
                t0 = cb_now_ns();
            /* a zero-byte acknowledgement closes each phase: the sender's time
             * includes the last message's arrival */
            for (long m = 0; m < count; m++) {
                if (lower) {
                    slow_link_delay(peer);
                    mpi_check(MPI_Send(g.sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
                } else {
                    mpi_check(MPI_Recv(g.rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
                }
            }
            if (lower)
                mpi_check(MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, w, MPI_STATUS_IGNORE), "MPI_Recv");
            else
                mpi_check(MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, w), "MPI_Send");
        }
        t = (cb_now_ns() - t0) / 1e9 / (double)opt.nmsg;
        break;
    case BI:
        for (long m = 0; m < total; m++) {
            if (m == opt.warmup)
                t0 = cb_now_ns();
            if (lower)
                slow_link_delay(peer);
            mpi_check(MPI_Sendrecv(g.sbuf, n, MPI_BYTE, peer, TAG_DATA, g.rbuf, n, MPI_BYTE, peer,
                                   TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Sendrecv");
        }
        t = (cb_now_ns() - t0) / 1e9 / (double)opt.nmsg;
        break;
    }
    double bad = 0;
    if (opt.check_buffers && !(opt.pattern == UNI && lower))
        bad = check_payload(g.rbuf, (size_t)n, payload_seed(peer, g.rank, tag));
    g.errors += bad;
    double mine[2] = {t, bad}, theirs[2];
    mpi_check(MPI_Sendrecv(mine, 2, MPI_DOUBLE, peer, TAG_RESULT, theirs, 2, MPI_DOUBLE, peer, TAG_RESULT,
                           w, MPI_STATUS_IGNORE), "MPI_Sendrecv");
    pair_result r = {lower ? t : theirs[0], bad + theirs[1]};
    return r;
}

/* Per-step figures, reduced to rank 0; each pair counted once, by its lower rank. */
typedef struct { double v; int rank; } double_int;
typedef struct {
    double_int max_t, min_t, max_err; /* min_t holds -t: one MAXLOC for all three */
    double sum_t, count, sum_err, sum_bw, err_pairs;
} step_stats;

static void reduce_step(int partner, pair_result r, step_stats *out)
{
    double_int loc[3] = {{-INFINITY, g.rank}, {-INFINITY, g.rank}, {-1, g.rank}};
    double sums[5] = {0, 0, 0, 0, 0};
    if (partner > g.rank) {
        loc[0].v = r.t;
        loc[1].v = -r.t;
        loc[2].v = r.errors;
        sums[0] = r.t;
        sums[1] = 1;
        sums[2] = r.errors;
        sums[3] = gbits(r.t);
        sums[4] = r.errors > 0;
    }
    double_int oloc[3];
    double osums[5];
    mpi_check(MPI_Reduce(loc, oloc, 3, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD), "MPI_Reduce");
    mpi_check(MPI_Reduce(sums, osums, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (g.rank == 0) {
        out->max_t = oloc[0];
        out->min_t = oloc[1];
        out->min_t.v = -out->min_t.v;
        out->max_err = oloc[2];
        out->sum_t = osums[0];
        out->count = osums[1];
        out->sum_err = osums[2];
        out->sum_bw = osums[3];
        out->err_pairs = osums[4];
    }
}

/* ---- the slowest pairs: a top-K list merged by a reduction ------------------- */
typedef struct { double t, a, b; } slow_entry; /* t < 0: empty */
static int slow_k;

static void slow_insert(slow_entry *list, slow_entry e)
{
    int i = slow_k;
    while (i > 0 && (list[i - 1].t < e.t ||
                     (list[i - 1].t == e.t && (list[i - 1].a > e.a ||
                                               (list[i - 1].a == e.a && list[i - 1].b > e.b)))))
        i--;
    if (i >= slow_k)
        return;
    memmove(&list[i + 1], &list[i], sizeof *list * (size_t)(slow_k - i - 1));
    list[i] = e;
}

static void slow_merge(void *in, void *inout, int *len, MPI_Datatype *type)
{
    slow_entry *a = in, *b = inout;
    for (int e = 0; e < *len; e++, a += slow_k, b += slow_k)
        for (int i = 0; i < slow_k && a[i].t >= 0; i++)
            slow_insert(b, a[i]);
}

/* ---- results file: rank 0 streams the rows ------------------------------------ */
static void json_options(cb_json *j);

static int write_results(const slow_entry *slow, int nslow, const double *retest, const int *err_pairs,
                         int nerr, const char *started, double duration, long iterations)
{
    int n = g.size;
    int ok = 1;
    lt_npz z;
    if (g.rank == 0) {
        memset(&z, 0, sizeof z);
        if (lt_npz_open(&z, opt.output) != 0)
            ok = 0;
    }
    mpi_check(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (!ok) {
        if (g.rank == 0)
            cb_warn("cannot write the results file %s: %s", opt.output, z.error);
        return -1;
    }
    if (g.rank != 0) {
        /* wait for rank 0 to ask, so rows do not pile up at rank 0 */
        mpi_check(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        mpi_check(MPI_Send(g.row, n, MPI_DOUBLE, 0, TAG_ROW, MPI_COMM_WORLD), "MPI_Send");
        return 0;
    }
    double *buf = malloc(sizeof(double) * (size_t)n);
    if (!buf)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    uint64_t shape[2] = {(uint64_t)n, (uint64_t)n};
    lt_npz_begin(&z, "time", "f8", 8, shape, 2);
    for (int r = 0; r < n; r++) {
        const double *row = g.row;
        if (r > 0) {
            mpi_check(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_ROW, MPI_COMM_WORLD), "MPI_Send");
            mpi_check(MPI_Recv(buf, n, MPI_DOUBLE, r, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            row = buf;
        }
        lt_npz_write(&z, row, sizeof(double) * (size_t)n);
    }
    free(buf);
    lt_npz_end(&z);

    const char **names = malloc(sizeof(char *) * (size_t)n);
    for (int r = 0; r < n; r++)
        names[r] = g.hosts + (size_t)r * HOST_LEN;
    lt_npz_strings(&z, "hosts", names, (size_t)n);
    free(names);

    int64_t *pairs = malloc(sizeof(int64_t) * 2 * (size_t)(nslow + 1));
    double *first = malloc(sizeof(double) * (size_t)(nslow + 1));
    for (int k = 0; k < nslow; k++) {
        pairs[2 * k] = (int64_t)slow[k].a;
        pairs[2 * k + 1] = (int64_t)slow[k].b;
        first[k] = slow[k].t;
    }
    uint64_t s2[2] = {(uint64_t)nslow, 2}, s1[1] = {(uint64_t)nslow};
    lt_npz_array(&z, "slowest_pairs", "i8", 8, s2, 2, pairs);
    lt_npz_array(&z, "slowest_time", "f8", 8, s1, 1, first);
    lt_npz_array(&z, "retest_time", "f8", 8, s1, 1, retest);
    free(pairs);
    free(first);
    int64_t *ep = malloc(sizeof(int64_t) * 2 * (size_t)(nerr + 1));
    for (int k = 0; k < 2 * nerr; k++)
        ep[k] = err_pairs[k];
    uint64_t se[2] = {(uint64_t)nerr, 2};
    lt_npz_array(&z, "error_pairs", "i8", 8, se, 2, ep);
    free(ep);

    cb_json m;
    cbj_init(&m);
    cbj_obj_begin(&m, NULL);
    cbj_str(&m, "format", "cb-linktest results 1");
    cbj_str(&m, "test", "cb-linktest");
    cbj_str(&m, "version", CB_VERSION);
    cbj_str(&m, "test_version", TEST_VERSION);
    cbj_str(&m, "started", started);
    cbj_num(&m, "duration_s", duration);
    cbj_int(&m, "ranks", n);
    cbj_int(&m, "hosts", g.nhosts);
    cbj_int(&m, "steps", g.sched.nsteps);
    cbj_int(&m, "iterations", iterations);
    cbj_str(&m, "time_unit", "s");
    cbj_str(&m, "time", "seconds per message, one way, as the lower rank of the pair measured it; "
                        "symmetric; NaN where the pair was not tested; over several iterations "
                        "each pair's slowest");
    cbj_str(&m, "command", opt.argv_line);
    cbj_obj_begin(&m, "options");
    json_options(&m);
    cbj_obj_end(&m);
    cbj_obj_end(&m);
    lt_npz_string(&z, "meta", m.buf);
    cbj_free(&m);
    if (lt_npz_close(&z) != 0) {
        cb_warn("cannot write the results file %s: %s", opt.output, z.error);
        return -1;
    }
    return 0;
}

static void json_options(cb_json *j)
{
    cbj_int(j, "num_warmup_messages", opt.warmup);
    cbj_int(j, "num_messages", opt.nmsg);
    cbj_int(j, "size_messages", opt.size);
    cbj_str(j, "pattern", pattern_names[opt.pattern]);
    cbj_bool(j, "bisection", opt.bisection);
    cbj_bool(j, "group_processes_by_hostname", opt.group_host);
    cbj_bool(j, "serial_tests", opt.serial);
    cbj_bool(j, "randomize_steps", opt.randomize);
    cbj_int(j, "seed_randomize_steps", (long long)opt.seed);
    cbj_bool(j, "check_buffers", opt.check_buffers);
    cbj_bool(j, "huge_pages", !opt.small_pages);
    cbj_int(j, "num_slowest", opt.num_slowest);
    cbj_int(j, "min_iterations", opt.min_iterations);
    cbj_num(j, "min_runtime", opt.min_runtime);
    if (opt.min_bw_gbits > 0)
        cbj_num(j, "min_bandwidth_gbits", opt.min_bw_gbits);
    if (opt.max_time_us > 0)
        cbj_num(j, "max_time_us", opt.max_time_us);
}

/* ---- set-up ------------------------------------------------------------------- */
static void read_fault_env(void)
{
    const char *d = getenv("CB_LINKTEST_DELAY");
    if (d && *d) {
        int a, b, used = 0;
        double us;
        if (sscanf(d, "%d-%d:%lf%n", &a, &b, &us, &used) != 3 || d[used] || a < 0 || b < 0 ||
            a >= g.size || b >= g.size || a == b || us <= 0)
            cb_usage_error("CB_LINKTEST_DELAY='%s': expected I-J:USEC, two different ranks below %d",
                           d, g.size);
        g.delay_a = a;
        g.delay_b = b;
        g.delay_us = us;
    }
    const char *c = getenv("CB_LINKTEST_CORRUPT");
    if (c && *c) {
        char *end;
        long r = strtol(c, &end, 10);
        if (*end || r < 0 || r >= g.size)
            cb_usage_error("CB_LINKTEST_CORRUPT='%s': expected a rank below %d", c, g.size);
        g.corrupt_rank = (int)r;
        g.corrupt_pending = g.rank == r;
    }
}

static void host_names(void)
{
    char me[HOST_LEN] = "";
    /* Under Slurm, the node's name (several slurmd "nodes" may share one machine). */
    const char *node = getenv("SLURMD_NODENAME");
    if (node && *node)
        snprintf(me, sizeof me, "%s", node);
    else
        cb_hostname(me, sizeof me);
    if (g.rank == 0) {
        g.hosts = calloc((size_t)g.size, HOST_LEN);
        if (!g.hosts)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory for %d host names", g.size);
    }
    mpi_check(MPI_Gather(me, HOST_LEN, MPI_CHAR, g.hosts, HOST_LEN, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Gather");
    g.host_id = malloc(sizeof(int) * (size_t)g.size);
    if (!g.host_id)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    if (g.rank == 0) {
        /* host numbers in order of first appearance (hash table, O(N)) */
        size_t cap = 1;
        while (cap < (size_t)g.size * 2)
            cap <<= 1;
        int *slot = malloc(sizeof(int) * cap);
        for (size_t i = 0; i < cap; i++)
            slot[i] = -1;
        g.nhosts = 0;
        for (int r = 0; r < g.size; r++) {
            const char *name = g.hosts + (size_t)r * HOST_LEN;
            uint64_t h = 1469598103934665603ULL;
            for (const char *p = name; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            size_t i = h & (cap - 1);
            while (slot[i] >= 0 && strcmp(g.hosts + (size_t)slot[i] * HOST_LEN, name) != 0)
                i = (i + 1) & (cap - 1);
            if (slot[i] < 0) {
                slot[i] = r;
                g.host_id[r] = g.nhosts++;
            } else {
                g.host_id[r] = g.host_id[slot[i]];
            }
        }
        free(slot);
    }
    mpi_check(MPI_Bcast(g.host_id, g.size, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    mpi_check(MPI_Bcast(&g.nhosts, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

/* All ranks agree whether something failed anywhere; exits with code if so. */
static void all_ok_or_exit(int ok, int code, const char *what)
{
    int all = 0;
    mpi_check(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
    if (!all) {
        if (g.rank == 0)
            fprintf(stderr, "cb-linktest: %s\n", what);
        MPI_Finalize();
        exit(code);
    }
}

/* stderr to /dev/null (ranks other than 0 while checking input: one message
 * per usage error, not one per rank); returns what unmute_stderr restores. */
static int mute_stderr(void)
{
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 2);
        close(devnull);
    }
    return saved;
}

static void unmute_stderr(int saved)
{
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* MPI_Init and the checks on what it gives: returns 0, or the exit code. */
static int start_mpi(int *argc, char ***argv, int pre_rank)
{
    /* Open MPI ends the process itself (its message, exit 1) when MPI_Init
     * fails fatally. The usual cause, srun without an MPI plugin, is caught
     * here first: tasks of a step but no PMI in the environment. */
    if (getenv("SLURM_PROCID") && launcher_size() > 1 && !getenv("PMIX_RANK") && !getenv("PMI_RANK") &&
        !getenv("OMPI_COMM_WORLD_RANK")) {
        if (pre_rank == 0)
            fprintf(stderr, "cb-linktest: started by srun without an MPI plugin (no PMIx/PMI in the "
                            "environment): use srun --mpi=pmix\n");
        return CB_EXIT_CANNOT_RUN;
    }
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "cb-linktest: MPI_Init failed: start it with mpirun or srun\n");
        return CB_EXIT_CANNOT_RUN;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    int launched = launcher_size();
    if (launched > 0 && launched != g.size) {
        fprintf(stderr, "cb-linktest: the launcher started %d tasks but MPI connects %d: MPI and the launcher "
                        "do not work together (under Slurm: srun --mpi=pmix)\n", launched, g.size);
        MPI_Finalize();
        return CB_EXIT_CANNOT_RUN;
    }
    if (g.size % 2) {
        if (g.rank == 0)
            fprintf(stderr, "cb-linktest: needs an even number of ranks, got %d (start it with "
                            "mpirun -n N or srun -n N, N even)\n", g.size);
        MPI_Finalize();
        return CB_EXIT_USAGE;
    }
    int saved = g.rank != 0 ? mute_stderr() : -1;
    read_fault_env();
    unmute_stderr(saved);
    return 0;
}

/* A message buffer. Large ones are 2 MiB aligned and asked to be backed by
 * transparent huge pages (where the kernel leaves that to the program, THP
 * "madvise"): the single-copy transports (CMA, RDMA registration) then handle
 * far fewer pages, as they do for the large buffers of NumPy or most MPI codes. */
static void *alloc_buffer(size_t bytes)
{
    const size_t huge = 2u << 20;
    void *p = NULL;
    int want_huge = bytes >= huge && !opt.small_pages;
    if (posix_memalign(&p, want_huge ? huge : 4096, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (want_huge)
        madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

/* Host names, the schedule, the buffers; exits (on every rank) on failure. */
static long long set_up(void)
{
    host_names();
    int sched_ok = lt_sched_init(&g.sched, g.size, g.host_id, opt.group_host, opt.bisection) == 0;
    all_ok_or_exit(sched_ok, CB_EXIT_CANNOT_RUN, "cannot build the schedule (out of memory)");
    if (opt.randomize)
        lt_sched_randomize(&g.sched, opt.seed);
    long long expected = lt_expected_pairs(&g.sched);
    if (expected == 0) {
        if (g.rank == 0)
            fprintf(stderr, "cb-linktest: no pair to test: all %d ranks are on one host "
                            "(--group-processes-by-hostname tests only pairs on different hosts)\n", g.size);
        MPI_Finalize();
        exit(CB_EXIT_USAGE);
    }
    size_t bytes = (size_t)opt.size;
    void *sb = alloc_buffer(bytes), *rb = alloc_buffer(bytes);
    int ok = sb && rb;
    g.row = malloc(sizeof(double) * (size_t)g.size);
    ok = ok && g.row;
    char msg[160];
    snprintf(msg, sizeof msg, "cannot allocate two message buffers of %zu bytes on some rank", bytes);
    all_ok_or_exit(ok, CB_EXIT_CANNOT_RUN, msg);
    g.sbuf = sb;
    g.rbuf = rb;
    fill_payload(g.sbuf, bytes, payload_seed(g.rank, 0, 0)); /* touch the pages */
    memset(g.rbuf, 0, bytes);
    for (int r = 0; r < g.size; r++)
        g.row[r] = NAN;
    return expected;
}

static void print_settings(const char *started, long long expected)
{
    char host[256];
    cb_hostname(host, sizeof host);
    printf("cb-linktest (cobalt-bench) %s on %s, started %s\n", CB_VERSION, host, started);
    printf("-------------------- cb-linktest settings --------------------\n");
    printf("Ranks:                 %d on %d host%s\n", g.size, g.nhosts, g.nhosts == 1 ? "" : "s");
    printf("Message size:          %ld B\n", opt.size);
    printf("Messages:              %ld timed, %ld warm-up, per pair and step\n", opt.nmsg, opt.warmup);
    printf("Communication pattern: %s\n", pattern_descr[opt.pattern]);
    printf("Pairs:                 %s%s, %lld in all\n",
           opt.bisection ? "bisection (first half of the ranks against the second)" : "all pairs",
           opt.group_host ? ", on different hosts only" : "", expected);
    printf("Steps:                 %ld%s%s\n", g.sched.nsteps, opt.randomize ? ", randomized order" : "",
           opt.serial ? ", pairs of a step one at a time (--serial-tests)" : "");
    printf("Check buffers:         %s\n", opt.check_buffers ? "yes" : "no");
    printf("Buffers:               %s\n", opt.small_pages || opt.size < (2 << 20) ? "4 KiB pages"
                                        : "transparent huge pages where the kernel gives them");
    printf("Serial retest:         %ld slowest pairs\n", opt.num_slowest);
    if (opt.min_iterations > 1 || opt.min_runtime > 0)
        printf("Repeat:                at least %ld iterations and %.1f s\n", opt.min_iterations, opt.min_runtime);
    printf("Results file:          %s\n", opt.no_output ? "none (--no-output)" : opt.output);
    if (g.delay_a >= 0)
        printf("TESTING: CB_LINKTEST_DELAY slows pair %d <-> %d by %.1f us per message\n",
               g.delay_a, g.delay_b, g.delay_us);
    if (g.corrupt_rank >= 0)
        printf("TESTING: CB_LINKTEST_CORRUPT corrupts one payload of rank %d\n", g.corrupt_rank);
    printf("--------------------------------------------------------------\n");
    fflush(stdout);
}

/* Errors found by --check-buffers (rank 0's tally). */
static struct {
    double bytes, pairs;     /* wrong bytes; pair tests that received any */
    int list[2 * MAX_ERROR_PAIRS];
    int n;                   /* pairs listed */
} errs;

static void record_error(int a, int b, double bytes, const char *where)
{
    if (errs.n < MAX_ERROR_PAIRS) {
        errs.list[2 * errs.n] = a;
        errs.list[2 * errs.n + 1] = b;
        errs.n++;
    }
    printf("BUFFER CHECK FAILED %s: pair %d <-> %d received %.0f wrong bytes\n", where, a, b, bytes);
}

/* Rank 0's running figures of one iteration. */
typedef struct {
    uint64_t t0;
    double min, max, sum, count;
    int min_a, min_b, max_a, max_b;
} progress;

/* One step: all its pairs at once (or one after another with --serial-tests),
 * then the step's figures at rank 0 and its progress line. */
static void run_step(long k, long iteration, progress *p)
{
    lt_sched *s = &g.sched;
    long step = s->order[k], tag = (iteration - 1) * s->nsteps + step + 1;
    int partner = lt_partner(s, g.rank, step);
    pair_result res = {NAN, 0};
    if (opt.serial) {
        for (int a = 0; a < g.size; a++) {
            int b = lt_partner(s, a, step);
            if (b <= a)
                continue;
            mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            if (g.rank == a || g.rank == b)
                res = pair_test(partner, tag);
        }
    } else {
        mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        if (partner >= 0)
            res = pair_test(partner, tag);
    }
    if (partner >= 0 && !(g.row[partner] >= res.t)) /* the slowest over iterations */
        g.row[partner] = res.t;
    step_stats st;
    reduce_step(partner, res, &st);
    if (g.rank != 0)
        return;
    int maxb = lt_partner(s, st.max_t.rank, step), minb = lt_partner(s, st.min_t.rank, step);
    if (st.count > 0) {
        if (st.max_t.v > p->max) {
            p->max = st.max_t.v;
            p->max_a = st.max_t.rank;
            p->max_b = maxb;
        }
        if (st.min_t.v < p->min) {
            p->min = st.min_t.v;
            p->min_a = st.min_t.rank;
            p->min_b = minb;
        }
        p->sum += st.sum_t;
        p->count += st.count;
    }
    errs.bytes += st.sum_err;
    errs.pairs += st.err_pairs;
    if (st.sum_err > 0) {
        char where[64];
        snprintf(where, sizeof where, "in step %ld", k + 1);
        record_error(st.max_err.rank, lt_partner(s, st.max_err.rank, step), st.max_err.v, where);
        if (st.err_pairs > 1)
            printf("  (and %.0f more pairs in that step)\n", st.err_pairs - 1);
    }
    if (opt.quiet)
        return;
    char t1[32], t2[32], t3[32], t4[32], t5[32];
    double el = (cb_now_ns() - p->t0) / 1e9;
    double eta = el / (double)(k + 1) * (double)(s->nsteps - k - 1);
    if (st.count > 0)
        printf("Step %*ld/%ld: %3.0f pairs  min %s (%.3f Gbit/s)  avg %s  max %s (%.3f Gbit/s, %d<->%d)"
               "  | so far: min %s max %s | %.2f s, ETA %.2f s\n",
               (int)snprintf(NULL, 0, "%ld", s->nsteps), k + 1, s->nsteps, st.count,
               fmt_time(st.min_t.v, t1, sizeof t1), gbits(st.min_t.v),
               fmt_time(st.sum_t / st.count, t2, sizeof t2), fmt_time(st.max_t.v, t3, sizeof t3),
               gbits(st.max_t.v), st.max_t.rank, maxb, fmt_time(p->min, t4, sizeof t4),
               fmt_time(p->max, t5, sizeof t5), el, eta);
    else
        printf("Step %ld/%ld: no pairs | %.2f s, ETA %.2f s\n", k + 1, s->nsteps, el, eta);
    fflush(stdout);
}

/* The parallel test, repeated for --min-iterations / --min-runtime; returns
 * the number of iterations. */
static long run_iterations(uint64_t run_t0)
{
    long iteration = 0;
    for (;;) {
        iteration++;
        progress p = {.t0 = cb_now_ns(), .min = INFINITY, .min_a = -1, .min_b = -1, .max_a = -1, .max_b = -1};
        if (g.rank == 0 && !opt.quiet && (opt.min_iterations > 1 || opt.min_runtime > 0))
            printf("Iteration %ld\n", iteration);
        for (long k = 0; k < g.sched.nsteps; k++)
            run_step(k, iteration, &p);
        if (g.rank == 0) {
            char t1[32], t2[32], t3[32];
            double avg = p.count ? p.sum / p.count : NAN;
            printf("Iteration %ld: %.0f pairs in %.2f s: min %s (%.3f Gbit/s, %d<->%d)  avg %s (%.3f Gbit/s)  "
                   "max %s (%.3f Gbit/s, %d<->%d)\n",
                   iteration, p.count, (cb_now_ns() - p.t0) / 1e9, fmt_time(p.min, t1, sizeof t1), gbits(p.min),
                   p.min_a, p.min_b, fmt_time(avg, t2, sizeof t2), p.count ? gbits(avg) : 0,
                   fmt_time(p.max, t3, sizeof t3), gbits(p.max), p.max_a, p.max_b);
            fflush(stdout);
        }
        int more = iteration < opt.min_iterations || (cb_now_ns() - run_t0) / 1e9 < opt.min_runtime;
        mpi_check(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        if (!more)
            return iteration;
    }
}

/* The kept matrix, summarized at rank 0 (each pair once, by its lower rank). */
typedef struct {
    double min_t, max_t, avg_t, avg_bw, npairs;
} matrix_summary;

/* Summary at rank 0, and the slowest num_slowest + 1 pairs on every rank
 * (one more than retested: it bounds every pair not retested). Returns how
 * many of slow[] are filled. */
static int summarize(matrix_summary *sum, slow_entry *slow)
{
    double_int loc[2] = {{-INFINITY, g.rank}, {-INFINITY, g.rank}}, oloc[2];
    double sums[3] = {0, 0, 0}, osums[3];
    slow_entry *mine = malloc(sizeof(slow_entry) * (size_t)slow_k);
    if (!mine)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < slow_k; i++)
        mine[i] = (slow_entry){-1, -1, -1};
    for (int j = g.rank + 1; j < g.size; j++) {
        double t = g.row[j];
        if (isnan(t))
            continue;
        if (t > loc[0].v)
            loc[0].v = t;
        if (-t > loc[1].v)
            loc[1].v = -t;
        sums[0] += t;
        sums[1] += 1;
        sums[2] += gbits(t);
        slow_insert(mine, (slow_entry){t, g.rank, j});
    }
    mpi_check(MPI_Reduce(loc, oloc, 2, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD), "MPI_Reduce");
    mpi_check(MPI_Reduce(sums, osums, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    MPI_Datatype slow_type;
    MPI_Op slow_op;
    mpi_check(MPI_Type_contiguous(3 * slow_k, MPI_DOUBLE, &slow_type), "MPI_Type_contiguous");
    mpi_check(MPI_Type_commit(&slow_type), "MPI_Type_commit");
    mpi_check(MPI_Op_create(slow_merge, 1, &slow_op), "MPI_Op_create");
    mpi_check(MPI_Allreduce(mine, slow, 1, slow_type, slow_op, MPI_COMM_WORLD), "MPI_Allreduce");
    MPI_Op_free(&slow_op);
    MPI_Type_free(&slow_type);
    free(mine);
    if (g.rank == 0) {
        sum->max_t = oloc[0].v;
        sum->min_t = -oloc[1].v;
        sum->npairs = osums[1];
        sum->avg_t = osums[1] ? osums[0] / osums[1] : NAN;
        sum->avg_bw = osums[1] ? osums[2] / osums[1] : 0;
    }
    int nslow = 0;
    while (nslow < slow_k && slow[nslow].t >= 0)
        nslow++;
    return nslow;
}

/* The serial retest: one pair at a time while the others wait; retest[] at rank 0. */
static void retest_slowest(const slow_entry *slow, int nretest, double *retest)
{
    char t1[32], t2[32];
    if (g.rank == 0 && nretest)
        printf("Serial retest of the %d slowest pair%s (first: parallel test, retest: alone):\n", nretest,
               nretest == 1 ? "" : "s");
    for (int k = 0; k < nretest; k++) {
        int a = (int)slow[k].a, b = (int)slow[k].b;
        mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        pair_result r = {-1, 0};
        if (g.rank == a || g.rank == b)
            r = pair_test(g.rank == a ? b : a, -(long)(k + 1));
        double v[2] = {g.rank == a ? r.t : -1, g.rank == a ? r.errors : 0}, o[2];
        mpi_check(MPI_Reduce(v, o, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
        if (g.rank != 0)
            continue;
        retest[k] = o[0];
        if (o[1] > 0) {
            errs.bytes += o[1];
            errs.pairs++;
            record_error(a, b, o[1], "in the retest");
        }
        printf("%3d: %d <-> %d (%s <-> %s): 1st %s (%.3f Gbit/s)  retest %s (%.3f Gbit/s)  retest/1st %.2f\n",
               k + 1, a, b, g.hosts + (size_t)a * HOST_LEN, g.hosts + (size_t)b * HOST_LEN,
               fmt_time(slow[k].t, t1, sizeof t1), gbits(slow[k].t), fmt_time(o[0], t2, sizeof t2),
               gbits(o[0]), o[0] / slow[k].t);
        fflush(stdout);
    }
}

/* Rank 0: the verdict, the summary, the JSON document, the results block.
 * Returns the exit code. */
static int report(const matrix_summary *sum, const slow_entry *slow, int nslow, int nretest,
                  const double *retest, long long expected, const char *started, double duration,
                  long iteration, int write_failed)
{
    lt_sched *s = &g.sched;
    char t1[32], t2[32], t3[32];
    int rc;
    double max_t = sum->max_t, min_t = sum->min_t, npairs = sum->npairs;
    double avg_t = sum->avg_t, avg_bw = sum->avg_bw;
    int max_a = nslow ? (int)slow[0].a : -1, max_b = nslow ? (int)slow[0].b : -1;
    /* After the retest, a retested pair counts with its time alone; the
     * slowest pair not retested bounds all the others. */
    double eff_t = -1;
    int eff_a = -1, eff_b = -1, eff_retested = 0;
    for (int k = 0; k < nretest; k++)
        if (retest[k] > eff_t) {
            eff_t = retest[k];
            eff_a = (int)slow[k].a;
            eff_b = (int)slow[k].b;
            eff_retested = 1;
        }
    if (nslow > nretest && slow[nretest].t > eff_t) {
        eff_t = slow[nretest].t;
        eff_a = (int)slow[nretest].a;
        eff_b = (int)slow[nretest].b;
        eff_retested = 0;
    }
    double min_bw = gbits(eff_t);
    int all_tested = (long long)npairs == expected;
    int passed = errs.bytes == 0 && all_tested && eff_t > 0 &&
                 (opt.min_bw_gbits <= 0 || min_bw >= opt.min_bw_gbits) &&
                 (opt.max_time_us <= 0 || eff_t * 1e6 <= opt.max_time_us);
    rc = passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;

    printf("Summary: %.0f of %lld pairs tested, %ld iteration%s, %.2f s\n", npairs, expected, iteration,
           iteration == 1 ? "" : "s", duration);
    printf("  parallel test: min %s (%.3f Gbit/s)  avg %s (avg %.3f Gbit/s)  max %s (%.3f Gbit/s, %d <-> %d)\n",
           fmt_time(min_t, t1, sizeof t1), gbits(min_t), fmt_time(avg_t, t2, sizeof t2), avg_bw,
           fmt_time(max_t, t3, sizeof t3), gbits(max_t), max_a, max_b);
    printf("  slowest pair after the retest: %d <-> %d, %s (%.3f Gbit/s)%s\n", eff_a, eff_b,
           fmt_time(eff_t, t1, sizeof t1), min_bw, eff_retested ? ", retested alone" : ", not retested");
    if (!all_tested)
        printf("NOT ALL PAIRS TESTED: %.0f of %lld\n", npairs, expected);
    if (opt.check_buffers)
        printf("Buffer check: %.0f wrong bytes in %.0f pair tests\n", errs.bytes, errs.pairs);
    if (!opt.no_output && !write_failed)
        printf("Matrix: %s (%d x %d, seconds per message; cb-linktest-report %s)\n", opt.output, g.size,
               g.size, opt.output);

    if (opt.json_path) {
        cb_json j;
        cbj_init(&j);
        cbj_doc_begin(&j, "cb-linktest", TEST_VERSION, started);
        cbj_num(&j, "duration_s", duration);
        cbj_obj_begin(&j, "config");
        cbj_int(&j, "ranks", g.size);
        cbj_int(&j, "hosts", g.nhosts);
        cbj_int(&j, "steps", s->nsteps);
        cbj_int(&j, "iterations", iteration);
        json_options(&j);
        cbj_str(&j, "output", opt.no_output || write_failed ? "" : opt.output);
        cbj_obj_end(&j);
        cbj_obj_begin(&j, "metrics");
        cbj_metric(&j, "min_bandwidth", min_bw, "Gbit/s");
        cbj_metric(&j, "min_bandwidth_bytes", min_bw * 1e9 / 8, "B/s");
        cbj_metric(&j, "max_time", eff_t * 1e6, "us");
        cbj_metric(&j, "avg_bandwidth", avg_bw, "Gbit/s");
        cbj_metric(&j, "avg_bandwidth_bytes", avg_bw * 1e9 / 8, "B/s");
        cbj_metric(&j, "avg_time", avg_t * 1e6, "us");
        cbj_metric(&j, "max_bandwidth", gbits(min_t), "Gbit/s");
        cbj_metric(&j, "min_time", min_t * 1e6, "us");
        cbj_metric(&j, "parallel_max_time", max_t * 1e6, "us");
        cbj_metric(&j, "parallel_min_bandwidth", gbits(max_t), "Gbit/s");
        cbj_metric(&j, "pairs_tested", npairs, "pairs");
        cbj_metric(&j, "pairs_expected", (double)expected, "pairs");
        if (opt.check_buffers) {
            cbj_metric(&j, "verification_errors", errs.pairs, "pairs");
            cbj_metric(&j, "wrong_bytes", errs.bytes, "bytes");
        }
        cbj_obj_end(&j);
        cbj_arr_begin(&j, "slowest_pairs");
        for (int k = 0; k < nretest; k++) {
            cbj_obj_begin(&j, NULL);
            cbj_int(&j, "a", (long long)slow[k].a);
            cbj_int(&j, "b", (long long)slow[k].b);
            cbj_str(&j, "host_a", g.hosts + (size_t)slow[k].a * HOST_LEN);
            cbj_str(&j, "host_b", g.hosts + (size_t)slow[k].b * HOST_LEN);
            cbj_num(&j, "time_us", slow[k].t * 1e6);
            cbj_num(&j, "retest_time_us", retest[k] * 1e6);
            cbj_num(&j, "bandwidth_gbits", gbits(slow[k].t));
            cbj_num(&j, "retest_bandwidth_gbits", gbits(retest[k]));
            cbj_obj_end(&j);
        }
        cbj_arr_end(&j);
        cbj_obj_begin(&j, "compliance");
        if (opt.min_bw_gbits > 0)
            cbj_num(&j, "threshold", opt.min_bw_gbits);
        else
            cbj_num(&j, "threshold", NAN);
        cbj_bool(&j, "passed", passed);
        cbj_obj_end(&j);
        cbj_obj_end(&j);
        if (cb_json_write(&j, opt.json_path) != 0)
            write_failed = 1;
        cbj_free(&j);
    }
    if (write_failed)
        rc = CB_EXIT_CANNOT_RUN;

    cb_results_begin(stdout, TEST_VERSION);
    if (opt.min_bw_gbits > 0) {
        cb_results_line(stdout, "Desired speed", "%.2f Gbit/s (every pair)", opt.min_bw_gbits);
        cb_results_line(stdout, "Measured speed", "%.2f Gbit/s (slowest pair %d <-> %d, %.2f%% of desired)",
                        min_bw, eff_a, eff_b, 100.0 * min_bw / opt.min_bw_gbits);
    } else {
        cb_results_line(stdout, "Measured speed", "%.2f Gbit/s (slowest pair %d <-> %d)", min_bw, eff_a, eff_b);
    }
    cb_results_line(stdout, "Average speed", "%.2f Gbit/s per pair", avg_bw);
    cb_results_line(stdout, "Slowest time", "%s per message", fmt_time(eff_t, t1, sizeof t1));
    if (opt.max_time_us > 0)
        cb_results_line(stdout, "Time limit", "%.2f us per message", opt.max_time_us);
    cb_results_line(stdout, "Pairs tested", "%.0f of %lld", npairs, expected);
    if (opt.check_buffers)
        cb_results_line(stdout, "Buffer errors", "%.0f pairs (%.0f wrong bytes)", errs.pairs, errs.bytes);
    else
        cb_results_line(stdout, "Buffer errors", "not checked (--check-buffers)");
    cb_results_line(stdout, "Verdict", "%s", passed ? "PASSED" : "FAILED");
    fflush(stdout);
    return rc;
}

int main(int argc, char **argv)
{
    cb_prog = "cb-linktest";
    /* Usage errors: every rank exits 2, only rank 0 says why. */
    int pre_rank = launcher_rank();
    int saved = pre_rank != 0 ? mute_stderr() : -1;
    parse_args(argc, argv);
    unmute_stderr(saved);
    if (opt.plan_n)
        return plan_main();
    int rc = start_mpi(&argc, &argv, pre_rank);
    if (rc)
        return rc;

    char started[64];
    cb_iso8601_now(started, sizeof started);
    uint64_t run_t0 = cb_now_ns();
    long long expected = set_up();
    if (g.rank == 0)
        print_settings(started, expected);

    long iterations = run_iterations(run_t0);
    slow_k = (int)opt.num_slowest + 1;
    slow_entry *slow = malloc(sizeof(slow_entry) * (size_t)slow_k);
    double *retest = malloc(sizeof(double) * (size_t)slow_k);
    if (!slow || !retest)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    matrix_summary sum = {0, 0, 0, 0, 0};
    int nslow = summarize(&sum, slow);
    int nretest = nslow < opt.num_slowest ? nslow : (int)opt.num_slowest;
    retest_slowest(slow, nretest, retest);
    double duration = (cb_now_ns() - run_t0) / 1e9;

    int write_failed = 0;
    if (!opt.no_output)
        write_failed = write_results(slow, nretest, retest, errs.list, errs.n, started, duration, iterations) != 0;
    if (g.rank == 0)
        rc = report(&sum, slow, nslow, nretest, retest, expected, started, duration, iterations, write_failed);
    mpi_check(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    free(retest);
    free(slow);
    free(g.row);
    free(g.sbuf);
    free(g.rbuf);
    free(g.hosts);
    free(g.host_id);
    lt_sched_free(&g.sched);
    MPI_Finalize();
    return rc;
}
