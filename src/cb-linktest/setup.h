/* cb-linktest's set-up (setup.c), beside its entry points (run.h): the launcher's rank,
 * stdout and stderr muted, the schedule over the current task order (lt_order) and the
 * faults the tests inject (lt_faults). */
#ifndef CB_LINKTEST_SETUP_H
#define CB_LINKTEST_SETUP_H

#include "options.h"
#include "schedule.h"
#include "world.h"

#define LT_MAX_DELAYS 8

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

/* setup.c */
int lt_launcher_rank(void);
int lt_mute_stderr(void);
void lt_unmute_stderr(int saved);
int lt_mute_stdout(void);
void lt_unmute_stdout(int saved);
/* the partner of rank in a step of the current task order; -1: idle */
int lt_partner_of(const lt_order *o, int rank, long step);
/* --num-randomize-tasks: pass 0 is the order as started, pass p a permutation; rebuilds the schedule */
void lt_task_order(lt_order *o, const lt_world *w, const lt_config *cfg, int pass);

#endif
