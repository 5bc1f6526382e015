/* gpu-copy: PCIe bandwidth between host memory and every NVIDIA GPU, all GPUs at once
 * and each alone, with the topology that explains a bad result (see README and
 * --help). The copies run in engine.cu; the links are read from sysfs and judged by
 * pcie.c, the locality comes from hwloc (src/common/cb_topo.c); this file plans,
 * reports and judges, in stages over one run state: plan, run, collect, diagnose, emit.
 * Exit codes and the JSON document: docs/kernel-contract.md. */
#define _GNU_SOURCE
#include "../common/cb_common.h"
#include "../common/cb_options.h"
#include "engine.h"
#include "pcie.h"
#include "plan.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_VERSION "1.0"
#define MAX_GPUS 64
#define MAX_PHASES (GC_NKINDS + 2 * MAX_GPUS)
#define DEVICE_RESERVE (256ull << 20) /* left free on the device for the context (at most) */

/* ---- options ---------------------------------------------------------------------- */
typedef struct gc_cfg {
    cb_intlist gpus;
    uint64_t iterations, alone_iterations;
    unsigned phases;
    double fraction;
    size_t dev_request, host_request, chunk;
    int streams;
    double threshold, threshold_per_gpu;
    int explain_only;
    const char *sysfs_root;
    const char *json_path;
    int quiet;
} gc_cfg;

static void parse_phases(const char *opt, const char *arg, void *dest)
{
    unsigned mask = gc_parse_phases(arg);
    if (!mask)
        cb_usage_error("invalid list '%s' for %s: expected write, read and/or bidir, e.g. write,read", arg, opt);
    *(unsigned *)dest = mask;
}

#define SIZE_MAX_OPT ((double)(1ull << 50))

static const cb_opt opts[] = {
    {.name = "gpus", .letter = 'g', .type = CB_OPT_INTLIST, .off = offsetof(gc_cfg, gpus), .arg = "LIST",
     .help = "CUDA devices to use, e.g. 0,1 or 0-3 (default all)", .section = "Workload:"},
    {.name = "iterations", .letter = 'i', .type = CB_OPT_U64, .off = offsetof(gc_cfg, iterations),
     .min = 1, .max = 100000, .def = "10", .arg = "N", .help = "timed copies of the device buffer per phase"},
    {.name = "alone-iterations", .type = CB_OPT_U64, .off = offsetof(gc_cfg, alone_iterations),
     .min = 0, .max = 100000, .def = "3", .arg = "N", .help = "the same for each GPU alone (0: skip)"},
    {.name = "phases", .type = CB_OPT_CUSTOM, .off = offsetof(gc_cfg, phases), .def = "write,read,bidir",
     .arg = "LIST", .parse = parse_phases, .help = "all-at-once phases: write,read,bidir (default all)"},
    {.name = "device-fraction", .letter = 'f', .type = CB_OPT_DOUBLE, .off = offsetof(gc_cfg, fraction),
     .min = 0.001, .max = 0.99, .def = "0.90", .arg = "F",
     .help = "device buffer as a fraction of device memory"},
    {.name = "device-buffer", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, dev_request), .min = 1,
     .max = SIZE_MAX_OPT, .arg = "SIZE", .help = "device buffer size instead, e.g. 8G"},
    {.name = "host-buffer", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, host_request), .min = 1,
     .max = SIZE_MAX_OPT, .arg = "SIZE",
     .help = "pinned host buffer per GPU (default the smaller of the\ndevice buffer and 4G)"},
    {.name = "chunk", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, chunk), .min = 1, .max = SIZE_MAX_OPT,
     .arg = "SIZE", .help = "bytes per cudaMemcpyAsync, a multiple of 4K (default 64M,\nsmaller for small buffers)"},
    {.name = "streams", .letter = 's', .type = CB_OPT_INT, .off = offsetof(gc_cfg, streams), .min = 1,
     .max = 16, .def = "2", .arg = "N", .help = "streams per direction"},
    {.name = "threshold", .letter = 't', .type = CB_OPT_DOUBLE, .off = offsetof(gc_cfg, threshold),
     .min = 0, .max = 1e6, .def = "180", .arg = "GBITS", .section = "Judgement:",
     .help = "compliant when the total write and the total read speed\nare both >= GBITS Gbit/s (the "
             "compliance document's figure\nfor two GPUs on PCIe 3.0 x16)"},
    {.name = "threshold-per-gpu", .type = CB_OPT_DOUBLE, .off = offsetof(gc_cfg, threshold_per_gpu),
     .min = 1e-9, .max = 1e6, .arg = "GBITS", .help = "instead: >= GBITS x the number of GPUs"},
    {.name = "explain-links", .type = CB_OPT_FLAG, .off = offsetof(gc_cfg, explain_only), .section = "Diagnosis:",
     .help = "only explain each NVIDIA GPU's PCIe links from sysfs: no\nCUDA, no copies (exit 1 if a link is degraded)"},
    {.name = "sysfs-root", .type = CB_OPT_STRING, .off = offsetof(gc_cfg, sysfs_root), .def = "/sys", .arg = "DIR",
     .help = "read PCI devices from DIR instead of /sys (a recorded tree\nwith bus/pci/devices/ and devices/)"},
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = offsetof(gc_cfg, json_path), .arg = "FILE",
     .section = "Output:", .help = "write the JSON result document to FILE ('-' = stdout)"},
    CB_OPT_QUIET_ROW(gc_cfg, quiet),
    {0},
};

