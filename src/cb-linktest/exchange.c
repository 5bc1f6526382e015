/* The parallel test: in each step of the schedule all its pairs exchange
 * messages at once (ping-pong, one-way or two-way) and time them; rank 0 gets
 * the step's figures and prints a progress line. Repeated for --min-iterations
 * and --min-runtime; each rank keeps its row of the matrix (each pair's slowest
 * time over the iterations). */
#include "exchange.h"
#include "buffers.h"
#include "gpu.h"
#include "monitor.h"
#include "options.h"
#include "report.h"
#include "run.h"
#include "schedule.h"
#include "setup.h"
#include "world.h"
#include "../common/cb_hash.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 1, TAG_ACK, TAG_RESULT, TAG_READY };

/* ---- one pair's exchange ------------------------------------------------------ */
/* What one pair's exchange uses, as this rank sees it. */
typedef struct pair {
    const lt_config *cfg;
    lt_buffers *bufs;
    lt_faults *faults;
    int rank, peer;
    long tag;                /* the pair test's: it seeds the payloads */
} pair;

/* CB_LINKTEST_DELAY: the lower rank of the slow pair waits before each message. */
static void slow_link_delay(const pair *p)
{
    const lt_faults *f = p->faults;
    for (int i = 0; i < f->ndelay; i++)
        if ((p->rank == f->delay_a[i] && p->peer == f->delay_b[i]) ||
            (p->rank == f->delay_b[i] && p->peer == f->delay_a[i]))
            cb_sleep_until_ns(cb_now_ns() + (uint64_t)(f->delay_us[i] * 1e3));
}

/* Whether this rank sends the pair's messages (unidirectional: only the lower rank). */
static int sends(const pair *p)
{
    return p->cfg->pattern != LT_UNI || p->rank < p->peer;
}

static int receives(const pair *p)
{
    return p->cfg->pattern != LT_UNI || p->rank > p->peer;
}

/* CB_LINKTEST_CORRUPT: a transfer that corrupts one byte of this message */
static void corrupt_one_byte(lt_buffers *b, char *msg, size_t n)
{
    char c;
    char *at = msg + n / 2;
    if (lt_on_gpu(b)) {
        lt_gpu_to_host(&c, at, 1);
        c ^= 0x5a;
        lt_gpu_from_host(at, &c, 1);
    } else {
        *at ^= 0x5a;
    }
}

/* Before a batch of timed messages [m0, m0 + count), outside the timed region: the
 * pattern of each into its send buffer, the receive buffers cleared. */
static void prepare_batch(const pair *p, long m0, long count)
{
    size_t n = p->cfg->size;
    lt_buffers *b = p->bufs;
    lt_faults *f = p->faults;
    for (long i = 0; i < count; i++) {
        if (sends(p)) {
            lt_buf_fill(b, b->sring[i], n, lt_payload_seed(p->cfg, p->rank, p->peer, p->tag, m0 + i));
            if (f->corrupt_pending && m0 + i == f->corrupt_msg - 1)
                corrupt_one_byte(b, b->sring[i], n);
        }
        if (receives(p))
            lt_buf_zero(b, b->rring[i], n);
    }
    if (sends(p) && f->corrupt_pending && f->corrupt_msg <= m0 + count)
        f->corrupt_pending = 0;
}

/* After the batch: wrong bytes of the messages received; the first wrong one (1-based) too. */
static double check_batch(const pair *p, long m0, long count, double *first_bad)
{
    double bad = 0;
    if (!receives(p))
        return 0;
    for (long i = 0; i < count; i++) {
        double b = lt_buf_check(p->bufs, p->bufs->rring[i], p->cfg->size,
                                lt_payload_seed(p->cfg, p->peer, p->rank, p->tag, m0 + i));
        if (b > 0 && *first_bad == 0)
            *first_bad = (double)(m0 + i + 1);
        bad += b;
    }
    return bad;
}

