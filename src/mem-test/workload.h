/* mem-test's workload model: the memory traffic of a streaming (radio-telescope
 * correlator style) application, per station, as rate-paced pipeline stages. */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include <stddef.h>

enum mt_op { MT_WRITE, MT_READ, MT_COPY, MT_TRANSPOSE, MT_NOPS };
extern const char *const mt_op_names[MT_NOPS];

typedef struct mt_params {
    int stations;            /* data streams (antenna fields) on this node */
    double input_gbits;      /* per station, before reduction */
    int reduction;           /* data reduction factor of the later stages */
    size_t packet_bytes;     /* one UDP packet's payload */
    int small_packets;       /* packets per block, first three stages */
    int large_packets;       /* packets per block, the others */
    size_t sample_bytes;     /* element size of the corner turns */
    unsigned op_mask;        /* 1 << mt_op of the operations to run */
} mt_params;

typedef struct mt_stage {
    const char *name;
    enum mt_op op;
    size_t block_bytes;      /* bytes of one block of this stage */
    double period_s;         /* time between two blocks */
    size_t rows, cols;       /* corner turn shape (transposes only) */
    double traffic_gbits;    /* DRAM traffic: copies and transposes count twice */
} mt_stage;

#define MT_NSTAGES 10

/* The defaults are those of mem-test's option table (options.c: mt_cmd). */
/* NULL if the parameters are consistent, else a message naming the problem. */
const char *mt_params_check(const mt_params *p);
/* Fills the stages of one station that op_mask selects; returns their count. */
int mt_stages(const mt_params *p, mt_stage out[MT_NSTAGES]);
/* Desired speed of the whole node in Gbit/s. */
double mt_desired_gbits(const mt_params *p);
/* Sets input_gbits so that the node's desired speed is desired_gbits. */
void mt_set_desired(mt_params *p, double desired_gbits);
/* The longest period: every stage's period divides it, so a run of a whole
 * number of them schedules exactly the desired traffic. */
double mt_hyperperiod_s(const mt_params *p);

#endif
