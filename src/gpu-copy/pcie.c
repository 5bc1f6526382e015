/* PCIe link arithmetic, the sysfs view of a GPU's links, and their diagnosis. */
#define _GNU_SOURCE
#include "pcie.h"
#include "../common/cb_common.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arithmetic ------------------------------------------------------------ */
double gc_parse_link_speed(const char *s)
{
    char *end;
    while (*s == ' ')
        s++;
    double v = strtod(s, &end);
    if (end == s || v <= 0)
        return 0;
    while (*end == ' ')
        end++;
    return strncmp(end, "GT/s", 4) == 0 ? v : 0;
}

int gc_pcie_gen(double gts)
{
    static const double rate[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    for (int i = 0; i < 6; i++)
        if (gts > rate[i] * 0.99 && gts < rate[i] * 1.01)
            return i + 1;
    return 0;
}

double gc_encoding_efficiency(int gen)
{
    if (gen == 1 || gen == 2)
        return 8.0 / 10.0;
    if (gen >= 3 && gen <= 5)
        return 128.0 / 130.0;
    return 1.0; /* Gen6 FLIT mode; an unknown rate is taken at face value */
}

double gc_link_gbits(double gts, int width)
{
    if (gts <= 0 || width <= 0)
        return 0;
    return gts * width * gc_encoding_efficiency(gc_pcie_gen(gts));
}

const char *gc_link_upstream(const gc_link *l)
{
    return l->up[0] ? l->up : "root bus (no port visible)";
}

void gc_link_name(char *buf, size_t len, double gts, int width)
{
    int gen = gc_pcie_gen(gts);
    char w[16] = "x?";
    if (width > 0)
        snprintf(w, sizeof w, "x%d", width);
    if (gts <= 0 && width <= 0)
        snprintf(buf, len, "unknown");
    else if (gen)
        snprintf(buf, len, "Gen%d %s (%.1f GT/s)", gen, w, gts);
    else if (gts > 0)
        snprintf(buf, len, "%s (%.1f GT/s)", w, gts);
    else
        snprintf(buf, len, "%s (speed unknown)", w);
}

/* ---- sysfs ------------------------------------------------------------------- */
/* "<a>/<b>" into out; -1 if it does not fit. */
static int path_join(char *out, size_t len, const char *a, const char *b)
{
    int n = snprintf(out, len, "%s/%s", a, b);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The first line of <dir>/<name> into buf; 0, or -1 if absent. */
static int read_attr(const char *dir, const char *name, char *buf, size_t len)
{
    char path[PATH_MAX];
    if (path_join(path, sizeof path, dir, name) != 0)
        return -1;
    return cb_read_first_line(path, buf, len);
}

static double attr_speed(const char *dir, const char *name)
{
    char b[64];
    return read_attr(dir, name, b, sizeof b) == 0 ? gc_parse_link_speed(b) : 0;
}

static int attr_int(const char *dir, const char *name, int dflt)
{
    char b[64], *end;
    if (read_attr(dir, name, b, sizeof b) != 0)
        return dflt;
    long v = strtol(b, &end, 0);
    return end == b ? dflt : (int)v;
}

/* "0000:3b:00.0" (any number of domain digits): a PCI device directory's name. */
static int is_bdf(const char *s)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s)
        return 0;
    for (const char *p = s; p < colon; p++)
        if (!isxdigit((unsigned char)*p))
            return 0;
    const char *r = colon + 1; /* "bb:dd.f" */
    return strlen(r) == 7 && isxdigit((unsigned char)r[0]) && isxdigit((unsigned char)r[1]) &&
           r[2] == ':' && isxdigit((unsigned char)r[3]) && isxdigit((unsigned char)r[4]) &&
           r[5] == '.' && r[6] >= '0' && r[6] <= '7';
}

void gc_bdf_normalise(char *dst, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < GC_BDF_LEN; i++)
        dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

