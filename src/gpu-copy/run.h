/* gpu-copy's run state and what its stages share: gpu-copy.c plans, runs and collects
 * the copies; report.c reports, diagnoses and emits them; explain.c is --explain-links;
 * links.c says what each GPU's links and locality are, for both modes. */
#ifndef GC_RUN_H
#define GC_RUN_H

#include "../common/cb_common.h"
#include "engine.h"
#include "options.h"
#include "pcie.h"
#include "plan.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define GC_MAX_PHASES (GC_NKINDS + 2 * GC_MAX_GPUS)

struct gc_run;

/* What is known about one GPU: from sysfs, hwloc, CUDA and the run. */
typedef struct gc_gpu {
    const struct gc_run *run;
    gc_cuda_dev cuda;           /* run mode */
    gc_gpu_topo topo;           /* links as read before copying (idle) */
    gc_gpu_topo loaded;         /* links as read during the copies */
    int have_topo, have_loaded;
    cb_pci_place place;
    const char *place_source;   /* "hwloc", "sysfs" or NULL */
    gc_layout layout;
    gc_worker worker;
    pthread_t th;
} gc_gpu;

/* Everything one run knows, filled stage by stage. */
typedef struct gc_run {
    const gc_cfg *cfg;
    gc_gpu gpus[GC_MAX_GPUS];
    int ngpus;
    cb_topo topo;               /* hwloc, with PCI devices */
    int have_hw;
    char started[64], host[256], versions[128];
    uint64_t t0_ns;
    double duration;
    int degraded_links;
    /* copies: the plan and the workers' results */
    gc_phase_spec phases[GC_MAX_PHASES];
    int nphases;
    gc_result results[GC_MAX_GPUS][GC_MAX_PHASES];
    volatile int abort_run;
    volatile int stop_run;      /* a signal: no further phase starts */
    int phases_done;            /* phases that ran: all, or those before the signal */
    int interrupted;
    pthread_barrier_t barrier;
    /* collected */
    int pw, pr, pb;             /* the all-at-once write, read, bidir phases (-1 none) */
    double total_w, total_r, agg_w, agg_r, bidir_w, bidir_r;
    double reachable;           /* what the negotiated links can carry together */
    double worst_share;         /* lowest "together as a share of alone" */
    uint64_t wrong, checked;
    int copy_errors;
    /* judged */
    double threshold;
    int measured_both, passed;
    /* --explain-links */
    double sum_max;
    int degraded_gpus;
    char degraded_names[1024];
} gc_run;

/* ---- links.c -------------------------------------------------------------------------- */
/* The links to judge: read under load if we have that (*idle = 0), else idle. */
const gc_gpu_topo *gc_links_of(const gc_gpu *g, int *idle);
/* The GPU's NUMA node(s) and CPUs: from hwloc when use_hwloc, else from sysfs. */
void gc_locate(gc_gpu *g, const cb_topo *topo, int use_hwloc);
/* Each link of the GPU's chain judged; counts the degraded ones into *degraded_links. */
void gc_print_gpu_links(const gc_gpu *g, int *degraded_links);
/* The per-GPU facts both modes' documents carry. */
void gc_json_gpu_topology(cb_json *j, const gc_gpu *g);
/* 1 with the reason in why when a link of the GPU's chain is degraded, else 0. */
int gc_gpu_degraded(const gc_gpu *g, char *why, size_t len);
/* Shared uplinks too narrow for the GPUs below them (all of them when verbose_ok):
 * printed; returns how many are too narrow. */
int gc_print_shared(const gc_run *r, int verbose_ok, const char *indent);
/* What the GPUs' links can carry together (shared uplinks counted once). */
double gc_run_reachable_gbits(const gc_run *r);

/* ---- results.c: reading the phases' results ------------------------------------------- */
const char *gc_phase_name(const gc_run *r, const gc_phase_spec *p, char *buf, size_t len);
double gc_speed_of(const gc_result *r, int dir);
double gc_phase_total(const gc_run *r, int p, int dir, double *aggregate);
int gc_find_phase(const gc_run *r, int kind, int gpu_slot);

/* ---- report.c: the copy mode's report, diagnosis and documents --------------------------- */
/* A line of the results block, aligned as the compliance document's */
void gc_result_line(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gc_results_begin(void);
void gc_report_links_and_speeds(gc_run *r);
void gc_report_alone(gc_run *r);
void gc_diagnose(gc_run *r);
/* The JSON document and the results block; returns the exit status. */
int gc_emit(const gc_run *r);

/* ---- explain.c: --explain-links; returns the exit status ------------------------------- */
int gc_explain_links(gc_run *r);

#endif
