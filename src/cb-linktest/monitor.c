/* Monitoring on stderr, as LinkTest prints it: the time of each phase outside the
 * measurement ("timings[000] [phase] t= ..."), the memory of every task after the
 * set-up ("task[000001] on HOST (  1) mem= ... kiB"), the allocator; and --all-to-all,
 * the MPI_Alltoall timed before and after the main test. Rank 0 prints. */
#include "monitor.h"
#include "buffers.h"
#include "gpu.h"
#include "options.h"
#include "report.h"
#include "world.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

/* Tasks listed one per line up to this many; beyond, the extremes and the average. */
#define MEM_LIST_MAX 1024

static void fmt_dt(double s, char *buf, size_t len)
{
    if (s < 1e-3)
        snprintf(buf, len, "%.5f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.5f ms", s * 1e3);
    else
        snprintf(buf, len, "%.5f s", s);
}

/* Ends the phase under way (named) on rank 0's clock and starts the next; the first
 * phase starts with the run. */
void lt_phase(lt_monitor *m, const lt_world *w, const char *name)
{
    uint64_t now = cb_now_ns();
    if (w->rank == 0 && name) {
        char t[48];
        fmt_dt((now - (m->phase_ns ? m->phase_ns : w->t0_ns)) / 1e9, t, sizeof t);
        fprintf(stderr, "timings[000] [%s] t= %s\n", name, t);
        fflush(stderr);
    }
    m->phase_ns = now;
}

/* Lines "Key:   N kB" of a /proc file into kib[] (left as they are where absent). */
static void read_proc(const char *path, const char *const *keys, int nkeys, double *kib)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f))
        for (int i = 0; i < nkeys; i++)
            if (strncmp(line, keys[i], strlen(keys[i])) == 0)
                kib[i] = strtod(line + strlen(keys[i]), NULL);
    fclose(f);
}

/* Resident (VmRSS), peak (VmHWM), locked (VmLck) and transparent huge pages
 * (AnonHugePages) of this process in KiB (NaN where /proc has none). */
static void read_memory(double kib[LT_MEM_FIELDS])
{
    static const char *const status[] = {"VmRSS:", "VmHWM:", "VmLck:"}, *const smaps[] = {"AnonHugePages:"};
    for (int i = 0; i < LT_MEM_FIELDS; i++)
        kib[i] = NAN;
    read_proc("/proc/self/status", status, 3, kib);
    read_proc("/proc/self/smaps_rollup", smaps, 1, kib + 3);
}

static void print_task(const lt_monitor *mon, const lt_world *w, int r)
{
    const double *m = mon->task_mem + LT_MEM_FIELDS * (size_t)r;
    fprintf(stderr, "task[%06d] on %s (%3d) mem= %.4f kiB peak= %.4f kiB locked= %.4f kiB thp= %.4f kiB\n", r,
            w->hosts + (size_t)r * LT_HOST_LEN, w->host_id[r], m[0], m[1], m[2], m[3]);
}

/* Every task's memory after the set-up (buffers allocated and touched), at rank 0. */
void lt_report_memory(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg)
{
    read_memory(m->mem_kib);
    if (w->rank == 0) {
        m->task_mem = malloc(sizeof(double) * LT_MEM_FIELDS * (size_t)w->size);
        if (!m->task_mem)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    }
    lt_mpi_check(MPI_Gather(m->mem_kib, LT_MEM_FIELDS, MPI_DOUBLE, m->task_mem, LT_MEM_FIELDS, MPI_DOUBLE, 0,
                            MPI_COMM_WORLD),
                 "MPI_Gather");
    if (w->rank != 0)
        return;
    fprintf(stderr, "info: Using %s, %d send + %d receive buffer%s of %zu B per task%s\n", lt_alloc_descr(b),
            b->nbuf, b->nbuf, b->nbuf == 1 ? "" : "s", cfg->size,
            b->gpu_mode == LT_GPU_AWARE    ? " on the GPU, handed to a CUDA-aware MPI"
            : b->gpu_mode == LT_GPU_STAGED ? " on the GPU, staged through pinned host memory"
                                           : "");
    fprintf(stderr, "info: buffer contents: %s; CRC-32 of rank 0's send buffer 0: 0x%08x\n",
            cfg->randomize_buffers ? "pseudo-random (--randomize-buffers)" : "zeros",
            (unsigned)lt_buf_crc(b, b->sring[0], cfg->size));
    int lo = 0, hi = 0;
    double sum = 0;
    for (int r = 0; r < w->size; r++) {
        if (w->size <= MEM_LIST_MAX)
            print_task(m, w, r);
        double v = m->task_mem[LT_MEM_FIELDS * (size_t)r];
        lo = v < m->task_mem[LT_MEM_FIELDS * (size_t)lo] ? r : lo;
        hi = v > m->task_mem[LT_MEM_FIELDS * (size_t)hi] ? r : hi;
        sum += v;
    }
    if (w->size > MEM_LIST_MAX) {
        fprintf(stderr, "memory of %d tasks: average %.4f kiB; least and most:\n", w->size, sum / w->size);
        print_task(m, w, lo);
        print_task(m, w, hi);
    }
    fflush(stderr);
}

