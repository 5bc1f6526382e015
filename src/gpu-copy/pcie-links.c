/* cb-pcie-links: every PCIe device's link (and the uplinks above it) from sysfs, as
 * negotiated versus what both ends support, with the verdict of cobalt-bench's one PCIe
 * link rule (gc_judge_link/gc_judge_device in pcie.c, which gpu-copy uses too).
 * `cobalt-bench preflight` runs this tool and reports its verdicts. Needs neither CUDA
 * nor hwloc. */
#define _GNU_SOURCE
#include "../common/cb_common.h"
#include "../common/cb_options.h"
#include "pcie.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_VERSION "1.0"
#define MAX_DEVICES 4096

typedef struct cfg {
    const char *sysfs_root;
    const char *json_path;
    int quiet;
} cfg;

static const cb_opt opts[] = {
    {.name = "sysfs-root", .type = CB_OPT_STRING, .off = offsetof(cfg, sysfs_root), .def = "/sys",
     .arg = "DIR", .help = "read PCI devices from DIR instead of /sys (a recorded tree\n"
                           "with bus/pci/devices/ and devices/)"},
    CB_OPT_JSON_ROW(cfg, json_path),
    {.name = "quiet", .letter = 'q', .type = CB_OPT_FLAG, .off = offsetof(cfg, quiet),
     .help = "print only the results block, not every device"},
    {0},
};

/* The document's metrics, each unit written once (cb_metric_def). */
static const cb_metric_def pl_metrics[] = {
    {"devices", "devices", CB_NEITHER, "PCIe devices listed"},
    {"degraded", "devices", CB_LOWER, "devices with a degraded link"},
    {"idle_low", "devices", CB_NEITHER, "GPUs whose link rate is low while idle"},
    {"unknown", "devices", CB_NEITHER, "devices without a readable link state"},
    {0},
};

static const cb_cmd cmd = {
    .metrics = pl_metrics,
    .name = "cb-pcie-links",
    .test_version = TEST_VERSION,
    .about =
        "List every PCIe device (every PCI function that is not a bridge) with its link and\n"
        "the links above it up to the root port: negotiated speed and width, what the device\n"
        "and the port above it support, and the verdict of cobalt-bench's PCIe link rule (the\n"
        "one gpu-copy applies to its GPUs; `cobalt-bench preflight` reports it):\n"
        "  ok        the link runs at the device's maximum width and rate\n"
        "  idle-low  only the rate is low, on a GPU's own link: GPUs lower it when idle\n"
        "            (the state is read as it is now, taken to be idle); look again under load\n"
        "  degraded  fewer lanes or a lower rate than the device supports, on its own link\n"
        "            or an uplink, whether its port limits it (slot, riser, bifurcation) or\n"
        "            the link trained low (seating, signal problems, BIOS)\n"
        "  unknown   no readable link state (a virtual or legacy PCI device, a VM)\n",
    .more = "Exit status: 0 no degraded link, 1 a degraded link, 2 usage error, 3 could not run\n"
            "(no PCI device directory).\n",
    .opts = opts,
};

typedef struct listing {
    const cfg *c;
    gc_gpu_topo *dev;
    int n;
    gc_link_verdict verdict[MAX_DEVICES];
    int at[MAX_DEVICES];       /* the deciding link of each device (-1 none) */
    int count[4];              /* devices per status */
    double duration;
    char started[64];
} listing;

/* GPUs (display and 3D controllers) lower their link rate when idle. */
static int is_gpu(const gc_gpu_topo *g) { return gc_class_is_gpu(g->pci_class); }

static void print_device(const listing *ls, int i)
{
    const gc_gpu_topo *g = &ls->dev[i];
    const gc_link_verdict *v = &ls->verdict[i];
    printf("%s [%04x:%04x] class 0x%06x: %s\n", g->bdf, g->vendor, g->device, g->pci_class,
           gc_link_status_names[v->status]);
    if (g->nlinks == 0)
        printf("  link: not readable (no PCIe link attributes)\n");
    for (int k = 0; k < g->nlinks; k++) {
        const gc_link *l = &g->links[k];
        gc_link_verdict lv;
        gc_judge_link_of(l, k == 0, is_gpu(g), 1, &lv);
        char cur[64], dmax[64], pmax[64];
        gc_link_name(cur, sizeof cur, l->cur_gts, l->cur_width);
        gc_link_name(dmax, sizeof dmax, l->dev_max_gts, l->dev_max_width);
        gc_link_name(pmax, sizeof pmax, l->port_max_gts, l->port_max_width);
        printf("  %s %s -> %s: %s; device max %s, port max %s: %s\n", k == 0 ? "link" : "uplink",
               gc_link_upstream(l), l->down, cur, dmax, pmax, gc_link_status_names[lv.status]);
        if (lv.text[0])
            printf("    %s\n", lv.text);
    }
}

