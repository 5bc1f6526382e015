/* smp-mad-stress: sends Subnet Management Packets (SMPs) to InfiniBand devices
 * as fast as a window of MADs on the wire allows -- at most -n per
 * destination and -N from the local port -- from -p worker threads that each
 * send and receive by polling, and reports MAD/s, latency, timeouts, retries
 * and drops per destination and in total. The MADs go through a transport:
 * umad (a local InfiniBand port) or, with --simulate, the in-process simulated
 * fabric (sim_transport.h).
 *
 * Built as smp-mad-stress-mpi (SMT_WITH_MPI) it runs one worker per MPI rank
 * against a single destination, and all ranks meet in a barrier before each
 * send round, so that many hosts hit one device at the same moment.
 *
 * The stages of a run (main): parse the options, plan (the transport), run
 * (the window, window.c), collect (rows per destination or rank), diagnose
 * (compliance), emit (table, JSON document, results block). Exit codes, results
 * block and JSON document: docs/kernel-contract.md. The option table: options.c. */
#include "../common/cb_common.h"
#include "options.h"
#include "sim_transport.h"
#include "smp_mad.h"
#include "umad_transport.h"
#include "window.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMT_WITH_MPI
#include <mpi.h>
#endif

#define MAX_DESTS 65536

/* ---- the run's state ------------------------------------------------------------------ */
typedef struct row {
    char name[200];
    const smt_dest_stats *s;
    int max_in_flight;
} row;

typedef struct run_state {
    smt_opts o;
    smp_dest *dests;
    int ndests;
    int rank, nranks;          /* MPI; 0 and 1 otherwise */
    /* plan: the transport */
    umad_target umad;
    smt_sim_params sim_params;
    smt_sim *sim;              /* --simulate; NULL: umad */
    char sim_desc[1024];
    smt_transport tp;
    char started[64], host[256];
    /* run */
    smt_result res;
    /* collect: rows per destination, or per rank (MPI, rank 0) */
    row *rows;
    int nrows;
    smt_dest_stats *per_rank;  /* MPI: each rank's total; NULL otherwise */
    smt_dest_stats total;
    double elapsed;
    int interrupted;           /* a signal stopped the run (on any rank, MPI) */
    /* diagnose */
    double rate;
    uint64_t errors;
    int passed;
} run_state;

/* All ranks agree on an exit code that means "could not run". */
static void die_all(const run_state *st, int code, const char *msg)
{
#ifdef SMT_WITH_MPI
    fprintf(stderr, "%s: rank %d: %s\n", cb_prog, st->rank, msg);
    exit(code);
#else
    (void)st;
    cb_die(code, "%s", msg);
#endif
}

/* MPI: whether any rank failed; a rank that did says why, and all exit 3. */
static void agree_or_die(const run_state *st, int failed, const char *why)
{
#ifdef SMT_WITH_MPI
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any)
        return;
    if (failed)
        die_all(st, CB_EXIT_CANNOT_RUN, why);
    exit(CB_EXIT_CANNOT_RUN);
#else
    if (failed)
        die_all(st, CB_EXIT_CANNOT_RUN, why);
#endif
}

/* ---- parse: options, destinations, operands ---------------------------------------------- */
static void add_dest(run_state *st, const char *text)
{
    if (st->ndests == MAX_DESTS)
        cb_usage_error("at most %d destinations", MAX_DESTS);
    smp_dest *d = &st->dests[st->ndests];
    const char *why = smp_dest_parse(text, st->o.direct, d);
    if (why)
        cb_usage_error("invalid destination '%s': %s", text, why);
    st->ndests++;
}

/* --lids "9,12" or --paths "0,1;0,1,3": every item a destination; an empty item ("9,,12",
 * "9,", ";0,1") is a usage error, not skipped. Spaces around a path are allowed. */
static void add_list(run_state *st, const char *arg, const char *seps, const char *what)
{
    char tok[600];
    const char *cursor = arg;
    int r;
    while ((r = cb_list_next(&cursor, seps, tok, sizeof tok)) == 1) {
        char *item = tok + strspn(tok, " ");
        size_t n = strlen(item);
        while (n > 0 && item[n - 1] == ' ')
            item[--n] = '\0';
        if (!*item)
            break;
        add_dest(st, item);
    }
    if (r != 0)
        cb_usage_error("invalid list '%s' for %s: an empty item (two separators in a row, or one "
                       "at the start or end)", arg, what);
}