/* ---- --all-to-all ------------------------------------------------------------------- */
/* Seconds per MPI_Alltoall of size bytes to every rank, on this rank: -w calls to warm
 * up, then -n timed (started together after a barrier). 0 when the buffers could not be
 * had: every rank agrees and the run exits 3. */
static double time_alltoall(lt_buffers *b, const lt_world *w, const lt_config *cfg)
{
    size_t bytes = cfg->size * (size_t)w->size;
    int gpu = lt_on_gpu(b), staged = b->gpu_mode == LT_GPU_STAGED;
    char *sb = gpu ? lt_gpu_alloc(bytes) : lt_host_alloc(b, bytes);
    char *rb = gpu ? lt_gpu_alloc(bytes) : lt_host_alloc(b, bytes);
    char *hs = staged ? lt_gpu_host_alloc(bytes) : NULL, *hr = staged ? lt_gpu_host_alloc(bytes) : NULL;
    char msg[160];
    snprintf(msg, sizeof msg, "--all-to-all: cannot allocate two buffers of %zu bytes (-s times the ranks) "
             "on some rank", bytes);
    lt_all_ok_or_exit(w, sb && rb && (!staged || (hs && hr)), CB_EXIT_CANNOT_RUN, msg);
    if (gpu) {
        lt_gpu_zero(sb, bytes);
        lt_gpu_zero(rb, bytes);
    } else {
        memset(sb, 0, bytes);
        memset(rb, 0, bytes);
    }
    int n = (int)cfg->size;
    uint64_t t0 = 0;
    for (long m = 0; m < cfg->warmup + cfg->nmsg; m++) {
        if (m == cfg->warmup) {
            lt_mpi_check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            t0 = cb_now_ns();
        }
        if (staged)
            lt_gpu_to_host(hs, sb, bytes);
        lt_mpi_check(MPI_Alltoall(staged ? hs : sb, n, MPI_BYTE, staged ? hr : rb, n, MPI_BYTE, MPI_COMM_WORLD),
                     "MPI_Alltoall");
        if (staged)
            lt_gpu_from_host(rb, hr, bytes);
    }
    double t = (cb_now_ns() - t0) / 1e9 / (double)cfg->nmsg;
    if (gpu) {
        lt_gpu_free(sb);
        lt_gpu_free(rb);
        lt_gpu_host_free(hs);
        lt_gpu_host_free(hr);
    } else {
        lt_host_free(b, sb, bytes);
        lt_host_free(b, rb, bytes);
    }
    return t;
}

/* Before (after = 0) or after (1) the main test: every rank's time to rank 0, which prints
 * the average and the slowest rank. */
void lt_all_to_all(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg, int after)
{
    if (w->rank == 0 && !m->a2a_all) {
        m->a2a_all = malloc(sizeof(double) * 2 * (size_t)w->size);
        if (!m->a2a_all)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int i = 0; i < 2 * w->size; i++)
            m->a2a_all[i] = NAN;
    }
    m->a2a[after] = time_alltoall(b, w, cfg);
    lt_mpi_check(MPI_Gather(&m->a2a[after], 1, MPI_DOUBLE, w->rank == 0 ? m->a2a_all + (size_t)after * w->size
                                                                        : NULL, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD),
                 "MPI_Gather");
    lt_phase(m, w, after ? "all-to-all after" : "all-to-all before");
    if (w->rank != 0)
        return;
    const double *t = m->a2a_all + (size_t)after * w->size;
    int slow = 0;
    double sum = 0;
    for (int r = 0; r < w->size; r++) {
        sum += t[r];
        slow = t[r] > t[slow] ? r : slow;
    }
    char t1[32], t2[32];
    double per_rank = (double)cfg->size * (w->size - 1);
    fprintf(cb_human(), "All-to-all %s the test: MPI_Alltoall of %zu B per pair, %ld timed: avg %s, slowest rank %d "
            "%s per call (%.3f Gbit/s sent per rank)\n", after ? "after" : "before", cfg->size, cfg->nmsg,
            lt_fmt_time(sum / w->size, t1, sizeof t1), slow, lt_fmt_time(t[slow], t2, sizeof t2),
            cb_gbits(per_rank, t[slow]));
    fflush(cb_human());
}
