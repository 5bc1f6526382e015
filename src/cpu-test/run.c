/* A cpu-test run: plan, start one bound thread per core, sample every interval, stop on
 * time or on a signal, collect (run.h). */
#include "run.h"
#include "../common/cb_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- plan ------------------------------------------------------------------------ */
/* CPU_TEST_FAULT=lane: one block of one core starts one lane's chain from a wrong value
 * (a fault before or inside the FMA unit carried through the stream); =ulp: one block's
 * result has one lane's last bit flipped (the smallest error an FMA can make). Either
 * must be a verification error. */
static void plan_fault(ct_run *run)
{
    const char *fault = getenv("CPU_TEST_FAULT");
    if (!fault || !*fault)
        return;
    if (strcmp(fault, "lane") == 0)
        run->fault = 1;
    else if (strcmp(fault, "ulp") == 0)
        run->fault = 2;
    else
        cb_usage_error("CPU_TEST_FAULT must be lane or ulp");
    atomic_store(&run->fault_pending, 1);
}

static int in_list(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* --cpus as given (each one this process may run on), else the first CPU of each usable
 * core, the first --threads of them. */
static void plan_cores(ct_run *run)
{
    int *allowed = malloc(CB_MAX_CPUS * sizeof *allowed), *use = malloc(CB_MAX_CPUS * sizeof *use);
    int n = allowed && use ? ct_affinity(allowed, CB_MAX_CPUS) : -1;
    if (n <= 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot read the CPUs this process may run on");
    char have[1024];
    ct_cpulist_str(allowed, n, have, sizeof have);
    int count;
    if (run->cfg.cpus.n) {
        for (int i = 0; i < run->cfg.cpus.n; i++)
            if (!in_list(allowed, n, run->cfg.cpus.v[i]))
                cb_usage_error("--cpus: CPU %d is not one this process may run on (CPUs %s)",
                               run->cfg.cpus.v[i], have);
        count = run->cfg.cpus.n;
        memcpy(use, run->cfg.cpus.v, (size_t)count * sizeof *use);
    } else {
        count = ct_first_per_core(allowed, n, "/sys/devices/system/cpu", use);
        if (run->cfg.threads > count)
            cb_usage_error("--threads %d exceeds the %d usable core%s (CPUs %s)",
                           run->cfg.threads, count, count == 1 ? "" : "s", have);
        if (run->cfg.threads)
            count = run->cfg.threads;
    }
    run->ncores = count;
    run->cores = calloc((size_t)count, sizeof *run->cores);
    if (!run->cores)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < count; i++) {
        run->cores[i].run = run;
        run->cores[i].cpu = use[i];
        run->cores[i].perf_fd = -1;
    }
    free(allowed);
    free(use);
}

static void plan_isa(ct_run *run)
{
    const char *name = ct_isa_choices[run->cfg.isa_choice];
    if (run->cfg.isa_choice == 0) {
        run->isa = ct_isa_best();
    } else if (ct_isa_from_name(name, &run->isa) != 0) {
        cb_die(CB_EXIT_CANNOT_RUN, "internal error: --isa %s names no instruction set", name);
    } else if (!ct_isa_supported(run->isa)) {
        char runs[128];
        ct_isa_list_supported(runs, sizeof runs);
        cb_die(CB_EXIT_CANNOT_RUN, "--isa %s: this CPU does not run it (it runs %s)", name, runs);
    }
    run->info = ct_isa_of(run->isa);
    int n = run->info->lanes * run->info->accumulators;
    run->flop_per_block = 2.0 * n * CT_BLOCK_ITERS; /* an FMA is 2 FLOP per lane */
    ct_start_values(run->start, CT_MAX_VALUES);
    ct_fma_reference(run->start, run->expect, n, ct_a, CT_BLOCK_ITERS);
}

/* perf_event cycles where this thread gets a counter (each worker opens its own), else
 * the TSC, else none. */
static void plan_clock(ct_run *run)
{
    int fd = ct_perf_open_self();
    if (fd >= 0) {
        close(fd);
        run->clock = CT_CLOCK_PERF;
    } else {
        run->clock = ct_tsc_usable() ? CT_CLOCK_TSC : CT_CLOCK_NONE;
    }
}

void ct_plan(ct_run *run)
{
    plan_fault(run);
    plan_cores(run);
    plan_isa(run);
    plan_clock(run);
    int max = (int)ceil(run->cfg.duration_s / run->cfg.interval_s) + 2;
    run->interval_end_s = calloc((size_t)max, sizeof(double));
    run->interval_len_s = calloc((size_t)max, sizeof(double));
    run->node_gflops = calloc((size_t)max, sizeof(double));
    if (!run->interval_end_s || !run->interval_len_s || !run->node_gflops)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < run->ncores; i++)
        if (!(run->cores[i].gflops = calloc((size_t)max, sizeof(double))))
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    cb_iso8601_now(run->started, sizeof run->started);
    cb_hostname(run->host, sizeof run->host);
}

