/* cb-linktest's stages and the state they share (no MPI types here: options.c and
 * plan.c need no MPI).
 *
 *   options.c   the option table, parsing and the cross-option rules   -> lt_config
 *   plan.c      --plan N: build and check the schedule, no MPI
 *   mpi.c       MPI calls checked, the ranks' agreement (below every stage)
 *   setup.c     MPI_Init and its checks, host names, schedule, injected faults
 *                                                     -> lt_world, lt_order, lt_faults
 *   buffers.c   the message buffers: allocators, rings, fills, checks, GPU staging,
 *               the payload of checked messages
 *                                                     -> lt_buffers
 *   gpu.c       the CUDA calls (--use-gpu-memory), or stubs in a build without nvcc
 *   monitor.c   stderr monitoring: phase timings, memory per task, all-to-all
 *                                                     -> lt_monitor
 *   exchange.c  the parallel test: pair exchanges, steps, iterations
 *                                                     -> lt_measured, lt_errors
 *   retest.c    collect: the matrix summary, the slowest pairs, their serial retest
 *                                                     -> lt_collected, lt_errors
 *   results.c   the .npz results file, streamed through rank 0
 *   report.c    the settings, the verdict, the summary, the JSON document, the results block
 *   cb-linktest.c  main: the stages in order, on one lt_run that holds those parts
 *
 * The stages' entry points take the lt_run; the functions within a stage take the parts
 * they use.
 *
 * Exit codes, the results block and the JSON document are the kernel contract's
 * (docs/kernel-contract.md). */
#ifndef CB_LINKTEST_H
#define CB_LINKTEST_H

#include "../common/cb_common.h"
#include "../common/cb_options.h"
#include "schedule.h"

#include <stddef.h>
#include <stdint.h>

#define LT_TEST_VERSION "1.0"
#define LT_HOST_LEN 64
#define LT_PLAN_PRINT_MAX 256
#define LT_MAX_ERROR_PAIRS 1000
#define LT_MAX_DELAYS 8
#define LT_MEM_FIELDS 4 /* KiB: resident, peak, locked, transparent huge pages */

enum lt_pattern { LT_SEMI, LT_UNI, LT_BI };
extern const char *const lt_pattern_names[];

/* --memory-buffer-allocator (LinkTest's names; LT_ALLOC_HUGE is ours) */
enum lt_alloc { LT_ALLOC_DEFAULT, LT_ALLOC_ALIGNED, LT_ALLOC_PINNED_MMAP, LT_ALLOC_POSIX, LT_ALLOC_HUGE,
                LT_ALLOC_CUDA, LT_ALLOC_COUNT };
extern const char *const lt_alloc_names[];
/* where the message buffers are: host memory, GPU memory handed to a CUDA-aware MPI, or GPU
 * memory staged through pinned host memory around every MPI call */
enum lt_gpu_mode { LT_GPU_NONE, LT_GPU_AWARE, LT_GPU_STAGED };

