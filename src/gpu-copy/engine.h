/* gpu-copy's CUDA side: device discovery and one host thread per GPU that executes the
 * plan (plan.h) phase by phase, in step with the other GPUs' threads. */
#ifndef GC_ENGINE_H
#define GC_ENGINE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cb_topo; /* src/common/cb_common.h: the machine's topology with its PCI devices */

typedef struct gc_cuda_dev {
    int index;
    char name[256];
    char busid[32];           /* sysfs spelling, "0000:3b:00.0" */
    size_t total_mem, free_mem;
    int copy_engines;         /* asyncEngineCount */
} gc_cuda_dev;

/* The visible CUDA devices: how many (at most max), or -1 with the reason in err. */
int gc_cuda_devices(gc_cuda_dev *out, int max, char *err, size_t errlen);
/* "CUDA runtime 13.0, driver 13.0" (driver "none" when not loaded). */
void gc_cuda_versions(char *buf, size_t len);

typedef struct gc_phase_spec {
    int kind;                 /* GC_WRITE, GC_READ, GC_BIDIR */
    int gpu;                  /* worker slot that runs alone, or -1: all at once */
    uint64_t iterations;
    uint64_t seed;
} gc_phase_spec;

typedef struct gc_result {
    int ran;
    double h2d_s, d2h_s;      /* GPU-timed (events) duration of each direction */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t t0_ns, t1_ns;    /* host clock around the timed copies */
    uint64_t dev_errors, host_errors;
    uint64_t first_bad;       /* byte offset of the first wrong word in its region */
} gc_result;

typedef struct gc_worker gc_worker;
struct gc_worker {
    /* set by the caller */
    int slot, device;
    char busid[32];
    const struct cb_topo *topo;
    char cpus[256];           /* where the thread runs: the GPU's CPUs ("" unknown) */
    char nodes[64];           /* where the host buffer lives: the GPU's NUMA node(s) */
    gc_layout layout;
    int streams;              /* per direction */
    const gc_phase_spec *phases;
    int nphases;
    gc_result *results;       /* one per phase */
    pthread_barrier_t *barrier; /* workers + the main thread */
    volatile int *abort_run;  /* set by the main thread between the set-up barriers */
    volatile int *stop_run;   /* set by the main thread before each phase's first barrier:
                                 a signal stopped the run, no further phase starts */
    void (*on_load)(gc_worker *w, int phase); /* called while a phase's copies run */
    void *user;
    int fault_kind;           /* GPU_COPY_FAULT: lose one copy of this kind (-1 none) */
    /* set by the worker */
    int bound_cpu, bound_mem;  /* thread bound to cpus, host buffer bound to nodes */
    int setup_failed;         /* could not start: error says why */
    char error[512];
};

/* The worker thread. Barrier protocol (the main thread joins every wait):
 *   set-up; wait; [main sets *abort_run]; wait;
 *   per phase: wait [main sets *stop_run: then all leave]; prepare; wait; timed copies;
 *   wait; verify; wait. */
void *gc_worker_main(void *arg);

#ifdef __cplusplus
}
#endif
#endif
