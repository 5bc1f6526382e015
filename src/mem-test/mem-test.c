/* mem-test: NUMA-aware DRAM traffic that emulates a streaming application's
 * writes, reads, copies and corner turns at a desired rate (src/mem-test/README.md).
 * One worker thread per core of each selected NUMA domain, bound to that core;
 * each worker owns some stages of the stations placed on its domain, with
 * buffers allocated on that domain, and runs their blocks earliest-deadline
 * first on a fixed schedule.
 *
 * main() runs the stages of one measurement on one explicit run state (mt_run):
 * parse the options, plan (domains, threads, jobs, rings), run (start the workers
 * on one tick, show progress), collect (totals), diagnose (per operation, per
 * domain, verification) and emit (the JSON document and the results block of
 * docs/kernel-contract.md). */
#include "../common/cb_common.h"
#include "memops.h"
#include "options.h"
#include "workload.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define SLOT_ALIGN 4096

typedef struct mt_run mt_run;

typedef struct job {
    mt_stage st;
    int station;
    size_t slots, stride;      /* ring of slots, each stride bytes apart */
    size_t ring_bytes;
    char *src, *dst;           /* rings on the domain's node (NULL if unused) */
    uint64_t *slot_sum;        /* known sums of the read rings */
    double period_ns;
    uint64_t next_k, nblocks;
    uint64_t seed_base;
} job;

typedef struct worker {
    mt_run *run;
    int domain;                /* index into run->domains */
    int pu;
    job *jobs;
    int njobs;
    double load_gbits;
    pthread_t th;
    /* results, written by the worker only */
    uint64_t bytes[MT_NOPS], busy_ns[MT_NOPS];
    uint64_t blocks, late, missed, verify_errors, last_done_ns;
    _Atomic uint64_t progress_bytes, progress_blocks, progress_late;
    char error[256];
} worker;

typedef struct domain {
    const cb_numa *node;
    int stations, nthreads;
    double desired_gbits;
    size_t buffer_bytes;
    /* collected: bytes moved, late (or never processed) and scheduled blocks */
    uint64_t bytes, late, scheduled;
} domain;

typedef struct totals {
    uint64_t bytes[MT_NOPS], busy_ns[MT_NOPS];
    uint64_t blocks, late, missed, errors, last_done_ns;
} totals;

/* The run state: what each stage fills in for the next. */
struct mt_run {
    mt_config cfg;             /* parse */
    /* plan */
    cb_topo topo;
    domain *domains;
    int ndomains;
    worker *workers;
    int nworkers;
    char started[64], host[256];
    double desired_gbits;
    double sched_s;            /* the schedule: whole periods (paced) or --duration (--max) */
    int fault_op;              /* MEM_TEST_FAULT: skip one block's work of this op */
    int fault_element;         /* MEM_TEST_FAULT=transpose-element: corrupt one turned element */
    atomic_int fault_pending;
    /* run */
    pthread_barrier_t ready, go;
    uint64_t t0, sched_end, hard_stop;
    atomic_int finished;
    _Atomic uint64_t stop_ns;  /* when a signal stopped the run (cb_interrupted); 0: not */
    /* collect */
    totals tot;
    double elapsed_s, measured_gbits, pct, late_pct;
    int passed;
    int interrupted;           /* a signal stopped the run: the figures cover up to stop_ns */
};

/* ---- plan -------------------------------------------------------------------- */
/* MEM_TEST_FAULT=OP makes one block of OP skip its data movement, so the tests can
 * prove that verification catches it; MEM_TEST_FAULT=transpose-element lets one
 * block's corner turn run (with whichever kernel runs) and then corrupts one
 * transposed element, which the check of that block must report. */
static void plan_fault(mt_run *run)
{
    const char *fault = getenv("MEM_TEST_FAULT");
    run->fault_op = -1;
    if (!fault || !*fault)
        return;
    for (int o = 0; o < MT_NOPS; o++)
        if (strcmp(fault, mt_op_names[o]) == 0)
            run->fault_op = o;
    if (strcmp(fault, "transpose-element") == 0) {
        run->fault_op = MT_TRANSPOSE;
        run->fault_element = 1;
    }
    if (run->fault_op < 0)
        cb_usage_error("MEM_TEST_FAULT must name an operation (write, read, copy, transpose) "
                       "or be transpose-element");
    atomic_store(&run->fault_pending, 1);
}

