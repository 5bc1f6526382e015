/* GPU locality through hwloc: the PCI device's first non-I/O ancestor carries the CPUs
 * and NUMA node(s) the device is attached to. */
#include "locality.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int gc_hw_load(gc_hw *hw, const char *xml)
{
    hwloc_topology_t t;
    memset(hw, 0, sizeof *hw);
    if (hwloc_topology_init(&t) != 0)
        return -1;
    /* PCI devices and bridges are filtered out by default. */
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if ((xml && hwloc_topology_set_xml(t, xml) != 0) || hwloc_topology_load(t) != 0) {
        hwloc_topology_destroy(t);
        return -1;
    }
    hw->topo = t;
    hw->npci = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PCI_DEVICE);
    hw->this_system = hwloc_topology_is_thissystem(t);
    hw->nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    return 0;
}

void gc_hw_free(gc_hw *hw)
{
    if (hw->topo)
        hwloc_topology_destroy((hwloc_topology_t)hw->topo);
    memset(hw, 0, sizeof *hw);
}

int gc_hw_locate(const gc_hw *hw, const char *busid, gc_place *out)
{
    hwloc_obj_t o = NULL;
    if (hw->topo) {
        hwloc_topology_t t = (hwloc_topology_t)hw->topo;
        hwloc_obj_t pci = hwloc_get_pcidev_by_busidstring(t, busid);
        o = pci ? hwloc_get_non_io_ancestor_obj(t, pci) : NULL;
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

int gc_hw_bind_cpus(const gc_hw *hw, const char *cpulist)
{
    if (!hw->topo || !hw->this_system || !cpulist || !cpulist[0])
        return -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    int rc = -1;
    if (hwloc_bitmap_list_sscanf(set, cpulist) == 0 && !hwloc_bitmap_iszero(set))
        rc = hwloc_set_cpubind((hwloc_topology_t)hw->topo, set, HWLOC_CPUBIND_THREAD) == 0 ? 0 : -1;
    hwloc_bitmap_free(set);
    return rc;
}

void *gc_hw_alloc_nodes(const gc_hw *hw, const char *nodelist, size_t bytes, int *bound)
{
    *bound = 0;
    if (hw->topo && hw->this_system && nodelist && nodelist[0]) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        void *p = NULL;
        if (hwloc_bitmap_list_sscanf(set, nodelist) == 0 && !hwloc_bitmap_iszero(set))
            p = hwloc_alloc_membind((hwloc_topology_t)hw->topo, bytes, set, HWLOC_MEMBIND_BIND,
                                    HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT);
        hwloc_bitmap_free(set);
        if (p) {
            *bound = 1;
            return p;
        }
    }
    /* Not bound (no locality, or binding unsupported): ordinary anonymous memory, which
     * the thread bound near the GPU touches first. */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void gc_hw_free_mem(const gc_hw *hw, void *p, size_t bytes, int bound)
{
    if (!p)
        return;
    if (bound)
        hwloc_free((hwloc_topology_t)hw->topo, p, bytes);
    else
        munmap(p, bytes);
}
