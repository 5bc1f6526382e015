/* gpu-copy: PCIe bandwidth between host memory and every NVIDIA GPU, all GPUs at once
 * and each alone, with the topology that explains a bad result (see README and
 * --help). The copies run in engine.cu; the links are read from sysfs (pcie.c), the
 * locality from hwloc (locality.c); this file plans, reports and judges. */
#define _GNU_SOURCE
#include "../common/cb_common.h"
#include "engine.h"
#include "locality.h"
#include "pcie.h"
#include "plan.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_VERSION "1.0"
#define MAX_GPUS 64
#define DEVICE_RESERVE (256ull << 20) /* left free on the device for the context (at most) */

static struct {
    int gpus[MAX_GPUS], ngpus_sel;
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
} opt = {
    .iterations = 10,
    .alone_iterations = 3,
    .phases = (1u << GC_WRITE) | (1u << GC_READ) | (1u << GC_BIDIR),
    .fraction = 0.90,
    .streams = 2,
    .threshold = 180.0,
    .sysfs_root = "/sys",
};

/* What is known about one GPU: from sysfs, hwloc, CUDA and the run. */
typedef struct gpu {
    gc_cuda_dev cuda;           /* run mode */
    gc_gpu_topo topo;           /* links as read before copying (idle) */
    gc_gpu_topo loaded;         /* links as read during the copies */
    int have_topo, have_loaded;
    gc_place place;
    const char *place_source;   /* "hwloc", "sysfs" or NULL */
    gc_layout layout;
    gc_worker worker;
    pthread_t th;
} gpu;

static gpu gpus[MAX_GPUS];
static int ngpus;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: gpu-copy [OPTION]...\n"
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
"document does. After the copies every byte they left is checked.\n"
"\n"
"Workload:\n"
"  -g, --gpus=LIST            CUDA devices to use, e.g. 0,1 or 0-3 (default all)\n"
"  -i, --iterations=N         timed copies of the device buffer per phase (default 10)\n"
"      --alone-iterations=N   the same for each GPU alone (default 3; 0: skip)\n"
"      --phases=LIST          all-at-once phases: write,read,bidir (default all)\n"
"  -f, --device-fraction=F    device buffer as a fraction of device memory\n"
"                             (default 0.90)\n"
"      --device-buffer=SIZE   device buffer size instead, e.g. 8G\n"
"      --host-buffer=SIZE     pinned host buffer per GPU (default the smaller of the\n"
"                             device buffer and 4G)\n"
"      --chunk=SIZE           bytes per cudaMemcpyAsync (default 64M)\n"
"  -s, --streams=N            streams per direction (default 2)\n"
"Judgement:\n"
"  -t, --threshold=GBITS      compliant when the total write and the total read speed\n"
"                             are both >= GBITS Gbit/s (default 180, the compliance\n"
"                             document's figure for two GPUs on PCIe 3.0 x16)\n"
"      --threshold-per-gpu=GBITS  instead: >= GBITS x the number of GPUs\n"
"Diagnosis:\n"
"      --explain-links        only explain each NVIDIA GPU's PCIe links from sysfs: no\n"
"                             CUDA, no copies (exit 1 if a link is degraded)\n"
"      --sysfs-root=DIR       read PCI devices from DIR instead of /sys (a recorded tree\n"
"                             with bus/pci/devices/ and devices/)\n"
"Output:\n"
"  -j, --json=FILE            write the JSON result document to FILE ('-' = stdout)\n"
"  -q, --quiet                no progress lines on stderr\n"
"  -h, --help                 this help\n"
"  -V, --version              version\n"
"\n"
"SIZE: bytes, or with K, M, G, T (binary: 64M = 64 MiB). Speeds in Gbit/s (10^9 bit/s).\n"
"Theoretical link bandwidth per direction = rate x lanes x line code: Gen1 2.5 GT/s,\n"
"Gen2 5 GT/s (8b/10b), Gen3 8, Gen4 16, Gen5 32 GT/s (128b/130b), Gen6 64 GT/s (PAM4,\n"
"FLIT mode, no line code); packet headers are not deducted. Gen3 x16 = 126.03 Gbit/s,\n"
"so two GPUs on dedicated PCIe 3.0 x16 links can reach 252 Gbit/s per direction.\n"
"A link that trained below what the GPU supports (fewer lanes, a lower generation) is\n"
"named as the likely cause. An idle NVIDIA GPU lowers its link rate to save power: the\n"
"links are read again while the copies run.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant or verification failed (--explain-links:\n"
"a degraded link), 2 usage error, 3 could not run (no NVIDIA GPU or driver).\n");
}

static size_t opt_size(const char *name, const char *arg)
{
    size_t v;
    if (gc_parse_size(arg, &v) != 0 || v == 0)
        cb_usage_error("invalid value '%s' for %s: expected a size like 4G, 512M or 1048576", arg, name);
    return v;
}