static const cb_cmd cmd = {
    .name = "gpu-copy",
    .test_version = TEST_VERSION,
    .opts = opts,
    .about =
"Measure the PCIe bandwidth between host memory and every NVIDIA GPU, and explain a\n"
"bad result by the topology: each GPU's NUMA node and the links between it and its\n"
"root port, as negotiated versus what both ends support.\n"
"\n"
"For each GPU one host thread, bound to the CPUs of the GPU's NUMA node (hwloc, from the\n"
"GPU's PCI bus id), copies between a pinned host buffer on that node and a device\n"
"buffer of most of the GPU's memory, in chunks on several streams per direction.\n"
"Phases, all GPUs at once: write (host to device), read (device to host), bidir (both\n"
"at once); then each GPU alone (write and read), so that a shared bottleneck shows as\n"
"the difference. Per-GPU speeds are summed into the totals, as the compliance\n"
"document does. After the copies every byte they left is checked.\n",
    .more =
"SIZE: bytes, or with K, M, G, T (binary: 64M = 64 MiB). Speeds in Gbit/s (10^9 bit/s).\n"
"Theoretical link bandwidth per direction = rate x lanes x line code: Gen1 2.5 GT/s,\n"
"Gen2 5 GT/s (8b/10b), Gen3 8, Gen4 16, Gen5 32 GT/s (128b/130b), Gen6 64 GT/s (PAM4,\n"
"FLIT mode, no line code); packet headers are not deducted. Gen3 x16 = 126.03 Gbit/s,\n"
"so two GPUs on dedicated PCIe 3.0 x16 links can reach 252 Gbit/s per direction.\n"
"A link that trained below what the GPU supports (fewer lanes, a lower generation) is\n"
"named as the likely cause. An idle NVIDIA GPU lowers its link rate to save power: the\n"
"links are read again while the copies run. The same link rule judges every PCIe\n"
"device in cb-pcie-links (and so in cobalt-bench preflight).\n"
"\n"
"SIGINT, SIGTERM or SIGHUP stops the copies after the phase under way (its copies are\n"
"queued on the GPUs): the report, the results block and the JSON document\n"
"(\"interrupted\": true) cover the phases that ran; a second signal ends it at once.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant or verification failed (--explain-links:\n"
"a degraded link), 2 usage error, 3 could not run (no NVIDIA GPU or driver), 128 + the\n"
"signal's number when interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP).\n",
};

