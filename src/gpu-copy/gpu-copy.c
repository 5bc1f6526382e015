/* gpu-copy: PCIe bandwidth between host memory and every NVIDIA GPU, all GPUs at once
 * and each alone, with the topology that explains a bad result (see README and
 * --help). The copies run in engine.cu; the links are read from sysfs and judged by
 * pcie.c, the locality comes from hwloc (src/common/cb_topo.c); this file plans, runs and
 * collects the copies, in stages over one run state (run.h): plan, run, collect, then
 * report.c's report, diagnose and emit; results.c reads the phases' results (for this
 * file and report.c); explain.c is --explain-links, links.c what each GPU's links say,
 * options.c the option table.
 * Exit codes and the JSON document: docs/kernel-contract.md. */
#define _GNU_SOURCE
#include "run.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEVICE_RESERVE (256ull << 20) /* left free on the device for the context (at most) */

/* ---- output helpers ------------------------------------------------------------ */
static void fmt_bytes(char *buf, size_t len, double bytes)
{
    if (bytes >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", bytes / (1ull << 30));
    else
        snprintf(buf, len, "%.0f MiB", bytes / (1ull << 20));
}

/* ---- the copies: helpers ---------------------------------------------------------- */
/* Called by a worker while its copies run: the link state under load. Keeps the
 * fastest state seen (an idle GPU's link comes up within milliseconds of traffic). */
static void on_load(gc_worker *w, int phase)
{
    (void)phase;
    gc_gpu *g = (gc_gpu *)w->user;
    gc_gpu_topo now;
    if (!g->have_topo || gc_sysfs_read_gpu(g->run->cfg->sysfs_root, g->topo.bdf, &now) != 0 || now.nlinks == 0)
        return;
    if (!g->have_loaded || gc_gpu_path_gbits(&now) > gc_gpu_path_gbits(&g->loaded)) {
        g->loaded = now;
        g->have_loaded = 1;
    }
}

static void __attribute__((noreturn)) no_gpu(const gc_run *r, const char *cuda_err)
{
    static gc_gpu_topo found[GC_MAX_GPUS];
    const char *root = r->cfg->sysfs_root;
    int n = gc_sysfs_find_gpus(root, found, GC_MAX_GPUS);
    if (n > 0) {
        char list[512] = "";
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", found[i].bdf);
        cb_die(CB_EXIT_CANNOT_RUN,
               "cannot use the NVIDIA GPUs: CUDA reports: %s. %s lists %d NVIDIA GPU%s (%s): is the "
               "NVIDIA driver loaded and /dev/nvidia* accessible? (gpu-copy --explain-links explains "
               "their links without CUDA)", cuda_err, root, n, n == 1 ? "" : "s", list);
    }
    cb_die(CB_EXIT_CANNOT_RUN,
           "no NVIDIA GPU on this machine: CUDA reports: %s, and %s lists no NVIDIA GPU. "
           "gpu-copy needs NVIDIA GPUs and their driver.", cuda_err, root);
}

/* ---- the copies: plan ---------------------------------------------------------------- */
/* The selected CUDA devices and the machine's topology. */
static void plan_devices(gc_run *r)
{
    static gc_cuda_dev devs[GC_MAX_GPUS];
    const gc_cfg *c = r->cfg;
    char err[512];
    int ndev = gc_cuda_devices(devs, GC_MAX_GPUS, err, sizeof err);
    if (ndev < 0)
        no_gpu(r, err);
    int sel[GC_MAX_GPUS], nsel = 0;
    for (int i = 0; i < c->gpus.n; i++)
        sel[nsel++] = c->gpus.v[i];
    if (nsel == 0)
        for (int i = 0; i < ndev; i++)
            sel[nsel++] = i;
    for (int i = 0; i < nsel; i++)
        if (sel[i] >= ndev)
            cb_usage_error("GPU %d does not exist: CUDA sees %d device%s (0-%d)", sel[i], ndev,
                           ndev == 1 ? "" : "s", ndev - 1);
    r->ngpus = nsel;
    for (int i = 0; i < nsel; i++) {
        r->gpus[i].run = r;
        r->gpus[i].cuda = devs[sel[i]];
    }
    r->have_hw = cb_topo_load_pci(&r->topo, NULL) == 0;
    if (!r->have_hw)
        cb_warn("hwloc cannot read this machine's topology: threads and buffers are not placed near the GPUs");
    else if (cb_topo_pci_devices(&r->topo) == 0)
        cb_warn("hwloc found no PCI device (Debian: install libhwloc-plugins); GPU locality comes from sysfs");
    cb_iso8601_now(r->started, sizeof r->started);
    cb_hostname(r->host, sizeof r->host);
    gc_cuda_versions(r->versions, sizeof r->versions);
    r->t0_ns = cb_now_ns();
}

/* One GPU: its links and locality, and the buffers it gets. */
static void plan_gpu(gc_run *r, gc_gpu *g)
{
    const gc_cfg *c = r->cfg;
    g->have_topo = gc_sysfs_read_gpu(c->sysfs_root, g->cuda.busid, &g->topo) == 0;
    if (!g->have_topo)
        gc_bdf_normalise(g->topo.bdf, g->cuda.busid);
    gc_locate(g, r->have_hw ? &r->topo : NULL, r->have_hw && cb_topo_pci_devices(&r->topo) > 0);
    size_t reserve = g->cuda.total_mem / 16 < DEVICE_RESERVE ? g->cuda.total_mem / 16 : DEVICE_RESERVE;
    size_t want = c->dev_request ? c->dev_request
                                 : gc_device_request(g->cuda.total_mem, g->cuda.free_mem, c->fraction, reserve);
    const char *why = gc_layout_make(&g->layout, want, c->host_request, c->chunk);
    if (why) {
        char b[32];
        fmt_bytes(b, sizeof b, (double)want);
        if (c->dev_request || c->host_request || c->chunk)
            cb_usage_error("GPU %d: %s (device buffer %s)", g->cuda.index, why, b);
        cb_die(CB_EXIT_CANNOT_RUN, "GPU %d: %s: only %s of its memory is usable", g->cuda.index, why, b);
    }
    g->layout.streams = c->streams;
    char mem[32], dbuf[32], hbuf[32];
    fmt_bytes(mem, sizeof mem, (double)g->cuda.total_mem);
    fmt_bytes(dbuf, sizeof dbuf, (double)g->layout.dev_bytes);
    fmt_bytes(hbuf, sizeof hbuf, (double)g->layout.host_bytes);
    fprintf(cb_human(), "GPU %d: %s, PCI %s, NUMA node %s (%s), CPUs %s; %s memory, device buffer %s, host buffer %s\n",
           g->cuda.index, g->cuda.name, g->topo.bdf, g->place.nodes[0] ? g->place.nodes : "unknown",
           g->place_source ? g->place_source : "no locality information",
           g->place.cpus[0] ? g->place.cpus : "unknown", mem, dbuf, hbuf);
    gc_print_gpu_links(g, &r->degraded_links);
}

/* The phases: all GPUs at once, then each alone. */
static void plan_phases(gc_run *r)
{
    const gc_cfg *c = r->cfg;
    uint64_t seed = gc_pattern(r->t0_ns, (uint64_t)getpid());
    for (int k = 0; k < GC_NKINDS; k++)
        if (c->phases & (1u << k))
            r->phases[r->nphases++] = (gc_phase_spec){.kind = k, .gpu = -1, .iterations = c->iterations};
    if (r->ngpus > 1 && c->alone_iterations > 0)
        for (int i = 0; i < r->ngpus; i++)
            for (int k = GC_WRITE; k <= GC_READ; k++)
                if (c->phases & (1u << k))
                    r->phases[r->nphases++] = (gc_phase_spec){.kind = k, .gpu = i, .iterations = c->alone_iterations};
    for (int p = 0; p < r->nphases; p++)
        r->phases[p].seed = gc_pattern(seed, (uint64_t)p);
    char chunk[32];
    fmt_bytes(chunk, sizeof chunk, (double)r->gpus[0].layout.chunk);
    fprintf(cb_human(), "Copies: %s chunks on %d stream%s per direction; %llu iterations all at once%s\n", chunk,
           c->streams, c->streams == 1 ? "" : "s", (unsigned long long)c->iterations,
           r->ngpus > 1 && c->alone_iterations ? ", then each GPU alone" : "");
    fflush(cb_human());
}

static void plan_copies(gc_run *r)
{
    plan_devices(r);
    fprintf(cb_human(), "gpu-copy (cobalt-bench) %s on %s, started %s, %s\n", CB_VERSION, r->host, r->started, r->versions);
    for (int i = 0; i < r->ngpus; i++)
        plan_gpu(r, &r->gpus[i]);
    plan_phases(r);
}

/* ---- the copies: run ----------------------------------------------------------------- */
/* GPU_COPY_FAULT=write|read|bidir: the first GPU loses one copy of that phase. */
static int fault_kind(void)
{
    const char *fault = getenv("GPU_COPY_FAULT");
    if (!fault || !*fault)
        return -1;
    for (int k = 0; k < GC_NKINDS; k++)
        if (strcmp(fault, gc_kind_names[k]) == 0)
            return k;
    cb_usage_error("GPU_COPY_FAULT must name a phase (write, read, bidir)");
}

/* One thread per GPU; the main thread joins every barrier to follow the phases. */
static void start_workers(gc_run *r)
{
    int fault = fault_kind();
    pthread_barrier_init(&r->barrier, NULL, (unsigned)r->ngpus + 1);
    for (int i = 0; i < r->ngpus; i++) {
        gc_gpu *g = &r->gpus[i];
        gc_worker *w = &g->worker;
        w->slot = i;
        w->device = g->cuda.index;
        snprintf(w->busid, sizeof w->busid, "%s", g->topo.bdf);
        w->topo = &r->topo;
        snprintf(w->cpus, sizeof w->cpus, "%s", r->have_hw ? g->place.cpus : "");
        snprintf(w->nodes, sizeof w->nodes, "%s", r->have_hw ? g->place.nodes : "");
        w->layout = g->layout;
        w->streams = r->cfg->streams;
        w->phases = r->phases;
        w->nphases = r->nphases;
        w->results = r->results[i];
        w->barrier = &r->barrier;
        w->abort_run = &r->abort_run;
        w->stop_run = &r->stop_run;
        w->on_load = on_load;
        w->user = g;
        w->fault_kind = i == 0 ? fault : -1;
        if (pthread_create(&g->th, NULL, gc_worker_main, w) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start the thread of GPU %d", g->cuda.index);
    }
}

static void run_copies(gc_run *r)
{
    start_workers(r);
    pthread_barrier_wait(&r->barrier);
    for (int i = 0; i < r->ngpus; i++)
        if (r->gpus[i].worker.setup_failed)
            r->abort_run = 1;
    pthread_barrier_wait(&r->barrier);
    if (r->abort_run) {
        for (int i = 0; i < r->ngpus; i++) {
            pthread_join(r->gpus[i].th, NULL);
            if (r->gpus[i].worker.setup_failed)
                fprintf(stderr, "gpu-copy: %s\n", r->gpus[i].worker.error);
        }
        cb_die(CB_EXIT_CANNOT_RUN, "could not set up the copies (above)");
    }
    r->phases_done = 0;
    for (int p = 0; p < r->nphases; p++) {
        /* a signal stops the run between phases: the phase under way ends first (its
         * copies are queued on the GPUs), then nothing more starts */
        r->stop_run = cb_interrupted != 0;
        pthread_barrier_wait(&r->barrier);
        if (r->stop_run) {
            r->interrupted = 1;
            fprintf(cb_human(), "Interrupted before phase %d of %d\n", p + 1, r->nphases);
            break;
        }
        for (int b = 0; b < 3; b++)
            pthread_barrier_wait(&r->barrier);
        r->phases_done = p + 1;
        if (!r->cfg->quiet) {
            char name[64];
            double w = gc_phase_total(r, p, GC_H2D, NULL), rd = gc_phase_total(r, p, GC_D2H, NULL);
            fprintf(stderr, "[%2d/%d] %-24s", p + 1, r->nphases, gc_phase_name(r, &r->phases[p], name, sizeof name));
            if (w > 0)
                fprintf(stderr, " write %8.2f Gbit/s", w);
            if (rd > 0)
                fprintf(stderr, " read %8.2f Gbit/s", rd);
            fputc('\n', stderr);
        }
    }
    for (int i = 0; i < r->ngpus; i++)
        pthread_join(r->gpus[i].th, NULL);
    r->duration = (cb_now_ns() - r->t0_ns) / 1e9;
}

/* ---- the copies: collect ------------------------------------------------------------- */
/* Totals of the all-at-once phases, copy errors and verification failures. */
static void collect(gc_run *r)
{
    r->pw = gc_find_phase(r, GC_WRITE, -1);
    r->pr = gc_find_phase(r, GC_READ, -1);
    r->pb = gc_find_phase(r, GC_BIDIR, -1);
    r->total_w = r->pw >= 0 ? gc_phase_total(r, r->pw, GC_H2D, &r->agg_w) : NAN;
    r->total_r = r->pr >= 0 ? gc_phase_total(r, r->pr, GC_D2H, &r->agg_r) : NAN;
    r->bidir_w = r->pb >= 0 ? gc_phase_total(r, r->pb, GC_H2D, NULL) : NAN;
    r->bidir_r = r->pb >= 0 ? gc_phase_total(r, r->pb, GC_D2H, NULL) : NAN;
    for (int i = 0; i < r->ngpus; i++) {
        if (r->gpus[i].worker.error[0]) {
            r->copy_errors++;
            fprintf(cb_human(), "ERROR: %s\n", r->gpus[i].worker.error);
        }
        for (int p = 0; p < r->nphases; p++) {
            const gc_result *res = &r->results[i][p];
            if (!res->ran)
                continue;
            r->checked++;
            r->wrong += res->dev_errors + res->host_errors;
            if (res->dev_errors + res->host_errors) {
                char name[64];
                fprintf(cb_human(), "VERIFICATION FAILED: GPU %d, phase %s: %llu wrong words (device %llu, host %llu), "
                       "the first at byte %llu of the checked region\n",
                       r->gpus[i].cuda.index, gc_phase_name(r, &r->phases[p], name, sizeof name),
                       (unsigned long long)(res->dev_errors + res->host_errors), (unsigned long long)res->dev_errors,
                       (unsigned long long)res->host_errors, (unsigned long long)res->first_bad);
            }
        }
    }
    r->reachable = gc_run_reachable_gbits(r);
}

/* ---- the copy mode's stages in order ---------------------------------------------- */
static int copy_mode(gc_run *r)
{
    plan_copies(r);
    run_copies(r);
    collect(r);
    gc_report_links_and_speeds(r);
    gc_report_alone(r);
    fprintf(cb_human(), "Verification: %llu GPU phases checked, %llu wrong words\n", (unsigned long long)r->checked,
           (unsigned long long)r->wrong);
    gc_diagnose(r);
    int rc = gc_emit(r);
    if (r->have_hw)
        cb_topo_free(&r->topo);
    return rc;
}

int main(int argc, char **argv)
{
    static gc_cfg cfg;
    static gc_run r;
    cb_prog = "gpu-copy";
    gc_options_parse(&cfg, argc, argv);
    /* from here SIGINT, SIGTERM or SIGHUP stops the copies after the phase under way */
    cb_signals_install();
    r.cfg = &cfg;
    return cfg.explain_only ? gc_explain_links(&r) : copy_mode(&r);
}
