/* The results file: a NumPy .npz (npz.h) that rank 0 writes while it asks each
 * rank for its row of the matrix in turn, so no rank holds more than O(N). */
#include "run.h"
#include "buffers.h"
#include "exchange.h"
#include "monitor.h"
#include "npz.h"
#include "options.h"
#include "report.h"
#include "retest.h"
#include "setup.h"
#include "world.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_ROW = 4 };

/* Rank 0: time[N,N], one row at a time. */
static void stream_matrix(const lt_world *w, const double *my_row, lt_npz *z)
{
    int n = w->size;
    double *buf = malloc(sizeof(double) * (size_t)n);
    if (!buf)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    uint64_t shape[2] = {(uint64_t)n, (uint64_t)n};
    lt_npz_begin(z, "time", "f8", 8, shape, 2);
    for (int r = 0; r < n; r++) {
        const double *row = my_row;
        if (r > 0) {
            lt_mpi_check(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_ROW, MPI_COMM_WORLD), "MPI_Send");
            lt_mpi_check(MPI_Recv(buf, n, MPI_DOUBLE, r, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            row = buf;
        }
        lt_npz_write(z, row, sizeof(double) * (size_t)n);
    }
    free(buf);
    lt_npz_end(z);
}

/* hosts, slowest_pairs, slowest_time, retest_time, error_pairs. */
static void write_arrays(const lt_world *w, const lt_collected *c, const lt_errors *e, lt_npz *z)
{
    int n = w->size, nslow = c->nretest, nerr = e->n;
    const char **names = malloc(sizeof(char *) * (size_t)n);
    int64_t *pairs = malloc(sizeof(int64_t) * 2 * (size_t)(nslow + 1));
    double *first = malloc(sizeof(double) * (size_t)(nslow + 1));
    int64_t *ep = malloc(sizeof(int64_t) * 2 * (size_t)(nerr + 1));
    if (!names || !pairs || !first || !ep)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int r = 0; r < n; r++)
        names[r] = w->hosts + (size_t)r * LT_HOST_LEN;
    lt_npz_strings(z, "hosts", names, (size_t)n);
    for (int k = 0; k < nslow; k++) {
        pairs[2 * k] = (int64_t)c->slow[k].a;
        pairs[2 * k + 1] = (int64_t)c->slow[k].b;
        first[k] = c->slow[k].t;
    }
    uint64_t s2[2] = {(uint64_t)nslow, 2}, s1[1] = {(uint64_t)nslow};
    lt_npz_array(z, "slowest_pairs", "i8", 8, s2, 2, pairs);
    lt_npz_array(z, "slowest_time", "f8", 8, s1, 1, first);
    lt_npz_array(z, "retest_time", "f8", 8, s1, 1, c->retest);
    for (int k = 0; k < 2 * nerr; k++)
        ep[k] = e->list[k];
    uint64_t se[2] = {(uint64_t)nerr, 2};
    lt_npz_array(z, "error_pairs", "i8", 8, se, 2, ep);
    free(names);
    free(pairs);
    free(first);
    free(ep);
}

/* Monitoring arrays: task_memory_kib[N,4] (resident, peak, locked, huge pages); with --all-to-all alltoall_time[2,N]; with
 * --num-randomize-tasks task_order[V,N] (each permuted order: the ID every rank played). */
