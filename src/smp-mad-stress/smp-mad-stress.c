/* smp-mad-stress: sends Subnet Management Packets (SMPs) to InfiniBand devices
 * as fast as a window of MADs on the wire allows -- at most -n per
 * destination and -N from the local port -- from -p worker threads that each
 * send and receive by polling, and reports MAD/s, latency, timeouts, retries
 * and drops per destination and in total.
 *
 * Built as smp-mad-stress-mpi (SMT_WITH_MPI) it runs one worker per MPI rank
 * against a single destination, and all ranks meet in a barrier before each
 * send round, so that many hosts hit one device at the same moment. */
#include "../common/cb_common.h"
#include "smp_mad.h"
#include "test_fabric.h"
#include "umad_transport.h"
#include "window.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifdef SMT_WITH_MPI
#include <mpi.h>
#define PROG "smp-mad-stress-mpi"
#else
#define PROG "smp-mad-stress"
#endif

#define TEST_VERSION "1.0"
#define MAX_DESTS 65536

static struct {
    smt_config c;
    smp_dest *dests;
    int ndests;
    int direct;
    const char *lids_arg, *paths_arg;
    umad_target umad;
    const char *fabric_spec;
    tf_params fabric;
    double min_rate;
    long max_drops;
    const char *json_path;
    int quiet;
    int rank, nranks;       /* MPI; 0 and 1 otherwise */
} opt;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: " PROG " [OPTION]... DEST ATTR [MOD]\n"
"       " PROG " [OPTION]... -L LIDS ATTR [MOD]\n"
"Send Subnet Management Packets (SMPs) to InfiniBand devices as fast as a window\n"
"of MADs on the wire allows, and report MAD/s, latency (average, median, 99th\n"
"percentile), timeouts, retries and drops per destination and in total.\n"
"\n"
"At most --dest-depth MADs are on the wire to each destination and at most\n"
"--local-depth from the local port (all workers together); each worker thread\n"
"sends and receives by polling. A MAD without a response in --timeout is\n"
"re-sent up to --retries times with a new transaction id, then dropped.\n"
#ifdef SMT_WITH_MPI
"\n"
"MPI mode: one worker per rank, a single destination; all ranks meet in a\n"
"barrier before each send round (one window's worth of MADs, waited for), so\n"
"that every rank's MADs reach the destination at the same moment.\n"
#endif
"\n"
"Destinations:\n"
"  DEST                   a LID (9, 0x1a); with --direct a directed route of\n"
"                         out-ports from the local port (0,1,3)\n"
"  -L, --lids=LIST        destination LIDs, comma-separated (instead of DEST)\n"
"  -D, --direct           directed-route SMPs (class 0x81); default LID routed (0x01)\n"
"      --paths=LIST       directed routes separated by ';' (instead of DEST),\n"
"                         e.g. '0,1;0,1,3' (implies --direct)\n"
"MAD:\n"
"  ATTR                   attribute: a number (0x19) or a name (NodeInfo, PortInfo,\n"
"                         SwitchInfo, LinearForwardingTable, ...)\n"
"  MOD                    attribute modifier (default 0)\n"
"  -m, --method=METHOD    get or set, or the IBA method number 1 (Get) or 2 (Set);\n"
"                         default get. A SET first reads each destination's value\n"
"                         with a GET and then sets that same value.\n"
"      --mkey=KEY         M_Key to send (default 0)\n"
"Window:\n"
"  -n, --dest-depth=N     MADs on the wire per destination (default 2)\n"
"  -N, --local-depth=N    MADs on the wire from the local port (default 128, the\n"
"                         driver's send queue for QP0)\n"
"  -p, --workers=N        worker threads (default 1)\n"
"  -T, --timeout=MS       time for a response, per attempt, in ms (default 200)\n"
"  -r, --retries=N        re-sends after a timeout (default 3)\n"
"  -t, --time=SECONDS     length of the run (default 10)\n"
"Device:\n"
"  -C, --device=CA        local InfiniBand device (default: the first one)\n"
"  -P, --port=N           its port (default: the first active one)\n"
"Compliance:\n"
"      --min-rate=MADS    compliant only with at least MADS MAD/s in total (default 0)\n"
"      --max-drops=N      compliant only with at most N dropped MADs (default 0)\n"
"  A response that fails its checks (transaction id, attribute, modifier, GetResp;\n"
"  for SET the value set) or carries a MAD status error is never compliant.\n"
"Output:\n"
"  -j, --json=FILE        write the JSON result document to FILE ('-' = stdout)\n"
"  -q, --quiet            no progress lines on stderr\n"
"  -h, --help             this help\n"
"  -V, --version          version\n"
"Testing (no InfiniBand needed):\n"
"      --test-fabric=SPEC run against the in-process test fabric instead of a\n"
"                         device: every destination answers like a switch's\n"
"                         management agent with these properties, any subset of\n"
"                         rtt=DURATION      round trip without the agent (50us)\n"
"                         service=DURATION  the agent's time per MAD, one at a time (0)\n"
"                         jitter=DURATION   extra delay per response, 0..jitter (0)\n"
"                         loss=SHARE        MADs lost on the way (0)\n"
"                         error=SHARE       responses with a MAD status error (0)\n"
"                         queue=N           MADs an agent holds waiting; more are\n"
"                                           dropped (0: no limit)\n"
"                         dead=LID:LID...   destinations that never answer\n"
"                         seed=N            of the random choices (1)\n"
"                         e.g. --test-fabric=rtt=45us,service=175us,queue=20 behaves\n"
"                         like the Quantum switch of the tool's measurements.\n"
"                         The output and the JSON document say so.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant (drops, errors, rate), 2 usage error,\n"
"3 could not run (no InfiniBand device, no permission, a destination that does not\n"
"answer the GET before a SET).\n");
}

