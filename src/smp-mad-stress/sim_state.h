/* The simulated fabric's state (sim_transport.c). Apart from the transport itself,
 * only the unit tests read it (tests/c/smp_sim_counts.h): what the fabric saw,
 * independently of the window's own bookkeeping. */
#ifndef SMP_SIM_STATE_H
#define SMP_SIM_STATE_H

#include "sim_transport.h"

#include <pthread.h>
#include <stdatomic.h>

/* One destination: a switch's management agent. */
typedef struct sim_dest {
    smp_dest d;
    int dead;
    pthread_mutex_t lock;
    uint64_t busy_until;      /* when the agent is free again */
    uint64_t *starts;         /* service start times of MADs accepted, increasing */
    size_t head, count, cap;  /* a ring */
    uint16_t attr;            /* the value kept: one attribute and modifier */
    uint32_t mod;
    int have_value;
    uint8_t value[SMP_DATA_SIZE];
    _Atomic int in_flight, max_in_flight;
    _Atomic uint64_t sent, lost, dropped, answered, errors;
} sim_dest;

struct smt_sim {
    smt_sim_params p;
    sim_dest *dests;
    int ndests;
    int *table;               /* open addressing: destination index + 1 */
    size_t table_size;
    _Atomic int in_flight, max_in_flight;
    _Atomic uint32_t agents;  /* ports opened: each port's agent id, as the kernel counts */
};

#endif