/* DEST (unless --lids or --paths), ATTR and MOD. */
static void parse_operands(run_state *st, int argc, char **argv, int first)
{
    smt_opts *o = &st->o;
    int listed = o->lids_arg || o->paths_arg;
    int npos = argc - first, i = first;
    if (npos < (listed ? 1 : 2))
        cb_usage_error(listed ? "missing ATTR (an attribute such as NodeInfo or 0x11)"
                              : "missing DEST and ATTR (for example: 9 NodeInfo, or -L 9,12 0x11)");
    if (npos > (listed ? 2 : 3))
        cb_usage_error("unexpected argument '%s'", argv[first + (listed ? 2 : 3)]);
    if (o->lids_arg)
        add_list(st, o->lids_arg, ",", "--lids");
    else if (o->paths_arg)
        add_list(st, o->paths_arg, ";", "--paths");
    else
        add_dest(st, argv[i++]);
    if (smp_attr_parse(argv[i], &o->c.req.attr) != 0)
        cb_usage_error("invalid attribute '%s': expected a number (0x11) or a name (NodeInfo, PortInfo, ...)",
                       argv[i]);
    i++;
    if (i < argc) {
        uint64_t m;
        if (cb_parse_u64(argv[i], 0, &m) != 0 || m > 0xffffffffULL)
            cb_usage_error("invalid attribute modifier '%s': expected a number up to 0xffffffff", argv[i]);
        o->c.req.mod = (uint32_t)m;
    }
}

