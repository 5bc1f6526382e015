/* The parallel test: in each step of the schedule all its pairs exchange
 * messages at once (ping-pong, one-way or two-way) and time them; rank 0 gets
 * the step's figures and prints a progress line. Repeated for --min-iterations
 * and --min-runtime; each rank keeps its row of the matrix (each pair's slowest
 * time over the iterations). */
#include "linktest.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 1, TAG_ACK, TAG_RESULT };

/* ---- payload (--check-buffers) ----------------------------------------------- */
uint64_t lt_payload_seed(int from, int to, long tag)
{
    return cb_mix64(((uint64_t)(uint32_t)from << 32) ^ (uint64_t)(uint32_t)to ^ ((uint64_t)tag << 48) ^
                    0x6c696e6b74657374ULL);
}

void lt_fill_payload(char *buf, size_t n, uint64_t seed)
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

/* CB_LINKTEST_DELAY: the lower rank of the slow pair waits before each message. */
static void slow_link_delay(const lt_run *run, int peer)
{
    if (run->delay_us > 0 && ((run->rank == run->delay_a && peer == run->delay_b) ||
                              (run->rank == run->delay_b && peer == run->delay_a)))
        cb_sleep_until_ns(cb_now_ns() + (uint64_t)(run->delay_us * 1e3));
}

static void prepare_payload(lt_run *run, int peer, long tag)
{
    int n = (int)run->cfg->size;
    lt_fill_payload(run->sbuf, (size_t)n, lt_payload_seed(run->rank, peer, tag));
    memset(run->rbuf, 0, (size_t)n);
    if (run->corrupt_pending) {
        run->sbuf[n / 2] ^= 0x5a; /* a transfer that corrupts one byte */
        run->corrupt_pending = 0;
    }
}

