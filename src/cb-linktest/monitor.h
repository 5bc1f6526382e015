/* cb-linktest's monitoring on stderr (monitor.c): phase timings, memory per task,
 * --all-to-all. */
#ifndef CB_LINKTEST_MONITOR_H
#define CB_LINKTEST_MONITOR_H

#include "buffers.h"
#include "options.h"
#include "world.h"

#include <stdint.h>

#define LT_MEM_FIELDS 4 /* KiB: resident, peak, locked, transparent huge pages */

/* Monitoring (monitor.c): phase timings, memory per task, --all-to-all. */
typedef struct lt_monitor {
    uint64_t phase_ns;       /* start of the current phase */
    double mem_kib[LT_MEM_FIELDS]; /* this rank after set-up: resident, peak, locked, huge pages */
    double *task_mem;        /* rank 0: [size][LT_MEM_FIELDS] */
    double a2a[2];           /* --all-to-all: this rank's seconds per MPI_Alltoall, before/after */
    double *a2a_all;         /* rank 0: [2][size] */
} lt_monitor;

/* monitor.c */
/* Ends the phase under way (named; NULL: unnamed) on rank 0's clock and starts the next. */
void lt_phase(lt_monitor *m, const lt_world *w, const char *name);
void lt_report_memory(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg);
void lt_all_to_all(lt_monitor *m, const lt_world *w, lt_buffers *b, const lt_config *cfg, int after);

#endif
