/* gpu-copy's copy mode after the copies: the speeds per GPU and in total, each GPU alone,
 * the diagnosis of a bad result, the JSON document and the results block. */
#include "run.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---- the results block -------------------------------------------------------- */
/* The compliance document's results block aligns values after "Total write speed:". */
void gc_result_line(const char *label, const char *fmt, ...)
{
    char key[64];
    snprintf(key, sizeof key, "%s:", label);
    fprintf(cb_human(), "%-18s ", key);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(cb_human(), fmt, ap);
    va_end(ap);
    fputc('\n', cb_human());
}

void gc_results_begin(void)
{
    fprintf(cb_human(), "----- Test results -----\n");
    gc_result_line("Test version", "%s", GC_TEST_VERSION);
}

/* ---- the copies: report ---------------------------------------------------------- */
/* The links as read under load (they replace the idle reading) and the speeds. */
void gc_report_links_and_speeds(gc_run *r)
{
    fprintf(cb_human(), "Links read while copying:\n");
    r->degraded_links = 0;
    for (int i = 0; i < r->ngpus; i++) {
        fprintf(cb_human(), "GPU %d (%s):\n", r->gpus[i].cuda.index, r->gpus[i].topo.bdf);
        gc_print_gpu_links(&r->gpus[i], &r->degraded_links);
    }
    fprintf(cb_human(), "All GPUs at once (Gbit/s; %% of the GPU's negotiated link):\n");
    for (int i = 0; i < r->ngpus; i++) {
        const gc_gpu *g = &r->gpus[i];
        int idle;
        double link = gc_gpu_path_gbits(gc_links_of(g, &idle));
        fprintf(cb_human(), "  GPU %d %s:", g->cuda.index, g->topo.bdf);
        if (r->pw >= 0) {
            double v = gc_speed_of(&r->results[i][r->pw], GC_H2D);
            fprintf(cb_human(), " write %.2f", v);
            if (link > 0)
                fprintf(cb_human(), " (%.1f%%)", 100 * v / link);
        }
        if (r->pr >= 0) {
            double v = gc_speed_of(&r->results[i][r->pr], GC_D2H);
            fprintf(cb_human(), " read %.2f", v);
            if (link > 0)
                fprintf(cb_human(), " (%.1f%%)", 100 * v / link);
        }
        if (r->pb >= 0)
            fprintf(cb_human(), " bidir %.2f + %.2f", gc_speed_of(&r->results[i][r->pb], GC_H2D), gc_speed_of(&r->results[i][r->pb], GC_D2H));
        fputc('\n', cb_human());
    }
    fprintf(cb_human(), "  Total (theoretical %.2f):", r->reachable);
    if (r->pw >= 0)
        fprintf(cb_human(), " write %.2f (aggregate %.2f)", r->total_w, r->agg_w);
    if (r->pr >= 0)
        fprintf(cb_human(), " read %.2f (aggregate %.2f)", r->total_r, r->agg_r);
    if (r->pb >= 0)
        fprintf(cb_human(), " bidir %.2f + %.2f", r->bidir_w, r->bidir_r);
    fputc('\n', cb_human());
}

/* Each GPU alone, and together as a share of alone (the worst share is kept). */
void gc_report_alone(gc_run *r)
{
    r->worst_share = 1;
    if (r->ngpus < 2 || r->cfg->alone_iterations == 0)
        return;
    fprintf(cb_human(), "Each GPU alone (Gbit/s; together as %% of alone):\n");
    for (int i = 0; i < r->ngpus; i++) {
        fprintf(cb_human(), "  GPU %d:", r->gpus[i].cuda.index);
        for (int k = GC_WRITE; k <= GC_READ; k++) {
            int pa = gc_find_phase(r, k, i), pt = gc_find_phase(r, k, -1);
            if (pa < 0 || pt < 0)
                continue;
            int dir = k == GC_WRITE ? GC_H2D : GC_D2H;
            double alone = gc_speed_of(&r->results[i][pa], dir), together = gc_speed_of(&r->results[i][pt], dir);
            double share = alone > 0 ? together / alone : 0;
            if (share < r->worst_share)
                r->worst_share = share;
            fprintf(cb_human(), " %s %.2f (%.1f%%)", gc_kind_names[k], alone, 100 * share);
        }
        fputc('\n', cb_human());
    }
}

/* ---- the copies: diagnose ----------------------------------------------------------- */
/* Placement and sharing causes: unbound threads or buffers, one NUMA node for all GPUs,
 * a bottleneck the GPUs share. Returns how many were named. */
