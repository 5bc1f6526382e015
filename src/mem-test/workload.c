/* The workload model (src/mem-test/README.md, "Workload model").
 * Per station, ten stages as in the original COBALT pipeline:
 *   at the input rate R:       NIC->DRAM write, kernel->user copy, user->staging
 *                              transpose (blocks of small_packets), network-exchange
 *                              copy, GPU-staging transpose, DRAM->GPU read (blocks of
 *                              large_packets);
 *   after reduction, at R/red: GPU->DRAM write, output-staging copy, user->kernel
 *                              copy, DRAM->NIC read (blocks of large_packets / red).
 * Desired speed = stations x R x (10 + 6 / red) with copies/transposes counted
 * twice: 18 x 3 x (10 + 3) = 702 Gbit/s with the defaults. */
#include "workload.h"

const char *const mt_op_names[MT_NOPS] = {"write", "read", "copy", "transpose"};

static const struct {
    const char *name;
    enum mt_op op;
    int reduced; /* runs after the data reduction */
    int large;   /* blocks of large_packets */
} stage_defs[MT_NSTAGES] = {
    {"nic-to-dram-write", MT_WRITE, 0, 0},
    {"kernel-to-user-copy", MT_COPY, 0, 0},
    {"user-to-staging-transpose", MT_TRANSPOSE, 0, 0},
    {"network-exchange-copy", MT_COPY, 0, 1},
    {"gpu-staging-transpose", MT_TRANSPOSE, 0, 1},
    {"dram-to-gpu-read", MT_READ, 0, 1},
    {"gpu-to-dram-write", MT_WRITE, 1, 1},
    {"output-staging-copy", MT_COPY, 1, 1},
    {"user-to-kernel-copy", MT_COPY, 1, 1},
    {"dram-to-nic-read", MT_READ, 1, 1},
};

const char *mt_params_check(const mt_params *p)
{
    if (p->stations < 1)
        return "--stations must be at least 1";
    if (!(p->input_gbits > 0))
        return "the input rate must be positive";
    if (p->reduction < 1)
        return "--reduction must be at least 1";
    if (p->sample_bytes != 4 && p->sample_bytes != 8 && p->sample_bytes != 16)
        return "--sample-bytes must be 4, 8 or 16";
    if (p->packet_bytes < 64 || p->packet_bytes % 8 != 0)
        return "--packet-size must be a multiple of 8 and at least 64 bytes";
    if (p->packet_bytes % p->sample_bytes != 0)
        return "--packet-size must be a multiple of --sample-bytes";
    if (p->small_packets < 1 || p->large_packets < 1)
        return "block lengths must be at least 1 packet";
    if (p->large_packets % p->small_packets != 0)
        return "--large-block must be a multiple of --small-block";
    if ((size_t)p->large_packets * p->packet_bytes / (size_t)p->reduction < 64)
        return "blocks after the reduction are smaller than 64 bytes";
    if (p->op_mask == 0)
        return "--ops selects no operation";
    return NULL;
}

double mt_hyperperiod_s(const mt_params *p)
{
    return (double)((size_t)p->large_packets * p->packet_bytes) * 8.0 / (p->input_gbits * 1e9);
}

int mt_stages(const mt_params *p, mt_stage out[MT_NSTAGES])
{
    int n = 0;
    for (int i = 0; i < MT_NSTAGES; i++) {
        if (!(p->op_mask & (1u << stage_defs[i].op)))
            continue;
        mt_stage *s = &out[n++];
        size_t packets = (size_t)(stage_defs[i].large ? p->large_packets : p->small_packets);
        size_t bytes = packets * p->packet_bytes;
        double period = (double)bytes * 8.0 / (p->input_gbits * 1e9);
        if (stage_defs[i].reduced)
            bytes = bytes / (size_t)p->reduction / 8 * 8; /* whole 64-bit words */
        s->name = stage_defs[i].name;
        s->op = stage_defs[i].op;
        s->block_bytes = bytes;
        s->period_s = period;
        s->rows = packets;
        s->cols = p->packet_bytes / p->sample_bytes;
        int twice = s->op == MT_COPY || s->op == MT_TRANSPOSE;
        s->traffic_gbits = (double)bytes * 8.0 * (twice ? 2 : 1) / period / 1e9;
    }
    return n;
}

double mt_desired_gbits(const mt_params *p)
{
    mt_stage st[MT_NSTAGES];
    int n = mt_stages(p, st);
    double per_station = 0;
    for (int i = 0; i < n; i++)
        per_station += st[i].traffic_gbits;
    return per_station * p->stations;
}

void mt_set_desired(mt_params *p, double desired_gbits)
{
    /* The desired speed is proportional to the input rate. */
    p->input_gbits = 1.0;
    double per_unit = mt_desired_gbits(p);
    p->input_gbits = desired_gbits / per_unit;
}
