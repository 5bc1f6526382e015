/* NUMA topology, thread binding and node-local memory through hwloc. */
#include "cb_common.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The NUMA nodes, their PUs and cores, and the last-level cache of a loaded topology
 * into t (which owns topo from here on). Only the CPUs this process may run on count: a
 * job's CPU affinity (taskset, Slurm's task plugins, mpirun's binding) is what it got,
 * and hwloc's topology narrows itself to a cgroup cpuset but not to that mask. */
static int topo_fill(cb_topo *t, hwloc_topology_t topo)
{
    t->hw = topo;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (!bound || hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) != 0 ||
        hwloc_bitmap_iszero(bound))
        hwloc_bitmap_fill(bound);       /* unknown: every CPU of the topology */
    int rc = 0;
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (n <= 0) {
        cb_warn("hwloc found no NUMA node");
        rc = -1;
    } else if (!(t->nodes = calloc((size_t)n, sizeof *t->nodes))) {
        rc = -1;
    } else {
        t->nnodes = n;
    }
    hwloc_bitmap_t mine = hwloc_bitmap_alloc(), both = hwloc_bitmap_alloc();
    for (int i = 0; rc == 0 && i < n; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        cb_numa *d = &t->nodes[i];
        d->os_index = (int)node->os_index;
        d->memory = node->attr ? node->attr->numanode.local_memory : 0;
        hwloc_bitmap_and(mine, node->cpuset, bound);
        int npu = hwloc_get_nbobjs_inside_cpuset_by_type(topo, mine, HWLOC_OBJ_PU);
        int ncore = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        d->pus = calloc((size_t)(npu > 0 ? npu : 1), sizeof(int));
        d->core_pu = calloc((size_t)(ncore > 0 ? ncore : 1), sizeof(int));
        if (!d->pus || !d->core_pu) {
            rc = -1;
            break;
        }
        for (int k = 0; k < npu; k++) {
            hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, mine, HWLOC_OBJ_PU, (unsigned)k);
            d->pus[d->npus++] = (int)pu->os_index;
        }
        /* One thread per core that has a PU of ours in this node: its first such PU. */
        for (int k = 0; k < ncore; k++) {
            hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, (unsigned)k);
            hwloc_bitmap_and(both, core->cpuset, mine);
            int first = hwloc_bitmap_first(both);
            if (first >= 0)
                d->core_pu[d->ncores++] = first;
        }
    }
    hwloc_bitmap_free(mine);
    hwloc_bitmap_free(both);
    hwloc_bitmap_free(bound);
    if (rc != 0) {
        cb_topo_free(t);
        return -1;
    }
    /* Largest last-level cache, to size buffers beyond it. */
    for (int depth = 0; depth < hwloc_topology_get_depth(topo); depth++) {
        hwloc_obj_t o = hwloc_get_obj_by_depth(topo, depth, 0);
        if (o && hwloc_obj_type_is_dcache(o->type) && o->attr->cache.size > t->l3_bytes)
            t->l3_bytes = o->attr->cache.size;
    }
    return 0;
}

int cb_topo_load(cb_topo *t)
{
    hwloc_topology_t topo;
    memset(t, 0, sizeof *t);
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        cb_warn("hwloc could not read the machine topology");
        return -1;
    }
    return topo_fill(t, topo);
}

void cb_topo_free(cb_topo *t)
{
    for (int i = 0; i < t->nnodes; i++) {
        free(t->nodes[i].pus);
        free(t->nodes[i].core_pu);
    }
    free(t->nodes);
    if (t->hw)
        hwloc_topology_destroy((hwloc_topology_t)t->hw);
    memset(t, 0, sizeof *t);
}

const cb_numa *cb_topo_node(const cb_topo *t, int os_index)
{
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].os_index == os_index)
            return &t->nodes[i];
    return NULL;
}

int cb_bind_thread_to_pu(const cb_topo *t, int pu)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, (unsigned)pu);
    int rc = hwloc_set_cpubind((hwloc_topology_t)t->hw, set, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(set);
    return rc == 0 ? 0 : -1;
}

/* The mapping behind cb_alloc_on_node: size rounded up to whole 2 MiB pages, so that
 * transparent huge pages cover it to its last byte. */
#define CB_HUGE_PAGE ((size_t)2 << 20)
static size_t huge_len(size_t size)
{
    return (size + CB_HUGE_PAGE - 1) & ~(CB_HUGE_PAGE - 1);
}