static int diagnose_placement(const gc_run *r)
{
    int causes = 0, nnuma = r->have_hw ? r->topo.nnodes : 0;
    for (int i = 0; i < r->ngpus; i++) {
        const gc_worker *w = &r->gpus[i].worker;
        if (nnuma > 1 && (!w->bound_cpu || !w->bound_mem)) {
            fprintf(cb_human(), "  GPU %d: %s%s%s: copies may cross the socket interconnect\n", r->gpus[i].cuda.index,
                   w->bound_cpu ? "" : "its thread is not bound to the GPU's CPUs",
                   !w->bound_cpu && !w->bound_mem ? " and " : "",
                   w->bound_mem ? "" : "its host buffer is not on the GPU's NUMA node");
            causes++;
        }
    }
    if (nnuma > 1 && r->ngpus > 1 && (!r->passed || r->worst_share < 0.90)) {
        int first = r->gpus[0].place.numa_node, same = first >= 0;
        for (int i = 1; i < r->ngpus; i++)
            same &= r->gpus[i].place.numa_node == first;
        if (same) {
            fprintf(cb_human(), "  All %d GPUs hang off NUMA node %d of %d: one socket's PCIe root complex and memory "
                   "carry all the copies\n", r->ngpus, first, nnuma);
            causes++;
        }
    }
    if (r->worst_share < 0.90) {
        fprintf(cb_human(), "  All at once, a GPU reaches only %.0f%% of its speed alone: a bottleneck the GPUs share "
               "(a PCIe switch uplink, a root complex, or the memory or interconnect of a socket)\n",
               100 * r->worst_share);
        causes++;
    }
    return causes;
}

void gc_diagnose(gc_run *r)
{
    const gc_cfg *c = r->cfg;
    r->threshold = c->threshold_per_gpu > 0 ? c->threshold_per_gpu * r->ngpus : c->threshold;
    r->measured_both = r->pw >= 0 && r->pr >= 0;
    r->passed = !r->interrupted && r->measured_both && !r->wrong && !r->copy_errors && r->total_w >= r->threshold &&
                r->total_r >= r->threshold;
    fprintf(cb_human(), "Diagnosis:\n");
    int causes = 0;
    for (int i = 0; i < r->ngpus; i++) {
        char why[768];
        if (gc_gpu_degraded(&r->gpus[i], why, sizeof why)) {
            fprintf(cb_human(), "  Likely cause: GPU %d (%s): %s\n", r->gpus[i].cuda.index, r->gpus[i].topo.bdf, why);
            causes++;
        }
    }
    causes += gc_print_shared(r, 0, "  ");
    causes += diagnose_placement(r);
    if (!causes)
        fprintf(cb_human(), "  Every link runs at its maximum and nothing shared limits the GPUs%s\n",
               r->passed ? "" : "; a low speed then comes from the host side (IOMMU, memory, CPU power states)");
    if (r->interrupted)
        fprintf(cb_human(), "  Interrupted by %s: not judged\n", cb_interrupted_name());
    else if (!r->measured_both)
        fprintf(cb_human(), "  Compliance needs both write and read (--phases): not judged\n");
}

/* ---- the copies: emit ------------------------------------------------------------ */
static void copy_json_config(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    const gc_cfg *c = r->cfg;
    cbj_config_options(j, &gc_cmd, c); /* the options, as the run used them */
    /* --phases, a custom list, by the phases' names */
    cbj_arr_begin(j, "phases");
    for (int k = 0; k < GC_NKINDS; k++)
        if (c->phases & (1u << k))
            cbj_str(j, NULL, gc_kind_names[k]);
    cbj_arr_end(j);
    /* derived: the GPUs found, what applied of each option (alone: more than one GPU;
     * the fraction: no --device-buffer; the threshold per GPU: given), the chunk the
     * plan chose, the CUDA versions */
    cbj_str(j, "mode", "copy");
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++)
        cbj_int(j, NULL, r->gpus[i].cuda.index);
    cbj_arr_end(j);
    cbj_int(j, "alone_iterations", (long long)(r->ngpus > 1 ? c->alone_iterations : 0));
    cbj_num(j, "device_fraction", c->dev_request ? NAN : c->fraction);
    cbj_num(j, "threshold_per_gpu_gbits", c->threshold_per_gpu > 0 ? c->threshold_per_gpu : NAN);
    cbj_int(j, "chunk_bytes", (long long)r->gpus[0].layout.chunk);
    cbj_str(j, "cuda", r->versions);
}

/* The all-at-once figures of one direction ("write", "read"): total, in bytes, aggregate,
 * and as a share of what the links carry. */
static void direction_metrics(cb_json *j, const char *dir, double total, double aggregate, double link_sum)
{
    char key[64];
    snprintf(key, sizeof key, "total_%s_speed", dir);
    cbj_metric(j, gc_metrics, key, total);
    snprintf(key, sizeof key, "total_%s_speed_bytes", dir);
    cbj_metric(j, gc_metrics, key, total * 1e9 / 8);
    snprintf(key, sizeof key, "aggregate_%s_speed", dir);
    cbj_metric(j, gc_metrics, key, aggregate);
    snprintf(key, sizeof key, "%s_percent_of_link", dir);
    if (link_sum > 0)
        cbj_metric(j, gc_metrics, key, 100 * total / link_sum);
}

