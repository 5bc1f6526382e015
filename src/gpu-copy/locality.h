/* Where a GPU sits: its NUMA node and CPUs from its PCI bus id (hwloc), binding a
 * thread to them and allocating memory on that node. */
#ifndef GC_LOCALITY_H
#define GC_LOCALITY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gc_hw {
    void *topo;       /* hwloc_topology_t, with PCI devices */
    int npci;         /* PCI devices hwloc found (0: no PCI discovery, e.g. no plugin) */
    int this_system;  /* binding and allocation act on this machine */
    int nnuma;        /* NUMA nodes */
} gc_hw;

/* Loads the topology with PCI devices; from the XML file `xml` if not NULL (then it
 * describes another machine: lookups only). 0, or -1. */
int gc_hw_load(gc_hw *hw, const char *xml);
void gc_hw_free(gc_hw *hw);

typedef struct gc_place {
    int numa_node;    /* OS index of the GPU's NUMA node; -1: several or unknown */
    char nodes[64];   /* its NUMA nodes, e.g. "1" or "0-1" */
    char cpus[256];   /* the CPUs near it, e.g. "20-39,60-79" */
} gc_place;

/* The locality of the PCI device `busid` ("0000:3b:00.0", any case): 0, or -1 if hwloc
 * does not know the device. */
int gc_hw_locate(const gc_hw *hw, const char *busid, gc_place *out);
/* Binds the calling thread to the CPUs of a list like "0-19,40-59". 0, or -1. */
int gc_hw_bind_cpus(const gc_hw *hw, const char *cpulist);
/* Memory (page aligned) bound to the NUMA nodes of a list like "1"; *bound says whether
 * binding worked (else it is ordinary memory, placed by first touch). NULL if no
 * memory at all. */
void *gc_hw_alloc_nodes(const gc_hw *hw, const char *nodelist, size_t bytes, int *bound);
void gc_hw_free_mem(const gc_hw *hw, void *p, size_t bytes, int bound);

#ifdef __cplusplus
}
#endif
#endif