/* ---- the worker ------------------------------------------------------------------ */
static int take_fault(ct_run *run)
{
    int one = 1;
    if (!run->fault || !atomic_compare_exchange_strong(&run->fault_pending, &one, 0))
        return 0;
    return run->fault;
}

/* One block: compute, inject the fault where asked, check every lane against the
 * reference. */
static void one_block(ct_core *c)
{
    ct_run *run = c->run;
    int n = run->info->lanes * run->info->accumulators;
    double out[CT_MAX_VALUES], wrong_start[CT_MAX_VALUES];
    const double *start = run->start;
    int fault = take_fault(run);
    if (fault == 1) {
        memcpy(wrong_start, run->start, sizeof wrong_start);
        wrong_start[n - 1] += 0x1p-20;
        start = wrong_start;
    }
    ct_fma_block(run->isa, start, out, ct_a, CT_BLOCK_ITERS);
    if (fault == 2) {
        uint64_t bits;
        memcpy(&bits, &out[0], sizeof bits);
        bits ^= 1;
        memcpy(&out[0], &bits, sizeof bits);
    }
    int first;
    if (ct_check(out, run->expect, n, &first)) {
        if (atomic_load(&c->errors) == 0)
            snprintf(c->error, sizeof c->error,
                     "CPU %d, block %llu, accumulator %d lane %d: %a where %a is right", c->cpu,
                     (unsigned long long)atomic_load(&c->blocks), first / run->info->lanes,
                     first % run->info->lanes, out[first], run->expect[first]);
        atomic_fetch_add(&c->errors, 1);
    }
    atomic_fetch_add_explicit(&c->blocks, 1, memory_order_release);
}

static void *core_main(void *arg)
{
    ct_core *c = arg;
    ct_run *run = c->run;
    if (ct_bind_self(c->cpu) != 0)
        snprintf(c->error, sizeof c->error, "cannot bind a thread to CPU %d", c->cpu);
    else if (run->clock == CT_CLOCK_PERF)
        c->perf_fd = ct_perf_open_self();
    pthread_barrier_wait(&run->ready);
    pthread_barrier_wait(&run->go);
    if (!c->error[0])
        while (!atomic_load_explicit(&run->stop, memory_order_relaxed))
            one_block(c);
    return NULL;
}

/* ---- run ------------------------------------------------------------------------- */
/* A worker without a counter (perf_event refused a thread what it gave the main one):
 * no core's cycles then, the TSC's (or none) for all. */
static void settle_clock(ct_run *run)
{
    if (run->clock != CT_CLOCK_PERF)
        return;
    int all = 1;
    for (int i = 0; i < run->ncores; i++)
        all &= run->cores[i].perf_fd >= 0;
    if (all)
        return;
    for (int i = 0; i < run->ncores; i++)
        if (run->cores[i].perf_fd >= 0) {
            close(run->cores[i].perf_fd);
            run->cores[i].perf_fd = -1;
        }
    run->clock = ct_tsc_usable() ? CT_CLOCK_TSC : CT_CLOCK_NONE;
}