static void parse_args(int argc, char **argv)
{
    enum { O_ALONE = 256, O_PHASES, O_DEVBUF, O_HOSTBUF, O_CHUNK, O_TPG, O_EXPLAIN, O_SYSFS };
    static const struct option opts[] = {
        {"gpus", required_argument, 0, 'g'},
        {"iterations", required_argument, 0, 'i'},
        {"alone-iterations", required_argument, 0, O_ALONE},
        {"phases", required_argument, 0, O_PHASES},
        {"device-fraction", required_argument, 0, 'f'},
        {"device-buffer", required_argument, 0, O_DEVBUF},
        {"host-buffer", required_argument, 0, O_HOSTBUF},
        {"chunk", required_argument, 0, O_CHUNK},
        {"streams", required_argument, 0, 's'},
        {"threshold", required_argument, 0, 't'},
        {"threshold-per-gpu", required_argument, 0, O_TPG},
        {"explain-links", no_argument, 0, O_EXPLAIN},
        {"sysfs-root", required_argument, 0, O_SYSFS},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    int have_threshold = 0, have_fraction = 0;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":g:i:f:s:t:j:qhV", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'g': opt.ngpus_sel = cb_opt_intlist("--gpus", optarg, opt.gpus, MAX_GPUS); break;
        case 'i': opt.iterations = (uint64_t)cb_opt_long("--iterations", optarg, 1, 100000); break;
        case O_ALONE: opt.alone_iterations = (uint64_t)cb_opt_long("--alone-iterations", optarg, 0, 100000); break;
        case O_PHASES:
            opt.phases = gc_parse_phases(optarg);
            if (!opt.phases)
                cb_usage_error("invalid list '%s' for --phases: expected write, read and/or bidir, e.g. write,read", optarg);
            break;
        case 'f': opt.fraction = cb_opt_double("--device-fraction", optarg, 0.001, 0.99); have_fraction = 1; break;
        case O_DEVBUF: opt.dev_request = opt_size("--device-buffer", optarg); break;
        case O_HOSTBUF: opt.host_request = opt_size("--host-buffer", optarg); break;
        case O_CHUNK: opt.chunk = opt_size("--chunk", optarg); break;
        case 's': opt.streams = (int)cb_opt_long("--streams", optarg, 1, 16); break;
        case 't': opt.threshold = cb_opt_double("--threshold", optarg, 0, 1e6); have_threshold = 1; break;
        case O_TPG: opt.threshold_per_gpu = cb_opt_double("--threshold-per-gpu", optarg, 1e-9, 1e6); break;
        case O_EXPLAIN: opt.explain_only = 1; break;
        case O_SYSFS: opt.sysfs_root = optarg; break;
        case 'j': opt.json_path = optarg; break;
        case 'q': opt.quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': cb_print_version(TEST_VERSION); exit(0);
        case ':': cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cb_usage_error("unexpected argument '%s'", argv[optind]);
    if (have_threshold && opt.threshold_per_gpu > 0)
        cb_usage_error("--threshold and --threshold-per-gpu both set the threshold; give one");
    if (have_fraction && opt.dev_request)
        cb_usage_error("--device-fraction and --device-buffer both size the device buffer; give one");
    if (opt.chunk && (opt.chunk < GC_MIN_CHUNK || opt.chunk % GC_MIN_CHUNK))
        cb_usage_error("invalid value for --chunk: must be a multiple of 4K");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bus/pci/devices", opt.sysfs_root);
    if (access(dir, R_OK | X_OK) != 0)
        cb_usage_error("--sysfs-root %s: no PCI devices there (%s is missing)", opt.sysfs_root, dir);
    if (opt.json_path && cb_json_path_ok(opt.json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", opt.json_path);
}

/* ---- output helpers ------------------------------------------------------------ */
/* The compliance document's results block aligns values after "Total write speed:". */
static void result_line(const char *label, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void result_line(const char *label, const char *fmt, ...)
{
    char key[64];
    snprintf(key, sizeof key, "%s:", label);
    printf("%-18s ", key);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

static void results_begin(void)
{
    printf("----- Test results -----\n");
    result_line("Test version", "%s", TEST_VERSION);
}


/* The links to judge: read under load if we have that, else idle. */
static const gc_gpu_topo *links_of(const gpu *g, int *idle)
{
    *idle = !g->have_loaded;
    return g->have_loaded ? &g->loaded : &g->topo;
}

static void locate(gpu *g, const gc_hw *hw, int use_hwloc)
{
    g->place_source = NULL;
    if (use_hwloc && hw && gc_hw_locate(hw, g->topo.bdf, &g->place) == 0) {
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
        printf("  link: unknown (%s has no PCIe link information for %s)\n", opt.sysfs_root, g->topo.bdf);
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
        printf("  link %s -> %s (%s): %s = %.2f Gbit/s per direction%s; %s max %s, port max %s\n",
               l->up[0] ? l->up : "?", l->down, k == 0 ? "the GPU" : "switch uplink", cur, v.cur_gbits,
               k == 0 ? (idle ? " (read idle)" : " (read under load)") : "",
               k == 0 ? "GPU" : "switch", dmax, pmax);
        if (v.degraded) {
            printf("    DEGRADED: %s\n", v.text);
            (*degraded_links)++;
        } else if (v.text[0]) {
            printf("    note: %s\n", v.text);
        }
    }
}

static void json_link(cb_json *j, const gc_link *l, int own, int idle)
{
    gc_link_verdict v;
    gc_judge_link(l, own, idle, &v);
    cbj_obj_begin(j, NULL);
    cbj_str(j, "down", l->down);
    cbj_str(j, "up", l->up);
    cbj_int(j, "current_gen", gc_pcie_gen(l->cur_gts));
    cbj_num(j, "current_speed_gts", l->cur_gts);
    cbj_int(j, "current_width", l->cur_width);
    cbj_num(j, "device_max_speed_gts", l->dev_max_gts);
    cbj_int(j, "device_max_width", l->dev_max_width);
    cbj_num(j, "port_max_speed_gts", l->port_max_gts);
    cbj_int(j, "port_max_width", l->port_max_width);
    cbj_num(j, "theoretical_gbits", v.cur_gbits);
    cbj_num(j, "max_gbits", v.max_gbits);
    cbj_bool(j, "degraded", v.degraded);
    cbj_str(j, "diagnosis", v.text);
    cbj_obj_end(j);
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
        json_link(j, &t->links[k], k == 0, idle);
    cbj_arr_end(j);
}

static int gpu_degraded(const gpu *g, char *why, size_t len)
{
    int idle;
    const gc_gpu_topo *t = links_of(g, &idle);
    for (int k = 0; k < t->nlinks; k++) {
        gc_link_verdict v;
        gc_judge_link(&t->links[k], k == 0, idle, &v);
        if (v.degraded) {
            snprintf(why, len, "%s link %s -> %s %s", k == 0 ? "its" : "the switch uplink",
                     t->links[k].up, t->links[k].down, v.text);
            return 1;
        }
    }
    return 0;
}

/* Shared uplinks that cannot carry what the GPUs below them could move. Prints them;
 * returns how many are too narrow. */
static int print_shared(int verbose_ok, const char *indent)
{
    gc_gpu_topo t[MAX_GPUS];
    for (int i = 0; i < ngpus; i++) {
        int idle;
        t[i] = *links_of(&gpus[i], &idle);
    }
    gc_shared_link sh[MAX_GPUS];
    int n = gc_find_shared_links(t, ngpus, sh, MAX_GPUS), narrow = 0;
    for (int s = 0; s < n; s++) {
        double up = gc_link_gbits(sh[s].link.cur_gts, sh[s].link.cur_width);
        char members[512] = "";
        for (int i = 0; i < ngpus; i++)
            if (sh[s].members & (1ULL << i))
                snprintf(members + strlen(members), sizeof members - strlen(members), "%s%s",
                         members[0] ? ", " : "", gpus[i].topo.bdf);
        int too_narrow = up > 0 && up < sh[s].sum_gbits * 0.99;
        narrow += too_narrow;
        if (too_narrow || verbose_ok)
            printf("%sShared uplink %s -> %s (%.2f Gbit/s) carries GPUs %s (%.2f Gbit/s through their own links)%s\n",
                   indent, sh[s].link.up, sh[s].link.down, up, members, sh[s].sum_gbits,
                   too_narrow ? ": together they cannot exceed the uplink" : "");
    }
    return narrow;
}

/* ---- --explain-links ------------------------------------------------------------- */
static int explain_links(void)
{
    static gc_gpu_topo found[MAX_GPUS];
    int n = gc_sysfs_find_gpus(opt.sysfs_root, found, MAX_GPUS);
    if (n <= 0)
        cb_die(CB_EXIT_CANNOT_RUN, "no NVIDIA GPU found in %s/bus/pci/devices", opt.sysfs_root);
    gc_hw hw;
    int live = strcmp(opt.sysfs_root, "/sys") == 0;
    int have_hw = live && gc_hw_load(&hw, NULL) == 0;
    char started[64];
    cb_iso8601_now(started, sizeof started);
    uint64_t t0 = cb_now_ns();
    printf("gpu-copy (cobalt-bench) %s: PCIe links of the NVIDIA GPUs in %s (no copies)\n", CB_VERSION, opt.sysfs_root);
    ngpus = n;
    int degraded = 0, degraded_gpus = 0;
    double sum_cur = 0, sum_max = 0;
    char names[1024] = "";
    for (int i = 0; i < n; i++) {
        gpu *g = &gpus[i];
        g->topo = found[i];
        g->have_topo = 1;
        locate(g, have_hw ? &hw : NULL, have_hw);
        printf("GPU %s [%04x:%04x]: NUMA node %s (%s), CPUs %s\n", g->topo.bdf, g->topo.vendor, g->topo.device,
               g->place.nodes[0] ? g->place.nodes : "unknown", g->place_source ? g->place_source : "no locality information",
               g->place.cpus[0] ? g->place.cpus : "unknown");
        int before = degraded;
        print_gpu_links(g, &degraded);
        if (degraded > before) {
            degraded_gpus++;
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", g->topo.bdf);
        }
        sum_max += gc_gpu_max_gbits(&g->topo);
    }
    sum_cur = gc_reachable_gbits(found, n);
    print_shared(1, "");
    for (int i = 0; i < n; i++) {
        char why[768];
        if (gpu_degraded(&gpus[i], why, sizeof why))
            printf("Likely cause of low bandwidth: GPU %s: %s\n", gpus[i].topo.bdf, why);
    }
    printf("Theoretical: %.2f Gbit/s per direction through the negotiated links (shared uplinks "
           "counted once); %.2f Gbit/s if every GPU's link ran at the GPU's maximum\n", sum_cur, sum_max);

    int rc = degraded ? CB_EXIT_NOT_COMPLIANT : CB_EXIT_OK;
    if (opt.json_path) {
        cb_json j;
        cbj_init(&j);
        cbj_doc_begin(&j, "gpu-copy", TEST_VERSION, started);
        cbj_num(&j, "duration_s", (cb_now_ns() - t0) / 1e9);
        cbj_obj_begin(&j, "config");
        cbj_str(&j, "mode", "explain-links");
        cbj_str(&j, "sysfs_root", opt.sysfs_root);
        cbj_obj_end(&j);
        cbj_obj_begin(&j, "metrics");
        cbj_metric(&j, "gpus", n, "GPUs");
        cbj_metric(&j, "degraded_links", degraded, "links");
        cbj_metric(&j, "theoretical_link_speed", sum_cur, "Gbit/s");
        cbj_metric(&j, "max_link_speed", sum_max, "Gbit/s");
        cbj_obj_end(&j);
        cbj_arr_begin(&j, "gpus");
        for (int i = 0; i < n; i++) {
            cbj_obj_begin(&j, NULL);
            json_gpu_topology(&j, &gpus[i]);
            cbj_obj_end(&j);
        }
        cbj_arr_end(&j);
        cbj_obj_begin(&j, "compliance");
        cbj_num(&j, "threshold", NAN);
        cbj_bool(&j, "passed", !degraded);
        cbj_obj_end(&j);
        cbj_obj_end(&j);
        if (cb_json_write(&j, opt.json_path) != 0)
            rc = CB_EXIT_CANNOT_RUN;
        cbj_free(&j);
    }
    results_begin();
    result_line("GPUs", "%d", n);
    if (degraded_gpus)
        result_line("Degraded links", "%d (GPU %s)", degraded, names);
    else
        result_line("Degraded links", "0");
    result_line("Link speed", "%.2f Gbit/s per direction (theoretical, all GPUs)", sum_cur);
    if (have_hw)
        gc_hw_free(&hw);
    return rc;
}

/* ---- the copies ------------------------------------------------------------------ */
#define MAX_PHASES (GC_NKINDS + 2 * MAX_GPUS)

static gc_phase_spec phases[MAX_PHASES];
static int nphases;
static gc_result results[MAX_GPUS][MAX_PHASES];
static volatile int abort_run;
static pthread_barrier_t barrier;

/* Called by a worker while its copies run: the link state under load. Keeps the
 * fastest state seen (an idle GPU's link comes up within milliseconds of traffic). */
static void on_load(gc_worker *w, int phase)
{
    (void)phase;
    gpu *g = (gpu *)w->user;
    gc_gpu_topo now;
    if (!g->have_topo || gc_sysfs_read_gpu(opt.sysfs_root, g->topo.bdf, &now) != 0 || now.nlinks == 0)
        return;
    if (!g->have_loaded || gc_gpu_path_gbits(&now) > gc_gpu_path_gbits(&g->loaded)) {
        g->loaded = now;
        g->have_loaded = 1;
    }
}

static void __attribute__((noreturn)) no_gpu(const char *cuda_err)
{
    static gc_gpu_topo found[MAX_GPUS];
    int n = gc_sysfs_find_gpus(opt.sysfs_root, found, MAX_GPUS);
    if (n > 0) {
        char list[512] = "";
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", found[i].bdf);
        cb_die(CB_EXIT_CANNOT_RUN,
               "cannot use the NVIDIA GPUs: CUDA reports: %s. %s lists %d NVIDIA GPU%s (%s): is the "
               "NVIDIA driver loaded and /dev/nvidia* accessible? (gpu-copy --explain-links explains "
               "their links without CUDA)", cuda_err, opt.sysfs_root, n, n == 1 ? "" : "s", list);
    }
    cb_die(CB_EXIT_CANNOT_RUN,
           "no NVIDIA GPU on this machine: CUDA reports: %s, and %s lists no NVIDIA GPU. "
           "gpu-copy needs NVIDIA GPUs and their driver.", cuda_err, opt.sysfs_root);
}

static const char *phase_name(const gc_phase_spec *p, char *buf, size_t len)
{
    if (p->gpu < 0)
        snprintf(buf, len, "all GPUs, %s", gc_kind_names[p->kind]);
    else
        snprintf(buf, len, "GPU %d alone, %s", gpus[p->gpu].cuda.index, gc_kind_names[p->kind]);
    return buf;
}

static double speed_of(const gc_result *r, int dir)
{
    return dir == GC_H2D ? cb_gbits((double)r->h2d_bytes, r->h2d_s) : cb_gbits((double)r->d2h_bytes, r->d2h_s);
}

/* Per-GPU and summed speeds of one phase in one direction; aggregate: all bytes over
 * the wall-clock span from the first start to the last end. */
static double phase_total(int p, int dir, double *aggregate)
{
    double sum = 0, bytes = 0;
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int i = 0; i < ngpus; i++) {
        const gc_result *r = &results[i][p];
        if (!r->ran)
            continue;
        sum += speed_of(r, dir);
        bytes += (double)(dir == GC_H2D ? r->h2d_bytes : r->d2h_bytes);
        t0 = r->t0_ns < t0 ? r->t0_ns : t0;
        t1 = r->t1_ns > t1 ? r->t1_ns : t1;
    }
    if (aggregate)
        *aggregate = t1 > t0 ? cb_gbits(bytes, (t1 - t0) / 1e9) : 0;
    return sum;
}

static int find_phase(int kind, int gpu_slot)
{
    for (int p = 0; p < nphases; p++)
        if (phases[p].kind == kind && phases[p].gpu == gpu_slot)
            return p;
    return -1;
}

static void fmt_bytes(char *buf, size_t len, double bytes)
{
    if (bytes >= (1ull << 30))
        snprintf(buf, len, "%.2f GiB", bytes / (1ull << 30));
    else
        snprintf(buf, len, "%.0f MiB", bytes / (1ull << 20));
}

static int run_copies(void)
{
    static gc_cuda_dev devs[MAX_GPUS];
    char err[512], started[64], host[256], versions[128];
    int ndev = gc_cuda_devices(devs, MAX_GPUS, err, sizeof err);
    if (ndev < 0)
        no_gpu(err);
    if (opt.ngpus_sel == 0)
        for (int i = 0; i < ndev; i++)
            opt.gpus[opt.ngpus_sel++] = i;
    for (int i = 0; i < opt.ngpus_sel; i++)
        if (opt.gpus[i] >= ndev)
            cb_usage_error("GPU %d does not exist: CUDA sees %d device%s (0-%d)", opt.gpus[i], ndev,
                           ndev == 1 ? "" : "s", ndev - 1);
    ngpus = opt.ngpus_sel;

    gc_hw hw;
    int have_hw = gc_hw_load(&hw, NULL) == 0;
    if (!have_hw)
        cb_warn("hwloc cannot read this machine's topology: threads and buffers are not placed near the GPUs");
    else if (hw.npci == 0)
        cb_warn("hwloc found no PCI device (Debian: install libhwloc-plugins); GPU locality comes from sysfs");
    cb_iso8601_now(started, sizeof started);
    cb_hostname(host, sizeof host);
    gc_cuda_versions(versions, sizeof versions);
    uint64_t run_t0 = cb_now_ns();
    uint64_t seed = gc_pattern(run_t0, (uint64_t)getpid());

    printf("gpu-copy (cobalt-bench) %s on %s, started %s, %s\n", CB_VERSION, host, started, versions);
    int degraded_links = 0;
    for (int i = 0; i < ngpus; i++) {
        gpu *g = &gpus[i];
        g->cuda = devs[opt.gpus[i]];
        g->have_topo = gc_sysfs_read_gpu(opt.sysfs_root, g->cuda.busid, &g->topo) == 0;
        if (!g->have_topo)
            gc_bdf_normalise(g->topo.bdf, g->cuda.busid);
        locate(g, have_hw ? &hw : NULL, have_hw && hw.npci > 0);
        size_t want = opt.dev_request ? opt.dev_request
                                      : gc_device_request(g->cuda.total_mem, g->cuda.free_mem, opt.fraction,
                                                          g->cuda.total_mem / 16 < DEVICE_RESERVE ? g->cuda.total_mem / 16 : DEVICE_RESERVE);
        const char *why = gc_layout_make(&g->layout, want, opt.host_request, opt.chunk);
        if (why) {
            char b[32];
            fmt_bytes(b, sizeof b, (double)want);
            if (opt.dev_request || opt.host_request || opt.chunk)
                cb_usage_error("GPU %d: %s (device buffer %s)", g->cuda.index, why, b);
            cb_die(CB_EXIT_CANNOT_RUN, "GPU %d: %s: only %s of its memory is usable", g->cuda.index, why, b);
        }
        g->layout.streams = opt.streams;
        char mem[32], dbuf[32], hbuf[32];
        fmt_bytes(mem, sizeof mem, (double)g->cuda.total_mem);
        fmt_bytes(dbuf, sizeof dbuf, (double)g->layout.dev_bytes);
        fmt_bytes(hbuf, sizeof hbuf, (double)g->layout.host_bytes);
        printf("GPU %d: %s, PCI %s, NUMA node %s (%s), CPUs %s; %s memory, device buffer %s, host buffer %s\n",
               g->cuda.index, g->cuda.name, g->topo.bdf, g->place.nodes[0] ? g->place.nodes : "unknown",
               g->place_source ? g->place_source : "no locality information",
               g->place.cpus[0] ? g->place.cpus : "unknown", mem, dbuf, hbuf);
        print_gpu_links(g, &degraded_links);
    }

    /* The phases: all GPUs at once, then each alone. */
    for (int k = 0; k < GC_NKINDS; k++)
        if (opt.phases & (1u << k))
            phases[nphases++] = (gc_phase_spec){.kind = k, .gpu = -1, .iterations = opt.iterations};
    if (ngpus > 1 && opt.alone_iterations > 0)
        for (int i = 0; i < ngpus; i++)
            for (int k = GC_WRITE; k <= GC_READ; k++)
                if (opt.phases & (1u << k))
                    phases[nphases++] = (gc_phase_spec){.kind = k, .gpu = i, .iterations = opt.alone_iterations};
    for (int p = 0; p < nphases; p++)
        phases[p].seed = gc_pattern(seed, (uint64_t)p);
    char chunk[32];
    fmt_bytes(chunk, sizeof chunk, (double)gpus[0].layout.chunk);
    printf("Copies: %s chunks on %d stream%s per direction; %llu iterations all at once%s\n", chunk,
           opt.streams, opt.streams == 1 ? "" : "s", (unsigned long long)opt.iterations,
           ngpus > 1 && opt.alone_iterations ? ", then each GPU alone" : "");
    fflush(stdout);

    /* One thread per GPU; the main thread joins every barrier to follow the phases. */
    const char *fault = getenv("GPU_COPY_FAULT");
    int fault_kind = -1;
    if (fault && *fault) {
        for (int k = 0; k < GC_NKINDS; k++)
            if (strcmp(fault, gc_kind_names[k]) == 0)
                fault_kind = k;
        if (fault_kind < 0)
            cb_usage_error("GPU_COPY_FAULT must name a phase (write, read, bidir)");
    }
    pthread_barrier_init(&barrier, NULL, (unsigned)ngpus + 1);
    for (int i = 0; i < ngpus; i++) {
        gpu *g = &gpus[i];
        gc_worker *w = &g->worker;
        w->slot = i;
        w->device = g->cuda.index;
        snprintf(w->busid, sizeof w->busid, "%s", g->topo.bdf);
        w->hw = &hw;
        snprintf(w->cpus, sizeof w->cpus, "%s", have_hw ? g->place.cpus : "");
        snprintf(w->nodes, sizeof w->nodes, "%s", have_hw ? g->place.nodes : "");
        w->layout = g->layout;
        w->streams = opt.streams;
        w->phases = phases;
        w->nphases = nphases;
        w->results = results[i];
        w->barrier = &barrier;
        w->abort_run = &abort_run;
        w->on_load = on_load;
        w->user = g;
        w->fault_kind = i == 0 ? fault_kind : -1;
        if (pthread_create(&g->th, NULL, gc_worker_main, w) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start the thread of GPU %d", g->cuda.index);
    }
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < ngpus; i++)
        if (gpus[i].worker.setup_failed)
            abort_run = 1;
    pthread_barrier_wait(&barrier);
    if (abort_run) {
        for (int i = 0; i < ngpus; i++) {
            pthread_join(gpus[i].th, NULL);
            if (gpus[i].worker.setup_failed)
                fprintf(stderr, "gpu-copy: %s\n", gpus[i].worker.error);
        }
        cb_die(CB_EXIT_CANNOT_RUN, "could not set up the copies (above)");
    }
    for (int p = 0; p < nphases; p++) {
        for (int b = 0; b < 3; b++)
            pthread_barrier_wait(&barrier);
        if (!opt.quiet) {
            char name[64];
            double w = phase_total(p, GC_H2D, NULL), r = phase_total(p, GC_D2H, NULL);
            fprintf(stderr, "[%2d/%d] %-24s", p + 1, nphases, phase_name(&phases[p], name, sizeof name));
            if (w > 0)
                fprintf(stderr, " write %8.2f Gbit/s", w);
            if (r > 0)
                fprintf(stderr, " read %8.2f Gbit/s", r);
            fputc('\n', stderr);
        }
    }
    for (int i = 0; i < ngpus; i++)
        pthread_join(gpus[i].th, NULL);
    double duration = (cb_now_ns() - run_t0) / 1e9;

    /* ---- what happened ---- */
    int pw = find_phase(GC_WRITE, -1), pr = find_phase(GC_READ, -1), pb = find_phase(GC_BIDIR, -1);
    double agg_w = 0, agg_r = 0;
    double total_w = pw >= 0 ? phase_total(pw, GC_H2D, &agg_w) : NAN;
    double total_r = pr >= 0 ? phase_total(pr, GC_D2H, &agg_r) : NAN;
    double bidir_w = pb >= 0 ? phase_total(pb, GC_H2D, NULL) : NAN;
    double bidir_r = pb >= 0 ? phase_total(pb, GC_D2H, NULL) : NAN;
    uint64_t wrong = 0, checked = 0;
    int copy_errors = 0;
    for (int i = 0; i < ngpus; i++) {
        if (gpus[i].worker.error[0]) {
            copy_errors++;
            printf("ERROR: %s\n", gpus[i].worker.error);
        }
        for (int p = 0; p < nphases; p++) {
            const gc_result *r = &results[i][p];
            if (!r->ran)
                continue;
            checked++;
            wrong += r->dev_errors + r->host_errors;
            if (r->dev_errors + r->host_errors) {
                char name[64];
                printf("VERIFICATION FAILED: GPU %d, phase %s: %llu wrong words (device %llu, host %llu), "
                       "the first at byte %llu of the checked region\n",
                       gpus[i].cuda.index, phase_name(&phases[p], name, sizeof name),
                       (unsigned long long)(r->dev_errors + r->host_errors), (unsigned long long)r->dev_errors,
                       (unsigned long long)r->host_errors, (unsigned long long)r->first_bad);
            }
        }
    }

    /* the links as read under load replace the idle reading */
    printf("Links read while copying:\n");
    degraded_links = 0;
    for (int i = 0; i < ngpus; i++) {
        printf("GPU %d (%s):\n", gpus[i].cuda.index, gpus[i].topo.bdf);
        print_gpu_links(&gpus[i], &degraded_links);
    }

    printf("All GPUs at once (Gbit/s; %% of the GPU's negotiated link):\n");
    for (int i = 0; i < ngpus; i++) {
        gpu *g = &gpus[i];
        int idle;
        double link = gc_gpu_path_gbits(links_of(g, &idle));
        printf("  GPU %d %s:", g->cuda.index, g->topo.bdf);
        if (pw >= 0) {
            double v = speed_of(&results[i][pw], GC_H2D);
            printf(" write %.2f", v);
            if (link > 0)
                printf(" (%.1f%%)", 100 * v / link);
        }
        if (pr >= 0) {
            double v = speed_of(&results[i][pr], GC_D2H);
            printf(" read %.2f", v);
            if (link > 0)
                printf(" (%.1f%%)", 100 * v / link);
        }
        if (pb >= 0)
            printf(" bidir %.2f + %.2f", speed_of(&results[i][pb], GC_H2D), speed_of(&results[i][pb], GC_D2H));
        printf("\n");
    }
    gc_gpu_topo now[MAX_GPUS];
    for (int i = 0; i < ngpus; i++) {
        int idle;
        now[i] = *links_of(&gpus[i], &idle);
    }
    double reachable = gc_reachable_gbits(now, ngpus);
    printf("  Total (theoretical %.2f):", reachable);
    if (pw >= 0)
        printf(" write %.2f (aggregate %.2f)", total_w, agg_w);
    if (pr >= 0)
        printf(" read %.2f (aggregate %.2f)", total_r, agg_r);
    if (pb >= 0)
        printf(" bidir %.2f + %.2f", bidir_w, bidir_r);
    printf("\n");
    double worst_share = 1;
    if (ngpus > 1 && opt.alone_iterations > 0) {
        printf("Each GPU alone (Gbit/s; together as %% of alone):\n");
        for (int i = 0; i < ngpus; i++) {
            printf("  GPU %d:", gpus[i].cuda.index);
            for (int k = GC_WRITE; k <= GC_READ; k++) {
                int pa = find_phase(k, i), pt = find_phase(k, -1);
                if (pa < 0)
                    continue;
                int dir = k == GC_WRITE ? GC_H2D : GC_D2H;
                double alone = speed_of(&results[i][pa], dir), together = speed_of(&results[i][pt], dir);
                double share = alone > 0 ? together / alone : 0;
                if (share < worst_share)
                    worst_share = share;
                printf(" %s %.2f (%.1f%%)", gc_kind_names[k], alone, 100 * share);
            }
            printf("\n");
        }
    }
    printf("Verification: %llu GPU phases checked, %llu wrong words\n", (unsigned long long)checked,
           (unsigned long long)wrong);

    /* ---- why ---- */
    double threshold = opt.threshold_per_gpu > 0 ? opt.threshold_per_gpu * ngpus : opt.threshold;
    int measured_both = pw >= 0 && pr >= 0;
    int passed = measured_both && !wrong && !copy_errors && total_w >= threshold && total_r >= threshold;
    printf("Diagnosis:\n");
    int causes = 0;
    for (int i = 0; i < ngpus; i++) {
        char why[768];
        if (gpu_degraded(&gpus[i], why, sizeof why)) {
            printf("  Likely cause: GPU %d (%s): %s\n", gpus[i].cuda.index, gpus[i].topo.bdf, why);
            causes++;
        }
    }
    causes += print_shared(0, "  ");
    for (int i = 0; i < ngpus; i++) {
        const gc_worker *w = &gpus[i].worker;
        if (have_hw && hw.nnuma > 1 && (!w->bound_cpu || !w->bound_mem)) {
            printf("  GPU %d: %s%s%s: copies may cross the socket interconnect\n", gpus[i].cuda.index,
                   w->bound_cpu ? "" : "its thread is not bound to the GPU's CPUs",
                   !w->bound_cpu && !w->bound_mem ? " and " : "",
                   w->bound_mem ? "" : "its host buffer is not on the GPU's NUMA node");
            causes++;
        }
    }
    if (have_hw && hw.nnuma > 1 && ngpus > 1 && (!passed || worst_share < 0.90)) {
        int first = gpus[0].place.numa_node, same = first >= 0;
        for (int i = 1; i < ngpus; i++)
            same &= gpus[i].place.numa_node == first;
        if (same) {
            printf("  All %d GPUs hang off NUMA node %d of %d: one socket's PCIe root complex and memory "
                   "carry all the copies\n", ngpus, first, hw.nnuma);
            causes++;
        }
    }
    if (worst_share < 0.90) {
        printf("  All at once, a GPU reaches only %.0f%% of its speed alone: a bottleneck the GPUs share "
               "(a PCIe switch uplink, a root complex, or the memory or interconnect of a socket)\n",
               100 * worst_share);
        causes++;
    }
    if (!causes)
        printf("  Every link runs at its maximum and nothing shared limits the GPUs%s\n",
               passed ? "" : "; a low speed then comes from the host side (IOMMU, memory, CPU power states)");
    if (!measured_both)
        printf("  Compliance needs both write and read (--phases): not judged\n");

    int rc = passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (opt.json_path) {
        cb_json j;
        cbj_init(&j);
        cbj_doc_begin(&j, "gpu-copy", TEST_VERSION, started);
        cbj_num(&j, "duration_s", duration);
        cbj_obj_begin(&j, "config");
        cbj_str(&j, "mode", "copy");
        cbj_arr_begin(&j, "gpus");
        for (int i = 0; i < ngpus; i++)
            cbj_int(&j, NULL, gpus[i].cuda.index);
        cbj_arr_end(&j);
        cbj_int(&j, "iterations", (long long)opt.iterations);
        cbj_int(&j, "alone_iterations", (long long)(ngpus > 1 ? opt.alone_iterations : 0));
        cbj_arr_begin(&j, "phases");
        for (int k = 0; k < GC_NKINDS; k++)
            if (opt.phases & (1u << k))
                cbj_str(&j, NULL, gc_kind_names[k]);
        cbj_arr_end(&j);
        cbj_num(&j, "device_fraction", opt.dev_request ? NAN : opt.fraction);
        cbj_int(&j, "chunk_bytes", (long long)gpus[0].layout.chunk);
        cbj_int(&j, "streams_per_direction", opt.streams);
        cbj_num(&j, "threshold_per_gpu_gbits", opt.threshold_per_gpu > 0 ? opt.threshold_per_gpu : NAN);
        cbj_str(&j, "sysfs_root", opt.sysfs_root);
        cbj_str(&j, "cuda", versions);
        cbj_obj_end(&j);
        cbj_obj_begin(&j, "metrics");
        double link_sum = reachable;
        if (pw >= 0) {
            cbj_metric(&j, "total_write_speed", total_w, "Gbit/s");
            cbj_metric(&j, "total_write_speed_bytes", total_w * 1e9 / 8, "B/s");
            cbj_metric(&j, "aggregate_write_speed", agg_w, "Gbit/s");
            if (link_sum > 0)
                cbj_metric(&j, "write_percent_of_link", 100 * total_w / link_sum, "%");
        }
        if (pr >= 0) {
            cbj_metric(&j, "total_read_speed", total_r, "Gbit/s");
            cbj_metric(&j, "total_read_speed_bytes", total_r * 1e9 / 8, "B/s");
            cbj_metric(&j, "aggregate_read_speed", agg_r, "Gbit/s");
            if (link_sum > 0)
                cbj_metric(&j, "read_percent_of_link", 100 * total_r / link_sum, "%");
        }
        if (pb >= 0) {
            cbj_metric(&j, "bidir_write_speed", bidir_w, "Gbit/s");
            cbj_metric(&j, "bidir_read_speed", bidir_r, "Gbit/s");
        }
        cbj_metric(&j, "theoretical_link_speed", link_sum, "Gbit/s");
        cbj_metric(&j, "gpus", ngpus, "GPUs");
        cbj_metric(&j, "degraded_links", degraded_links, "links");
        cbj_metric(&j, "verified_phases", (double)checked, "phases");
        cbj_metric(&j, "verification_errors", (double)wrong, "errors");
        cbj_obj_end(&j);
        cbj_arr_begin(&j, "gpus");
        for (int i = 0; i < ngpus; i++) {
            gpu *g = &gpus[i];
            cbj_obj_begin(&j, NULL);
            cbj_int(&j, "cuda_device", g->cuda.index);
            cbj_str(&j, "name", g->cuda.name);
            json_gpu_topology(&j, g);
            cbj_bool(&j, "thread_bound", g->worker.bound_cpu);
            cbj_bool(&j, "host_buffer_bound", g->worker.bound_mem);
            cbj_int(&j, "memory_bytes", (long long)g->cuda.total_mem);
            cbj_int(&j, "device_buffer_bytes", (long long)g->layout.dev_bytes);
            cbj_int(&j, "host_buffer_bytes", (long long)g->layout.host_bytes);
            if (pw >= 0)
                cbj_num(&j, "write_speed_gbits", speed_of(&results[i][pw], GC_H2D));
            if (pr >= 0)
                cbj_num(&j, "read_speed_gbits", speed_of(&results[i][pr], GC_D2H));
            if (pb >= 0) {
                cbj_num(&j, "bidir_write_speed_gbits", speed_of(&results[i][pb], GC_H2D));
                cbj_num(&j, "bidir_read_speed_gbits", speed_of(&results[i][pb], GC_D2H));
            }
            int aw = find_phase(GC_WRITE, i), ar = find_phase(GC_READ, i);
            if (aw >= 0)
                cbj_num(&j, "alone_write_speed_gbits", speed_of(&results[i][aw], GC_H2D));
            if (ar >= 0)
                cbj_num(&j, "alone_read_speed_gbits", speed_of(&results[i][ar], GC_D2H));
            uint64_t e = 0;
            for (int p = 0; p < nphases; p++)
                e += results[i][p].dev_errors + results[i][p].host_errors;
            cbj_int(&j, "verification_errors", (long long)e);
            cbj_str(&j, "error", g->worker.error);
            cbj_obj_end(&j);
        }
        cbj_arr_end(&j);
        cbj_obj_begin(&j, "compliance");
        cbj_num(&j, "threshold", threshold);
        cbj_bool(&j, "passed", passed);
        cbj_obj_end(&j);
        cbj_obj_end(&j);
        if (cb_json_write(&j, opt.json_path) != 0)
            rc = CB_EXIT_CANNOT_RUN;
        cbj_free(&j);
    }

    results_begin();
    if (pw >= 0)
        result_line("Total write speed", "%.2f Gbit/s", total_w);
    else
        result_line("Total write speed", "not measured");
    if (pr >= 0)
        result_line("Total read speed", "%.2f Gbit/s", total_r);
    else
        result_line("Total read speed", "not measured");
    fflush(stdout);
    if (have_hw)
        gc_hw_free(&hw);
    return rc;
}

int main(int argc, char **argv)
{
    cb_prog = "gpu-copy";
    parse_args(argc, argv);
    return opt.explain_only ? explain_links() : run_copies();
}