/* Cross-option rules, after the table's own checks. */
static void check_cfg(gc_cfg *c)
{
    if (c->gpus.n > MAX_GPUS)
        cb_usage_error("invalid list for --gpus: at most %d GPUs", MAX_GPUS);
    if (cb_opts_given(&cmd, "threshold") && c->threshold_per_gpu > 0)
        cb_usage_error("--threshold and --threshold-per-gpu both set the threshold; give one");
    if (cb_opts_given(&cmd, "device-fraction") && c->dev_request)
        cb_usage_error("--device-fraction and --device-buffer both size the device buffer; give one");
    if (c->chunk && (c->chunk < GC_MIN_CHUNK || c->chunk % GC_MIN_CHUNK))
        cb_usage_error("invalid value for --chunk: must be a multiple of 4K");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bus/pci/devices", c->sysfs_root);
    if (access(dir, R_OK | X_OK) != 0)
        cb_usage_error("--sysfs-root %s: no PCI devices there (%s is missing)", c->sysfs_root, dir);
    if (c->json_path && cb_json_path_ok(c->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", c->json_path);
}

/* ---- the run state ------------------------------------------------------------------ */
struct run;

/* What is known about one GPU: from sysfs, hwloc, CUDA and the run. */
typedef struct gpu {
    const struct run *run;
    gc_cuda_dev cuda;           /* run mode */
    gc_gpu_topo topo;           /* links as read before copying (idle) */
    gc_gpu_topo loaded;         /* links as read during the copies */
    int have_topo, have_loaded;
    cb_pci_place place;
    const char *place_source;   /* "hwloc", "sysfs" or NULL */
    gc_layout layout;
    gc_worker worker;
    pthread_t th;
} gpu;

/* Everything one run knows, filled stage by stage. */
typedef struct run {
    const gc_cfg *cfg;
    gpu gpus[MAX_GPUS];
    int ngpus;
    cb_topo topo;               /* hwloc, with PCI devices */
    int have_hw;
    char started[64], host[256], versions[128];
    uint64_t t0_ns;
    double duration;
    int degraded_links;
    /* copies: the plan and the workers' results */
    gc_phase_spec phases[MAX_PHASES];
    int nphases;
    gc_result results[MAX_GPUS][MAX_PHASES];
    volatile int abort_run;
    volatile int stop_run;      /* a signal: no further phase starts */
    int phases_done;            /* phases that ran: all, or those before the signal */
    int interrupted;
    pthread_barrier_t barrier;
    /* collected */
    int pw, pr, pb;             /* the all-at-once write, read, bidir phases (-1 none) */
    double total_w, total_r, agg_w, agg_r, bidir_w, bidir_r;
    double reachable;           /* what the negotiated links can carry together */
    double worst_share;         /* lowest "together as a share of alone" */
    uint64_t wrong, checked;
    int copy_errors;
    /* judged */
    double threshold;
    int measured_both, passed;
    /* --explain-links */
    double sum_max;
    int degraded_gpus;
    char degraded_names[1024];
} run;

/* ---- output helpers ------------------------------------------------------------ */
/* The compliance document's results block aligns values after "Total write speed:". */
static void result_line(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void result_line(const char *label, const char *fmt, ...)
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

static void results_begin(void)
{
    fprintf(cb_human(), "----- Test results -----\n");
    result_line("Test version", "%s", TEST_VERSION);
}

static void fmt_bytes(char *buf, size_t len, double bytes)
{
    if (bytes >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", bytes / (1ull << 30));
    else
        snprintf(buf, len, "%.0f MiB", bytes / (1ull << 20));
}

/* The links to judge: read under load if we have that, else idle. */
static const gc_gpu_topo *links_of(const gpu *g, int *idle)
{
    *idle = !g->have_loaded;
    return g->have_loaded ? &g->loaded : &g->topo;
}

static void locate(gpu *g, const cb_topo *topo, int use_hwloc)
{
    g->place_source = NULL;
    if (use_hwloc && topo && cb_topo_pci_locality(topo, g->topo.bdf, &g->place) == 0) {
        g->place_source = "hwloc";
        return;
    }
    memset(&g->place, 0, sizeof g->place);
    g->place.numa_node = g->have_topo ? g->topo.numa_node : -1;
    if (g->have_topo && (g->topo.numa_node >= 0 || g->topo.cpulist[0])) {
        if (g->topo.numa_node >= 0)
            snprintf(g->place.nodes, sizeof g->place.nodes, "%d", g->topo.numa_node);
        snprintf(g->place.cpus, sizeof g->place.cpus, "%s", g->topo.cpulist);
        g->place_source = "sysfs";
    }
}

static void print_gpu_links(const gpu *g, int *degraded_links)
{
    int idle;
    const gc_gpu_topo *t = links_of(g, &idle);
    if (!g->have_topo || t->nlinks == 0) {
        fprintf(cb_human(), "  link: unknown (%s has no PCIe link information for %s)\n", g->run->cfg->sysfs_root, g->topo.bdf);
        return;
    }
    for (int k = 0; k < t->nlinks; k++) {
        const gc_link *l = &t->links[k];
        gc_link_verdict v;
        gc_judge_link(l, k == 0, idle, &v);
        char cur[64], dmax[64], pmax[64];
        gc_link_name(cur, sizeof cur, l->cur_gts, l->cur_width);
        gc_link_name(dmax, sizeof dmax, l->dev_max_gts, l->dev_max_width);
        gc_link_name(pmax, sizeof pmax, l->port_max_gts, l->port_max_width);
        fprintf(cb_human(), "  link %s -> %s (%s): %s = %.2f Gbit/s per direction%s; %s max %s, port max %s\n",
               l->up[0] ? l->up : "?", l->down, k == 0 ? "the GPU" : "switch uplink", cur, v.cur_gbits,
               k == 0 ? (idle ? " (read idle)" : " (read under load)") : "",
               k == 0 ? "GPU" : "switch", dmax, pmax);
        if (v.degraded) {
            fprintf(cb_human(), "    DEGRADED: %s\n", v.text);
            (*degraded_links)++;
        } else if (v.text[0]) {
            fprintf(cb_human(), "    note: %s\n", v.text);
        }
    }
}

/* The per-GPU facts both modes report. */
static void json_gpu_topology(cb_json *j, const gpu *g)
{
    int idle;
    const gc_gpu_topo *t = links_of(g, &idle);
    cbj_str(j, "pci_bus_id", g->topo.bdf);
    cbj_int(j, "numa_node", g->place.numa_node);
    cbj_str(j, "numa_nodes", g->place.nodes);
    cbj_str(j, "cpus", g->place.cpus);
    cbj_str(j, "locality_source", g->place_source ? g->place_source : "unknown");
    cbj_str(j, "link_state", idle ? "idle" : "under load");
    cbj_num(j, "link_theoretical_gbits", gc_gpu_path_gbits(t));
    cbj_num(j, "link_max_gbits", gc_gpu_max_gbits(t));
    cbj_arr_begin(j, "links");
    for (int k = 0; k < t->nlinks; k++)
        gc_json_link(j, &t->links[k], k == 0, 1, idle);
    cbj_arr_end(j);
}

/* The GPU's chain judged by the one PCIe link rule (pcie.c): a degraded link, if any. */
static int gpu_degraded(const gpu *g, char *why, size_t len)
{
    int idle, k;
    const gc_gpu_topo *t = links_of(g, &idle);
    gc_link_verdict v;
    if (gc_judge_device(t, idle, &v, &k) != GC_LINK_DEGRADED)
        return 0;
    snprintf(why, len, "%s link %s -> %s %s", k == 0 ? "its" : "the switch uplink",
             t->links[k].up, t->links[k].down, v.text);
    return 1;
}

/* Shared uplinks that cannot carry what the GPUs below them could move. Prints them;
 * returns how many are too narrow. */
static int print_shared(const run *r, int verbose_ok, const char *indent)
{
    static gc_gpu_topo t[MAX_GPUS];
    for (int i = 0; i < r->ngpus; i++) {
        int idle;
        t[i] = *links_of(&r->gpus[i], &idle);
    }
    gc_shared_link sh[MAX_GPUS];
    int n = gc_find_shared_links(t, r->ngpus, sh, MAX_GPUS), narrow = 0;
    for (int s = 0; s < n; s++) {
        double up = gc_link_gbits(sh[s].link.cur_gts, sh[s].link.cur_width);
        char members[512] = "";
        for (int i = 0; i < r->ngpus; i++)
            if (sh[s].members & (1ULL << i))
                snprintf(members + strlen(members), sizeof members - strlen(members), "%s%s",
                         members[0] ? ", " : "", r->gpus[i].topo.bdf);
        int too_narrow = up > 0 && up < sh[s].sum_gbits * 0.99;
        narrow += too_narrow;
        if (too_narrow || verbose_ok)
            fprintf(cb_human(), "%sShared uplink %s -> %s (%.2f Gbit/s) carries GPUs %s (%.2f Gbit/s through their own links)%s\n",
                   indent, sh[s].link.up, sh[s].link.down, up, members, sh[s].sum_gbits,
                   too_narrow ? ": together they cannot exceed the uplink" : "");
    }
    return narrow;
}

/* What the GPUs' negotiated links can carry together (shared uplinks counted once). */
static double reachable_gbits(const run *r)
{
    static gc_gpu_topo now[MAX_GPUS];
    for (int i = 0; i < r->ngpus; i++) {
        int idle;
        now[i] = *links_of(&r->gpus[i], &idle);
    }
    return gc_reachable_gbits(now, r->ngpus);
}

/* ---- --explain-links: plan, diagnose, emit ------------------------------------------ */
static void explain_plan(run *r)
{
    static gc_gpu_topo found[MAX_GPUS];
    const gc_cfg *c = r->cfg;
    int n = gc_sysfs_find_gpus(c->sysfs_root, found, MAX_GPUS);
    if (n <= 0)
        cb_die(CB_EXIT_CANNOT_RUN, "no NVIDIA GPU found in %s/bus/pci/devices", c->sysfs_root);
    int live = strcmp(c->sysfs_root, "/sys") == 0;
    r->have_hw = live && cb_topo_load_pci(&r->topo, NULL) == 0;
    cb_iso8601_now(r->started, sizeof r->started);
    r->t0_ns = cb_now_ns();
    fprintf(cb_human(), "gpu-copy (cobalt-bench) %s: PCIe links of the NVIDIA GPUs in %s (no copies)\n", CB_VERSION, c->sysfs_root);
    r->ngpus = n;
    for (int i = 0; i < n; i++) {
        gpu *g = &r->gpus[i];
        g->run = r;
        g->topo = found[i];
        g->have_topo = 1;
        locate(g, r->have_hw ? &r->topo : NULL, r->have_hw);
        fprintf(cb_human(), "GPU %s [%04x:%04x]: NUMA node %s (%s), CPUs %s\n", g->topo.bdf, g->topo.vendor, g->topo.device,
               g->place.nodes[0] ? g->place.nodes : "unknown", g->place_source ? g->place_source : "no locality information",
               g->place.cpus[0] ? g->place.cpus : "unknown");
        int before = r->degraded_links;
        print_gpu_links(g, &r->degraded_links);
        if (r->degraded_links > before) {
            r->degraded_gpus++;
            snprintf(r->degraded_names + strlen(r->degraded_names), sizeof r->degraded_names - strlen(r->degraded_names),
                     "%s%s", r->degraded_names[0] ? ", " : "", g->topo.bdf);
        }
        r->sum_max += gc_gpu_max_gbits(&g->topo);
    }
    r->reachable = gc_reachable_gbits(found, n);
}

static void explain_diagnose(run *r)
{
    print_shared(r, 1, "");
    for (int i = 0; i < r->ngpus; i++) {
        char why[768];
        if (gpu_degraded(&r->gpus[i], why, sizeof why))
            fprintf(cb_human(), "Likely cause of low bandwidth: GPU %s: %s\n", r->gpus[i].topo.bdf, why);
    }
    fprintf(cb_human(), "Theoretical: %.2f Gbit/s per direction through the negotiated links (shared uplinks "
           "counted once); %.2f Gbit/s if every GPU's link ran at the GPU's maximum\n", r->reachable, r->sum_max);
    r->passed = !r->degraded_links;
    r->duration = (cb_now_ns() - r->t0_ns) / 1e9;
}

static void explain_json_config(cb_json *j, const void *ctx)
{
    const run *r = ctx;
    cbj_str(j, "mode", "explain-links");
    cbj_str(j, "sysfs_root", r->cfg->sysfs_root);
}

static void explain_json_metrics(cb_json *j, const void *ctx)
{
    const run *r = ctx;
    cbj_metric(j, "gpus", r->ngpus, "GPUs");
    cbj_metric(j, "degraded_links", r->degraded_links, "links");
    cbj_metric(j, "theoretical_link_speed", r->reachable, "Gbit/s");
    cbj_metric(j, "max_link_speed", r->sum_max, "Gbit/s");
}

static void explain_json_gpus(cb_json *j, const void *ctx)
{
    const run *r = ctx;
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++) {
        cbj_obj_begin(j, NULL);
        json_gpu_topology(j, &r->gpus[i]);
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

static int explain_emit(const run *r)
{
    int rc = r->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (r->cfg->json_path) {
        cb_envelope env = {.test = "gpu-copy", .test_version = TEST_VERSION, .started = r->started,
                           .duration_s = r->duration, .threshold = NAN, .passed = r->passed};
        cb_doc_parts parts = {.config = explain_json_config, .metrics = explain_json_metrics,
                              .extra = explain_json_gpus};
        if (cb_doc_write(r->cfg->json_path, &env, &parts, r) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    results_begin();
    result_line("GPUs", "%d", r->ngpus);
    if (r->degraded_gpus)
        result_line("Degraded links", "%d (GPU %s)", r->degraded_links, r->degraded_names);
    else
        result_line("Degraded links", "0");
    result_line("Link speed", "%.2f Gbit/s per direction (theoretical, all GPUs)", r->reachable);
    return rc;
}

static int explain_links(run *r)
{
    explain_plan(r);
    explain_diagnose(r);
    int rc = explain_emit(r);
    if (r->have_hw)
        cb_topo_free(&r->topo);
    return rc;
}

/* ---- the copies: helpers ---------------------------------------------------------- */
/* Called by a worker while its copies run: the link state under load. Keeps the
 * fastest state seen (an idle GPU's link comes up within milliseconds of traffic). */
static void on_load(gc_worker *w, int phase)
{
    (void)phase;
    gpu *g = (gpu *)w->user;
    gc_gpu_topo now;
    if (!g->have_topo || gc_sysfs_read_gpu(g->run->cfg->sysfs_root, g->topo.bdf, &now) != 0 || now.nlinks == 0)
        return;
    if (!g->have_loaded || gc_gpu_path_gbits(&now) > gc_gpu_path_gbits(&g->loaded)) {
        g->loaded = now;
        g->have_loaded = 1;
    }
}

static void __attribute__((noreturn)) no_gpu(const run *r, const char *cuda_err)
{
    static gc_gpu_topo found[MAX_GPUS];
    const char *root = r->cfg->sysfs_root;
    int n = gc_sysfs_find_gpus(root, found, MAX_GPUS);
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

static const char *phase_name(const run *r, const gc_phase_spec *p, char *buf, size_t len)
{
    if (p->gpu < 0)
        snprintf(buf, len, "all GPUs, %s", gc_kind_names[p->kind]);
    else
        snprintf(buf, len, "GPU %d alone, %s", r->gpus[p->gpu].cuda.index, gc_kind_names[p->kind]);
    return buf;
}

static double speed_of(const gc_result *r, int dir)
{
    return dir == GC_H2D ? cb_gbits((double)r->h2d_bytes, r->h2d_s) : cb_gbits((double)r->d2h_bytes, r->d2h_s);
}

/* Per-GPU and summed speeds of one phase in one direction; aggregate: all bytes over
 * the wall-clock span from the first start to the last end. */
static double phase_total(const run *r, int p, int dir, double *aggregate)
{
    double sum = 0, bytes = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int i = 0; i < r->ngpus; i++) {
        const gc_result *res = &r->results[i][p];
        if (!res->ran)
            continue;
        sum += speed_of(res, dir);
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
static int find_phase(const run *r, int kind, int gpu_slot)
{
    for (int p = 0; p < r->phases_done; p++)
        if (r->phases[p].kind == kind && r->phases[p].gpu == gpu_slot)
            return p;
    return -1;
}

/* ---- the copies: plan ---------------------------------------------------------------- */
/* The selected CUDA devices and the machine's topology. */
static void plan_devices(run *r)
{
    static gc_cuda_dev devs[MAX_GPUS];
    const gc_cfg *c = r->cfg;
    char err[512];
    int ndev = gc_cuda_devices(devs, MAX_GPUS, err, sizeof err);
    if (ndev < 0)
        no_gpu(r, err);
    int sel[MAX_GPUS], nsel = 0;
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
static void plan_gpu(run *r, gpu *g)
{
    const gc_cfg *c = r->cfg;
    g->have_topo = gc_sysfs_read_gpu(c->sysfs_root, g->cuda.busid, &g->topo) == 0;
    if (!g->have_topo)
        gc_bdf_normalise(g->topo.bdf, g->cuda.busid);
    locate(g, r->have_hw ? &r->topo : NULL, r->have_hw && cb_topo_pci_devices(&r->topo) > 0);
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
    print_gpu_links(g, &r->degraded_links);
}

/* The phases: all GPUs at once, then each alone. */
static void plan_phases(run *r)
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

static void plan_copies(run *r)
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
static void start_workers(run *r)
{
    int fault = fault_kind();
    pthread_barrier_init(&r->barrier, NULL, (unsigned)r->ngpus + 1);
    for (int i = 0; i < r->ngpus; i++) {
        gpu *g = &r->gpus[i];
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

static void run_copies(run *r)
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
            double w = phase_total(r, p, GC_H2D, NULL), rd = phase_total(r, p, GC_D2H, NULL);
            fprintf(stderr, "[%2d/%d] %-24s", p + 1, r->nphases, phase_name(r, &r->phases[p], name, sizeof name));
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
static void collect(run *r)
{
    r->pw = find_phase(r, GC_WRITE, -1);
    r->pr = find_phase(r, GC_READ, -1);
    r->pb = find_phase(r, GC_BIDIR, -1);
    r->total_w = r->pw >= 0 ? phase_total(r, r->pw, GC_H2D, &r->agg_w) : NAN;
    r->total_r = r->pr >= 0 ? phase_total(r, r->pr, GC_D2H, &r->agg_r) : NAN;
    r->bidir_w = r->pb >= 0 ? phase_total(r, r->pb, GC_H2D, NULL) : NAN;
    r->bidir_r = r->pb >= 0 ? phase_total(r, r->pb, GC_D2H, NULL) : NAN;
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
                       r->gpus[i].cuda.index, phase_name(r, &r->phases[p], name, sizeof name),
                       (unsigned long long)(res->dev_errors + res->host_errors), (unsigned long long)res->dev_errors,
                       (unsigned long long)res->host_errors, (unsigned long long)res->first_bad);
            }
        }
    }
    r->reachable = reachable_gbits(r);
}

/* The links as read under load (they replace the idle reading) and the speeds. */
static void report_links_and_speeds(run *r)
{
    fprintf(cb_human(), "Links read while copying:\n");
    r->degraded_links = 0;
    for (int i = 0; i < r->ngpus; i++) {
        fprintf(cb_human(), "GPU %d (%s):\n", r->gpus[i].cuda.index, r->gpus[i].topo.bdf);
        print_gpu_links(&r->gpus[i], &r->degraded_links);
    }
    fprintf(cb_human(), "All GPUs at once (Gbit/s; %% of the GPU's negotiated link):\n");
    for (int i = 0; i < r->ngpus; i++) {
        const gpu *g = &r->gpus[i];
        int idle;
        double link = gc_gpu_path_gbits(links_of(g, &idle));
        fprintf(cb_human(), "  GPU %d %s:", g->cuda.index, g->topo.bdf);
        if (r->pw >= 0) {
            double v = speed_of(&r->results[i][r->pw], GC_H2D);
            fprintf(cb_human(), " write %.2f", v);
            if (link > 0)
                fprintf(cb_human(), " (%.1f%%)", 100 * v / link);
        }
        if (r->pr >= 0) {
            double v = speed_of(&r->results[i][r->pr], GC_D2H);
            fprintf(cb_human(), " read %.2f", v);
            if (link > 0)
                fprintf(cb_human(), " (%.1f%%)", 100 * v / link);
        }
        if (r->pb >= 0)
            fprintf(cb_human(), " bidir %.2f + %.2f", speed_of(&r->results[i][r->pb], GC_H2D), speed_of(&r->results[i][r->pb], GC_D2H));
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
static void report_alone(run *r)
{
    r->worst_share = 1;
    if (r->ngpus < 2 || r->cfg->alone_iterations == 0)
        return;
    fprintf(cb_human(), "Each GPU alone (Gbit/s; together as %% of alone):\n");
    for (int i = 0; i < r->ngpus; i++) {
        fprintf(cb_human(), "  GPU %d:", r->gpus[i].cuda.index);
        for (int k = GC_WRITE; k <= GC_READ; k++) {
            int pa = find_phase(r, k, i), pt = find_phase(r, k, -1);
            if (pa < 0 || pt < 0)
                continue;
            int dir = k == GC_WRITE ? GC_H2D : GC_D2H;
            double alone = speed_of(&r->results[i][pa], dir), together = speed_of(&r->results[i][pt], dir);
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
static int diagnose_placement(const run *r)
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

static void diagnose(run *r)
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
        if (gpu_degraded(&r->gpus[i], why, sizeof why)) {
            fprintf(cb_human(), "  Likely cause: GPU %d (%s): %s\n", r->gpus[i].cuda.index, r->gpus[i].topo.bdf, why);
            causes++;
        }
    }
    causes += print_shared(r, 0, "  ");
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
    const run *r = ctx;
    const gc_cfg *c = r->cfg;
    cbj_str(j, "mode", "copy");
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++)
        cbj_int(j, NULL, r->gpus[i].cuda.index);
    cbj_arr_end(j);
    cbj_int(j, "iterations", (long long)c->iterations);
    cbj_int(j, "alone_iterations", (long long)(r->ngpus > 1 ? c->alone_iterations : 0));
    cbj_arr_begin(j, "phases");
    for (int k = 0; k < GC_NKINDS; k++)
        if (c->phases & (1u << k))
            cbj_str(j, NULL, gc_kind_names[k]);
    cbj_arr_end(j);
    cbj_num(j, "device_fraction", c->dev_request ? NAN : c->fraction);
    cbj_int(j, "chunk_bytes", (long long)r->gpus[0].layout.chunk);
    cbj_int(j, "streams_per_direction", c->streams);
    cbj_num(j, "threshold_per_gpu_gbits", c->threshold_per_gpu > 0 ? c->threshold_per_gpu : NAN);
    cbj_str(j, "sysfs_root", c->sysfs_root);
    cbj_str(j, "cuda", r->versions);
}

static void copy_json_metrics(cb_json *j, const void *ctx)
{
    const run *r = ctx;
    double link_sum = r->reachable;
    if (r->pw >= 0) {
        cbj_metric(j, "total_write_speed", r->total_w, "Gbit/s");
        cbj_metric(j, "total_write_speed_bytes", r->total_w * 1e9 / 8, "B/s");
        cbj_metric(j, "aggregate_write_speed", r->agg_w, "Gbit/s");
        if (link_sum > 0)
            cbj_metric(j, "write_percent_of_link", 100 * r->total_w / link_sum, "%");
    }
    if (r->pr >= 0) {
        cbj_metric(j, "total_read_speed", r->total_r, "Gbit/s");
        cbj_metric(j, "total_read_speed_bytes", r->total_r * 1e9 / 8, "B/s");
        cbj_metric(j, "aggregate_read_speed", r->agg_r, "Gbit/s");
        if (link_sum > 0)
            cbj_metric(j, "read_percent_of_link", 100 * r->total_r / link_sum, "%");
    }
    if (r->pb >= 0) {
        cbj_metric(j, "bidir_write_speed", r->bidir_w, "Gbit/s");
        cbj_metric(j, "bidir_read_speed", r->bidir_r, "Gbit/s");
    }
    cbj_metric(j, "theoretical_link_speed", link_sum, "Gbit/s");
    cbj_metric(j, "gpus", r->ngpus, "GPUs");
    cbj_metric(j, "degraded_links", r->degraded_links, "links");
    cbj_metric(j, "verified_phases", (double)r->checked, "phases");
    cbj_metric(j, "verification_errors", (double)r->wrong, "errors");
}

static void copy_json_gpu(cb_json *j, const run *r, int i)
{
    const gpu *g = &r->gpus[i];
    const gc_result *res = r->results[i];
    cbj_obj_begin(j, NULL);
    cbj_int(j, "cuda_device", g->cuda.index);
    cbj_str(j, "name", g->cuda.name);
    json_gpu_topology(j, g);
    cbj_bool(j, "thread_bound", g->worker.bound_cpu);
    cbj_bool(j, "host_buffer_bound", g->worker.bound_mem);
    cbj_int(j, "memory_bytes", (long long)g->cuda.total_mem);
    cbj_int(j, "device_buffer_bytes", (long long)g->layout.dev_bytes);
    cbj_int(j, "host_buffer_bytes", (long long)g->layout.host_bytes);
    if (r->pw >= 0)
        cbj_num(j, "write_speed_gbits", speed_of(&res[r->pw], GC_H2D));
    if (r->pr >= 0)
        cbj_num(j, "read_speed_gbits", speed_of(&res[r->pr], GC_D2H));
    if (r->pb >= 0) {
        cbj_num(j, "bidir_write_speed_gbits", speed_of(&res[r->pb], GC_H2D));
        cbj_num(j, "bidir_read_speed_gbits", speed_of(&res[r->pb], GC_D2H));
    }
    int aw = find_phase(r, GC_WRITE, i), ar = find_phase(r, GC_READ, i);
    if (aw >= 0)
        cbj_num(j, "alone_write_speed_gbits", speed_of(&res[aw], GC_H2D));
    if (ar >= 0)
        cbj_num(j, "alone_read_speed_gbits", speed_of(&res[ar], GC_D2H));
    uint64_t e = 0;
    for (int p = 0; p < r->nphases; p++)
        e += res[p].dev_errors + res[p].host_errors;
    cbj_int(j, "verification_errors", (long long)e);
    cbj_str(j, "error", g->worker.error);
    cbj_obj_end(j);
}

static void copy_json_gpus(cb_json *j, const void *ctx)
{
    const run *r = ctx;
    cbj_arr_begin(j, "gpus");
    for (int i = 0; i < r->ngpus; i++)
        copy_json_gpu(j, r, i);
    cbj_arr_end(j);
}

static int emit(const run *r)
{
    int rc = r->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (r->cfg->json_path) {
        cb_envelope env = {.test = "gpu-copy", .test_version = TEST_VERSION, .started = r->started,
                           .duration_s = r->duration, .threshold = r->threshold, .passed = r->passed,
                           .interrupted = r->interrupted};
        cb_doc_parts parts = {.config = copy_json_config, .metrics = copy_json_metrics, .extra = copy_json_gpus};
        if (cb_doc_write(r->cfg->json_path, &env, &parts, r) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    results_begin();
    if (r->interrupted) {
        char what[128];
        snprintf(what, sizeof what, "after %.2f s, %d of %d phases run; the figures cover those",
                 r->duration, r->phases_done, r->nphases);
        result_line("Interrupted", "%s -- %s", cb_interrupted_name(), what);
    }
    if (r->pw >= 0)
        result_line("Total write speed", "%.2f Gbit/s", r->total_w);
    else
        result_line("Total write speed", "not measured");
    if (r->pr >= 0)
        result_line("Total read speed", "%.2f Gbit/s", r->total_r);
    else
        result_line("Total read speed", "not measured");
    fflush(cb_human());
    if (r->interrupted)
        return cb_exit_interrupted();
    return rc;
}

static int copy_mode(run *r)
{
    plan_copies(r);
    run_copies(r);
    collect(r);
    report_links_and_speeds(r);
    report_alone(r);
    fprintf(cb_human(), "Verification: %llu GPU phases checked, %llu wrong words\n", (unsigned long long)r->checked,
           (unsigned long long)r->wrong);
    diagnose(r);
    int rc = emit(r);
    if (r->have_hw)
        cb_topo_free(&r->topo);
    return rc;
}

int main(int argc, char **argv)
{
    static gc_cfg cfg;
    static run r;
    cb_prog = "gpu-copy";
    cb_opts_parse(&cmd, &cfg, argc, argv);
    check_cfg(&cfg);
    /* from here SIGINT, SIGTERM or SIGHUP stops the copies after the phase under way */
    cb_signals_install();
    r.cfg = &cfg;
    return cfg.explain_only ? explain_links(&r) : copy_mode(&r);
}
