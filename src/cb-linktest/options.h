/* cb-linktest's options and its plan, without MPI (options.c, plan.c; src/describe/ links
 * options.c too): the option table fills an lt_config, which nothing changes afterwards. */
#ifndef CB_LINKTEST_OPTIONS_H
#define CB_LINKTEST_OPTIONS_H

#include "../common/cb_common.h"
#include "../common/cb_options.h"

#include <stddef.h>
#include <stdint.h>

#define LT_TEST_VERSION "1.0"
#define LT_PLAN_PRINT_MAX 256

enum lt_pattern { LT_SEMI, LT_UNI, LT_BI };
extern const char *const lt_pattern_names[];

/* --memory-buffer-allocator (LinkTest's names; LT_ALLOC_HUGE is ours) */
enum lt_alloc { LT_ALLOC_DEFAULT, LT_ALLOC_ALIGNED, LT_ALLOC_PINNED_MMAP, LT_ALLOC_POSIX, LT_ALLOC_HUGE,
                LT_ALLOC_CUDA, LT_ALLOC_COUNT };
extern const char *const lt_alloc_names[];

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

/* options.c */
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def lt_metrics[];
/* The command line: options, help, metrics (src/describe/ describes it). */
extern const cb_cmd lt_cmd;

void lt_options_parse(lt_config *cfg, int argc, char **argv);

/* plan.c: returns the exit code */
int lt_plan(const lt_config *cfg);

#endif