static void copy_json_metrics(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    double link_sum = r->reachable;
    if (r->pw >= 0)
        direction_metrics(j, "write", r->total_w, r->agg_w, link_sum);
    if (r->pr >= 0)
        direction_metrics(j, "read", r->total_r, r->agg_r, link_sum);
    if (r->pb >= 0) {
        cbj_metric(j, gc_metrics, "bidir_write_speed", r->bidir_w);
        cbj_metric(j, gc_metrics, "bidir_read_speed", r->bidir_r);
    }
    cbj_metric(j, gc_metrics, "theoretical_link_speed", link_sum);
    cbj_metric(j, gc_metrics, "gpus", r->ngpus);
    cbj_metric(j, gc_metrics, "degraded_links", r->degraded_links);
    cbj_metric(j, gc_metrics, "verified_phases", (double)r->checked);
    cbj_metric(j, gc_metrics, "verification_errors", (double)r->wrong);
}

static void copy_json_gpu(cb_json *j, const gc_run *r, int i)
{
    const gc_gpu *g = &r->gpus[i];
    const gc_result *res = r->results[i];
    cbj_obj_begin(j, NULL);
    cbj_int(j, "cuda_device", g->cuda.index);
    cbj_str(j, "name", g->cuda.name);
    gc_json_gpu_topology(j, g);
    cbj_bool(j, "thread_bound", g->worker.bound_cpu);
    cbj_bool(j, "host_buffer_bound", g->worker.bound_mem);
    cbj_int(j, "memory_bytes", (long long)g->cuda.total_mem);
    cbj_int(j, "device_buffer_bytes", (long long)g->layout.dev_bytes);
    cbj_int(j, "host_buffer_bytes", (long long)g->layout.host_bytes);
    if (r->pw >= 0)
        cbj_num(j, "write_speed_gbits", gc_speed_of(&res[r->pw], GC_H2D));
    if (r->pr >= 0)
        cbj_num(j, "read_speed_gbits", gc_speed_of(&res[r->pr], GC_D2H));
    if (r->pb >= 0) {
        cbj_num(j, "bidir_write_speed_gbits", gc_speed_of(&res[r->pb], GC_H2D));
        cbj_num(j, "bidir_read_speed_gbits", gc_speed_of(&res[r->pb], GC_D2H));
    }
    int aw = gc_find_phase(r, GC_WRITE, i), ar = gc_find_phase(r, GC_READ, i);
    if (aw >= 0)
        cbj_num(j, "alone_write_speed_gbits", gc_speed_of(&res[aw], GC_H2D));
    if (ar >= 0)
        cbj_num(j, "alone_read_speed_gbits", gc_speed_of(&res[ar], GC_D2H));
    uint64_t e = 0;
    for (int p = 0; p < r->nphases; p++)
        e += res[p].dev_errors + res[p].host_errors;
    cbj_int(j, "verification_errors", (long long)e);
    cbj_str(j, "error", g->worker.error);
    cbj_obj_end(j);
}

static void copy_json_gpus(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++)
        copy_json_gpu(j, r, i);
    cbj_arr_end(j);
}

int gc_emit(const gc_run *r)
{
    int rc = r->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (r->cfg->json_path) {
        cb_envelope env = {.test = "gpu-copy", .test_version = GC_TEST_VERSION, .started = r->started,
                           .duration_s = r->duration, .threshold = r->threshold, .passed = r->passed,
                           .interrupted = r->interrupted};
        cb_doc_parts parts = {.config = copy_json_config, .metrics = copy_json_metrics, .extra = copy_json_gpus};
        if (cb_doc_write(r->cfg->json_path, &env, &parts, r) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    gc_results_begin();
    if (r->interrupted) {
        char what[128];
        snprintf(what, sizeof what, "after %.2f s, %d of %d phases run; the figures cover those",
                 r->duration, r->phases_done, r->nphases);
        gc_result_line("Interrupted", "%s -- %s", cb_interrupted_name(), what);
    }
    if (r->pw >= 0)
        gc_result_line("Total write speed", "%.2f Gbit/s", r->total_w);
    else
        gc_result_line("Total write speed", "not measured");
    if (r->pr >= 0)
        gc_result_line("Total read speed", "%.2f Gbit/s", r->total_r);
    else
        gc_result_line("Total read speed", "not measured");
    fflush(cb_human());
    if (r->interrupted)
        return cb_exit_interrupted();
    return rc;
}