int gc_sysfs_read_gpu(const char *root, const char *bdf, gc_gpu_topo *out)
{
    char link[PATH_MAX], real[PATH_MAX];
    memset(out, 0, sizeof *out);
    gc_bdf_normalise(out->bdf, bdf);
    char devices[PATH_MAX];
    if (path_join(devices, sizeof devices, root, "bus/pci/devices") != 0 ||
        path_join(link, sizeof link, devices, out->bdf) != 0 || !realpath(link, real))
        return -1;
    char b[64];
    out->vendor = read_attr(real, "vendor", b, sizeof b) == 0 ? (unsigned)strtoul(b, NULL, 0) : 0;
    out->device = read_attr(real, "device", b, sizeof b) == 0 ? (unsigned)strtoul(b, NULL, 0) : 0;
    out->pci_class = read_attr(real, "class", b, sizeof b) == 0 ? (unsigned)strtoul(b, NULL, 0) : 0;
    out->numa_node = attr_int(real, "numa_node", -1);
    if (read_attr(real, "local_cpulist", out->cpulist, sizeof out->cpulist) != 0)
        out->cpulist[0] = '\0';

    /* The chain of PCI devices below the (last) host bridge "pciDDDD:BB" in the real
     * path, each with the length of its directory's path. */
    const char *chain[64];
    size_t dirlen[64];
    int m = 0;
    for (char *p = real + 1; *p;) {
        char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        char comp[256];
        snprintf(comp, sizeof comp, "%.*s", (int)(n < 255 ? n : 255), p);
        if (strncmp(comp, "pci", 3) == 0 && strchr(comp, ':'))
            m = 0; /* a host bridge: the chain starts again below it */
        else if (is_bdf(comp) && m < 64) {
            chain[m] = p;
            dirlen[m++] = (size_t)(p - real) + n;
        }
        p = slash ? slash + 1 : p + n;
    }
    if (m == 0 || strncmp(chain[m - 1], out->bdf, strlen(out->bdf)) != 0)
        return 0; /* not below a host bridge as expected: no link information */

    /* Links from the GPU upward: (chain[i-1], chain[i]) for i = m-1, m-3, ... */
    for (int i = m - 1; i >= 0 && out->nlinks < GC_MAX_LINKS; i -= 2) {
        gc_link *l = &out->links[out->nlinks];
        char dev[PATH_MAX], port[PATH_MAX];
        snprintf(dev, sizeof dev, "%.*s", (int)dirlen[i], real);
        snprintf(l->down, sizeof l->down, "%s", strrchr(dev, '/') + 1);
        l->cur_gts = attr_speed(dev, "current_link_speed");
        l->cur_width = attr_int(dev, "current_link_width", 0);
        l->dev_max_gts = attr_speed(dev, "max_link_speed");
        l->dev_max_width = attr_int(dev, "max_link_width", 0);
        if (i >= 1) {
            snprintf(port, sizeof port, "%.*s", (int)dirlen[i - 1], real);
            snprintf(l->up, sizeof l->up, "%s", strrchr(port, '/') + 1);
            l->port_max_gts = attr_speed(port, "max_link_speed");
            l->port_max_width = attr_int(port, "max_link_width", 0);
            /* The port sees the same negotiated link; use it where the device does not say. */
            if (l->cur_gts <= 0)
                l->cur_gts = attr_speed(port, "current_link_speed");
            if (l->cur_width <= 0)
                l->cur_width = attr_int(port, "current_link_width", 0);
        }
        out->nlinks++;
        if (i < 3)
            break; /* chain[i-1] is a root port (or nothing): no link above it */
    }
    return 0;
}

static int cmp_bdf(const void *a, const void *b)
{
    return strcmp(((const gc_gpu_topo *)a)->bdf, ((const gc_gpu_topo *)b)->bdf);
}

/* The PCI functions under `root` that pass the filter (NVIDIA GPUs, or everything but
 * bridges), read with their chains and sorted by address. */
static int find_devices(const char *root, gc_gpu_topo *out, int max, int nvidia_gpus)
{
    char dir[PATH_MAX];
    if (path_join(dir, sizeof dir, root, "bus/pci/devices") != 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (!is_bdf(e->d_name))
            continue;
        char path[PATH_MAX], b[64];
        if (path_join(path, sizeof path, dir, e->d_name) != 0)
            continue;
        unsigned long cls = read_attr(path, "class", b, sizeof b) == 0 ? strtoul(b, NULL, 0) : 0;
        if (nvidia_gpus) {
            if (read_attr(path, "vendor", b, sizeof b) != 0 || strtoul(b, NULL, 0) != GC_NVIDIA_VENDOR)
                continue;
            if ((cls >> 16) != 0x03)
                continue; /* not a display controller: audio functions, NVSwitches, bridges */
        } else if ((cls >> 16) == 0x06) {
            continue; /* a bridge: it shows as the upper end of the links below it */
        }
        if (gc_sysfs_read_gpu(root, e->d_name, &out[n]) == 0)
            n++;
    }
    closedir(d);
    qsort(out, (size_t)n, sizeof *out, cmp_bdf);
    return n;
}

int gc_sysfs_find_gpus(const char *root, gc_gpu_topo *out, int max)
{
    return find_devices(root, out, max, 1);
}

