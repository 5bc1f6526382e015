/* Test-only: what smp-mad-stress's simulated fabric saw, independently of the
 * window's own bookkeeping: MADs on the wire (sent, reply not yet taken by poll) at
 * most, per destination and in all; MADs received, lost, dropped for a full queue,
 * answered, answered with an error. Reads the fabric's state (sim_state.h). */
#ifndef SMP_SIM_COUNTS_H
#define SMP_SIM_COUNTS_H

#include "smp-mad-stress/sim_state.h"

#include <string.h>

typedef struct sim_counts {
    int max_in_flight;
    uint64_t sent, lost, dropped, answered, errors;
} sim_counts;

static inline void sim_dest_counts(const smt_sim *f, int dest, sim_counts *out)
{
    sim_dest *t = &f->dests[dest];
    out->max_in_flight = atomic_load(&t->max_in_flight);
    out->sent = atomic_load(&t->sent);
    out->lost = atomic_load(&t->lost);
    out->dropped = atomic_load(&t->dropped);
    out->answered = atomic_load(&t->answered);
    out->errors = atomic_load(&t->errors);
}

static inline void sim_total_counts(const smt_sim *f, sim_counts *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < f->ndests; i++) {
        sim_counts c;
        sim_dest_counts(f, i, &c);
        out->sent += c.sent;
        out->lost += c.lost;
        out->dropped += c.dropped;
        out->answered += c.answered;
        out->errors += c.errors;
    }
    out->max_in_flight = atomic_load(&f->max_in_flight);
}

#endif
