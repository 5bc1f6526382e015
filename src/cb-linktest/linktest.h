/* cb-linktest's stages and the state they share (no MPI types here: options.c and
 * plan.c need no MPI).
 *
 *   options.c   the option table, parsing and the cross-option rules   -> lt_config
 *   plan.c      --plan N: build and check the schedule, no MPI
 *   setup.c     MPI_Init and its checks, host names, schedule, buffers -> lt_run
 *   exchange.c  the parallel test: pair exchanges, steps, iterations
 *   retest.c    collect: the matrix summary, the slowest pairs, their serial retest
 *   results.c   the .npz results file, streamed through rank 0
 *   report.c    the settings, the verdict, the summary, the JSON document, the results block
 *   cb-linktest.c  main: the stages in order
 *
 * Exit codes, the results block and the JSON document are the kernel contract's
 * (docs/kernel-contract.md). */
#ifndef CB_LINKTEST_H
#define CB_LINKTEST_H

#include "../common/cb_common.h"
#include "schedule.h"

#include <stddef.h>
#include <stdint.h>

#define LT_TEST_VERSION "1.0"
#define LT_HOST_LEN 64
#define LT_PLAN_PRINT_MAX 256
#define LT_MAX_ERROR_PAIRS 1000

enum lt_pattern { LT_SEMI, LT_UNI, LT_BI };
extern const char *const lt_pattern_names[];

/* The options (options.c fills it from the table; nothing changes it afterwards). */
typedef struct lt_config {
    long warmup, nmsg;
    size_t size;
    int unidirectional, bidirectional;
    enum lt_pattern pattern;       /* from the two flags above */
    int bisection, serial, randomize, group_host, check_buffers, quiet, no_output, small_pages;
    uint64_t seed;
    long num_slowest, min_iterations;
    double min_runtime;            /* seconds */
    const char *mode, *output, *json_path;
    double min_bw_gbits, max_time_us; /* compliance thresholds; 0 = none */
    long plan_n, plan_hosts;
    int plan_print;
    char argv_line[4096];          /* the command line, for the results file */
} lt_config;

/* One of the slowest pairs (t < 0: an empty slot). */
typedef struct lt_slow {
    double t, a, b;
} lt_slow;

/* The kept matrix, summarized at rank 0 (each pair once, by its lower rank). */
typedef struct lt_summary {
    double min_t, max_t, avg_t, avg_bw, npairs;
} lt_summary;

/* The run's state, passed to every stage. */
typedef struct lt_run {
    const lt_config *cfg;
    /* set-up */
    int rank, size;
    lt_sched sched;
    long long expected;      /* pairs the schedule tests */
    char *sbuf, *rbuf;
    double *row;             /* time per message with each partner; NaN: not tested */
    int *host_id;            /* [size] host number of each rank */
    int nhosts;
    char *hosts;             /* rank 0: [size][LT_HOST_LEN] */
    /* fault injection (CB_LINKTEST_DELAY, CB_LINKTEST_CORRUPT) */
    int delay_a, delay_b;    /* -1: none */
    double delay_us;
    int corrupt_rank, corrupt_pending;
    /* run */
    char started[64];
    uint64_t t0_ns;
    long iterations;
    double duration;
    /* errors found by --check-buffers (rank 0's tally) */
    double err_bytes, err_pairs; /* wrong bytes; pair tests that received any */
    int err_list[2 * LT_MAX_ERROR_PAIRS];
    int nerr;                /* pairs listed */
    /* collect */
    lt_summary sum;          /* rank 0 */
    int slow_k;              /* num_slowest + 1: one more than retested */
    lt_slow *slow;           /* [slow_k] on every rank, slowest first */
    int nslow, nretest;
    double *retest;          /* [slow_k] rank 0: each retested pair's time alone */
    /* a signal (cb_interrupted) on any rank stopped the test; every rank agrees on it at
     * the start of each step and of each retest (lt_stop_agreed) */
    int interrupted;
    /* emit */
    int write_failed;
} lt_run;

/* options.c */
void lt_options_parse(lt_config *cfg, int argc, char **argv);

/* plan.c: returns the exit code */
int lt_plan(const lt_config *cfg);

/* setup.c */
int lt_launcher_rank(void);
int lt_mute_stderr(void);
void lt_unmute_stderr(int saved);
int lt_start_mpi(lt_run *run, int *argc, char ***argv, int pre_rank);
void lt_set_up(lt_run *run);
void lt_tear_down(lt_run *run);
void lt_mpi_check(int rc, const char *what);

/* exchange.c */
/* Collective: whether any rank has had SIGINT, SIGTERM or SIGHUP; sets run->interrupted. */
int lt_stop_agreed(lt_run *run);
typedef struct { double t, errors; } lt_pair_result;
lt_pair_result lt_pair_exchange(lt_run *run, int peer, long tag);
void lt_run_iterations(lt_run *run);
void lt_record_error(lt_run *run, int a, int b, double bytes, const char *where);
uint64_t lt_payload_seed(int from, int to, long tag);
void lt_fill_payload(char *buf, size_t n, uint64_t seed);

/* retest.c */
void lt_collect(lt_run *run);

/* results.c: every rank; returns 0, or -1 (message printed by rank 0) */
int lt_write_results(lt_run *run);

/* report.c */
const char *lt_fmt_time(double s, char *buf, size_t len);
double lt_gbits(const lt_config *cfg, double seconds);
void lt_json_options(cb_json *j, const lt_config *cfg);
void lt_print_settings(const lt_run *run);
int lt_report(lt_run *run);

#endif