int gc_sysfs_find_endpoints(const char *root, gc_gpu_topo *out, int max)
{
    return find_devices(root, out, max, 0);
}

/* ---- diagnosis ---------------------------------------------------------------- */
static double min_known(double a, double b) { return a <= 0 ? b : b <= 0 ? a : a < b ? a : b; }

const char *const gc_link_status_names[4] = {"ok", "idle-low", "degraded", "unknown"};

int gc_class_is_gpu(unsigned pci_class) { return (pci_class >> 16) == 0x03; }

void gc_judge_link(const gc_link *l, int own_link, int idle, gc_link_verdict *v)
{
    gc_judge_link_of(l, own_link, 1, idle, v);
}

void gc_judge_link_of(const gc_link *l, int own_link, int gpu, int idle, gc_link_verdict *v)
{
    memset(v, 0, sizeof *v);
    const char *what = !own_link ? "the switch" : gpu ? "the GPU" : "the device";
    double both_gts = min_known(l->dev_max_gts, l->port_max_gts);
    int both_width = (int)min_known(l->dev_max_width, l->port_max_width);
    v->cur_gbits = gc_link_gbits(l->cur_gts, l->cur_width);
    v->max_gbits = gc_link_gbits(both_gts, both_width);
    v->width_below = l->cur_width > 0 && l->dev_max_width > 0 && l->cur_width < l->dev_max_width;
    v->speed_below = l->cur_gts > 0 && l->dev_max_gts > 0 && l->cur_gts < l->dev_max_gts * 0.99;
    v->port_limits_width = l->port_max_width > 0 && l->dev_max_width > 0 &&
                           l->port_max_width < l->dev_max_width;
    v->port_limits_speed = l->port_max_gts > 0 && l->dev_max_gts > 0 &&
                           l->port_max_gts < l->dev_max_gts * 0.99;
    /* Below what both ends could do (not explained by the port's limit). */
    int width_trained_low = l->cur_width > 0 && both_width > 0 && l->cur_width < both_width;
    int speed_trained_low = l->cur_gts > 0 && both_gts > 0 && l->cur_gts < both_gts * 0.99;
    v->maybe_power_saving = gpu && idle && own_link && speed_trained_low && !v->width_below;
    v->degraded = v->width_below || (v->speed_below && !v->maybe_power_saving);
    if (v->degraded)
        v->status = GC_LINK_DEGRADED;
    else if (v->maybe_power_saving)
        v->status = GC_LINK_IDLE_LOW;
    else if (l->cur_gts <= 0 || l->cur_width <= 0 || l->dev_max_gts <= 0 || l->dev_max_width <= 0)
        v->status = GC_LINK_UNKNOWN;
    else
        v->status = GC_LINK_OK;

    char *t = v->text;
    size_t len = sizeof v->text;
    t[0] = '\0';
    if (v->width_below) {
        if (width_trained_low)
            snprintf(t, len, "trained at x%d although both %s and its port %s support x%d: "
                     "a badly seated card or riser, damaged contacts or a signal problem. ",
                     l->cur_width, what, gc_link_upstream(l), both_width);
        else
            snprintf(t, len, "runs at x%d, below the x%d %s supports, because its port %s "
                     "supports only x%d: an x%d slot, a riser card with x%d lanes or a "
                     "bifurcated slot. ",
                     l->cur_width, l->dev_max_width, what, l->up, l->port_max_width,
                     l->port_max_width, l->port_max_width);
    }
    size_t used = strlen(t);
    if (v->speed_below && !v->maybe_power_saving) {
        if (speed_trained_low)
            snprintf(t + used, len - used, "runs at Gen%d although both %s and its port %s "
                     "support Gen%d: a riser, retimer or cable with signal problems, or a "
                     "PCIe speed limit in the BIOS. ",
                     gc_pcie_gen(l->cur_gts), what, gc_link_upstream(l),
                     gc_pcie_gen(both_gts));
        else
            snprintf(t + used, len - used, "runs at Gen%d, below the Gen%d %s supports, "
                     "because its port %s supports only Gen%d (an older slot or riser, or a "
                     "BIOS setting). ",
                     gc_pcie_gen(l->cur_gts), gc_pcie_gen(l->dev_max_gts), what, l->up,
                     gc_pcie_gen(l->port_max_gts));
    } else if (v->maybe_power_saving) {
        snprintf(t + used, len - used, "runs at Gen%d while idle, below its Gen%d: NVIDIA GPUs "
                 "lower the link rate when idle; gpu-copy reads it again under load. ",
                 gc_pcie_gen(l->cur_gts), gc_pcie_gen(both_gts));
    }
    used = strlen(t);
    if (used && t[used - 1] == ' ')
        t[used - 1] = '\0';
}

