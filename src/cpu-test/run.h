/* One cpu-test run, stage by stage (run.c): plan (cores, ISA, clock, fault), run (one
 * bound thread per core, sampled every interval), collect (per core and per node); the
 * report (report.c) prints and writes what it holds. */
#ifndef CT_RUN_H
#define CT_RUN_H

#include "cpus.h"
#include "isa.h"
#include "options.h"
#include "stats.h"

#include <pthread.h>
#include <stdatomic.h>

typedef struct ct_run ct_run;

typedef struct ct_core {
    ct_run *run;
    int cpu;
    pthread_t th;
    int perf_fd;                /* its cycle counter (CT_CLOCK_PERF), else -1 */
    _Atomic uint64_t blocks;    /* blocks computed and checked */
    _Atomic uint64_t errors;    /* of them, blocks whose results were wrong */
    char error[192];            /* why it could not set up, or its first wrong result */
    /* sampled by the main thread at each interval's end */
    uint64_t sampled_blocks, sampled_cycles, cycles0;
    double *gflops;             /* per interval */
    /* collected */
    double total_gflops, clock_ghz, flop_per_cycle;
    ct_throttle throttle;       /* the core's own first and sustained intervals */
} ct_core;

struct ct_run {
    ct_config cfg;
    /* plan */
    ct_isa isa;
    const ct_isa_info *info;
    int ncores;
    ct_core *cores;
    ct_clock_source clock;
    double start[CT_MAX_VALUES], expect[CT_MAX_VALUES];
    double flop_per_block;
    int fault;                  /* CPU_TEST_FAULT: 0 none, 1 lane, 2 ulp */
    atomic_int fault_pending;
    char started[64], host[256];
    /* run */
    pthread_barrier_t ready, go;
    atomic_int stop;
    uint64_t t0, t_last;        /* the start, the last sample (monotonic ns) */
    uint64_t tsc0, tsc_last;
    int nintervals;
    double *interval_end_s, *interval_len_s, *node_gflops;
    /* collect */
    double elapsed_s, node_total_gflops, clock_ghz, flop_per_cycle;
    ct_spread spread;           /* of the cores' rates over the run */
    ct_throttle throttle;       /* of the node's intervals */
    uint64_t blocks, errors;
    int interrupted, passed;
};

/* Chooses the cores (exit 2 for --cpus or --threads beyond them), the ISA (exit 3 for
 * an --isa this CPU lacks), the clock, CPU_TEST_FAULT, and computes the reference. */
void ct_plan(ct_run *run);
/* Starts one bound thread per core; exit 3 when one cannot start or bind. */
void ct_start(ct_run *run);
/* Samples every interval (progress on stderr) until the duration is over or a signal
 * comes, then stops and joins the threads. */
void ct_watch(ct_run *run);
/* Per core and per node figures, and the verdict. */
void ct_collect(ct_run *run);

#endif
