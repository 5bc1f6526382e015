/* gpu-copy: reading the phases' results (run.h): what gpu-copy.c collects and report.c
 * reports are read here, below both. */
#include "run.h"

#include <stdint.h>
#include <stdio.h>

const char *gc_phase_name(const gc_run *r, const gc_phase_spec *p, char *buf, size_t len)
{
    if (p->gpu < 0)
        snprintf(buf, len, "all GPUs, %s", gc_kind_names[p->kind]);
    else
        snprintf(buf, len, "GPU %d alone, %s", r->gpus[p->gpu].cuda.index, gc_kind_names[p->kind]);
    return buf;
}

double gc_speed_of(const gc_result *r, int dir)
{
    return dir == GC_H2D ? cb_gbits((double)r->h2d_bytes, r->h2d_s) : cb_gbits((double)r->d2h_bytes, r->d2h_s);
}

/* Per-GPU and summed speeds of one phase in one direction; aggregate: all bytes over
 * the wall-clock span from the first start to the last end. */
double gc_phase_total(const gc_run *r, int p, int dir, double *aggregate)
{
    double sum = 0, bytes = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int i = 0; i < r->ngpus; i++) {
        const gc_result *res = &r->results[i][p];
        if (!res->ran)
            continue;
        sum += gc_speed_of(res, dir);
        bytes += (double)(dir == GC_H2D ? res->h2d_bytes : res->d2h_bytes);
        t0 = res->t0_ns < t0 ? res->t0_ns : t0;
        t1 = res->t1_ns > t1 ? res->t1_ns : t1;
    }
    if (aggregate)
        *aggregate = t1 > t0 ? cb_gbits(bytes, (t1 - t0) / 1e9) : 0;
    return sum;
}

/* The phase of this kind (and GPU, or -1: all at once) that ran; -1 if none did (not
 * planned, or not reached before a signal stopped the run). */
int gc_find_phase(const gc_run *r, int kind, int gpu_slot)
{
    for (int p = 0; p < r->phases_done; p++)
        if (r->phases[p].kind == kind && r->phases[p].gpu == gpu_slot)
            return p;
    return -1;
}