/* MEM_TEST_KERNELS=generic|sse2|avx2|avx512 forces the copy and transpose kernels and
 * MEM_TEST_BAND_ROWS the corner turn's band height (default: this CPU's best), so that
 * each can be run, compared and tested on one machine; a level the CPU lacks is a usage
 * error. */
static void plan_kernels(void)
{
    const char *name = getenv("MEM_TEST_KERNELS"), *rows = getenv("MEM_TEST_BAND_ROWS"), *why;
    if (name && *name && mt_set_kernels(name, &why) != 0)
        cb_usage_error("MEM_TEST_KERNELS=%s: %s (this CPU runs up to %s)", name, why, mt_isa());
    if (rows && *rows && mt_set_band_rows(rows, &why) != 0)
        cb_usage_error("MEM_TEST_BAND_ROWS=%s: %s", rows, why);
}

/* The NUMA nodes to use: --numa-nodes, checked against the machine, or all. */
static void plan_nodes(mt_run *run)
{
    cb_intlist *sel = &run->cfg.nodes;
    if (cb_topo_load(&run->topo) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot read the topology through hwloc");
    /* Default: every NUMA node with a core this process may use (its CPU affinity: the
     * CPUs its job got); memory-only nodes and nodes outside the job's CPUs are not. */
    if (sel->n == 0)
        for (int i = 0; i < run->topo.nnodes; i++)
            if (run->topo.nodes[i].ncores > 0)
                sel->v[sel->n++] = run->topo.nodes[i].os_index;
    if (sel->n == 0)
        cb_die(CB_EXIT_CANNOT_RUN, "no NUMA node has a CPU this process may run on");
    char have[512] = "";
    for (int i = 0; i < run->topo.nnodes; i++)
        snprintf(have + strlen(have), sizeof have - strlen(have), "%s%d", i ? "," : "",
                 run->topo.nodes[i].os_index);
    for (int i = 0; i < sel->n; i++) {
        const cb_numa *n = cb_topo_node(&run->topo, sel->v[i]);
        if (!n)
            cb_usage_error("NUMA node %d does not exist (this machine has node%s %s)",
                           sel->v[i], run->topo.nnodes > 1 ? "s" : "", have);
        if (n->ncores == 0)
            cb_usage_error("NUMA node %d has no usable core (memory-only node, or none of its "
                           "CPUs in this process's affinity)", sel->v[i]);
        if (run->cfg.threads_per_domain > n->npus)
            cb_usage_error("--threads-per-domain %d exceeds the %d CPUs of NUMA node %d",
                           run->cfg.threads_per_domain, n->npus, sel->v[i]);
    }
}

/* Stations spread evenly over the domains; threads per domain. */
static void plan_domains(mt_run *run, int nst)
{
    const mt_params *p = &run->cfg.p;
    double station_gbits = mt_desired_gbits(p) / p->stations;
    run->ndomains = run->cfg.nodes.n;
    run->domains = calloc((size_t)run->ndomains, sizeof *run->domains);
    int total_threads = 0;
    for (int d = 0; d < run->ndomains; d++) {
        domain *dm = &run->domains[d];
        dm->node = cb_topo_node(&run->topo, run->cfg.nodes.v[d]);
        dm->stations = p->stations / run->ndomains + (d < p->stations % run->ndomains);
        dm->desired_gbits = dm->stations * station_gbits;
        int want = run->cfg.threads_per_domain ? run->cfg.threads_per_domain : dm->node->ncores;
        int jobs = dm->stations * nst;
        dm->nthreads = want < jobs ? want : jobs;
        total_threads += dm->nthreads;
    }
    run->workers = calloc((size_t)total_threads, sizeof *run->workers);
    run->nworkers = total_threads;
    if (!run->domains || !run->workers)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
}

/* Jobs (station x stage) of domain d go to the least-loaded of its threads
 * (run->workers[w0...]), largest first, so threads carry similar traffic. */
static void plan_jobs(mt_run *run, int d, int w0, const mt_stage *st, int nst)
{
    domain *dm = &run->domains[d];
    int nthr = dm->nthreads;
    for (int t = 0; t < nthr; t++) {
        worker *w = &run->workers[w0 + t];
        w->run = run;
        w->domain = d;
        /* one thread per core; beyond the cores, the other PUs */
        w->pu = t < dm->node->ncores ? dm->node->core_pu[t] : dm->node->pus[t % dm->node->npus];
        w->jobs = calloc((size_t)(dm->stations * nst), sizeof(job));
        if (!w->jobs)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    }
    int order[MT_NSTAGES];
    for (int i = 0; i < nst; i++)
        order[i] = i;
    for (int i = 0; i < nst; i++) /* stages by traffic, largest first */
        for (int k = i + 1; k < nst; k++)
            if (st[order[k]].traffic_gbits > st[order[i]].traffic_gbits) {
                int tmp = order[i];
                order[i] = order[k];
                order[k] = tmp;
            }
    /* stations of this domain: s = d, d + ndomains, ... */
    for (int i = 0; i < nst; i++)
        for (int s = 0; s < dm->stations; s++) {
            worker *best = &run->workers[w0];
            for (int t = 1; t < nthr; t++)
                if (run->workers[w0 + t].load_gbits < best->load_gbits)
                    best = &run->workers[w0 + t];
            job *j = &best->jobs[best->njobs++];
            j->st = st[order[i]];
            j->station = d + s * run->ndomains;
            best->load_gbits += st[order[i]].traffic_gbits;
        }
}

static int job_buffers(const job *j)
{
    return j->st.op == MT_COPY || j->st.op == MT_TRANSPOSE ? 2 : 1;
}

/* Ring length of domain d: enough slots that the domain's buffers exceed its share of
 * the last-level cache four times, so blocks come from DRAM. */
static void plan_rings(mt_run *run, int d, int w0)
{
    domain *dm = &run->domains[d];
    size_t per_slot = 0;
    for (int t = 0; t < dm->nthreads; t++)
        for (int k = 0; k < run->workers[w0 + t].njobs; k++) {
            job *j = &run->workers[w0 + t].jobs[k];
            per_slot += job_buffers(j) * j->st.block_bytes;
        }
    size_t slots = 2;
    uint64_t cache = run->topo.l3_bytes ? run->topo.l3_bytes : (64u << 20);
    while (slots < 64 && per_slot * slots < 4 * cache)
        slots++;
    for (int t = 0; t < dm->nthreads; t++)
        for (int k = 0; k < run->workers[w0 + t].njobs; k++) {
            job *j = &run->workers[w0 + t].jobs[k];
            j->slots = slots;
            j->stride = (j->st.block_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;
            j->ring_bytes = j->stride * slots;
            j->period_ns = j->st.period_s * 1e9;
            j->seed_base = ((uint64_t)j->station << 32) ^ ((uint64_t)k << 20) ^ (uint64_t)(w0 + t);
            dm->buffer_bytes += job_buffers(j) * j->ring_bytes;
        }
}

static void plan(mt_run *run)
{
    plan_fault(run);
    plan_kernels();
    plan_nodes(run);
    mt_stage st[MT_NSTAGES];
    int nst = mt_stages(&run->cfg.p, st);
    plan_domains(run, nst);
    for (int d = 0, w0 = 0; d < run->ndomains; w0 += run->domains[d++].nthreads) {
        plan_jobs(run, d, w0, st, nst);
        plan_rings(run, d, w0);
    }
    cb_iso8601_now(run->started, sizeof run->started);
    cb_hostname(run->host, sizeof run->host);
    run->desired_gbits = mt_desired_gbits(&run->cfg.p);
    /* whole schedule periods, so the run schedules exactly the desired traffic */
    double hyper = mt_hyperperiod_s(&run->cfg.p);
    double periods = ceil(run->cfg.duration_s / hyper - 1e-9);
    run->sched_s = run->cfg.max_mode ? run->cfg.duration_s : periods * hyper;
}

static void cpus_str(const mt_run *run, int domain, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < run->nworkers; i++)
        if (run->workers[i].domain == domain)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%d", buf[0] ? "," : "",
                     run->workers[i].pu);
}