/* The options (options.c fills it from the table; nothing changes it afterwards). */
typedef struct lt_config {
    long warmup, nmsg;
    size_t size;
    int unidirectional, bidirectional;
    enum lt_pattern pattern;       /* from the two flags above */
    int bisection, serial, randomize, group_host, check_buffers, quiet, no_output, small_pages;
    uint64_t seed;
    /* LinkTest's options beyond the pattern */
    int no_sion, parallel_sion;    /* LinkTest's SION file is our .npz: mapped to no_output / ignored */
    int all_to_all, use_gpu, multi_buffer, randomize_buffers;
    long num_multi_buffer;         /* 0: one buffer per message (max of -n and -w) */
    uint64_t seed_buffers, seed_tasks;
    long num_randomize_tasks;
    int allocator;                 /* enum lt_alloc */
    const char *mode_from;         /* where the transport layer came from */
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

/* ---- the run's state, in parts owned by the stage that fills them ---------------- */
/* The ranks as MPI started them and the hosts they run on (setup.c; fixed from then on). */
typedef struct lt_world {
    int rank, size;
    int *host_id;            /* [size] host number of each rank */
    int nhosts;
    char *hosts;             /* rank 0: [size][LT_HOST_LEN] */
    char started[64];        /* when the run started: wall clock (the documents) */
    uint64_t t0_ns;          /* and monotonic */
} lt_world;

/* Faults the tests inject into a real run: setup.c reads them from the environment
 * (CB_LINKTEST_DELAY, CB_LINKTEST_CORRUPT), the exchange acts on them. */
typedef struct lt_faults {
    int ndelay, delay_a[LT_MAX_DELAYS], delay_b[LT_MAX_DELAYS];
    double delay_us[LT_MAX_DELAYS];
    int corrupt_rank, corrupt_pending;
    long corrupt_msg;        /* CB_LINKTEST_CORRUPT=R:K, timed message K (1-based; 0: the last) */
} lt_faults;

/* Which pairs meet in which step (setup.c): the schedule over the current task order. */
typedef struct lt_order {
    lt_sched sched;
    long long expected;      /* pairs the schedule tests (over all task orders) */
    /* --num-randomize-tasks: the current task order (NULL: as started) */
    int *vid, *rank_of;      /* [size] rank -> its ID in the schedule, and back */
    int pass;                /* 0: as started, 1..: permuted */
} lt_order;

/* The message buffers (buffers.c): rings of nbuf send and receive buffers (1 unless
 * --multi-buffer or --check-buffers); on the GPU with --use-gpu-memory. */
typedef struct lt_buffers {
    int allocator;           /* enum lt_alloc, for the rings and for other host buffers */
    char **sring, **rring;
    int nbuf;
    size_t buf_bytes;        /* allocated size of each buffer */
    int gpu_mode;            /* enum lt_gpu_mode */
    int gpu_device, gpu_count;
    char gpu_name[128];
    char *stage_s, *stage_r; /* LT_GPU_STAGED: pinned host copies */
    char *scratch;           /* host copy for fills and checks of GPU buffers */
    int mlocked;             /* pinned-memory-map: mlock succeeded on every buffer */
} lt_buffers;

/* Monitoring (monitor.c): phase timings, memory per task, --all-to-all. */
typedef struct lt_monitor {
    uint64_t phase_ns;       /* start of the current phase */
    double mem_kib[LT_MEM_FIELDS]; /* this rank after set-up: resident, peak, locked, huge pages */
    double *task_mem;        /* rank 0: [size][LT_MEM_FIELDS] */
    double a2a[2];           /* --all-to-all: this rank's seconds per MPI_Alltoall, before/after */
    double *a2a_all;         /* rank 0: [2][size] */
} lt_monitor;

/* Rank 0: where the main test's wall time went (exchange.c), against its floor: the sum
 * over steps of the step's slowest pair's messaging (warm-up and timed). */
typedef struct lt_main_time {
    double wall_s;           /* the `main test` phase */
    double floor_s, timed_floor_s; /* the slowest pair per step: all its messages; the timed only */
    double sync_s;           /* rank 0 in the per-step collectives, barriers, result exchange */
    double start_s;          /* the part of sync_s before the messages (stop check, barrier) */
    double wait_s;           /* the part of sync_s spent waiting for a slower pair's messages */
    double check_s;          /* what --check-buffers' work added: the busiest pair beyond the floor */
    long steps;
} lt_main_time;

/* What the parallel test measured (exchange.c). */
typedef struct lt_measured {
    double *row;             /* time per message with each partner; NaN: not tested */
    lt_main_time main;       /* rank 0 */
    long iterations;
    /* a signal (cb_interrupted) on any rank stopped the test; every rank agrees on it at
     * the start of each step and of each retest (lt_stop_agreed) */
    int interrupted;
    double duration;         /* seconds from the start to the end of the retest */
} lt_measured;

/* Errors found by --check-buffers, in the parallel test and the retest (rank 0's tally). */
typedef struct lt_errors {
    double bytes, pairs;     /* wrong bytes; pair tests that received any */
    int list[2 * LT_MAX_ERROR_PAIRS];
    int n;                   /* pairs listed */
} lt_errors;

/* Collected after the test (retest.c). */
typedef struct lt_collected {
    lt_summary sum;          /* rank 0 */
    int slow_k;              /* num_slowest + 1: one more than retested */
    lt_slow *slow;           /* [slow_k] on every rank, slowest first */
    int nslow, nretest;
    double *retest;          /* [slow_k] rank 0: each retested pair's time alone */
} lt_collected;

/* The whole run, which main passes from stage to stage; a stage's own functions take the
 * parts they use. */
typedef struct lt_run {
    const lt_config *cfg;    /* options.c */
    lt_world world;          /* setup.c */
    lt_faults faults;        /* setup.c */
    lt_order order;          /* setup.c */
    lt_buffers bufs;         /* buffers.c */
    lt_monitor mon;          /* monitor.c */
    lt_measured test;        /* exchange.c */
    lt_errors errors;        /* exchange.c, retest.c */
    lt_collected coll;       /* retest.c */
    int write_failed;        /* results.c, report.c: the results file or the document */
} lt_run;

/* options.c */
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def lt_metrics[];
/* The command line: options, help, metrics (src/describe/ describes it). */
extern const cb_cmd lt_cmd;

void lt_options_parse(lt_config *cfg, int argc, char **argv);

/* plan.c: returns the exit code */
int lt_plan(const lt_config *cfg);

/* mpi.c: MPI calls checked, the ranks' agreement, CUDA-aware MPI */
void lt_mpi_check(int rc, const char *what);
void lt_all_ok_or_exit(const lt_world *w, int ok, int code, const char *what);
int lt_mpi_cuda_aware(void);

/* setup.c */
int lt_launcher_rank(void);
int lt_mute_stderr(void);
void lt_unmute_stderr(int saved);
int lt_mute_stdout(void);
void lt_unmute_stdout(int saved);
int lt_start_mpi(lt_run *run, int *argc, char ***argv, int pre_rank);
void lt_set_up(lt_run *run);
void lt_tear_down(lt_run *run);
/* the partner of rank in a step of the current task order; -1: idle */
int lt_partner_of(const lt_order *o, int rank, long step);
/* --num-randomize-tasks: pass 0 is the order as started, pass p a permutation; rebuilds the schedule */
void lt_task_order(lt_order *o, const lt_world *w, const lt_config *cfg, int pass);

/* buffers.c */
void lt_buffers_set_up(lt_buffers *b, const lt_config *cfg, const lt_world *w);
void lt_buffers_free(lt_buffers *b);
void *lt_host_alloc(lt_buffers *b, size_t bytes);
void lt_host_free(const lt_buffers *b, void *p, size_t bytes);
int lt_on_gpu(const lt_buffers *b);
void lt_buf_fill(lt_buffers *b, char *buf, size_t n, uint64_t seed);
void lt_buf_zero(lt_buffers *b, char *buf, size_t n);
double lt_buf_check(lt_buffers *b, const char *buf, size_t n, uint64_t seed);
uint32_t lt_buf_crc(lt_buffers *b, const char *buf, size_t n);
void lt_send(lt_buffers *b, const char *buf, int n, int peer, int tag);
void lt_recv(lt_buffers *b, char *buf, int n, int peer, int tag);
void lt_sendrecv(lt_buffers *b, const char *sb, char *rb, int n, int peer, int tag);
const char *lt_alloc_descr(const lt_buffers *b);
uint64_t lt_payload_seed(const lt_config *cfg, int from, int to, long tag, long msg);
void lt_fill_payload(char *buf, size_t n, uint64_t seed);
double lt_check_payload(const char *buf, size_t n, uint64_t seed);

/* gpu.c: 0, or -1 with the reason in why */
int lt_gpu_select(int local_rank, int *device, int *count, char *name, size_t namelen, char *why, size_t len);
void *lt_gpu_alloc(size_t bytes);
void lt_gpu_free(void *p);
void *lt_gpu_host_alloc(size_t bytes);
void lt_gpu_host_free(void *p);
void lt_gpu_to_host(void *dst, const void *src, size_t n);
void lt_gpu_from_host(void *dst, const void *src, size_t n);
void lt_gpu_zero(void *p, size_t n);
extern const int lt_gpu_built;

/* monitor.c */
/* Ends the phase under way (named; NULL: unnamed) on rank 0's clock and starts the next. */
void lt_phase(lt_monitor *m, const lt_world *w, const char *name);
void lt_report_memory(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg);
void lt_all_to_all(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg, int after);

/* exchange.c */
/* Collective: whether any rank has had SIGINT, SIGTERM or SIGHUP; sets *interrupted then. */
int lt_stop_agreed(int *interrupted);
/* first_bad: 1-based message; msg_s, timed_s: this rank's seconds in all of the pair's
 * messages and in the timed ones; check_s, sync_s: in --check-buffers' work, in the
 * result exchange */
typedef struct { double t, errors, first_bad, msg_s, timed_s, check_s, sync_s; } lt_pair_result;
lt_pair_result lt_pair_exchange(const lt_config *cfg, lt_buffers *b, lt_faults *f, int rank, int peer,
                                long tag);
void lt_run_iterations(lt_run *run);
void lt_record_error(lt_errors *e, int a, int b, double bytes, double first_bad, const char *where);

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