static void write_monitoring(const lt_monitor *m, lt_order *o, const lt_world *w, const lt_config *cfg,
                             lt_npz *z)
{
    int n = w->size;
    uint64_t sm[2] = {(uint64_t)n, LT_MEM_FIELDS};
    lt_npz_array(z, "task_memory_kib", "f8", 8, sm, 2, m->task_mem);
    if (cfg->all_to_all && m->a2a_all) {
        uint64_t sa[2] = {2, (uint64_t)n};
        lt_npz_array(z, "alltoall_time", "f8", 8, sa, 2, m->a2a_all);
    }
    long v = cfg->num_randomize_tasks;
    if (v > 0) {
        uint64_t so[2] = {(uint64_t)v, (uint64_t)n};
        lt_npz_begin(z, "task_order", "i8", 8, so, 2);
        int64_t *row = malloc(sizeof(int64_t) * (size_t)n);
        if (!row)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int p = 1; p <= v; p++) { /* the orders are rebuilt here, without communication */
            lt_task_order(o, w, cfg, p);
            for (int r = 0; r < n; r++)
                row[r] = o->vid[r];
            lt_npz_write(z, row, sizeof(int64_t) * (size_t)n);
        }
        lt_task_order(o, w, cfg, 0);
        free(row);
        lt_npz_end(z);
    }
}

/* meta: JSON text describing the run. */
static void write_meta(const lt_run *run, lt_npz *z)
{
    cb_json m;
    cbj_init(&m);
    cbj_obj_begin(&m, NULL);
    cbj_str(&m, "format", "cb-linktest results 1");
    cbj_str(&m, "test", "cb-linktest");
    cbj_str(&m, "version", CB_VERSION);
    cbj_str(&m, "test_version", LT_TEST_VERSION);
    cbj_str(&m, "started", run->world.started);
    cbj_num(&m, "duration_s", run->test.duration);
    cbj_bool(&m, "interrupted", run->test.interrupted); /* a signal stopped it: NaN = not reached */
    cbj_int(&m, "ranks", run->world.size);
    cbj_int(&m, "hosts", run->world.nhosts);
    cbj_int(&m, "steps", run->order.sched.nsteps);
    cbj_int(&m, "iterations", run->test.iterations);
    cbj_int(&m, "buffers_per_ring", run->bufs.nbuf);
    cbj_str(&m, "allocator", lt_alloc_descr(&run->bufs));
    cbj_str(&m, "gpu_transfer", run->bufs.gpu_mode == LT_GPU_AWARE    ? "cuda-aware"
                                : run->bufs.gpu_mode == LT_GPU_STAGED ? "staged"
                                                                      : "none");
    cbj_str(&m, "time_unit", "s");
    cbj_str(&m, "time", "seconds per message, one way, as the lower rank of the pair measured it; "
                        "symmetric; NaN where the pair was not tested; over several iterations "
                        "each pair's slowest");
    cbj_str(&m, "command", run->cfg->argv_line);
    cbj_obj_begin(&m, "options");
    lt_json_options(&m, run->cfg);
    cbj_obj_end(&m);
    cbj_obj_end(&m);
    lt_npz_string(z, "meta", m.buf);
    cbj_free(&m);
}

int lt_write_results(lt_run *run)
{
    const char *path = run->cfg->output;
    const lt_world *w = &run->world;
    int ok = 1;
    lt_npz z;
    if (w->rank == 0) {
        memset(&z, 0, sizeof z);
        if (lt_npz_open(&z, path) != 0)
            ok = 0;
    }
    lt_mpi_check(MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    if (!ok) {
        if (w->rank == 0)
            cb_warn("cannot write the results file %s: %s", path, z.error);
        return -1;
    }
    if (w->rank != 0) {
        /* wait for rank 0 to ask, so rows do not pile up at rank 0 */
        lt_mpi_check(MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_ROW, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        lt_mpi_check(MPI_Send(run->test.row, w->size, MPI_DOUBLE, 0, TAG_ROW, MPI_COMM_WORLD), "MPI_Send");
        return 0;
    }
    stream_matrix(w, run->test.row, &z);
    write_arrays(w, &run->coll, &run->errors, &z);
    write_monitoring(&run->mon, &run->order, w, run->cfg, &z);
    write_meta(run, &z);
    if (lt_npz_close(&z) != 0) {
        cb_warn("cannot write the results file %s: %s", path, z.error);
        return -1;
    }
    return 0;
}