static void print_plan(const mt_run *run)
{
    const mt_params *p = &run->cfg.p;
    fprintf(cb_human(), "mem-test (cobalt-bench) %s on %s, started %s, kernels: %s\n", CB_VERSION, run->host,
           run->started, mt_isa());
    fprintf(cb_human(), "Workload: %d station%s at %.3f Gbit/s input, reduction %d, packets of %zu B, "
           "blocks of %d/%d packets, %zu-byte samples\n",
           p->stations, p->stations > 1 ? "s" : "", p->input_gbits, p->reduction,
           p->packet_bytes, p->small_packets, p->large_packets, p->sample_bytes);
    for (int d = 0; d < run->ndomains; d++) {
        const domain *dm = &run->domains[d];
        char cpus[1024];
        cpus_str(run, d, cpus, sizeof cpus);
        fprintf(cb_human(), "NUMA node %d: %d station%s, %d thread%s on CPUs %s, %.1f MiB of buffers, "
               "desired %.2f Gbit/s\n",
               dm->node->os_index, dm->stations, dm->stations == 1 ? "" : "s", dm->nthreads,
               dm->nthreads == 1 ? "" : "s", cpus, dm->buffer_bytes / 1048576.0, dm->desired_gbits);
    }
    fflush(cb_human());
}

