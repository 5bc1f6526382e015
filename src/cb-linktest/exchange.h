/* cb-linktest's parallel test (exchange.c): the pair exchanges, what they measured
 * (lt_measured) and the errors --check-buffers found (lt_errors). */
#ifndef CB_LINKTEST_EXCHANGE_H
#define CB_LINKTEST_EXCHANGE_H

#include "buffers.h"
#include "options.h"
#include "setup.h"

#define LT_MAX_ERROR_PAIRS 1000

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

/* exchange.c */
/* Collective: whether any rank has had SIGINT, SIGTERM or SIGHUP; sets *interrupted then. */
int lt_stop_agreed(int *interrupted);
/* first_bad: 1-based message; msg_s, timed_s: this rank's seconds in all of the pair's
 * messages and in the timed ones; check_s, sync_s: in --check-buffers' work, in the
 * result exchange */
typedef struct { double t, errors, first_bad, msg_s, timed_s, check_s, sync_s; } lt_pair_result;
lt_pair_result lt_pair_exchange(const lt_config *cfg, lt_buffers *b, lt_faults *f, int rank, int peer,
                                long tag);
void lt_record_error(lt_errors *e, int a, int b, double bytes, double first_bad, const char *where);

#endif