/* ---- the three patterns: messages [m0, m0 + count) of one phase, buffers from the rings -- */
static void messages(const pair *p, long count)
{
    lt_buffers *bufs = p->bufs;
    int n = (int)p->cfg->size, lower = p->rank < p->peer, nbuf = bufs->nbuf, peer = p->peer;
    enum lt_pattern pat = p->cfg->pattern;
    for (long m = 0; m < count; m++) {
        int b = nbuf == 1 ? 0 : (int)(m % nbuf);
        if (lower)
            slow_link_delay(p);
        if (pat == LT_BI) {
            lt_sendrecv(bufs, bufs->sring[b], bufs->rring[b], n, peer, TAG_DATA);
        } else if (lower) {
            lt_send(bufs, bufs->sring[b], n, peer, TAG_DATA);
            if (pat == LT_SEMI)
                lt_recv(bufs, bufs->rring[b], n, peer, TAG_DATA);
        } else {
            lt_recv(bufs, bufs->rring[b], n, peer, TAG_DATA);
            if (pat == LT_SEMI)
                lt_send(bufs, bufs->sring[b], n, peer, TAG_DATA);
        }
    }
    /* unidirectional: a zero-byte acknowledgement closes each phase, so that the sender's
     * time includes the last message's arrival */
    if (pat == LT_UNI && count > 0) {
        if (lower)
            lt_mpi_check(MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        else
            lt_mpi_check(MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD), "MPI_Send");
    }
}

/* One pair's exchange: warm-up, timed messages, payload check. Without --check-buffers
 * the timed messages run in one stretch; with it in batches of the ring's size: before
 * each batch (clock stopped) every message's pattern is written, a zero-byte handshake
 * starts both ranks together, after it (clock stopped) every message received is
 * checked. Both ranks return the time the lower rank measured and the errors both found. */