/* Said once the workers have bound and allocated, just before the first block: the
 * setup (hundreds of MiB first touched) takes a while on a busy node, and a signal
 * before this line stops a run that has measured nothing yet. */
static void print_running(const mt_run *run)
{
    fprintf(cb_human(), "Running %s for %.2f s\n", run->cfg.max_mode ? "unpaced (--max)" : "paced", run->sched_s);
    fflush(cb_human());
}

/* ---- the worker -------------------------------------------------------------- */
static int take_fault(mt_run *run, enum mt_op op)
{
    if (run->fault_op != (int)op)
        return 0;
    int one = 1;
    return atomic_compare_exchange_strong(&run->fault_pending, &one, 0);
}

static int alloc_job(worker *w, job *j)
{
    mt_run *run = w->run;
    int node = run->domains[w->domain].node->os_index;
    enum mt_op op = j->st.op;
    /* On transparent huge pages where the kernel offers them (cb_alloc_on_node): a
     * corner turn touches a new 4 KiB page every few lines on both sides, and the TLB
     * misses (two-level walks on a VM) cost it about a fifth of its speed. */
    if (op != MT_WRITE && !(j->src = cb_alloc_on_node(&run->topo, node, j->ring_bytes)))
        return -1;
    if (op != MT_READ && !(j->dst = cb_alloc_on_node(&run->topo, node, j->ring_bytes)))
        return -1;
    /* First touch from the bound thread; sources get data, reads a known sum. */
    if (j->dst)
        memset(j->dst, 0, j->ring_bytes);
    if (j->src) {
        mt_fill((uint64_t *)j->src, j->ring_bytes / 8, j->seed_base);
        if (op == MT_READ) {
            j->slot_sum = calloc(j->slots, sizeof(uint64_t));
            if (!j->slot_sum)
                return -1;
            for (size_t s = 0; s < j->slots; s++)
                j->slot_sum[s] = mt_sum((uint64_t *)(j->src + s * j->stride), j->st.block_bytes / 8);
        }
    }
    return 0;
}

/* One block: stamp, operate (timed), verify. Returns traffic bytes. */
static uint64_t run_block(worker *w, job *j)
{
    mt_run *run = w->run;
    size_t slot = j->next_k % j->slots, bytes = j->st.block_bytes, words = bytes / 8;
    char *src = j->src ? j->src + slot * j->stride : NULL;
    char *dst = j->dst ? j->dst + slot * j->stride : NULL;
    uint64_t seed = cb_mix64(j->seed_base + j->next_k);
    size_t es = run->cfg.p.sample_bytes;
    uint64_t t0, t1, traffic = bytes;
    int bad = 0;
    switch (j->st.op) {
    case MT_WRITE:
        t0 = cb_now_ns();
        if (!take_fault(run, MT_WRITE))
            mt_fill((uint64_t *)dst, words, seed);
        t1 = cb_now_ns();
        bad = mt_check_fill((uint64_t *)dst, words, seed);
        break;
    case MT_COPY:
        mt_stamp(src, words, 8, seed);
        t0 = cb_now_ns();
        if (!take_fault(run, MT_COPY))
            mt_copy(dst, src, bytes);
        t1 = cb_now_ns();
        bad = mt_check_copy(dst, words, 8, seed);
        traffic = 2 * bytes;
        break;
    case MT_TRANSPOSE:
        mt_stamp(src, j->st.rows * j->st.cols, es, seed);
        t0 = cb_now_ns();
        if (run->fault_element) {
            mt_transpose(dst, src, j->st.rows, j->st.cols, es);
            if (take_fault(run, MT_TRANSPOSE))
                mt_fault_transposed(dst, j->st.rows, j->st.cols, es, seed);
        } else if (!take_fault(run, MT_TRANSPOSE)) {
            mt_transpose(dst, src, j->st.rows, j->st.cols, es);
        }
        t1 = cb_now_ns();
        bad = mt_check_transpose(dst, j->st.rows, j->st.cols, es, seed);
        traffic = 2 * bytes;
        break;
    default: {
        mt_stamp_sum((uint64_t *)src, words, seed, &j->slot_sum[slot]);
        t0 = cb_now_ns();
        uint64_t sum = mt_sum((uint64_t *)src, take_fault(run, MT_READ) ? words - 1 : words);
        t1 = cb_now_ns();
        bad = sum != j->slot_sum[slot];
        break;
    }
    }
    if (bad)
        w->verify_errors++;
    w->busy_ns[j->st.op] += t1 - t0;
    w->bytes[j->st.op] += traffic;
    return traffic;
}