/* The rules between options, after the table has parsed each one. */
static void check_options(run_state *st)
{
    smt_opts *o = &st->o;
    smt_config *c = &o->c;
    if (o->simulate) {
        smt_sim_params_default(&st->sim_params);
        const char *why = smt_sim_parse(o->simulate, &st->sim_params);
        if (why)
            cb_usage_error("invalid --simulate '%s': %s", o->simulate, why);
        if (o->device || o->port)
            cb_usage_error("--simulate replaces the device; --device and --port do not apply");
    }
    if (o->device) {
        if (!*o->device || strlen(o->device) >= sizeof st->umad.ca)
            cb_usage_error("invalid device name '%s' for --device", o->device);
        snprintf(st->umad.ca, sizeof st->umad.ca, "%s", o->device);
    }
    st->umad.port = o->port;
    c->dests = st->dests;
    c->ndests = st->ndests;
#ifdef SMT_WITH_MPI
    if (c->ndests != 1)
        cb_usage_error("MPI mode sends to a single destination (%d given)", c->ndests);
    if (c->workers != 1)
        cb_usage_error("MPI mode runs a single worker per rank (--workers %d given)", c->workers);
#endif
    const char *why = smt_config_check(c);
    if (why)
        cb_usage_error("%s", why);
    if (o->json_path && cb_json_path_ok(o->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", o->json_path);
}

static void parse_args(run_state *st, int argc, char **argv)
{
    smt_opts *o = &st->o;
    int first = smt_options_parse(o, argc, argv);
    st->dests = calloc(MAX_DESTS, sizeof *st->dests);
    if (!st->dests)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    parse_operands(st, argc, argv, first);
    check_options(st);
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

/* ---- plan: the transport, and what the output says about the run ----------------------- */
static void plan(run_state *st)
{
    smt_config *c = &st->o.c;
    c->progress = !st->o.quiet && st->rank == 0;
    char err[512] = "";
    int probe_rc = 0;
    if (st->o.simulate) {
        st->sim = smt_sim_create(&st->sim_params, c->dests, c->ndests);
        if (!st->sim)
            die_all(st, CB_EXIT_CANNOT_RUN, "out of memory");
        st->tp = smt_sim_transport(st->sim);
        smt_sim_describe(&st->sim_params, st->sim_desc, sizeof st->sim_desc);
    } else {
        st->umad.mgmt_class = st->o.direct ? SMP_CLASS_DIRECT : SMP_CLASS_LID;
        probe_rc = umad_probe(&st->umad, err, sizeof err);
        st->tp = umad_transport(&st->umad);
    }
    agree_or_die(st, probe_rc != 0, err);
#ifdef SMT_WITH_MPI
    c->round_sync = mpi_round;
#endif
    c->tp = &st->tp;
    cb_iso8601_now(st->started, sizeof st->started);
    cb_hostname(st->host, sizeof st->host);
}

static void print_header(const run_state *st)
{
    const smt_config *c = &st->o.c;
    if (st->rank != 0)
        return;
    fprintf(cb_human(), "%s (cobalt-bench) %s on %s, started %s\n", SMT_PROG, CB_VERSION, st->host, st->started);
    if (st->sim)
        fprintf(cb_human(), "Transport: TEST FABRIC (in-process emulation, no InfiniBand): %s\n", st->sim_desc);
    else
        fprintf(cb_human(), "Transport: umad, device %s port %d (LID %u)\n", st->umad.ca_found, st->umad.port_found,
               st->umad.base_lid);
    /* the method by name and by number: the seed document's table has the numbers the other
     * way round (1 = SET), so the user sees what was sent whichever they believed */
    fprintf(cb_human(), "MAD: %s(%s, attribute 0x%04x) modifier 0x%x, method %d (%s), %s, %d destination%s%s\n",
           c->req.method == SMP_METHOD_SET ? "SubnSet" : "SubnGet", smp_attr_name(c->req.attr),
           c->req.attr, c->req.mod, c->req.method, c->req.method == SMP_METHOD_SET ? "set" : "get",
           st->o.direct ? "directed route" : "LID routed", c->ndests,
           c->ndests == 1 ? "" : "s",
           c->req.method == SMP_METHOD_SET ? " (each set to the value it holds)" : "");
    fprintf(cb_human(), "Window: %d per destination, %d local; %d worker%s%s; timeout %d ms, %d retr%s; %.2f s\n",
           c->dest_depth, c->local_depth, c->workers, c->workers == 1 ? "" : "s",
           st->nranks > 1 ? " per rank" : "", c->timeout_ms, c->retries, c->retries == 1 ? "y" : "ies",
           c->duration_s);
#ifdef SMT_WITH_MPI
    fprintf(cb_human(), "MPI: %d ranks, a barrier before each send round\n", st->nranks);
#endif
    fflush(cb_human());
}

/* ---- run ---------------------------------------------------------------------------------- */
static void run(run_state *st)
{
    int rc = smt_run(&st->o.c, &st->res);
    agree_or_die(st, rc != 0, st->res.error);
    st->interrupted = st->res.interrupted;
#ifdef SMT_WITH_MPI
    /* a signal that reached one rank marks the whole run interrupted */
    MPI_Allreduce(&st->res.interrupted, &st->interrupted, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
#endif
}

/* ---- collect: rows per destination (one process) or per rank (MPI, one destination) ------ */
#ifdef SMT_WITH_MPI
static void merge_stats(smt_dest_stats *a, const smt_dest_stats *b)
{
    smt_dest_stats_add(a, b);
    if (!a->first_problem[0] && b->first_problem[0])
        memcpy(a->first_problem, b->first_problem, sizeof a->first_problem);
}

static void collect(run_state *st)
{
    smt_result *res = &st->res;
    st->total = res->total;
    st->elapsed = res->elapsed_s;
    st->per_rank = calloc((size_t)st->nranks, sizeof *st->per_rank);
    double *elapsed_all = calloc((size_t)st->nranks, sizeof *elapsed_all);
    char (*hosts)[64] = calloc((size_t)st->nranks, sizeof *hosts);
    if (!st->per_rank || !elapsed_all || !hosts)
        die_all(st, CB_EXIT_CANNOT_RUN, "out of memory");
    char myhost[64];
    snprintf(myhost, sizeof myhost, "%.63s", st->host);
    MPI_Gather(&res->total, (int)sizeof res->total, MPI_BYTE, st->per_rank, (int)sizeof res->total,
               MPI_BYTE, 0, MPI_COMM_WORLD);
    MPI_Gather(&res->elapsed_s, 1, MPI_DOUBLE, elapsed_all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(myhost, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (st->rank == 0) {
        memset(&st->total, 0, sizeof st->total);
        st->elapsed = 0;
        for (int k = 0; k < st->nranks; k++) {
            merge_stats(&st->total, &st->per_rank[k]);
            if (elapsed_all[k] > st->elapsed)
                st->elapsed = elapsed_all[k];
        }
        st->nrows = st->nranks;
        st->rows = calloc((size_t)st->nrows, sizeof *st->rows);
        if (!st->rows)
            die_all(st, CB_EXIT_CANNOT_RUN, "out of memory");
        for (int k = 0; k < st->nranks; k++) {
            snprintf(st->rows[k].name, sizeof st->rows[k].name, "rank %d %.40s", k, hosts[k]);
            st->rows[k].s = &st->per_rank[k];
            st->rows[k].max_in_flight = res->max_dest_in_flight[0];
        }
    }
    free(elapsed_all);
    free(hosts);
}
#else
static void collect(run_state *st)
{
    const smt_config *c = &st->o.c;
    st->total = st->res.total;
    st->elapsed = st->res.elapsed_s;
    st->nrows = c->ndests;
    st->rows = calloc((size_t)st->nrows, sizeof *st->rows);
    if (!st->rows)
        die_all(st, CB_EXIT_CANNOT_RUN, "out of memory");
    for (int d = 0; d < st->nrows; d++) {
        snprintf(st->rows[d].name, sizeof st->rows[d].name, "%s", c->dests[d].name);
        st->rows[d].s = &st->res.dest[d];
        st->rows[d].max_in_flight = st->res.max_dest_in_flight[d];
    }
}
#endif

/* ---- diagnose ------------------------------------------------------------------------------ */
static double us(double ns) { return ns / 1e3; }

static double rate_of(const smt_dest_stats *s, double elapsed)
{
    return elapsed > 0 ? (double)s->answered_in_time / elapsed : 0;
}

static int diagnose(run_state *st)
{
    st->rate = rate_of(&st->total, st->elapsed);
    st->errors = st->total.status_errors + st->total.bad;
    /* a run cut short is not judged compliant */
    st->passed = !st->interrupted && st->errors == 0 && st->total.drops <= (uint64_t)st->o.max_drops &&
                 st->rate >= st->o.min_rate;
    return st->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
}

/* ---- emit: the table ---------------------------------------------------------------------- */
static void print_row(const row *r, double elapsed)
{
    const smt_dest_stats *s = r->s;
    fprintf(cb_human(), "  %-18s %10llu %10llu %10.1f %9.1f %9.1f %9.1f %8llu %8llu %7llu %7llu %5d\n", r->name,
           (unsigned long long)s->sent, (unsigned long long)s->answered, rate_of(s, elapsed),
           us(smp_hist_mean(&s->latency)), us(smp_hist_quantile(&s->latency, 0.5)),
           us(smp_hist_quantile(&s->latency, 0.99)), (unsigned long long)s->timeouts,
           (unsigned long long)s->retries, (unsigned long long)s->drops,
           (unsigned long long)(s->status_errors + s->bad), r->max_in_flight);
}

static void print_report(const run_state *st)
{
    const smt_dest_stats *total = &st->total;
    const char *what = st->per_rank ? "rank" : "destination";
    fprintf(cb_human(), "Per %s (MAD/s over the %.2f s timed; latency from first send to response, us):\n", what,
           st->elapsed);
    fprintf(cb_human(), "  %-18s %10s %10s %10s %9s %9s %9s %8s %8s %7s %7s %5s\n", what, "sent", "answered",
           "MAD/s", "avg", "p50", "p99", "timeouts", "retries", "drops", "errors", "max");
    for (int i = 0; i < st->nrows; i++)
        print_row(&st->rows[i], st->elapsed);
    row trow = {.s = total, .max_in_flight = st->res.max_local_in_flight};
    snprintf(trow.name, sizeof trow.name, "total");
    print_row(&trow, st->elapsed);
    fprintf(cb_human(), "('max': most MADs on the wire at once, to the destination or, for the total, from the local port)\n");
    if (st->res.drain_s > 0.0005)
        fprintf(cb_human(), "After the timed period: %.3f s for the MADs still on the wire\n", st->res.drain_s);
    if (st->res.abandoned)
        fprintf(cb_human(), "Abandoned when interrupted: %llu MADs still on the wire (not counted as drops)\n",
                (unsigned long long)st->res.abandoned);
    if (st->res.stale)
        fprintf(cb_human(), "Late responses (after their attempt had timed out): %llu\n", (unsigned long long)st->res.stale);
    if (total->first_problem[0])
        fprintf(cb_human(), "First problem: %s\n", total->first_problem);
    if (total->bad)
        fprintf(cb_human(), "VERIFICATION FAILED: %llu responses did not match their request\n", (unsigned long long)total->bad);
    if (!st->passed) {
        fprintf(cb_human(), "Not compliant:");
        if (st->errors)
            fprintf(cb_human(), " %llu errors;", (unsigned long long)st->errors);
        if (total->drops > (uint64_t)st->o.max_drops)
            fprintf(cb_human(), " %llu drops (at most %ld allowed);", (unsigned long long)total->drops, st->o.max_drops);
        if (st->rate < st->o.min_rate)
            fprintf(cb_human(), " %.1f MAD/s is below %.1f;", st->rate, st->o.min_rate);
        if (st->interrupted)
            fprintf(cb_human(), " interrupted by %s;", cb_interrupted_name() ? cb_interrupted_name() : "a signal");
        fprintf(cb_human(), "\n");
    }
}

/* ---- emit: the JSON document (docs/kernel-contract.md) -------------------------------------- */
static void json_config(cb_json *j, const void *ctx)
{
    const run_state *st = ctx;
    const smt_config *c = &st->o.c;
    cbj_config_options(j, &smt_cmd, &st->o); /* the options, as the run used them */
    /* --method and --timeout, custom values: by the method's name, in milliseconds */
    cbj_str(j, "method", c->req.method == SMP_METHOD_SET ? "set" : "get");
    cbj_int(j, "timeout_ms", c->timeout_ms);
    /* derived: the transport and the device found, the operands resolved, the routing
     * (--direct, or implied by --paths), the destinations, the MPI ranks */
    cbj_str(j, "transport", st->sim ? "test-fabric" : "umad");
    if (st->sim)
        cbj_str(j, "test_fabric", st->sim_desc);
    else {
        cbj_str(j, "device", st->umad.ca_found);
        cbj_int(j, "port", st->umad.port_found);
    }
    cbj_int(j, "attribute", c->req.attr);
    cbj_str(j, "attribute_name", smp_attr_name(c->req.attr));
    cbj_int(j, "modifier", c->req.mod);
    cbj_str(j, "routing", st->o.direct ? "directed" : "lid");
    cbj_arr_begin(j, "destinations");
    for (int d = 0; d < c->ndests; d++)
        cbj_str(j, NULL, c->dests[d].name);
    cbj_arr_end(j);
    cbj_int(j, "mpi_ranks", st->nranks);
}

static void json_metrics(cb_json *j, const void *ctx)
{
    const run_state *st = ctx;
    const smt_dest_stats *t = &st->total;
    cbj_metric(j, smt_metrics, "mad_rate", st->rate);
    cbj_metric(j, smt_metrics, "latency_avg", us(smp_hist_mean(&t->latency)));
    cbj_metric(j, smt_metrics, "latency_p50", us(smp_hist_quantile(&t->latency, 0.5)));
    cbj_metric(j, smt_metrics, "latency_p99", us(smp_hist_quantile(&t->latency, 0.99)));
    cbj_metric(j, smt_metrics, "latency_min", us((double)t->latency.min_ns));
    cbj_metric(j, smt_metrics, "latency_max", us((double)t->latency.max_ns));
    cbj_metric(j, smt_metrics, "mads_sent", (double)t->sent);
    cbj_metric(j, smt_metrics, "mads_answered", (double)t->answered);
    cbj_metric(j, smt_metrics, "timeouts", (double)t->timeouts);
    cbj_metric(j, smt_metrics, "retries", (double)t->retries);
    cbj_metric(j, smt_metrics, "drops", (double)t->drops);
    cbj_metric(j, smt_metrics, "status_errors", (double)t->status_errors);
    cbj_metric(j, smt_metrics, "verification_errors", (double)t->bad);
    cbj_metric(j, smt_metrics, "late_responses", (double)st->res.stale);
    cbj_metric(j, smt_metrics, "abandoned", (double)st->res.abandoned);
    cbj_metric(j, smt_metrics, "max_local_in_flight", st->res.max_local_in_flight);
    int maxd = 0;
    for (int d = 0; d < st->o.c.ndests; d++)
        if (st->res.max_dest_in_flight[d] > maxd)
            maxd = st->res.max_dest_in_flight[d];
    cbj_metric(j, smt_metrics, "max_dest_in_flight", maxd);
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

/* "per_destination" (one process) or "ranks" (MPI) */
static void json_rows(cb_json *j, const void *ctx)
{
    const run_state *st = ctx;
    int ranks = st->per_rank != NULL;
    cbj_arr_begin(j, ranks ? "ranks" : "per_destination");
    for (int i = 0; i < st->nrows; i++) {
        cbj_obj_begin(j, NULL);
        cbj_str(j, ranks ? "rank" : "destination", st->rows[i].name);
        if (!ranks && !st->o.c.dests[i].direct)
            cbj_int(j, "lid", st->o.c.dests[i].lid);
        json_stats(j, st->rows[i].s, st->elapsed);
        cbj_int(j, "max_in_flight", st->rows[i].max_in_flight);
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

static void json_compliance(cb_json *j, const void *ctx)
{
    const run_state *st = ctx;
    cbj_int(j, "max_drops", st->o.max_drops);
}

static int write_json(const run_state *st)
{
    cb_envelope env = {.test = SMT_PROG, .test_version = SMT_TEST_VERSION, .started = st->started,
                       .duration_s = st->elapsed, .threshold = st->o.min_rate, .passed = st->passed,
                       .interrupted = st->interrupted};
    cb_doc_parts parts = {.config = json_config, .metrics = json_metrics, .extra = json_rows,
                          .compliance = json_compliance};
    return cb_doc_write(st->o.json_path, &env, &parts, st);
}

/* ---- emit: the results block, which ends the output ------------------------------------------ */
static void print_results(const run_state *st)
{
    const smt_dest_stats *t = &st->total;
    cb_results_begin(cb_human(), SMT_TEST_VERSION);
    if (st->interrupted) {
        char what[160];
        snprintf(what, sizeof what, "after %.2f s of %.2f s; the figures cover that time",
                 st->elapsed, st->o.c.duration_s);
        if (cb_interrupted)
            cb_results_interrupted(cb_human(), what);
        else /* MPI: another rank got the signal */
            cb_results_line(cb_human(), "Interrupted", "a signal to another rank -- %s", what);
    }
    cb_results_line(cb_human(), "MAD rate", "%.1f MAD/s", st->rate);
    cb_results_line(cb_human(), "Latency", "avg %.1f us, p50 %.1f us, p99 %.1f us",
                    us(smp_hist_mean(&t->latency)), us(smp_hist_quantile(&t->latency, 0.5)),
                    us(smp_hist_quantile(&t->latency, 0.99)));
    cb_results_line(cb_human(), "MADs", "%llu sent, %llu answered", (unsigned long long)t->sent,
                    (unsigned long long)t->answered);
    cb_results_line(cb_human(), "Timeouts", "%llu", (unsigned long long)t->timeouts);
    cb_results_line(cb_human(), "Retries", "%llu", (unsigned long long)t->retries);
    cb_results_line(cb_human(), "Drops", "%llu", (unsigned long long)t->drops);
    cb_results_line(cb_human(), "Errors", "%llu", (unsigned long long)st->errors);
    fflush(cb_human());
}

static int emit(const run_state *st, int rc)
{
    if (st->rank != 0)
        return rc;
    /* the document first: after a signal mpirun forwards no output while it waits to kill
     * the ranks, and a full pipe would block rank 0 before it wrote the document */
    if (st->o.json_path && write_json(st) != 0)
        rc = CB_EXIT_CANNOT_RUN;
    print_report(st);
    print_results(st);
    if (st->interrupted)
        rc = cb_interrupted ? cb_exit_interrupted() : 128 + SIGTERM;
    return rc;
}

static void release(run_state *st)
{
    free(st->rows);
    free(st->per_rank);
    smt_result_free(&st->res);
    smt_sim_destroy(st->sim);
    free(st->dests);
}

int main(int argc, char **argv)
{
    static run_state st;
    cb_prog = SMT_PROG;
    st.nranks = 1;
#ifdef SMT_WITH_MPI
    MPI_Init(&argc, &argv);
    atexit(mpi_finalize);
    MPI_Comm_rank(MPI_COMM_WORLD, &st.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &st.nranks);
    if (st.rank != 0) { /* every rank parses the same options; one says what is wrong */
        if (!freopen("/dev/null", "w", stderr))
            return CB_EXIT_CANNOT_RUN;
    }
#endif
    parse_args(&st, argc, argv);
    /* from here SIGINT, SIGTERM or SIGHUP stops the MADs and still reports (window.h) */
    cb_signals_install();
    plan(&st);
    print_header(&st);
    run(&st);
    collect(&st);
    int rc = emit(&st, diagnose(&st));
#ifdef SMT_WITH_MPI
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    release(&st);
    return rc;
}
