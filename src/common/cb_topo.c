/* NUMA topology, thread binding and node-local memory through hwloc. */
#include "cb_common.h"

#include <hwloc.h>
#include <stdlib.h>
#include <string.h>

int cb_topo_load(cb_topo *t)
{
    hwloc_topology_t topo;
    memset(t, 0, sizeof *t);
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
        cb_warn("hwloc could not read the machine topology");
        return -1;
    }
    t->hw = topo;
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    if (n <= 0) {
        cb_warn("hwloc found no NUMA node");
        cb_topo_free(t);
        return -1;
    }
    t->nodes = calloc((size_t)n, sizeof *t->nodes);
    if (!t->nodes) {
        cb_topo_free(t);
        return -1;
    }
    t->nnodes = n;
    for (int i = 0; i < n; i++) {
        hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
        cb_numa *d = &t->nodes[i];
        d->os_index = (int)node->os_index;
        d->memory = node->attr ? node->attr->numanode.local_memory : 0;
        int npu = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_PU);
        int ncore = hwloc_get_nbobjs_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE);
        d->pus = calloc((size_t)(npu > 0 ? npu : 1), sizeof(int));
        d->core_pu = calloc((size_t)(ncore > 0 ? ncore : 1), sizeof(int));
        if (!d->pus || !d->core_pu) {
            cb_topo_free(t);
            return -1;
        }
        for (int k = 0; k < npu; k++) {
            hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_PU, (unsigned)k);
            d->pus[d->npus++] = (int)pu->os_index;
        }
        for (int k = 0; k < ncore; k++) {
            hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, node->cpuset, HWLOC_OBJ_CORE, (unsigned)k);
            /* The first PU of the core that lies in this node: one thread per core. */
            hwloc_bitmap_t both = hwloc_bitmap_alloc();
            hwloc_bitmap_and(both, core->cpuset, node->cpuset);
            int first = hwloc_bitmap_first(both);
            hwloc_bitmap_free(both);
            if (first >= 0)
                d->core_pu[d->ncores++] = first;
        }
    }
    /* Largest last-level cache, to size buffers beyond it. */
    for (int depth = 0; depth < hwloc_topology_get_depth(topo); depth++) {
        hwloc_obj_t o = hwloc_get_obj_by_depth(topo, depth, 0);
        if (o && hwloc_obj_type_is_dcache(o->type) && o->attr->cache.size > t->l3_bytes)
            t->l3_bytes = o->attr->cache.size;
    }
    return 0;
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

void *cb_alloc_on_node(const cb_topo *t, int os_index, size_t size)
{
    hwloc_topology_t topo = (hwloc_topology_t)t->hw;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_only(set, (unsigned)os_index);
    /* BIND, not a hint: a DRAM test whose pages land on the wrong node measures the wrong thing.
     * Where binding is unsupported (single-node VMs without mbind), fall back to plain
     * allocation; first touch by the bound thread keeps pages local there. */
    void *p = hwloc_alloc_membind(topo, size, set, HWLOC_MEMBIND_BIND,
                                  HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
    if (!p && t->nnodes == 1)
        p = hwloc_alloc(topo, size);
    hwloc_bitmap_free(set);
    return p;
}

void cb_free_on_node(const cb_topo *t, void *p, size_t size)
{
    if (p)
        hwloc_free((hwloc_topology_t)t->hw, p, size);
}