int gc_judge_device(const gc_gpu_topo *g, int idle, gc_link_verdict *v, int *link)
{
    int gpu = gc_class_is_gpu(g->pci_class);
    gc_link_verdict own, k_v;
    int at = -1;
    memset(&own, 0, sizeof own);
    own.status = GC_LINK_UNKNOWN;
    *v = own;
    for (int k = 0; k < g->nlinks; k++) {
        gc_judge_link_of(&g->links[k], k == 0, gpu, idle, &k_v);
        if (k == 0)
            own = k_v;
        if (k_v.status == GC_LINK_DEGRADED) {
            *v = k_v;
            at = k;
            break;
        }
    }
    if (at < 0 && g->nlinks > 0) {
        *v = own;
        at = 0;
    }
    if (link)
        *link = at;
    return v->status;
}

double gc_gpu_path_gbits(const gc_gpu_topo *g)
{
    double best = 0;
    for (int i = 0; i < g->nlinks; i++)
        best = min_known(best, gc_link_gbits(g->links[i].cur_gts, g->links[i].cur_width));
    return best;
}

double gc_gpu_max_gbits(const gc_gpu_topo *g)
{
    if (g->nlinks == 0)
        return 0;
    return gc_link_gbits(g->links[0].dev_max_gts, g->links[0].dev_max_width);
}

int gc_find_shared_links(const gc_gpu_topo *gpus, int n, gc_shared_link *out, int max)
{
    int found = 0;
    if (n > 64)
        n = 64; /* members is a 64-bit mask */
    for (int i = 0; i < n; i++)
        for (int k = 1; k < gpus[i].nlinks; k++) {
            const gc_link *l = &gpus[i].links[k];
            int known = 0;
            for (int s = 0; s < found; s++)
                if (strcmp(out[s].link.down, l->down) == 0)
                    known = 1;
            if (known || found >= max)
                continue;
            gc_shared_link sh = {.link = *l};
            for (int j = 0; j < n; j++)
                for (int q = 1; q < gpus[j].nlinks; q++)
                    if (strcmp(gpus[j].links[q].down, l->down) == 0) {
                        sh.members |= 1ULL << j;
                        sh.count++;
                        sh.sum_gbits += gc_link_gbits(gpus[j].links[0].cur_gts, gpus[j].links[0].cur_width);
                    }
            if (sh.count > 1)
                out[found++] = sh;
        }
    return found;
}

/* The links of all GPUs as a tree (a link's parent is the next link up its GPU's
 * chain); each link carries at most its bandwidth and at most what its children carry. */
typedef struct link_node {
    const gc_link *link;
    int parent;
} link_node;

static int node_of(link_node *nodes, int *count, const gc_link *l)
{
    for (int i = 0; i < *count; i++)
        if (strcmp(nodes[i].link->down, l->down) == 0)
            return i;
    nodes[*count] = (link_node){.link = l, .parent = -1};
    return (*count)++;
}

static double node_cap(const link_node *nodes, int count, int i)
{
    double bw = gc_link_gbits(nodes[i].link->cur_gts, nodes[i].link->cur_width), below = 0;
    int children = 0;
    for (int c = 0; c < count; c++)
        if (nodes[c].parent == i) {
            below += node_cap(nodes, count, c);
            children++;
        }
    if (!children)
        return bw;
    return bw > 0 && bw < below ? bw : below; /* an unknown uplink does not limit */
}

double gc_reachable_gbits(const gc_gpu_topo *gpus, int n)
{
    static link_node nodes[64 * GC_MAX_LINKS];
    int count = 0;
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < gpus[i].nlinks; k++)
            node_of(nodes, &count, &gpus[i].links[k]);
        for (int k = 0; k + 1 < gpus[i].nlinks; k++) /* links[k]'s parent is links[k + 1] */
            nodes[node_of(nodes, &count, &gpus[i].links[k])].parent =
                node_of(nodes, &count, &gpus[i].links[k + 1]);
    }
    double total = 0;
    for (int i = 0; i < count; i++)
        if (nodes[i].parent < 0)
            total += node_cap(nodes, count, i);
    return total;
}

void gc_json_link(cb_json *j, const gc_link *l, int own_link, int gpu, int idle)
{
    gc_link_verdict v;
    gc_judge_link_of(l, own_link, gpu, idle, &v);
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
    cbj_str(j, "status", gc_link_status_names[v.status]);
    cbj_str(j, "diagnosis", v.text);
    cbj_obj_end(j);
}
