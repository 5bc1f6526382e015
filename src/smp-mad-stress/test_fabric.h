/* The test fabric: an in-process transport that stands in for absent
 * InfiniBand hardware, so that the window logic can be driven and measured
 * without a device (unit tests, and smp-mad-stress --test-fabric).
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
#ifndef SMP_TEST_FABRIC_H
#define SMP_TEST_FABRIC_H

#include "window.h"

typedef struct tf_params {
    uint64_t rtt_ns;      /* wire and host round trip, without the service */
    uint64_t service_ns;  /* a destination's time per MAD, one at a time */
    uint64_t jitter_ns;   /* extra delay of each response, uniform 0..jitter */
    double loss;          /* share of MADs lost on the way (0..1) */
    double error;         /* share answered with a MAD status error (0..1) */
    int queue;            /* MADs a destination holds waiting; more are dropped (0: no limit) */
    uint16_t dead[64];    /* LIDs that never answer */
    int ndead;
    uint64_t seed;
} tf_params;

void tf_params_default(tf_params *p);
/* "rtt=200us,service=175us,loss=0.01,queue=20,error=0,jitter=0,dead=3:7,seed=1";
 * any subset. Returns NULL, or what is wrong. */
const char *tf_parse(const char *spec, tf_params *p);
/* The parameters as text, for output and JSON. */
void tf_describe(const tf_params *p, char *buf, size_t len);

typedef struct test_fabric test_fabric;

/* A fabric with these destinations (others never answer). */
test_fabric *tf_create(const tf_params *p, const smp_dest *dests, int ndests);
void tf_destroy(test_fabric *f);
/* A transport over it (ports for any number of workers). */
smt_transport tf_transport(test_fabric *f);

/* What the fabric saw, independently of the window's own bookkeeping: MADs on
 * the wire (sent, reply not yet taken by poll) at most, per destination and in
 * all; MADs received, lost, dropped for a full queue, answered. */
typedef struct tf_counts {
    int max_in_flight;
    uint64_t sent, lost, dropped, answered, errors;
} tf_counts;
void tf_dest_counts(const test_fabric *f, int dest, tf_counts *out);
void tf_total_counts(const test_fabric *f, tf_counts *out);

#endif
