/* Collect: the kept matrix summarized at rank 0, the slowest pairs found by a
 * top-K reduction over all rows, and their serial retest (one pair at a time
 * while the others wait), which tells a bad link from one that was only slow
 * under the load of the parallel test. */
#include "retest.h"
#include "exchange.h"
#include "monitor.h"
#include "options.h"
#include "report.h"
#include "run.h"
#include "world.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* ---- the slowest pairs: a top-K list merged by a reduction ------------------- */
/* Inserts e into list[k], slowest first (ties: by a, then b). */
static void slow_insert(lt_slow *list, int k, lt_slow e)
{
    int i = k;
    while (i > 0 && (list[i - 1].t < e.t ||
                     (list[i - 1].t == e.t && (list[i - 1].a > e.a ||
                                               (list[i - 1].a == e.a && list[i - 1].b > e.b)))))
        i--;
    if (i >= k)
        return;
    memmove(&list[i + 1], &list[i], sizeof *list * (size_t)(k - i - 1));
    list[i] = e;
}

/* MPI_Op on lists of K entries: the datatype is K entries (3K doubles). */
static void slow_merge(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes = 0;
    MPI_Type_size(*type, &bytes);
    int k = bytes / (int)sizeof(lt_slow);
    lt_slow *a = in, *b = inout;
    for (int e = 0; e < *len; e++, a += k, b += k)
        for (int i = 0; i < k && a[i].t >= 0; i++)
            slow_insert(b, k, a[i]);
}

/* The slowest slow_k pairs of all rows into c->slow, on every rank. */
static void find_slowest(lt_collected *c, const lt_slow *mine)
{
    MPI_Datatype slow_type;
    MPI_Op slow_op;
    lt_mpi_check(MPI_Type_contiguous(3 * c->slow_k, MPI_DOUBLE, &slow_type), "MPI_Type_contiguous");
    lt_mpi_check(MPI_Type_commit(&slow_type), "MPI_Type_commit");
    lt_mpi_check(MPI_Op_create(slow_merge, 1, &slow_op), "MPI_Op_create");
    lt_mpi_check(MPI_Allreduce(mine, c->slow, 1, slow_type, slow_op, MPI_COMM_WORLD), "MPI_Allreduce");
    MPI_Op_free(&slow_op);
    MPI_Type_free(&slow_type);
    c->nslow = 0;
    while (c->nslow < c->slow_k && c->slow[c->nslow].t >= 0)
        c->nslow++;
}

/* Summary at rank 0, and the slowest num_slowest + 1 pairs on every rank
 * (one more than retested: it bounds every pair not retested). */
static void summarize(lt_collected *c, const lt_world *w, const lt_config *cfg, const double *row)
{
    typedef struct { double v; int rank; } double_int;
    double_int loc[2] = {{-INFINITY, w->rank}, {-INFINITY, w->rank}}, oloc[2];
    double sums[3] = {0, 0, 0}, osums[3];
    lt_slow *mine = malloc(sizeof(lt_slow) * (size_t)c->slow_k);
    if (!mine)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < c->slow_k; i++)
        mine[i] = (lt_slow){-1, -1, -1};
    for (int j = w->rank + 1; j < w->size; j++) {
        double t = row[j];
        if (isnan(t))
            continue;
        if (t > loc[0].v)
            loc[0].v = t;
        if (-t > loc[1].v)
            loc[1].v = -t;
        sums[0] += t;
        sums[1] += 1;
        sums[2] += lt_gbits(cfg, t);
        slow_insert(mine, c->slow_k, (lt_slow){t, w->rank, j});
    }
    lt_mpi_check(MPI_Reduce(loc, oloc, 2, MPI_DOUBLE_INT, MPI_MAXLOC, 0, MPI_COMM_WORLD), "MPI_Reduce");
    lt_mpi_check(MPI_Reduce(sums, osums, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD), "MPI_Reduce");
    find_slowest(c, mine);
    free(mine);
    if (w->rank == 0) {
        c->sum.max_t = oloc[0].v;
        c->sum.min_t = -oloc[1].v;
        c->sum.npairs = osums[1];
        c->sum.avg_t = osums[1] ? osums[0] / osums[1] : NAN;
        c->sum.avg_bw = osums[1] ? osums[2] / osums[1] : 0;
    }
}

/* The serial retest: one pair at a time while the others wait; retest[] at rank 0. */
static void retest_slowest(lt_run *run)
{
    const lt_config *cfg = run->cfg;
    const lt_world *w = &run->world;
    lt_collected *c = &run->coll;
    const lt_slow *slow = c->slow;
    int rank = w->rank;
    char t1[32], t2[32];
    if (rank == 0 && c->nretest)
        fprintf(cb_human(), "Serial retest of the %d slowest pair%s (first: parallel test, retest: alone):\n",
               c->nretest, c->nretest == 1 ? "" : "s");
    for (int k = 0; k < c->nretest; k++) {
        if (lt_stop_agreed(&run->test.interrupted)) { /* the pairs not retested count with their parallel time */
            c->nretest = k;
            break;
        }
        int a = (int)slow[k].a, b = (int)slow[k].b;
        lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        lt_pair_result r = {.t = -1};
        if (rank == a || rank == b)
            r = lt_pair_exchange(cfg, &run->bufs, &run->faults, rank, rank == a ? b : a, -(long)(k + 1));
        double v[3] = {rank == a ? r.t : -1, rank == a ? r.errors : 0, rank == a ? r.first_bad : 0}, o[3];
        lt_mpi_check(MPI_Reduce(v, o, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD), "MPI_Reduce");
        if (rank != 0)
            continue;
        c->retest[k] = o[0];
        if (o[1] > 0) {
            run->errors.bytes += o[1];
            run->errors.pairs++;
            lt_record_error(&run->errors, a, b, o[1], o[2], "in the retest");
        }
        fprintf(cb_human(), "%3d: %d <-> %d (%s <-> %s): 1st %s (%.3f Gbit/s)  retest %s (%.3f Gbit/s)  retest/1st %.2f\n",
               k + 1, a, b, w->hosts + (size_t)a * LT_HOST_LEN, w->hosts + (size_t)b * LT_HOST_LEN,
               lt_fmt_time(slow[k].t, t1, sizeof t1), lt_gbits(cfg, slow[k].t),
               lt_fmt_time(o[0], t2, sizeof t2), lt_gbits(cfg, o[0]), o[0] / slow[k].t);
        fflush(cb_human());
    }
}

/* The summary, the slowest pairs and their retest; the run's duration. */
void lt_collect(lt_run *run)
{
    lt_collected *c = &run->coll;
    long num_slowest = run->cfg->num_slowest;
    c->slow_k = (int)num_slowest + 1;
    c->slow = malloc(sizeof(lt_slow) * (size_t)c->slow_k);
    c->retest = malloc(sizeof(double) * (size_t)c->slow_k);
    if (!c->slow || !c->retest)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    summarize(c, &run->world, run->cfg, run->test.row);
    lt_phase(&run->mon, &run->world, "search slow");
    c->nretest = c->nslow < num_slowest ? c->nslow : (int)num_slowest;
    if (run->test.interrupted) /* interrupted in the parallel test: no retest */
        c->nretest = 0;
    retest_slowest(run);
    lt_phase(&run->mon, &run->world, "test slow");
    run->test.duration = (cb_now_ns() - run->world.t0_ns) / 1e9;
}
