/* --explain-links: each NVIDIA GPU's PCIe links read from sysfs and explained, without
 * CUDA and without copies, in the stages plan, diagnose, emit. */
#include "run.h"

#include <math.h>
#include <string.h>

static void explain_plan(gc_run *r)
{
    static gc_gpu_topo found[GC_MAX_GPUS];
    const gc_cfg *c = r->cfg;
    int n = gc_sysfs_find_gpus(c->sysfs_root, found, GC_MAX_GPUS);
    if (n <= 0)
        cb_die(CB_EXIT_CANNOT_RUN, "no NVIDIA GPU found in %s/bus/pci/devices", c->sysfs_root);
    int live = strcmp(c->sysfs_root, "/sys") == 0;
    r->have_hw = live && cb_topo_load_pci(&r->topo, NULL) == 0;
    cb_iso8601_now(r->started, sizeof r->started);
    r->t0_ns = cb_now_ns();
    fprintf(cb_human(), "gpu-copy (cobalt-bench) %s: PCIe links of the NVIDIA GPUs in %s (no copies)\n", CB_VERSION, c->sysfs_root);
    r->ngpus = n;
    for (int i = 0; i < n; i++) {
        gc_gpu *g = &r->gpus[i];
        g->run = r;
        g->topo = found[i];
        g->have_topo = 1;
        gc_locate(g, r->have_hw ? &r->topo : NULL, r->have_hw);
        fprintf(cb_human(), "GPU %s [%04x:%04x]: NUMA node %s (%s), CPUs %s\n", g->topo.bdf, g->topo.vendor, g->topo.device,
               g->place.nodes[0] ? g->place.nodes : "unknown", g->place_source ? g->place_source : "no locality information",
               g->place.cpus[0] ? g->place.cpus : "unknown");
        int before = r->degraded_links;
        gc_print_gpu_links(g, &r->degraded_links);
        if (r->degraded_links > before) {
            r->degraded_gpus++;
            snprintf(r->degraded_names + strlen(r->degraded_names), sizeof r->degraded_names - strlen(r->degraded_names),
                     "%s%s", r->degraded_names[0] ? ", " : "", g->topo.bdf);
        }
        r->sum_max += gc_gpu_max_gbits(&g->topo);
    }
    r->reachable = gc_reachable_gbits(found, n);
}

static void explain_diagnose(gc_run *r)
{
    gc_print_shared(r, 1, "");
    for (int i = 0; i < r->ngpus; i++) {
        char why[768];
        if (gc_gpu_degraded(&r->gpus[i], why, sizeof why))
            fprintf(cb_human(), "Likely cause of low bandwidth: GPU %s: %s\n", r->gpus[i].topo.bdf, why);
    }
    fprintf(cb_human(), "Theoretical: %.2f Gbit/s per direction through the negotiated links (shared uplinks "
           "counted once); %.2f Gbit/s if every GPU's link ran at the GPU's maximum\n", r->reachable, r->sum_max);
    r->passed = !r->degraded_links;
    r->duration = (cb_now_ns() - r->t0_ns) / 1e9;
}

/* Not cbj_config_options(): of the options only --sysfs-root applies without copies. */
static void explain_json_config(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    cbj_str(j, "mode", "explain-links");
    cbj_str(j, "sysfs_root", r->cfg->sysfs_root);
}

static void explain_json_metrics(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    cbj_metric(j, gc_metrics, "gpus", r->ngpus);
    cbj_metric(j, gc_metrics, "degraded_links", r->degraded_links);
    cbj_metric(j, gc_metrics, "theoretical_link_speed", r->reachable);
    cbj_metric(j, gc_metrics, "max_link_speed", r->sum_max);
}

static void explain_json_gpus(cb_json *j, const void *ctx)
{
    const gc_run *r = ctx;
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++) {
        cbj_obj_begin(j, NULL);
        gc_json_gpu_topology(j, &r->gpus[i]);
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

static int explain_emit(const gc_run *r)
{
    int rc = r->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (r->cfg->json_path) {
        cb_envelope env = {.test = "gpu-copy", .test_version = GC_TEST_VERSION, .started = r->started,
                           .duration_s = r->duration, .threshold = NAN, .passed = r->passed};
        cb_doc_parts parts = {.config = explain_json_config, .metrics = explain_json_metrics,
                              .extra = explain_json_gpus};
        if (cb_doc_write(r->cfg->json_path, &env, &parts, r) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    gc_results_begin();
    gc_result_line("GPUs", "%d", r->ngpus);
    if (r->degraded_gpus)
        gc_result_line("Degraded links", "%d (GPU %s)", r->degraded_links, r->degraded_names);
    else
        gc_result_line("Degraded links", "0");
    gc_result_line("Link speed", "%.2f Gbit/s per direction (theoretical, all GPUs)", r->reachable);
    return rc;
}

int gc_explain_links(gc_run *r)
{
    explain_plan(r);
    explain_diagnose(r);
    int rc = explain_emit(r);
    if (r->have_hw)
        cb_topo_free(&r->topo);
    return rc;
}
