/* cb-linktest's stages and the run they share: lt_run, which holds each stage's part, and
 * the stages' entry points. Each part and a stage's other functions are in its layer's
 * header (no MPI types in any: options.c and plan.c need no MPI).
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
#ifndef CB_LINKTEST_RUN_H
#define CB_LINKTEST_RUN_H

#include "buffers.h"
#include "exchange.h"
#include "monitor.h"
#include "options.h"
#include "retest.h"
#include "setup.h"
#include "world.h"

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

/* ---- the stages' entry points (cb-linktest.c calls them) ---- */
/* setup.c */
int lt_start_mpi(lt_run *run, int *argc, char ***argv, int pre_rank);
void lt_set_up(lt_run *run);
void lt_tear_down(lt_run *run);

/* exchange.c */
void lt_run_iterations(lt_run *run);

/* retest.c */
void lt_collect(lt_run *run);

/* results.c: every rank; returns 0, or -1 (message printed by rank 0) */
int lt_write_results(lt_run *run);

/* report.c */
void lt_print_settings(const lt_run *run);
int lt_report(lt_run *run);

#endif
