/* gpu-copy's command line: the option table (options.c) and the configuration it fills. */
#ifndef GC_OPTIONS_H
#define GC_OPTIONS_H

#include "../common/cb_options.h"

#include <stddef.h>
#include <stdint.h>

#define GC_TEST_VERSION "1.0"
#define GC_MAX_GPUS 64

typedef struct gc_cfg {
    cb_intlist gpus;
    uint64_t iterations, alone_iterations;
    unsigned phases;
    double fraction;
    size_t dev_request, host_request, chunk;
    int streams;
    double threshold, threshold_per_gpu;
    int explain_only;
    const char *sysfs_root;
    const char *json_path;
    int quiet;
} gc_cfg;

/* cb_opts_parse() on the table, then the rules between options (exit 2 naming them):
 * at most GC_MAX_GPUS GPUs, one threshold, one device-buffer size, --chunk a multiple of
 * 4K, a --sysfs-root with PCI devices, a writable --json directory. */
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def gc_metrics[];
/* The command line: options, help, metrics (src/describe/ describes it). */
extern const cb_cmd gc_cmd;

void gc_options_parse(gc_cfg *cfg, int argc, char **argv);

#endif