lt_pair_result lt_pair_exchange(const lt_config *cfg, lt_buffers *b, lt_faults *f, int rank, int peer,
                                long tag)
{
    const pair p = {.cfg = cfg, .bufs = b, .faults = f, .rank = rank, .peer = peer, .tag = tag};
    int lower = rank < peer;
    /* the warm-up is timed too, but only for the main test's floor (lt_main_time), never
     * for the matrix */
    uint64_t t_warm = cb_now_ns();
    messages(&p, cfg->warmup);
    uint64_t ns = 0, warm_ns = cb_now_ns() - t_warm, check_ns = 0;
    long batch = cfg->check_buffers ? b->nbuf : cfg->nmsg;
    double bad = 0, first_bad = 0;
    for (long m0 = 0; m0 < cfg->nmsg; m0 += batch) {
        long count = cfg->nmsg - m0 < batch ? cfg->nmsg - m0 : batch;
        uint64_t t0 = cb_now_ns();
        if (cfg->check_buffers) {
            prepare_batch(&p, m0, count);
            lt_mpi_check(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, TAG_READY, NULL, 0, MPI_BYTE, peer, TAG_READY,
                                      MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv");
        }
        uint64_t t1 = cb_now_ns();
        messages(&p, count);
        uint64_t t2 = cb_now_ns();
        ns += t2 - t1;
        if (cfg->check_buffers) {
            bad += check_batch(&p, m0, count, &first_bad);
            check_ns += (t1 - t0) + (cb_now_ns() - t2);
        }
    }
    double t = ns / 1e9 / (cfg->pattern == LT_SEMI ? 2.0 * cfg->nmsg : (double)cfg->nmsg);
    double mine[3] = {t, bad, first_bad}, theirs[3];
    uint64_t t_res = cb_now_ns();
    lt_mpi_check(MPI_Sendrecv(mine, 3, MPI_DOUBLE, peer, TAG_RESULT, theirs, 3, MPI_DOUBLE, peer,
                              TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv");
    double fb = first_bad == 0 ? theirs[2] : theirs[2] == 0 ? first_bad : fmin(first_bad, theirs[2]);
    lt_pair_result r = {lower ? t : theirs[0], bad + theirs[1], fb, (warm_ns + ns) / 1e9, ns / 1e9,
                        check_ns / 1e9, (cb_now_ns() - t_res) / 1e9};
    return r;
}

/* ---- per-step figures, reduced to rank 0; each pair counted once, by its lower rank */
typedef struct { double v; int rank; } double_int;
typedef struct {
    double_int max_t, min_t, max_err; /* min_t holds -t: one MAXLOC for all six */
    /* the main test's floor: the slowest pair's messages (all, timed only) and the most a
     * pair spent in its messages and --check-buffers' work, seconds; sums for --serial-tests */
    double_int max_msg, max_timed, max_busy;
    double sum_t, count, sum_err, sum_bw, err_pairs, sum_msg, sum_timed, sum_busy;
    double first_bad; /* the first timed message with a wrong byte, over the step's pairs */
} step_stats;

static void reduce_step(const lt_config *cfg, int rank, int partner, lt_pair_result r, step_stats *out)
{
    double_int loc[6] = {{-INFINITY, rank}, {-INFINITY, rank}, {-1, rank}, {0, rank}, {0, rank}, {0, rank}};
    double sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (partner > rank) {
        loc[0].v = r.t;
        loc[1].v = -r.t;
        loc[2].v = r.errors;
        loc[3].v = r.msg_s;
        loc[4].v = r.timed_s;
        loc[5].v = r.msg_s + r.check_s;
        sums[0] = r.t;
        sums[1] = 1;
        sums[2] = r.errors;
        sums[3] = lt_gbits(cfg, r.t);
        sums[4] = r.errors > 0;
        sums[5] = r.msg_s;
        sums[6] = r.timed_s;
        sums[7] = r.msg_s + r.check_s;
    }
    double_int oloc[6];
    double osums[8];
    lt_mpi_check(MPI_Reduce(loc, oloc, 6, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD), "MPI_Reduce");
    lt_mpi_check(MPI_Reduce(sums, osums, 8, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    double fb = partner > rank && r.first_bad > 0 ? r.first_bad : INFINITY, ofb = INFINITY;
    if (cfg->check_buffers)
        lt_mpi_check(MPI_Reduce(&fb, &ofb, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (rank == 0) {
        out->first_bad = ofb;
        out->max_t = oloc[0];
        out->min_t = oloc[1];
        out->min_t.v = -out->min_t.v;
        out->max_err = oloc[2];
        out->max_msg = oloc[3];
        out->max_timed = oloc[4];
        out->max_busy = oloc[5];
        out->sum_busy = osums[7];
        out->sum_msg = osums[5];
        out->sum_timed = osums[6];
        out->sum_t = osums[0];
        out->count = osums[1];
        out->sum_err = osums[2];
        out->sum_bw = osums[3];
        out->err_pairs = osums[4];
    }
}

void lt_record_error(lt_errors *e, int a, int b, double bytes, double first_bad, const char *where)
{
    if (e->n < LT_MAX_ERROR_PAIRS) {
        e->list[2 * e->n] = a;
        e->list[2 * e->n + 1] = b;
        e->n++;
    }
    fprintf(cb_human(), "BUFFER CHECK FAILED %s: pair %d <-> %d received %.0f wrong bytes (first in timed message "
            "%.0f)\n", where, a, b, bytes, first_bad);
}

/* Rank 0's running figures of one iteration. */
typedef struct {
    uint64_t t0;
    double min, max, sum, count;
    int min_a, min_b, max_a, max_b;
} progress;

/* Rank 0: the step's figures into the iteration's. */
static void tally_step(const lt_order *o, long step, const step_stats *st, progress *p)
{
    if (st->count <= 0)
        return;
    if (st->max_t.v > p->max) {
        p->max = st->max_t.v;
        p->max_a = st->max_t.rank;
        p->max_b = lt_partner_of(o, st->max_t.rank, step);
    }
    if (st->min_t.v < p->min) {
        p->min = st->min_t.v;
        p->min_a = st->min_t.rank;
        p->min_b = lt_partner_of(o, st->min_t.rank, step);
    }
    p->sum += st->sum_t;
    p->count += st->count;
}

static double since(uint64_t t0_ns)
{
    return (cb_now_ns() - t0_ns) / 1e9;
}

/* Rank 0: the step into the main test's floor and overheads. The floor is the step's
 * slowest pair's messaging (with --serial-tests all its pairs', one after another). The
 * step's busiest pair (messages and --check-buffers' work) ends the step: what its checks
 * add is the checks' cost; rank 0 waits for that pair in the reduction, beyond its own
 * messages and checks, and that wait is not the collectives' cost. */
static void tally_main(lt_main_time *m, const lt_config *cfg, const step_stats *st, const lt_pair_result *mine,
                       double start, double sync)
{
    double floor = cfg->serial ? st->sum_msg : fmax(st->max_msg.v, 0);
    double busy = fmax(cfg->serial ? st->sum_busy : st->max_busy.v, floor);
    m->floor_s += floor;
    m->timed_floor_s += cfg->serial ? st->sum_timed : fmax(st->max_timed.v, 0);
    m->sync_s += sync;
    m->start_s += start;
    m->wait_s += fmin(fmax(busy - mine->msg_s - mine->check_s, 0), sync - start);
    m->check_s += busy - floor;
    m->steps++;
}

/* Rank 0: the step's wrong bytes into the run's errors, the worst pair named. */
static void record_step_errors(lt_errors *e, const lt_order *o, long k, long step, const step_stats *st)
{
    e->bytes += st->sum_err;
    e->pairs += st->err_pairs;
    if (st->sum_err <= 0)
        return;
    char where[64];
    snprintf(where, sizeof where, "in step %ld", k + 1);
    lt_record_error(e, st->max_err.rank, lt_partner_of(o, st->max_err.rank, step), st->max_err.v, st->first_bad,
                    where);
    if (st->err_pairs > 1)
        fprintf(cb_human(), "  (and %.0f more pairs in that step)\n", st->err_pairs - 1);
}

/* Rank 0: the step's progress line. */
static void print_step(const lt_config *cfg, const lt_order *o, long k, long step, const step_stats *st,
                       const progress *p)
{
    const lt_sched *s = &o->sched;
    char t1[32], t2[32], t3[32], t4[32], t5[32];
    double el = (cb_now_ns() - p->t0) / 1e9;
    double eta = el / (double)(k + 1) * (double)(s->nsteps - k - 1);
    if (st->count > 0)
        fprintf(cb_human(), "Step %*ld/%ld: %3.0f pairs  min %s (%.3f Gbit/s)  avg %s  max %s (%.3f Gbit/s, %d<->%d)"
               "  | so far: min %s max %s | %.2f s, ETA %.2f s\n",
               (int)snprintf(NULL, 0, "%ld", s->nsteps), k + 1, s->nsteps, st->count,
               lt_fmt_time(st->min_t.v, t1, sizeof t1), lt_gbits(cfg, st->min_t.v),
               lt_fmt_time(st->sum_t / st->count, t2, sizeof t2), lt_fmt_time(st->max_t.v, t3, sizeof t3),
               lt_gbits(cfg, st->max_t.v), st->max_t.rank, lt_partner_of(o, st->max_t.rank, step),
               lt_fmt_time(p->min, t4, sizeof t4), lt_fmt_time(p->max, t5, sizeof t5), el, eta);
    else
        fprintf(cb_human(), "Step %ld/%ld: no pairs | %.2f s, ETA %.2f s\n", k + 1, s->nsteps, el, eta);
    fflush(cb_human());
}

/* One step: all its pairs at once (or one after another with --serial-tests),
 * then the step's figures at rank 0 and its progress line. */
static void run_step(lt_run *run, long k, long iteration, progress *p)
{
    const lt_config *cfg = run->cfg;
    const lt_order *o = &run->order;
    int rank = run->world.rank;
    long orders = cfg->num_randomize_tasks + 1;
    long step = o->sched.order[k], tag = ((iteration - 1) * orders + o->pass) * o->sched.nsteps + step + 1;
    int partner = lt_partner_of(o, rank, step);
    lt_pair_result res = {.t = NAN};
    uint64_t t0 = cb_now_ns();
    double sync = 0; /* seconds in barriers (rank 0's count in lt_main_time) */
    if (cfg->serial) {
        for (int a = 0; a < run->world.size; a++) {
            int b = lt_partner_of(o, a, step);
            if (b <= a)
                continue;
            t0 = cb_now_ns();
            lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            sync += since(t0);
            if (rank == a || rank == b)
                res = lt_pair_exchange(cfg, &run->bufs, &run->faults, rank, partner, tag);
        }
    } else {
        lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        sync += since(t0);
        if (partner >= 0)
            res = lt_pair_exchange(cfg, &run->bufs, &run->faults, rank, partner, tag);
    }
    double *row = run->test.row;
    if (partner >= 0 && !(row[partner] >= res.t)) /* the slowest over iterations */
        row[partner] = res.t;
    step_stats st;
    t0 = cb_now_ns();
    reduce_step(cfg, rank, partner, res, &st);
    if (rank != 0)
        return;
    /* with --serial-tests the barriers also wait for the pairs before rank 0's */
    tally_main(&run->test.main, cfg, &st, &res, cfg->serial ? 0 : sync, sync + since(t0) + res.sync_s);
    tally_step(o, step, &st, p);
    record_step_errors(&run->errors, o, k, step, &st);
    if (!cfg->quiet)
        print_step(cfg, o, k, step, &st, p);
}

static void print_iteration(const lt_config *cfg, long iteration, const progress *p)
{
    char t1[32], t2[32], t3[32];
    double avg = p->count ? p->sum / p->count : NAN;
    fprintf(cb_human(), "Iteration %ld: %.0f pairs in %.2f s: min %s (%.3f Gbit/s, %d<->%d)  avg %s (%.3f Gbit/s)  "
           "max %s (%.3f Gbit/s, %d<->%d)\n",
           iteration, p->count, (cb_now_ns() - p->t0) / 1e9, lt_fmt_time(p->min, t1, sizeof t1),
           lt_gbits(cfg, p->min), p->min_a, p->min_b, lt_fmt_time(avg, t2, sizeof t2),
           p->count ? lt_gbits(cfg, avg) : 0, lt_fmt_time(p->max, t3, sizeof t3), lt_gbits(cfg, p->max),
           p->max_a, p->max_b);
    fflush(cb_human());
}

int lt_stop_agreed(int *interrupted)
{
    /* mpirun (and srun) pass the signal to every rank, but not at the same instant: the
     * ranks agree, so that all leave the schedule at the same step and no rank waits in an
     * exchange with one that has gone */
    int mine = cb_interrupted != 0, any = 0;
    lt_mpi_check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    if (any)
        *interrupted = 1;
    return any;
}

/* --num-randomize-tasks: announce task order pass (stdout; the IDs on stderr). */
static void announce_order(const lt_config *cfg, const lt_world *w, const lt_order *o, long iteration, int pass)
{
    if (w->rank != 0 || cfg->num_randomize_tasks == 0)
        return;
    if (!cfg->quiet)
        fprintf(cb_human(), "Task order %d of %ld (iteration %ld): %s\n", pass + 1, cfg->num_randomize_tasks + 1,
                iteration, pass ? "task IDs permuted (--num-randomize-tasks)" : "ranks as started");
    if (pass && w->size <= 256) {
        fprintf(stderr, "info: task order %d: rank -> ID:", pass + 1);
        for (int r = 0; r < w->size; r++)
            fprintf(stderr, " %d", o->vid[r]);
        fputc('\n', stderr);
    }
    fflush(cb_human());
    fflush(stderr);
}

/* One iteration: the schedule in each task order; returns 1 when a signal stopped it. */
static int run_iteration(lt_run *run, long iteration, progress *p)
{
    const lt_config *cfg = run->cfg;
    const lt_world *w = &run->world;
    lt_order *o = &run->order;
    for (int pass = 0; pass <= cfg->num_randomize_tasks; pass++) {
        lt_task_order(o, w, cfg, pass);
        announce_order(cfg, w, o, iteration, pass);
        for (long k = 0; k < o->sched.nsteps; k++) {
            uint64_t t0 = cb_now_ns();
            int stop = lt_stop_agreed(&run->test.interrupted);
            double dt = since(t0); /* rank 0's figure; the others' go unread */
            run->test.main.sync_s += dt;
            run->test.main.start_s += dt;
            if (stop) {
                if (w->rank == 0)
                    fprintf(cb_human(), "Interrupted in iteration %ld before step %ld of %ld\n", iteration,
                            k + 1, o->sched.nsteps);
                lt_task_order(o, w, cfg, 0);
                return 1;
            }
            run_step(run, k, iteration, p);
        }
    }
    lt_task_order(o, w, cfg, 0);
    return 0;
}

/* The parallel test, repeated for --min-iterations / --min-runtime; a signal stops it
 * before the next step (the step under way, one exchange per pair, ends first).
 * --all-to-all runs before and after it. */
void lt_run_iterations(lt_run *run)
{
    const lt_config *cfg = run->cfg;
    const lt_world *w = &run->world;
    lt_main_time *m = &run->test.main;
    if (cfg->all_to_all)
        lt_all_to_all(&run->mon, w, &run->bufs, cfg, 0);
    lt_phase(&run->mon, w, NULL);
    uint64_t start = run->mon.phase_ns; /* the main test phase's start: its wall time */
    for (long iteration = 1;; iteration++) {
        progress p = {.t0 = cb_now_ns(), .min = INFINITY, .min_a = -1, .min_b = -1, .max_a = -1, .max_b = -1};
        if (w->rank == 0 && !cfg->quiet && (cfg->min_iterations > 1 || cfg->min_runtime > 0))
            fprintf(cb_human(), "Iteration %ld\n", iteration);
        if (run_iteration(run, iteration, &p)) {
            run->test.iterations = iteration;
            m->wall_s = since(start);
            lt_phase(&run->mon, w, "main test");
            return;
        }
        if (w->rank == 0)
            print_iteration(cfg, iteration, &p);
        int more = iteration < cfg->min_iterations || (cb_now_ns() - w->t0_ns) / 1e9 < cfg->min_runtime;
        uint64_t t0 = cb_now_ns();
        lt_mpi_check(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        m->sync_s += since(t0);
        if (!more) {
            run->test.iterations = iteration;
            break;
        }
    }
    m->wall_s = since(start);
    lt_phase(&run->mon, w, "main test");
    if (cfg->all_to_all && !lt_stop_agreed(&run->test.interrupted))
        lt_all_to_all(&run->mon, w, &run->bufs, cfg, 1);
}