/* Earliest deadline first among this thread's jobs; NULL when all are done. */
static job *next_job(worker *w, double *release_rel_ns)
{
    job *j = NULL;
    for (int k = 0; k < w->njobs; k++) {
        job *c = &w->jobs[k];
        double rel = (double)c->next_k * c->period_ns;
        if (c->next_k < c->nblocks && (!j || rel < *release_rel_ns)) {
            j = c;
            *release_rel_ns = rel;
        }
    }
    return j;
}

/* ---- interruption ------------------------------------------------------------ */
/* The first thread that sees the signal's flag stamps the stop; everyone stops there. */
static int stop_requested(mt_run *run)
{
    if (!cb_interrupted)
        return 0;
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&run->stop_ns, &zero, cb_now_ns());
    return 1;
}

/* Sleeps until t, in slices, so that a signal stops a slowly paced run at once;
 * returns 1 when interrupted. */
static int sleep_until_or_stop(mt_run *run, uint64_t t)
{
    for (;;) {
        if (stop_requested(run))
            return 1;
        uint64_t now = cb_now_ns();
        if (now >= t)
            return 0;
        cb_sleep_until_ns(t - now > 50000000ULL ? now + 50000000ULL : t);
    }
}

static void worker_loop(worker *w)
{
    mt_run *run = w->run;
    int paced = !run->cfg.max_mode;
    double rel = 0;
    for (job *j; (j = next_job(w, &rel));) {
        uint64_t release = run->t0 + (uint64_t)rel;
        if (paced && release > cb_now_ns() && sleep_until_or_stop(run, release))
            break;
        if (stop_requested(run) || cb_now_ns() >= run->hard_stop)
            break;
        uint64_t traffic = run_block(w, j);
        uint64_t done = cb_now_ns();
        int late = paced && done > release + (uint64_t)j->period_ns;
        j->next_k++;
        w->blocks++;
        w->late += late;
        w->last_done_ns = done;
        atomic_fetch_add_explicit(&w->progress_bytes, traffic, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->progress_blocks, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&w->progress_late, (uint64_t)late, memory_order_relaxed);
    }
    if (!paced)
        return;
    uint64_t stop = atomic_load(&run->stop_ns);
    for (int k = 0; k < w->njobs; k++) {
        const job *j = &w->jobs[k];
        uint64_t due = j->nblocks;
        /* interrupted: only the blocks whose deadline passed before the stop were due */
        if (stop) {
            double span = stop > run->t0 ? (double)(stop - run->t0) : 0;
            uint64_t by_stop = (uint64_t)floor(span / j->period_ns);
            due = by_stop < due ? by_stop : due;
        }
        w->missed += due > j->next_k ? due - j->next_k : 0;
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    mt_run *run = w->run;
    if (cb_bind_thread_to_pu(&run->topo, w->pu) != 0)
        snprintf(w->error, sizeof w->error, "cannot bind a thread to CPU %d", w->pu);
    for (int k = 0; k < w->njobs && !w->error[0]; k++)
        if (alloc_job(w, &w->jobs[k]) != 0)
            snprintf(w->error, sizeof w->error, "cannot allocate %zu MiB on NUMA node %d",
                     w->jobs[k].ring_bytes >> 20, run->domains[w->domain].node->os_index);
    pthread_barrier_wait(&run->ready);
    pthread_barrier_wait(&run->go);
    if (!w->error[0] && run->t0 != 0)
        worker_loop(w);
    atomic_fetch_add(&run->finished, 1);
    return NULL;
}

/* ---- run ------------------------------------------------------------------------ */
/* Every thread starts on the same tick; each job gets its number of blocks. */
static void schedule(mt_run *run)
{
    run->t0 = cb_now_ns() + 20000000ULL;
    run->sched_end = run->t0 + (uint64_t)(run->sched_s * 1e9);
    /* A node far behind its schedule is not waited for forever. */
    run->hard_stop = run->cfg.max_mode
                         ? run->sched_end
                         : run->sched_end + (uint64_t)(fmax(1.0, run->sched_s * 0.25) * 1e9);
    for (int i = 0; i < run->nworkers; i++)
        for (int k = 0; k < run->workers[i].njobs; k++) {
            job *j = &run->workers[i].jobs[k];
            j->nblocks = run->cfg.max_mode ? UINT64_MAX
                                           : (uint64_t)llround(run->sched_s * 1e9 / j->period_ns);
        }
}

/* Starts the workers; once all have bound and allocated, schedules and releases them.
 * A worker that could not set up stops the run (exit 3). */
static void start_workers(mt_run *run)
{
    pthread_barrier_init(&run->ready, NULL, (unsigned)run->nworkers + 1);
    pthread_barrier_init(&run->go, NULL, (unsigned)run->nworkers + 1);
    for (int i = 0; i < run->nworkers; i++)
        if (pthread_create(&run->workers[i].th, NULL, worker_main, &run->workers[i]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start worker thread %d", i);
    pthread_barrier_wait(&run->ready);
    const char *err = NULL;
    for (int i = 0; i < run->nworkers; i++)
        if (run->workers[i].error[0])
            err = run->workers[i].error;
    if (!err) {
        schedule(run);
        print_running(run);
    }
    pthread_barrier_wait(&run->go);
    if (err) {
        for (int i = 0; i < run->nworkers; i++)
            pthread_join(run->workers[i].th, NULL);
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    }
}

/* Progress lines on stderr while the workers run, then joins them. */
static void watch_workers(mt_run *run)
{
    double interval = run->sched_s > 60 ? 5.0 : 1.0;
    uint64_t next = run->t0 + (uint64_t)(interval * 1e9);
    while (atomic_load(&run->finished) < run->nworkers) {
        cb_sleep_until_ns(fmin(next, cb_now_ns() + 50000000ULL));
        stop_requested(run);
        uint64_t now = cb_now_ns();
        if (now < next || now <= run->t0 || atomic_load(&run->stop_ns))
            continue;
        next += (uint64_t)(interval * 1e9);
        if (run->cfg.quiet)
            continue;
        uint64_t b = 0, n = 0, l = 0;
        for (int i = 0; i < run->nworkers; i++) {
            b += atomic_load_explicit(&run->workers[i].progress_bytes, memory_order_relaxed);
            n += atomic_load_explicit(&run->workers[i].progress_blocks, memory_order_relaxed);
            l += atomic_load_explicit(&run->workers[i].progress_late, memory_order_relaxed);
        }
        double el = (now - run->t0) / 1e9;
        fprintf(stderr, "[%7.1f s / %.1f s] %9.2f Gbit/s, %llu blocks, late %.3f%%\n", el,
                run->sched_s, cb_gbits((double)b, el), (unsigned long long)n, n ? 100.0 * l / n : 0.0);
    }
    for (int i = 0; i < run->nworkers; i++)
        pthread_join(run->workers[i].th, NULL);
}

/* ---- collect -------------------------------------------------------------------- */
static void collect(mt_run *run)
{
    totals *t = &run->tot;
    for (int i = 0; i < run->nworkers; i++) {
        const worker *w = &run->workers[i];
        domain *dm = &run->domains[w->domain];
        for (int o = 0; o < MT_NOPS; o++) {
            t->bytes[o] += w->bytes[o];
            t->busy_ns[o] += w->busy_ns[o];
            dm->bytes += w->bytes[o];
        }
        t->blocks += w->blocks;
        t->late += w->late;
        t->missed += w->missed;
        t->errors += w->verify_errors;
        if (w->last_done_ns > t->last_done_ns)
            t->last_done_ns = w->last_done_ns;
        dm->late += w->late + w->missed;
        dm->scheduled += w->blocks + w->missed;
    }
    uint64_t stop = atomic_load(&run->stop_ns);
    run->interrupted = stop != 0;
    run->elapsed_s = run->sched_s;
    if (t->last_done_ns > run->sched_end) /* paced: caught up only after the schedule; max: last block */
        run->elapsed_s = (t->last_done_ns - run->t0) / 1e9;
    if (t->missed) /* it never caught up: the run ended at the hard stop */
        run->elapsed_s = (run->hard_stop - run->t0) / 1e9;
    if (run->interrupted) { /* the measured time: from the start to the last block or the stop */
        uint64_t end = t->last_done_ns > stop ? t->last_done_ns : stop;
        run->elapsed_s = end > run->t0 ? (end - run->t0) / 1e9 : 0;
    }
    uint64_t total = 0;
    for (int o = 0; o < MT_NOPS; o++)
        total += t->bytes[o];
    run->measured_gbits = cb_gbits((double)total, run->elapsed_s);
    run->pct = run->desired_gbits > 0 ? 100.0 * run->measured_gbits / run->desired_gbits : 0;
    uint64_t scheduled = t->blocks + t->missed;
    run->late_pct = scheduled ? 100.0 * (double)(t->late + t->missed) / (double)scheduled : 0;
    /* a run cut short is not judged compliant: it did not carry the planned load */
    run->passed = !run->interrupted && t->errors == 0 && run->pct >= run->cfg.threshold;
}

static int op_selected(const mt_run *run, int o)
{
    return (run->cfg.p.op_mask & (1u << o)) != 0;
}

static double domain_late_pct(const domain *dm)
{
    return dm->scheduled ? 100.0 * dm->late / dm->scheduled : 0.0;
}

/* ---- diagnose ------------------------------------------------------------------- */
static void diagnose(const mt_run *run)
{
    const totals *t = &run->tot;
    fprintf(cb_human(), "Per operation:");
    for (int o = 0; o < MT_NOPS; o++)
        if (op_selected(run, o))
            fprintf(cb_human(), " %s %.2f Gbit/s", mt_op_names[o], cb_gbits((double)t->bytes[o], run->elapsed_s));
    fputc('\n', cb_human());
    for (int d = 0; d < run->ndomains; d++) {
        const domain *dm = &run->domains[d];
        fprintf(cb_human(), "NUMA node %d: measured %.2f Gbit/s of %.2f desired, late %.3f%%\n",
               dm->node->os_index, cb_gbits((double)dm->bytes, run->elapsed_s), dm->desired_gbits,
               domain_late_pct(dm));
    }
    fprintf(cb_human(), "Verification: %llu blocks checked, %llu errors\n", (unsigned long long)t->blocks,
           (unsigned long long)t->errors);
    if (t->missed)
        fprintf(cb_human(), "Not processed: %llu blocks (%s)\n", (unsigned long long)t->missed,
                run->interrupted ? "due before the run was interrupted"
                                 : "the node fell behind and did not catch up");
    if (t->errors)
        fprintf(cb_human(), "VERIFICATION FAILED: %llu blocks did not hold the data they should; the speed is "
               "not valid\n", (unsigned long long)t->errors);
}

/* ---- emit ----------------------------------------------------------------------- */
static void doc_config(cb_json *j, const void *ctx)
{
    const mt_run *run = ctx;
    cbj_config_options(j, &mt_cmd, &run->cfg); /* the options, as the run used them */
    cbj_arr_begin(j, "ops");
    for (int o = 0; o < MT_NOPS; o++)
        if (op_selected(run, o))
            cbj_str(j, NULL, mt_op_names[o]);
    cbj_arr_end(j);
    cbj_num(j, "scheduled_duration_s", run->sched_s);
    cbj_int(j, "threads", run->nworkers);
    cbj_str(j, "kernels", mt_isa());
    /* the 64-bit corner turn's parameters, and the row of its table that chose them */
    cbj_str(j, "transpose_tuning", mt_transpose_tuning());
    cbj_int(j, "transpose_band_rows", mt_band_rows());
    cbj_int(j, "transpose_prefetch_bytes", mt_prefetch_bytes());
    cbj_int(j, "copy_prefetch_bytes", mt_copy_prefetch_bytes());
    /* The machine's architecture as the kernel reports it (uname -m): which build ran,
     * x86_64 or aarch64 (the arm partition), whatever the compiler targeted. */
    struct utsname u;
    cbj_str(j, "arch", uname(&u) == 0 ? u.machine : "unknown");
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const mt_run *run = ctx;
    const totals *t = &run->tot;
    cbj_metric(j, mt_metrics, "desired_speed", run->desired_gbits);
    cbj_metric(j, mt_metrics, "measured_speed", run->measured_gbits);
    cbj_metric(j, mt_metrics, "measured_speed_bytes", run->measured_gbits * 1e9 / 8);
    cbj_metric(j, mt_metrics, "percent_of_desired", run->pct);
    if (!run->cfg.max_mode)
        cbj_metric(j, mt_metrics, "average_late", run->late_pct);
    for (int o = 0; o < MT_NOPS; o++) {
        if (!op_selected(run, o))
            continue;
        char name[32];
        snprintf(name, sizeof name, "%s_speed", mt_op_names[o]);
        cbj_metric(j, mt_metrics, name, cb_gbits((double)t->bytes[o], run->elapsed_s));
        snprintf(name, sizeof name, "%s_busy_speed", mt_op_names[o]);
        /* per-thread speed while busy with this operation, summed over threads */
        double busy = t->busy_ns[o] ? cb_gbits((double)t->bytes[o], t->busy_ns[o] / 1e9) * run->nworkers : 0;
        cbj_metric(j, mt_metrics, name, busy);
    }
    cbj_metric(j, mt_metrics, "verified_blocks", (double)t->blocks);
    cbj_metric(j, mt_metrics, "verification_errors", (double)t->errors);
    cbj_metric(j, mt_metrics, "missed_blocks", (double)t->missed);
}

/* "domains": per NUMA node, its CPUs, stations, buffers and speeds. */
static void doc_domains(cb_json *j, const void *ctx)
{
    const mt_run *run = ctx;
    cbj_arr_begin(j, "domains");
    for (int d = 0; d < run->ndomains; d++) {
        const domain *dm = &run->domains[d];
        cbj_obj_begin(j, NULL);
        cbj_int(j, "numa_node", dm->node->os_index);
        cbj_arr_begin(j, "cpus");
        for (int i = 0; i < run->nworkers; i++)
            if (run->workers[i].domain == d)
                cbj_int(j, NULL, run->workers[i].pu);
        cbj_arr_end(j);
        cbj_int(j, "stations", dm->stations);
        cbj_int(j, "buffer_bytes", (long long)dm->buffer_bytes);
        cbj_num(j, "desired_speed_gbits", dm->desired_gbits);
        cbj_num(j, "measured_speed_gbits", cb_gbits((double)dm->bytes, run->elapsed_s));
        if (!run->cfg.max_mode)
            cbj_num(j, "average_late_percent", domain_late_pct(dm));
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

/* The JSON document (--json) and the results block; returns the exit status. */
static int emit(const mt_run *run)
{
    int rc = run->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (run->cfg.json_path) {
        const cb_envelope env = {.test = "mem-test", .test_version = MT_TEST_VERSION,
                                 .started = run->started, .duration_s = run->elapsed_s,
                                 .threshold = run->cfg.threshold, .passed = run->passed,
                                 .interrupted = run->interrupted};
        const cb_doc_parts parts = {.config = doc_config, .metrics = doc_metrics,
                                    .extra = doc_domains};
        if (cb_doc_write(run->cfg.json_path, &env, &parts, run) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    cb_results_begin(cb_human(), MT_TEST_VERSION);
    if (run->interrupted) {
        char what[128];
        snprintf(what, sizeof what, "after %.2f s of %.2f s; the figures cover that time",
                 run->elapsed_s, run->sched_s);
        cb_results_interrupted(cb_human(), what);
    }
    cb_results_line(cb_human(), "Desired speed", "%.2f Gbit/s", run->desired_gbits);
    cb_results_line(cb_human(), "Measured speed", "%.2f Gbit/s (%.2f%% of desired)", run->measured_gbits,
                    run->pct);
    if (run->cfg.max_mode)
        cb_results_line(cb_human(), "Average late", "n/a (--max runs unpaced)");
    else
        cb_results_line(cb_human(), "Average late", "%.3f%%", run->late_pct);
    fflush(cb_human());
    if (run->interrupted)
        return cb_exit_interrupted();
    return rc;
}

int main(int argc, char **argv)
{
    static mt_run run;
    cb_prog = "mem-test";
    mt_config_parse(&run.cfg, argc, argv);
    /* from here a signal stops the measurement and still reports it */
    cb_signals_install();
    plan(&run);
    print_plan(&run);
    start_workers(&run);
    watch_workers(&run);
    collect(&run);
    diagnose(&run);
    return emit(&run);
}