void ct_start(ct_run *run)
{
    pthread_barrier_init(&run->ready, NULL, (unsigned)run->ncores + 1);
    pthread_barrier_init(&run->go, NULL, (unsigned)run->ncores + 1);
    for (int i = 0; i < run->ncores; i++)
        if (pthread_create(&run->cores[i].th, NULL, core_main, &run->cores[i]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start the thread of CPU %d", run->cores[i].cpu);
    pthread_barrier_wait(&run->ready);
    const char *err = NULL;
    for (int i = 0; i < run->ncores; i++)
        if (run->cores[i].error[0])
            err = run->cores[i].error;
    if (err) {
        atomic_store(&run->stop, 1);
        pthread_barrier_wait(&run->go);
        for (int i = 0; i < run->ncores; i++)
            pthread_join(run->cores[i].th, NULL);
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    }
    settle_clock(run);
    for (int i = 0; i < run->ncores; i++)
        if (run->cores[i].perf_fd >= 0)
            ct_perf_read(run->cores[i].perf_fd, &run->cores[i].cycles0);
    fprintf(cb_human(), "Running %.2f s on %d core%s, intervals of %.2f s\n",
            run->cfg.duration_s, run->ncores, run->ncores == 1 ? "" : "s", run->cfg.interval_s);
    fflush(cb_human());
    run->t0 = run->t_last = cb_now_ns();
    run->tsc0 = run->tsc_last = ct_tsc_now();
    pthread_barrier_wait(&run->go);
}

/* Each core's blocks (and cycles) since the last sample: one interval. */
static void sample(ct_run *run, uint64_t now)
{
    int k = run->nintervals;
    double dt = (double)(now - run->t_last) / 1e9, node = 0;
    for (int i = 0; i < run->ncores; i++) {
        ct_core *c = &run->cores[i];
        uint64_t b = atomic_load_explicit(&c->blocks, memory_order_acquire);
        c->gflops[k] = dt > 0 ? (double)(b - c->sampled_blocks) * run->flop_per_block / dt / 1e9 : 0;
        c->sampled_blocks = b;
        if (c->perf_fd >= 0)
            ct_perf_read(c->perf_fd, &c->sampled_cycles);
        node += c->gflops[k];
    }
    run->node_gflops[k] = node;
    run->interval_end_s[k] = (double)(now - run->t0) / 1e9;
    run->interval_len_s[k] = dt;
    run->nintervals++;
    run->t_last = now;
    run->tsc_last = ct_tsc_now();
}

static void progress(const ct_run *run)
{
    int k = run->nintervals - 1, slow = 0;
    for (int i = 1; i < run->ncores; i++)
        if (run->cores[i].gflops[k] < run->cores[slow].gflops[k])
            slow = i;
    fprintf(stderr, "[%8.1f s / %.1f s] %10.2f GFLOP/s, slowest core %.2f (CPU %d)\n",
            run->interval_end_s[k], run->cfg.duration_s, run->node_gflops[k],
            run->cores[slow].gflops[k], run->cores[slow].cpu);
}

void ct_watch(ct_run *run)
{
    const uint64_t step = (uint64_t)(run->cfg.interval_s * 1e9);
    const uint64_t end = run->t0 + (uint64_t)(run->cfg.duration_s * 1e9);
    uint64_t next = run->t0 + step;
    for (;;) {
        uint64_t target = next < end ? next : end, now;
        while ((now = cb_now_ns()) < target && !cb_interrupted)
            cb_sleep_until_ns(target - now > 50000000ULL ? now + 50000000ULL : target);
        now = cb_now_ns();
        if (cb_interrupted) {
            if (now > run->t_last)
                sample(run, now);
            break;
        }
        sample(run, now);
        if (!run->cfg.quiet)
            progress(run);
        if (now >= end)
            break;
        while (next <= now) /* a late wake-up: the next boundary still ahead */
            next += step;
    }
    atomic_store(&run->stop, 1);
    for (int i = 0; i < run->ncores; i++)
        pthread_join(run->cores[i].th, NULL);
}

/* ---- collect ----------------------------------------------------------------------- */
void ct_collect(ct_run *run)
{
    run->elapsed_s = (double)(run->t_last - run->t0) / 1e9;
    double el = run->elapsed_s > 0 ? run->elapsed_s : NAN;
    double tsc_ghz = run->clock == CT_CLOCK_TSC ? (double)(run->tsc_last - run->tsc0) / el / 1e9 : NAN;
    double *rate = malloc((size_t)run->ncores * sizeof *rate);
    double *clock = malloc((size_t)run->ncores * sizeof *clock);
    double *fpc = malloc((size_t)run->ncores * sizeof *fpc);
    if (!rate || !clock || !fpc)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    run->node_total_gflops = 0;
    for (int i = 0; i < run->ncores; i++) {
        ct_core *c = &run->cores[i];
        if (c->perf_fd >= 0)
            close(c->perf_fd);
        c->total_gflops = (double)c->sampled_blocks * run->flop_per_block / el / 1e9;
        c->clock_ghz = run->clock == CT_CLOCK_PERF
                           ? (double)(c->sampled_cycles - c->cycles0) / el / 1e9
                           : tsc_ghz;
        c->flop_per_cycle = c->clock_ghz > 0 ? c->total_gflops / c->clock_ghz : NAN;
        c->throttle = ct_throttle_of(c->gflops, run->interval_len_s, run->nintervals,
                                     run->cfg.interval_s);
        run->blocks += atomic_load(&c->blocks);
        run->errors += atomic_load(&c->errors);
        run->node_total_gflops += c->total_gflops;
        rate[i] = c->total_gflops;
        clock[i] = c->clock_ghz;
        fpc[i] = c->flop_per_cycle;
    }
    run->spread = ct_spread_of(rate, run->ncores);
    run->clock_ghz = run->clock == CT_CLOCK_NONE ? NAN : ct_median(clock, run->ncores);
    run->flop_per_cycle = run->clock == CT_CLOCK_NONE ? NAN : ct_median(fpc, run->ncores);
    run->throttle = ct_throttle_of(run->node_gflops, run->interval_len_s, run->nintervals,
                                   run->cfg.interval_s);
    free(rate);
    free(clock);
    free(fpc);
    run->interrupted = cb_interrupted != 0;
    /* a run cut short is not judged compliant: it did not carry the planned load */
    run->passed = !run->interrupted && run->errors == 0 &&
                  (run->cfg.desired_gflops <= 0 || run->spread.min >= run->cfg.desired_gflops);
}
