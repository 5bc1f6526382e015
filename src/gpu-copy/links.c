/* What each GPU's PCIe links and locality are, and what they explain, for both modes
 * (copies and --explain-links): the links read idle or under load, judged by the one PCIe
 * link rule (pcie.c), the shared uplinks, and the locality from hwloc or sysfs. */
#include "run.h"

#include <string.h>

/* The links to judge: read under load if we have that, else idle. */
const gc_gpu_topo *gc_links_of(const gc_gpu *g, int *idle)
{
    *idle = !g->have_loaded;
    return g->have_loaded ? &g->loaded : &g->topo;
}

void gc_locate(gc_gpu *g, const cb_topo *topo, int use_hwloc)
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

void gc_print_gpu_links(const gc_gpu *g, int *degraded_links)
{
    int idle;
    const gc_gpu_topo *t = gc_links_of(g, &idle);
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
               gc_link_upstream(l), l->down, k == 0 ? "the GPU" : "switch uplink", cur, v.cur_gbits,
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
void gc_json_gpu_topology(cb_json *j, const gc_gpu *g)
{
    int idle;
    const gc_gpu_topo *t = gc_links_of(g, &idle);
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
int gc_gpu_degraded(const gc_gpu *g, char *why, size_t len)
{
    int idle, k;
    const gc_gpu_topo *t = gc_links_of(g, &idle);
    gc_link_verdict v;
    if (gc_judge_device(t, idle, &v, &k) != GC_LINK_DEGRADED)
        return 0;
    snprintf(why, len, "%s link %s -> %s %s", k == 0 ? "its" : "the switch uplink",
             t->links[k].up, t->links[k].down, v.text);
    return 1;
}

/* Shared uplinks that cannot carry what the GPUs below them could move. Prints them;
 * returns how many are too narrow. */
int gc_print_shared(const gc_run *r, int verbose_ok, const char *indent)
{
    static gc_gpu_topo t[GC_MAX_GPUS];
    for (int i = 0; i < r->ngpus; i++) {
        int idle;
        t[i] = *gc_links_of(&r->gpus[i], &idle);
    }
    gc_shared_link sh[GC_MAX_GPUS];
    int n = gc_find_shared_links(t, r->ngpus, sh, GC_MAX_GPUS), narrow = 0;
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
double gc_run_reachable_gbits(const gc_run *r)
{
    static gc_gpu_topo now[GC_MAX_GPUS];
    for (int i = 0; i < r->ngpus; i++) {
        int idle;
        now[i] = *gc_links_of(&r->gpus[i], &idle);
    }
    return gc_reachable_gbits(now, r->ngpus);
}