static void json_config(cb_json *j, const void *ctx)
{
    const listing *ls = ctx;
    cbj_str(j, "sysfs_root", ls->c->sysfs_root);
    cbj_str(j, "link_state", "idle");
}

static void json_metrics(cb_json *j, const void *ctx)
{
    const listing *ls = ctx;
    cbj_metric(j, pl_metrics, "devices", ls->n);
    cbj_metric(j, pl_metrics, "degraded", ls->count[GC_LINK_DEGRADED]);
    cbj_metric(j, pl_metrics, "idle_low", ls->count[GC_LINK_IDLE_LOW]);
    cbj_metric(j, pl_metrics, "unknown", ls->count[GC_LINK_UNKNOWN]);
}

static void json_devices(cb_json *j, const void *ctx)
{
    const listing *ls = ctx;
    char b[16];
    cbj_arr_begin(j, "devices");
    for (int i = 0; i < ls->n; i++) {
        const gc_gpu_topo *g = &ls->dev[i];
        cbj_obj_begin(j, NULL);
        cbj_str(j, "address", g->bdf);
        snprintf(b, sizeof b, "0x%04x", g->vendor);
        cbj_str(j, "vendor", b);
        snprintf(b, sizeof b, "0x%04x", g->device);
        cbj_str(j, "device", b);
        snprintf(b, sizeof b, "0x%06x", g->pci_class);
        cbj_str(j, "class", b);
        cbj_int(j, "numa_node", g->numa_node);
        cbj_bool(j, "gpu", is_gpu(g));
        cbj_str(j, "status", gc_link_status_names[ls->verdict[i].status]);
        cbj_str(j, "diagnosis", ls->verdict[i].text);
        cbj_int(j, "deciding_link", ls->at[i]);
        cbj_arr_begin(j, "links");
        for (int k = 0; k < g->nlinks; k++)
            gc_json_link(j, &g->links[k], k == 0, is_gpu(g), 1);
        cbj_arr_end(j);
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

static void results(const listing *ls)
{
    char names[1024] = "";
    for (int i = 0; i < ls->n; i++)
        if (ls->verdict[i].status == GC_LINK_DEGRADED)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? ", " : "", ls->dev[i].bdf);
    cb_results_begin(stdout, TEST_VERSION);
    cb_results_line(stdout, "Devices", "%d", ls->n);
    if (names[0])
        cb_results_line(stdout, "Degraded", "%d (%s)", ls->count[GC_LINK_DEGRADED], names);
    else
        cb_results_line(stdout, "Degraded", "0");
    cb_results_line(stdout, "Low while idle", "%d", ls->count[GC_LINK_IDLE_LOW]);
    cb_results_line(stdout, "Unknown", "%d", ls->count[GC_LINK_UNKNOWN]);
}

int main(int argc, char **argv)
{
    cb_prog = "cb-pcie-links";
    static cfg c;
    cb_opts_parse(&cmd, &c, argc, argv);
    if (c.json_path && cb_json_path_ok(c.json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable",
                       c.json_path);
    static listing ls;
    ls.c = &c;
    cb_iso8601_now(ls.started, sizeof ls.started);
    uint64_t t0 = cb_now_ns();
    ls.dev = calloc(MAX_DEVICES, sizeof *ls.dev);
    if (!ls.dev)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    ls.n = gc_sysfs_find_endpoints(c.sysfs_root, ls.dev, MAX_DEVICES);
    if (ls.n < 0)
        cb_die(CB_EXIT_CANNOT_RUN, "no PCI devices in %s (%s/bus/pci/devices is missing)",
               c.sysfs_root, c.sysfs_root);
    int to_stdout = c.json_path && strcmp(c.json_path, "-") == 0;
    int text = !c.quiet && !to_stdout;
    if (text)
        printf("cb-pcie-links (cobalt-bench) %s: PCIe links in %s, read as they are now (idle)\n",
               CB_VERSION, c.sysfs_root);
    for (int i = 0; i < ls.n; i++) {
        gc_judge_device(&ls.dev[i], 1, &ls.verdict[i], &ls.at[i]);
        ls.count[ls.verdict[i].status]++;
        if (text)
            print_device(&ls, i);
    }
    ls.duration = (cb_now_ns() - t0) / 1e9;
    int degraded = ls.count[GC_LINK_DEGRADED] > 0;
    int rc = degraded ? CB_EXIT_NOT_COMPLIANT : CB_EXIT_OK;
    if (c.json_path) {
        cb_envelope env = {.test = "cb-pcie-links", .test_version = TEST_VERSION,
                           .started = ls.started, .duration_s = ls.duration, .threshold = NAN,
                           .passed = !degraded};
        cb_doc_parts parts = {.config = json_config, .metrics = json_metrics, .extra = json_devices};
        if (cb_doc_write(c.json_path, &env, &parts, &ls) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    if (!to_stdout)
        results(&ls);
    free(ls.dev);
    return rc;
}
