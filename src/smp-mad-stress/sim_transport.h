/* The simulation transport: an in-process fabric that stands in for absent
 * InfiniBand hardware, beside the umad transport (umad_transport.h), so that the
 * window logic can be driven and measured without a device (smp-mad-stress
 * --simulate=SPEC, and the unit tests).
 *
 * Each destination behaves like a switch's management agent: a MAD reaches it
 * half a round trip after it is sent, waits while the agent is busy with
 * earlier MADs (one at a time, `service` each), and its response arrives half a
 * round trip after it was served. A destination holding `queue` MADs waiting
 * drops the next one (the VL15Dropped of a real switch); a lost or dropped MAD
 * is reported as timed out after its timeout, as the kernel's umad agent does.
 * With rtt=45us,service=175us one destination answers 4500 MAD/s one at a
 * time and 5700 MAD/s with two on the wire, like the switch of the tool's
 * document. */
#ifndef SMP_SIM_TRANSPORT_H
#define SMP_SIM_TRANSPORT_H

#include "window.h"

typedef struct smt_sim_params {
    uint64_t rtt_ns;      /* wire and host round trip, without the service */
    uint64_t service_ns;  /* a destination's time per MAD, one at a time */
    uint64_t jitter_ns;   /* extra delay of each response, uniform 0..jitter */
    double loss;          /* share of MADs lost on the way (0..1) */
    double error;         /* share answered with a MAD status error (0..1) */
    int queue;            /* MADs a destination holds waiting; more are dropped (0: no limit) */
    uint16_t dead[64];    /* LIDs that never answer */
    int ndead;
    uint64_t seed;
} smt_sim_params;

void smt_sim_params_default(smt_sim_params *p);
/* "rtt=200us,service=175us,loss=0.01,queue=20,error=0,jitter=0,dead=3:7,seed=1";
 * any subset. Returns NULL, or what is wrong. */
const char *smt_sim_parse(const char *spec, smt_sim_params *p);
/* The parameters as text, for output and JSON. */
void smt_sim_describe(const smt_sim_params *p, char *buf, size_t len);

/* The simulated fabric (its state: sim_state.h). */
typedef struct smt_sim smt_sim;

/* A fabric with these destinations (others never answer). */
smt_sim *smt_sim_create(const smt_sim_params *p, const smp_dest *dests, int ndests);
void smt_sim_destroy(smt_sim *f);
/* A transport over it (ports for any number of workers). */
smt_transport smt_sim_transport(smt_sim *f);

#endif