/* ---- the three patterns: seconds per message, one way --------------------------- */
static double exchange_semi(lt_run *run, int peer)
{
    const lt_config *cfg = run->cfg;
    int n = (int)cfg->size, lower = run->rank < peer;
    MPI_Comm w = MPI_COMM_WORLD;
    uint64_t t0 = cb_now_ns();
    for (long m = 0; m < cfg->warmup + cfg->nmsg; m++) {
        if (m == cfg->warmup)
            t0 = cb_now_ns();
        if (lower) {
            slow_link_delay(run, peer);
            lt_mpi_check(MPI_Send(run->sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
            lt_mpi_check(MPI_Recv(run->rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
        } else {
            lt_mpi_check(MPI_Recv(run->rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
            lt_mpi_check(MPI_Send(run->sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
        }
    }
    return (cb_now_ns() - t0) / 1e9 / (2.0 * cfg->nmsg);
}

static double exchange_uni(lt_run *run, int peer)
{
    const lt_config *cfg = run->cfg;
    int n = (int)cfg->size, lower = run->rank < peer;
    MPI_Comm w = MPI_COMM_WORLD;
    uint64_t t0 = cb_now_ns();
    for (int phase = 0; phase < 2; phase++) {
        long count = phase ? cfg->nmsg : cfg->warmup;
        if (!count)
            continue;
        if (phase)
            t0 = cb_now_ns();
        /* a zero-byte acknowledgement closes each phase: the sender's time
         * includes the last message's arrival */
        for (long m = 0; m < count; m++) {
            if (lower) {
                slow_link_delay(run, peer);
                lt_mpi_check(MPI_Send(run->sbuf, n, MPI_BYTE, peer, TAG_DATA, w), "MPI_Send");
            } else {
                lt_mpi_check(MPI_Recv(run->rbuf, n, MPI_BYTE, peer, TAG_DATA, w, MPI_STATUS_IGNORE), "MPI_Recv");
            }
        }
        if (lower)
            lt_mpi_check(MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, w, MPI_STATUS_IGNORE), "MPI_Recv");
        else
            lt_mpi_check(MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, w), "MPI_Send");
    }
    return (cb_now_ns() - t0) / 1e9 / (double)cfg->nmsg;
}

static double exchange_bi(lt_run *run, int peer)
{
    const lt_config *cfg = run->cfg;
    int n = (int)cfg->size, lower = run->rank < peer;
    uint64_t t0 = cb_now_ns();
    for (long m = 0; m < cfg->warmup + cfg->nmsg; m++) {
        if (m == cfg->warmup)
            t0 = cb_now_ns();
        if (lower)
            slow_link_delay(run, peer);
        lt_mpi_check(MPI_Sendrecv(run->sbuf, n, MPI_BYTE, peer, TAG_DATA, run->rbuf, n, MPI_BYTE, peer,
                                  TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv");
    }
    return (cb_now_ns() - t0) / 1e9 / (double)cfg->nmsg;
}

/* One pair's exchange: warm-up, timed messages, payload check. Both ranks
 * return the time the lower rank measured and the errors both found. */
lt_pair_result lt_pair_exchange(lt_run *run, int peer, long tag)
{
    const lt_config *cfg = run->cfg;
    int lower = run->rank < peer;
    if (cfg->check_buffers)
        prepare_payload(run, peer, tag);
    double t = cfg->pattern == LT_SEMI ? exchange_semi(run, peer)
               : cfg->pattern == LT_UNI ? exchange_uni(run, peer) : exchange_bi(run, peer);
    double bad = 0;
    if (cfg->check_buffers && !(cfg->pattern == LT_UNI && lower))
        bad = check_payload(run->rbuf, cfg->size, lt_payload_seed(peer, run->rank, tag));
    double mine[2] = {t, bad}, theirs[2];
    lt_mpi_check(MPI_Sendrecv(mine, 2, MPI_DOUBLE, peer, TAG_RESULT, theirs, 2, MPI_DOUBLE, peer,
                              TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Sendrecv");
    lt_pair_result r = {lower ? t : theirs[0], bad + theirs[1]};
    return r;
}

/* ---- per-step figures, reduced to rank 0; each pair counted once, by its lower rank */
typedef struct { double v; int rank; } double_int;
typedef struct {
    double_int max_t, min_t, max_err; /* min_t holds -t: one MAXLOC for all three */
    double sum_t, count, sum_err, sum_bw, err_pairs;
} step_stats;

static void reduce_step(const lt_run *run, int partner, lt_pair_result r, step_stats *out)
{
    double_int loc[3] = {{-INFINITY, run->rank}, {-INFINITY, run->rank}, {-1, run->rank}};
    double sums[5] = {0, 0, 0, 0, 0};
    if (partner > run->rank) {
        loc[0].v = r.t;
        loc[1].v = -r.t;
        loc[2].v = r.errors;
        sums[0] = r.t;
        sums[1] = 1;
        sums[2] = r.errors;
        sums[3] = lt_gbits(run->cfg, r.t);
        sums[4] = r.errors > 0;
    }
    double_int oloc[3];
    double osums[5];
    lt_mpi_check(MPI_Reduce(loc, oloc, 3, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD), "MPI_Reduce");
    lt_mpi_check(MPI_Reduce(sums, osums, 5, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    if (run->rank == 0) {
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

void lt_record_error(lt_run *run, int a, int b, double bytes, const char *where)
{
    if (run->nerr < LT_MAX_ERROR_PAIRS) {
        run->err_list[2 * run->nerr] = a;
        run->err_list[2 * run->nerr + 1] = b;
        run->nerr++;
    }
    fprintf(cb_human(), "BUFFER CHECK FAILED %s: pair %d <-> %d received %.0f wrong bytes\n", where, a, b, bytes);
}

/* Rank 0's running figures of one iteration. */
typedef struct {
    uint64_t t0;
    double min, max, sum, count;
    int min_a, min_b, max_a, max_b;
} progress;

/* Rank 0: the step's figures into the iteration's, its errors, its progress line. */
static void step_done(lt_run *run, long k, long step, const step_stats *st, progress *p)
{
    const lt_config *cfg = run->cfg;
    const lt_sched *s = &run->sched;
    int maxb = lt_partner(s, st->max_t.rank, step);
    if (st->count > 0) {
        if (st->max_t.v > p->max) {
            p->max = st->max_t.v;
            p->max_a = st->max_t.rank;
            p->max_b = maxb;
        }
        if (st->min_t.v < p->min) {
            p->min = st->min_t.v;
            p->min_a = st->min_t.rank;
            p->min_b = lt_partner(s, st->min_t.rank, step);
        }
        p->sum += st->sum_t;
        p->count += st->count;
    }
    run->err_bytes += st->sum_err;
    run->err_pairs += st->err_pairs;
    if (st->sum_err > 0) {
        char where[64];
        snprintf(where, sizeof where, "in step %ld", k + 1);
        lt_record_error(run, st->max_err.rank, lt_partner(s, st->max_err.rank, step), st->max_err.v, where);
        if (st->err_pairs > 1)
            fprintf(cb_human(), "  (and %.0f more pairs in that step)\n", st->err_pairs - 1);
    }
    if (cfg->quiet)
        return;
    char t1[32], t2[32], t3[32], t4[32], t5[32];
    double el = (cb_now_ns() - p->t0) / 1e9;
    double eta = el / (double)(k + 1) * (double)(s->nsteps - k - 1);
    if (st->count > 0)
        fprintf(cb_human(), "Step %*ld/%ld: %3.0f pairs  min %s (%.3f Gbit/s)  avg %s  max %s (%.3f Gbit/s, %d<->%d)"
               "  | so far: min %s max %s | %.2f s, ETA %.2f s\n",
               (int)snprintf(NULL, 0, "%ld", s->nsteps), k + 1, s->nsteps, st->count,
               lt_fmt_time(st->min_t.v, t1, sizeof t1), lt_gbits(cfg, st->min_t.v),
               lt_fmt_time(st->sum_t / st->count, t2, sizeof t2), lt_fmt_time(st->max_t.v, t3, sizeof t3),
               lt_gbits(cfg, st->max_t.v), st->max_t.rank, maxb, lt_fmt_time(p->min, t4, sizeof t4),
               lt_fmt_time(p->max, t5, sizeof t5), el, eta);
    else
        fprintf(cb_human(), "Step %ld/%ld: no pairs | %.2f s, ETA %.2f s\n", k + 1, s->nsteps, el, eta);
    fflush(cb_human());
}

/* One step: all its pairs at once (or one after another with --serial-tests),
 * then the step's figures at rank 0 and its progress line. */
static void run_step(lt_run *run, long k, long iteration, progress *p)
{
    const lt_sched *s = &run->sched;
    long step = s->order[k], tag = (iteration - 1) * s->nsteps + step + 1;
    int partner = lt_partner(s, run->rank, step);
    lt_pair_result res = {NAN, 0};
    if (run->cfg->serial) {
        for (int a = 0; a < run->size; a++) {
            int b = lt_partner(s, a, step);
            if (b <= a)
                continue;
            lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            if (run->rank == a || run->rank == b)
                res = lt_pair_exchange(run, partner, tag);
        }
    } else {
        lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        if (partner >= 0)
            res = lt_pair_exchange(run, partner, tag);
    }
    if (partner >= 0 && !(run->row[partner] >= res.t)) /* the slowest over iterations */
        run->row[partner] = res.t;
    step_stats st;
    reduce_step(run, partner, res, &st);
    if (run->rank == 0)
        step_done(run, k, step, &st, p);
}

static void print_iteration(const lt_run *run, long iteration, const progress *p)
{
    const lt_config *cfg = run->cfg;
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

int lt_stop_agreed(lt_run *run)
{
    /* mpirun (and srun) pass the signal to every rank, but not at the same instant: the
     * ranks agree, so that all leave the schedule at the same step and no rank waits in an
     * exchange with one that has gone */
    int mine = cb_interrupted != 0, any = 0;
    lt_mpi_check(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    if (any)
        run->interrupted = 1;
    return any;
}

/* The parallel test, repeated for --min-iterations / --min-runtime; a signal stops it
 * before the next step (the step under way, one exchange per pair, ends first). */
void lt_run_iterations(lt_run *run)
{
    const lt_config *cfg = run->cfg;
    for (long iteration = 1;; iteration++) {
        progress p = {.t0 = cb_now_ns(), .min = INFINITY, .min_a = -1, .min_b = -1, .max_a = -1, .max_b = -1};
        if (run->rank == 0 && !cfg->quiet && (cfg->min_iterations > 1 || cfg->min_runtime > 0))
            fprintf(cb_human(), "Iteration %ld\n", iteration);
        for (long k = 0; k < run->sched.nsteps; k++) {
            if (lt_stop_agreed(run)) {
                run->iterations = iteration;
                if (run->rank == 0)
                    fprintf(cb_human(), "Interrupted in iteration %ld before step %ld of %ld\n", iteration,
                            k + 1, run->sched.nsteps);
                return;
            }
            run_step(run, k, iteration, &p);
        }
        if (run->rank == 0)
            print_iteration(run, iteration, &p);
        int more = iteration < cfg->min_iterations || (cb_now_ns() - run->t0_ns) / 1e9 < cfg->min_runtime;
        lt_mpi_check(MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
        if (!more) {
            run->iterations = iteration;
            return;
        }
    }
}