static void add_dest(const char *text)
{
    if (opt.ndests == MAX_DESTS)
        cb_usage_error("at most %d destinations", MAX_DESTS);
    smp_dest *d = &opt.dests[opt.ndests];
    const char *why = smp_dest_parse(text, opt.direct, d);
    if (why)
        cb_usage_error("invalid destination '%s': %s", text, why);
    opt.ndests++;
}

static void add_list(const char *arg, const char *seps, const char *what)
{
    char *buf = strdup(arg), *save = NULL;
    int n = 0;
    for (char *tok = strtok_r(buf, seps, &save); tok; tok = strtok_r(NULL, seps, &save), n++)
        add_dest(tok);
    free(buf);
    if (n == 0)
        cb_usage_error("%s names no destination", what);
}

static int parse_method(const char *s)
{
    if (strcasecmp(s, "get") == 0 || strcmp(s, "1") == 0)
        return SMP_METHOD_GET;
    if (strcasecmp(s, "set") == 0 || strcmp(s, "2") == 0)
        return SMP_METHOD_SET;
    cb_usage_error("invalid method '%s' for --method: expected get, set, 1 or 2", s);
}

static void parse_args(int argc, char **argv)
{
    enum { O_PATHS = 256, O_MKEY, O_MIN_RATE, O_MAX_DROPS, O_FABRIC };
    static const struct option opts[] = {
        {"lids", required_argument, 0, 'L'},
        {"direct", no_argument, 0, 'D'},
        {"paths", required_argument, 0, O_PATHS},
        {"method", required_argument, 0, 'm'},
        {"mkey", required_argument, 0, O_MKEY},
        {"dest-depth", required_argument, 0, 'n'},
        {"local-depth", required_argument, 0, 'N'},
        {"workers", required_argument, 0, 'p'},
        {"timeout", required_argument, 0, 'T'},
        {"retries", required_argument, 0, 'r'},
        {"time", required_argument, 0, 't'},
        {"device", required_argument, 0, 'C'},
        {"port", required_argument, 0, 'P'},
        {"min-rate", required_argument, 0, O_MIN_RATE},
        {"max-drops", required_argument, 0, O_MAX_DROPS},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"test-fabric", required_argument, 0, O_FABRIC},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    smt_config *c = &opt.c;
    c->req.method = SMP_METHOD_GET;
    c->dest_depth = 2;
    c->local_depth = 128;
    c->workers = 1;
    c->timeout_ms = 200;
    c->retries = 3;
    c->duration_s = 10;
    opt.dests = calloc(MAX_DESTS, sizeof *opt.dests);
    if (!opt.dests)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    opterr = 0;
    for (;;) {
        int ch = getopt_long(argc, argv, ":L:Dm:n:N:p:T:r:t:C:P:j:qhV", opts, NULL);
        if (ch == -1)
            break;
        switch (ch) {
        case 'L': opt.lids_arg = optarg; break;
        case 'D': opt.direct = 1; break;
        case O_PATHS: opt.paths_arg = optarg; opt.direct = 1; break;
        case 'm': c->req.method = parse_method(optarg); break;
        case O_MKEY: {
            char *end;
            errno = 0;
            c->req.mkey = strtoull(optarg, &end, 0);
            if (end == optarg || *end || errno)
                cb_usage_error("invalid value '%s' for --mkey: not a number", optarg);
            break;
        }
        case 'n': c->dest_depth = (int)cb_opt_long("--dest-depth", optarg, 1, 65535); break;
        case 'N': c->local_depth = (int)cb_opt_long("--local-depth", optarg, 1, 65535); break;
        case 'p': c->workers = (int)cb_opt_long("--workers", optarg, 1, 256); break;
        case 'T': c->timeout_ms = (int)cb_opt_long("--timeout", optarg, 1, 3600000); break;
        case 'r': c->retries = (int)cb_opt_long("--retries", optarg, 0, 1000); break;
        case 't': c->duration_s = cb_opt_double("--time", optarg, 0.001, 7 * 86400.0); break;
        case 'C':
            if (!*optarg || strlen(optarg) >= sizeof opt.umad.ca)
                cb_usage_error("invalid device name '%s' for --device", optarg);
            snprintf(opt.umad.ca, sizeof opt.umad.ca, "%s", optarg);
            break;
        case 'P': opt.umad.port = (int)cb_opt_long("--port", optarg, 1, 254); break;
        case O_MIN_RATE: opt.min_rate = cb_opt_double("--min-rate", optarg, 0, 1e12); break;
        case O_MAX_DROPS: opt.max_drops = cb_opt_long("--max-drops", optarg, 0, 1L << 62); break;
        case 'j': opt.json_path = optarg; break;
        case 'q': opt.quiet = 1; break;
        case O_FABRIC: opt.fabric_spec = optarg; break;
        case 'h': usage(stdout); exit(0);
        case 'V': cb_print_version(TEST_VERSION); exit(0);
        case ':': cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (opt.lids_arg && opt.paths_arg)
        cb_usage_error("--lids and --paths both name destinations; give one");
    if (opt.lids_arg && opt.direct)
        cb_usage_error("--lids names LID-routed destinations; --direct wants directed routes (DEST or --paths)");
    int listed = opt.lids_arg || opt.paths_arg;
    int npos = argc - optind;
    if (npos < (listed ? 1 : 2))
        cb_usage_error(listed ? "missing ATTR (an attribute such as NodeInfo or 0x11)"
                              : "missing DEST and ATTR (for example: 9 NodeInfo, or -L 9,12 0x11)");
    if (npos > (listed ? 2 : 3))
        cb_usage_error("unexpected argument '%s'", argv[optind + (listed ? 2 : 3)]);
    if (opt.lids_arg)
        add_list(opt.lids_arg, ",", "--lids");
    else if (opt.paths_arg)
        add_list(opt.paths_arg, "; ", "--paths");
    else
        add_dest(argv[optind++]);
    if (smp_attr_parse(argv[optind], &c->req.attr) != 0)
        cb_usage_error("invalid attribute '%s': expected a number (0x11) or a name (NodeInfo, PortInfo, ...)",
                       argv[optind]);
    optind++;
    if (optind < argc) {
        char *end;
        errno = 0;
        unsigned long long m = strtoull(argv[optind], &end, 0);
        if (end == argv[optind] || *end || errno || m > 0xffffffffULL || argv[optind][0] == '-')
            cb_usage_error("invalid attribute modifier '%s': expected a number up to 0xffffffff", argv[optind]);
        c->req.mod = (uint32_t)m;
    }
    if (opt.fabric_spec) {
        tf_params_default(&opt.fabric);
        const char *why = tf_parse(opt.fabric_spec, &opt.fabric);
        if (why)
            cb_usage_error("invalid --test-fabric '%s': %s", opt.fabric_spec, why);
        if (opt.umad.ca[0] || opt.umad.port)
            cb_usage_error("--test-fabric replaces the device; --device and --port do not apply");
    }
    c->dests = opt.dests;
    c->ndests = opt.ndests;
#ifdef SMT_WITH_MPI
    if (c->ndests != 1)
        cb_usage_error("MPI mode sends to a single destination (%d given)", c->ndests);
    if (c->workers != 1)
        cb_usage_error("MPI mode runs a single worker per rank (--workers %d given)", c->workers);
#endif
    const char *why = smt_config_check(c);
    if (why)
        cb_usage_error("%s", why);
    if (opt.json_path && cb_json_path_ok(opt.json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", opt.json_path);
}

/* ---- MPI ------------------------------------------------------------------------ */
#ifdef SMT_WITH_MPI
static int mpi_round(void *arg, int want_more)
{
    (void)arg;
    /* the barrier before each send round; it also agrees on stopping, so that
     * all ranks run the same number of rounds */
    int all = 0;
    MPI_Allreduce(&want_more, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all;
}

static void mpi_finalize(void)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (init && !fin)
        MPI_Finalize();
}
#endif

/* All ranks agree on an exit code that means "could not run". */
static void die_all(int code, const char *msg)
{
#ifdef SMT_WITH_MPI
    fprintf(stderr, "%s: rank %d: %s\n", cb_prog, opt.rank, msg);
    exit(code);
#else
    cb_die(code, "%s", msg);
#endif
}

/* ---- reporting ------------------------------------------------------------------ */
static double us(double ns) { return ns / 1e3; }

typedef struct row {
    char name[200];
    const smt_dest_stats *s;
    int max_in_flight;
} row;

static double rate_of(const smt_dest_stats *s, double elapsed)
{
    return elapsed > 0 ? (double)s->answered_in_time / elapsed : 0;
}

static void print_row(const row *r, double elapsed)
{
    const smt_dest_stats *s = r->s;
    printf("  %-18s %10llu %10llu %10.1f %9.1f %9.1f %9.1f %8llu %8llu %7llu %7llu %5d\n", r->name,
           (unsigned long long)s->sent, (unsigned long long)s->answered, rate_of(s, elapsed),
           us(smp_hist_mean(&s->latency)), us(smp_hist_quantile(&s->latency, 0.5)),
           us(smp_hist_quantile(&s->latency, 0.99)), (unsigned long long)s->timeouts,
           (unsigned long long)s->retries, (unsigned long long)s->drops,
           (unsigned long long)(s->status_errors + s->bad), r->max_in_flight);
}

static void json_stats(cb_json *j, const smt_dest_stats *s, double elapsed)
{
    cbj_int(j, "sent", (long long)s->sent);
    cbj_int(j, "answered", (long long)s->answered);
    cbj_num(j, "mad_rate", rate_of(s, elapsed));
    cbj_num(j, "latency_avg_us", us(smp_hist_mean(&s->latency)));
    cbj_num(j, "latency_p50_us", us(smp_hist_quantile(&s->latency, 0.5)));
    cbj_num(j, "latency_p99_us", us(smp_hist_quantile(&s->latency, 0.99)));
    cbj_num(j, "latency_max_us", us((double)s->latency.max_ns));
    cbj_int(j, "timeouts", (long long)s->timeouts);
    cbj_int(j, "retries", (long long)s->retries);
    cbj_int(j, "drops", (long long)s->drops);
    cbj_int(j, "status_errors", (long long)s->status_errors);
    cbj_int(j, "verification_errors", (long long)s->bad);
    if (s->first_problem[0])
        cbj_str(j, "first_problem", s->first_problem);
}

#ifdef SMT_WITH_MPI
static void merge_stats(smt_dest_stats *a, const smt_dest_stats *b)
{
    smt_dest_stats_add(a, b);
    if (!a->first_problem[0] && b->first_problem[0])
        memcpy(a->first_problem, b->first_problem, sizeof a->first_problem);
}
#endif

int main(int argc, char **argv)
{
    cb_prog = PROG;
    opt.nranks = 1;
#ifdef SMT_WITH_MPI
    MPI_Init(&argc, &argv);
    atexit(mpi_finalize);
    MPI_Comm_rank(MPI_COMM_WORLD, &opt.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &opt.nranks);
    if (opt.rank != 0) { /* every rank parses the same options; one says what is wrong */
        if (!freopen("/dev/null", "w", stderr))
            return CB_EXIT_CANNOT_RUN;
    }
#endif
    parse_args(argc, argv);
    smt_config *c = &opt.c;
    c->progress = !opt.quiet && opt.rank == 0;

    /* the transport: the test fabric, or a real port */
    test_fabric *fabric = NULL;
    smt_transport tp;
    char fabric_desc[1024] = "";
    char err[512] = "";
    int probe_rc = 0;
    if (opt.fabric_spec) {
        fabric = tf_create(&opt.fabric, c->dests, c->ndests);
        if (!fabric)
            die_all(CB_EXIT_CANNOT_RUN, "out of memory");
        tp = tf_transport(fabric);
        tf_describe(&opt.fabric, fabric_desc, sizeof fabric_desc);
    } else {
        opt.umad.mgmt_class = opt.direct ? SMP_CLASS_DIRECT : SMP_CLASS_LID;
        probe_rc = umad_probe(&opt.umad, err, sizeof err);
        tp = umad_transport(&opt.umad);
    }
#ifdef SMT_WITH_MPI
    int bad = probe_rc != 0, any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_bad) {
        if (probe_rc)
            die_all(CB_EXIT_CANNOT_RUN, err);
        exit(CB_EXIT_CANNOT_RUN);
    }
    c->round_sync = mpi_round;
#else
    if (probe_rc)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
#endif
    c->tp = &tp;

    char started[64], host[256];
    cb_iso8601_now(started, sizeof started);
    cb_hostname(host, sizeof host);
    const char *method = c->req.method == SMP_METHOD_SET ? "SubnSet" : "SubnGet";
    if (opt.rank == 0) {
        printf("%s (cobalt-bench) %s on %s, started %s\n", PROG, CB_VERSION, host, started);
        if (fabric)
            printf("Transport: TEST FABRIC (in-process emulation, no InfiniBand): %s\n", fabric_desc);
        else
            printf("Transport: umad, device %s port %d (LID %u)\n", opt.umad.ca_found, opt.umad.port_found,
                   opt.umad.base_lid);
        printf("MAD: %s(%s, attribute 0x%04x) modifier 0x%x, %s, %d destination%s%s\n", method,
               smp_attr_name(c->req.attr), c->req.attr, c->req.mod,
               opt.direct ? "directed route" : "LID routed", c->ndests, c->ndests == 1 ? "" : "s",
               c->req.method == SMP_METHOD_SET ? " (each set to the value it holds)" : "");
        printf("Window: %d per destination, %d local; %d worker%s%s; timeout %d ms, %d retr%s; %.2f s\n",
               c->dest_depth, c->local_depth, c->workers, c->workers == 1 ? "" : "s",
               opt.nranks > 1 ? " per rank" : "", c->timeout_ms, c->retries, c->retries == 1 ? "y" : "ies",
               c->duration_s);
#ifdef SMT_WITH_MPI
        printf("MPI: %d ranks, a barrier before each send round\n", opt.nranks);
#endif
        fflush(stdout);
    }

    smt_result res;
    int run_rc = smt_run(c, &res);
#ifdef SMT_WITH_MPI
    int failed = run_rc != 0, any_failed = 0;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_failed) {
        if (run_rc)
            die_all(CB_EXIT_CANNOT_RUN, res.error);
        exit(CB_EXIT_CANNOT_RUN);
    }
#else
    if (run_rc != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", res.error);
#endif

    /* rows: destinations (one process) or ranks (MPI, one destination) */
    int nrows = c->ndests;
    row *rows = NULL;
    smt_dest_stats total = res.total;
    double elapsed = res.elapsed_s;
    int max_local = res.max_local_in_flight;
    smt_dest_stats *per_rank = NULL;
#ifdef SMT_WITH_MPI
    per_rank = calloc((size_t)opt.nranks, sizeof *per_rank);
    double *elapsed_all = calloc((size_t)opt.nranks, sizeof *elapsed_all);
    char (*hosts)[64] = calloc((size_t)opt.nranks, sizeof *hosts);
    char myhost[64];
    snprintf(myhost, sizeof myhost, "%.63s", host);
    MPI_Gather(&res.total, (int)sizeof res.total, MPI_BYTE, per_rank, (int)sizeof res.total, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    MPI_Gather(&res.elapsed_s, 1, MPI_DOUBLE, elapsed_all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(myhost, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (opt.rank == 0) {
        memset(&total, 0, sizeof total);
        elapsed = 0;
        for (int k = 0; k < opt.nranks; k++) {
            merge_stats(&total, &per_rank[k]);
            if (elapsed_all[k] > elapsed)
                elapsed = elapsed_all[k];
        }
        nrows = opt.nranks;
        rows = calloc((size_t)nrows, sizeof *rows);
        for (int k = 0; k < opt.nranks; k++) {
            snprintf(rows[k].name, sizeof rows[k].name, "rank %d %.40s", k, hosts[k]);
            rows[k].s = &per_rank[k];
            rows[k].max_in_flight = res.max_dest_in_flight[0];
        }
    }
    free(elapsed_all);
    free(hosts);
#else
    rows = calloc((size_t)nrows, sizeof *rows);
    for (int d = 0; d < nrows; d++) {
        snprintf(rows[d].name, sizeof rows[d].name, "%s", c->dests[d].name);
        rows[d].s = &res.dest[d];
        rows[d].max_in_flight = res.max_dest_in_flight[d];
    }
#endif

    double rate = rate_of(&total, elapsed);
    uint64_t errors = total.status_errors + total.bad;
    int passed = errors == 0 && total.drops <= (uint64_t)opt.max_drops && rate >= opt.min_rate;
    int rc = passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (opt.rank != 0)
        goto out;

    printf("Per %s (MAD/s over the %.2f s timed; latency from first send to response, us):\n",
           per_rank ? "rank" : "destination", elapsed);
    printf("  %-18s %10s %10s %10s %9s %9s %9s %8s %8s %7s %7s %5s\n", per_rank ? "rank" : "destination",
           "sent", "answered", "MAD/s", "avg", "p50", "p99", "timeouts", "retries", "drops", "errors", "max");
    for (int i = 0; i < nrows; i++)
        print_row(&rows[i], elapsed);
    row trow = {.s = &total, .max_in_flight = max_local};
    snprintf(trow.name, sizeof trow.name, "total");
    print_row(&trow, elapsed);
    printf("('max': most MADs on the wire at once, to the destination or, for the total, from the local port)\n");
    if (res.drain_s > 0.0005)
        printf("After the timed period: %.3f s for the MADs still on the wire\n", res.drain_s);
    if (res.stale)
        printf("Late responses (after their attempt had timed out): %llu\n", (unsigned long long)res.stale);
    if (total.first_problem[0])
        printf("First problem: %s\n", total.first_problem);
    if (total.bad)
        printf("VERIFICATION FAILED: %llu responses did not match their request\n", (unsigned long long)total.bad);
    if (!passed) {
        printf("Not compliant:");
        if (errors)
            printf(" %llu errors;", (unsigned long long)errors);
        if (total.drops > (uint64_t)opt.max_drops)
            printf(" %llu drops (at most %ld allowed);", (unsigned long long)total.drops, opt.max_drops);
        if (rate < opt.min_rate)
            printf(" %.1f MAD/s is below %.1f;", rate, opt.min_rate);
        printf("\n");
    }

    if (opt.json_path) {
        cb_json j;
        cbj_init(&j);
        cbj_doc_begin(&j, PROG, TEST_VERSION, started);
        cbj_num(&j, "duration_s", elapsed);
        cbj_obj_begin(&j, "config");
        cbj_str(&j, "transport", fabric ? "test-fabric" : "umad");
        if (fabric)
            cbj_str(&j, "test_fabric", fabric_desc);
        else {
            cbj_str(&j, "device", opt.umad.ca_found);
            cbj_int(&j, "port", opt.umad.port_found);
        }
        cbj_str(&j, "method", c->req.method == SMP_METHOD_SET ? "set" : "get");
        cbj_int(&j, "attribute", c->req.attr);
        cbj_str(&j, "attribute_name", smp_attr_name(c->req.attr));
        cbj_int(&j, "modifier", c->req.mod);
        cbj_str(&j, "routing", opt.direct ? "directed" : "lid");
        cbj_arr_begin(&j, "destinations");
        for (int d = 0; d < c->ndests; d++)
            cbj_str(&j, NULL, c->dests[d].name);
        cbj_arr_end(&j);
        cbj_int(&j, "dest_depth", c->dest_depth);
        cbj_int(&j, "local_depth", c->local_depth);
        cbj_int(&j, "workers", c->workers);
        cbj_int(&j, "timeout_ms", c->timeout_ms);
        cbj_int(&j, "retries", c->retries);
        cbj_num(&j, "requested_duration_s", c->duration_s);
        cbj_int(&j, "mpi_ranks", opt.nranks);
        cbj_obj_end(&j);
        cbj_obj_begin(&j, "metrics");
        cbj_metric(&j, "mad_rate", rate, "MAD/s");
        cbj_metric(&j, "latency_avg", us(smp_hist_mean(&total.latency)), "us");
        cbj_metric(&j, "latency_p50", us(smp_hist_quantile(&total.latency, 0.5)), "us");
        cbj_metric(&j, "latency_p99", us(smp_hist_quantile(&total.latency, 0.99)), "us");
        cbj_metric(&j, "latency_min", us((double)total.latency.min_ns), "us");
        cbj_metric(&j, "latency_max", us((double)total.latency.max_ns), "us");
        cbj_metric(&j, "mads_sent", (double)total.sent, "MADs");
        cbj_metric(&j, "mads_answered", (double)total.answered, "MADs");
        cbj_metric(&j, "timeouts", (double)total.timeouts, "MADs");
        cbj_metric(&j, "retries", (double)total.retries, "MADs");
        cbj_metric(&j, "drops", (double)total.drops, "MADs");
        cbj_metric(&j, "status_errors", (double)total.status_errors, "MADs");
        cbj_metric(&j, "verification_errors", (double)total.bad, "errors");
        cbj_metric(&j, "late_responses", (double)res.stale, "MADs");
        cbj_metric(&j, "max_local_in_flight", max_local, "MADs");
        int maxd = 0;
        for (int d = 0; d < c->ndests; d++)
            if (res.max_dest_in_flight[d] > maxd)
                maxd = res.max_dest_in_flight[d];
        cbj_metric(&j, "max_dest_in_flight", maxd, "MADs");
        cbj_obj_end(&j);
        cbj_arr_begin(&j, per_rank ? "ranks" : "per_destination");
        for (int i = 0; i < nrows; i++) {
            cbj_obj_begin(&j, NULL);
            cbj_str(&j, per_rank ? "rank" : "destination", rows[i].name);
            if (!per_rank && !c->dests[i].direct)
                cbj_int(&j, "lid", c->dests[i].lid);
            json_stats(&j, rows[i].s, elapsed);
            cbj_int(&j, "max_in_flight", rows[i].max_in_flight);
            cbj_obj_end(&j);
        }
        cbj_arr_end(&j);
        cbj_obj_begin(&j, "compliance");
        cbj_num(&j, "threshold", opt.min_rate);
        cbj_int(&j, "max_drops", opt.max_drops);
        cbj_bool(&j, "passed", passed);
        cbj_obj_end(&j);
        cbj_obj_end(&j);
        if (cb_json_write(&j, opt.json_path) != 0)
            rc = CB_EXIT_CANNOT_RUN;
        cbj_free(&j);
    }

    cb_results_begin(stdout, TEST_VERSION);
    cb_results_line(stdout, "MAD rate", "%.1f MAD/s", rate);
    cb_results_line(stdout, "Latency", "avg %.1f us, p50 %.1f us, p99 %.1f us",
                    us(smp_hist_mean(&total.latency)), us(smp_hist_quantile(&total.latency, 0.5)),
                    us(smp_hist_quantile(&total.latency, 0.99)));
    cb_results_line(stdout, "MADs", "%llu sent, %llu answered", (unsigned long long)total.sent,
                    (unsigned long long)total.answered);
    cb_results_line(stdout, "Timeouts", "%llu", (unsigned long long)total.timeouts);
    cb_results_line(stdout, "Retries", "%llu", (unsigned long long)total.retries);
    cb_results_line(stdout, "Drops", "%llu", (unsigned long long)total.drops);
    cb_results_line(stdout, "Errors", "%llu", (unsigned long long)errors);
    fflush(stdout);
out:
#ifdef SMT_WITH_MPI
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    free(rows);
    free(per_rank);
    smt_result_free(&res);
    tf_destroy(fabric);
    free(opt.dests);
    return rc;
}