void *cb_alloc_on_node(const cb_topo *t, int os_index, size_t size)
{
    /* On a 2 MiB boundary: the kernel backs only the aligned 2 MiB stretches of a
     * mapping with huge pages, and mmap's own (4 KiB aligned) start left the head and
     * tail of every mem-test ring on small pages, 16 % of its buffers on the Zen 4 VM.
     * Map 2 MiB more than needed and give back what lies outside the aligned part. */
    size_t len = huge_len(size);
    char *raw = mmap(NULL, len + CB_HUGE_PAGE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)raw + CB_HUGE_PAGE - 1) & ~(uintptr_t)(CB_HUGE_PAGE - 1));
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + len < raw + len + CB_HUGE_PAGE)
        munmap(p + len, (size_t)(raw + len + CB_HUGE_PAGE - (p + len)));
    /* BIND, not a hint: a DRAM test whose pages land on the wrong node measures the wrong
     * thing. Before the first touch, so every page is placed by it. Where binding is
     * unsupported (single-node VMs without mbind), keep it unbound; first touch by the
     * bound thread keeps pages local there. */
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, (unsigned)os_index);
    int rc = hwloc_set_area_membind((hwloc_topology_t)t->hw, p, len, set, HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    hwloc_bitmap_free(set);
    if (rc != 0 && t->nnodes != 1) {
        munmap(p, len);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    /* Advice only: where THP is "never" the memory keeps 4 KiB pages. */
    madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

void cb_free_on_node(const cb_topo *t, void *p, size_t size)
{
    (void)t;
    if (p)
        munmap(p, huge_len(size));
}

/* ---- PCI devices: where a device (a GPU, a NIC) is attached ------------------------ */
int cb_topo_load_pci(cb_topo *t, const char *xml)
{
    hwloc_topology_t topo;
    memset(t, 0, sizeof *t);
    if (hwloc_topology_init(&topo) != 0)
        return -1;
    /* PCI devices and bridges are filtered out by default. */
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if ((xml && hwloc_topology_set_xml(topo, xml) != 0) || hwloc_topology_load(topo) != 0) {
        hwloc_topology_destroy(topo);
        return -1;
    }
    return topo_fill(t, topo);
}

int cb_topo_pci_devices(const cb_topo *t)
{
    return t->hw ? hwloc_get_nbobjs_by_type((hwloc_topology_t)t->hw, HWLOC_OBJ_PCI_DEVICE) : 0;
}

int cb_topo_this_system(const cb_topo *t)
{
    return t->hw ? hwloc_topology_is_thissystem((hwloc_topology_t)t->hw) : 0;
}

int cb_topo_pci_locality(const cb_topo *t, const char *busid, cb_pci_place *out)
{
    hwloc_obj_t o = NULL;
    if (t->hw) {
        hwloc_topology_t topo = (hwloc_topology_t)t->hw;
        hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(topo, busid);
        /* The first non-I/O ancestor carries the CPUs and NUMA node(s) it hangs off. */
        o = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
    }
    memset(out, 0, sizeof *out);
    out->numa_node = -1;
    if (!o || !o->cpuset)
        return -1;
    hwloc_bitmap_list_snprintf(out->cpus, sizeof out->cpus, o->cpuset);
    if (o->nodeset && !hwloc_bitmap_iszero(o->nodeset)) {
        hwloc_bitmap_list_snprintf(out->nodes, sizeof out->nodes, o->nodeset);
        if (hwloc_bitmap_weight(o->nodeset) == 1)
            out->numa_node = hwloc_bitmap_first(o->nodeset);
    }
    return 0;
}

int cb_bind_thread_to_cpulist(const cb_topo *t, const char *cpulist)
{
    if (!t->hw || !cb_topo_this_system(t) || !cpulist || !cpulist[0])
        return -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int rc = -1;
    if (hwloc_bitmap_list_sscanf(set, cpulist) == 0 && !hwloc_bitmap_iszero(set))
        rc = hwloc_set_cpubind((hwloc_topology_t)t->hw, set, HWLOC_CPUBIND_THREAD) == 0 ? 0 : -1;
    hwloc_bitmap_free(set);
    return rc;
}

void *cb_alloc_on_nodelist(const cb_topo *t, const char *nodelist, size_t bytes, int *bound)
{
    *bound = 0;
    if (t->hw && cb_topo_this_system(t) && nodelist && nodelist[0]) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        void *p = NULL;
        if (hwloc_bitmap_list_sscanf(set, nodelist) == 0 && !hwloc_bitmap_iszero(set))
            p = hwloc_alloc_membind((hwloc_topology_t)t->hw, bytes, set, HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
        hwloc_bitmap_free(set);
        if (p) {
            *bound = 1;
            return p;
        }
    }
    /* Not bound (no locality, or binding unsupported): ordinary anonymous memory, which a
     * thread bound near the device touches first. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void cb_free_on_nodelist(const cb_topo *t, void *p, size_t bytes, int bound)
{
    if (!p)
        return;
    if (bound)
        hwloc_free((hwloc_topology_t)t->hw, p, bytes);
    else
        munmap(p, bytes);
}
