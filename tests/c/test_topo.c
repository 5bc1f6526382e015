/* Unit tests of the hwloc wrapper (src/common/cb_topo.c): topology, binding and
 * node-local memory on this machine. Built only where hwloc is. */
#include "cb_test.h"
#include "common/cb_common.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void test_topology(void)
{
    cb_topo t;
    CHECK(cb_topo_load(&t) == 0);
    CHECK(t.nnodes >= 1);
    int cores = 0;
    for (int i = 0; i < t.nnodes; i++) {
        cores += t.nodes[i].ncores;
        CHECK(t.nodes[i].npus >= t.nodes[i].ncores);
        CHECK(cb_topo_node(&t, t.nodes[i].os_index) == &t.nodes[i]);
    }
    CHECK(cores >= 1 && cores <= sysconf(_SC_NPROCESSORS_ONLN));
    CHECK(cb_topo_node(&t, 99999) == NULL);
    const cb_numa *n = &t.nodes[0];
    void *p = cb_alloc_on_node(&t, n->os_index, 1 << 20);
    CHECK(p != NULL);
    if (p) {
        memset(p, 1, 1 << 20);
        cb_free_on_node(&t, p, 1 << 20);
    }
    /* on a 2 MiB boundary (whole huge pages), whatever the size asked for */
    for (size_t size = 4096; size <= (5u << 20) + 8; size = size * 3 + 8) {
        char *q = cb_alloc_on_node(&t, n->os_index, size);
        CHECK(q != NULL && ((uintptr_t)q & ((2u << 20) - 1)) == 0);
        if (q) {
            memset(q, 1, size);
            cb_free_on_node(&t, q, size);
        }
    }
    CHECK(cb_bind_thread_to_pu(&t, n->core_pu[0]) == 0);
    cb_topo_free(&t);
}

/* The locality of PCI devices on a recorded two-socket topology with two GPUs (hwloc
 * XML; the test runs from the checkout's root, as `make ctest` runs it). */
#ifndef CB_TEST_DATA
#define CB_TEST_DATA "tests/data"
#endif
static void test_pci_locality(void)
{
    cb_topo t;
    CHECK(cb_topo_load_pci(&t, CB_TEST_DATA "/gpu-copy/hwloc/two-socket-two-gpus.xml") == 0);
    if (!t.hw)
        return;
    CHECK(cb_topo_pci_devices(&t) >= 3 && !cb_topo_this_system(&t) && t.nnodes == 2);
    cb_pci_place p;
    CHECK(cb_topo_pci_locality(&t, "0000:06:00.0", &p) == 0);
    CHECK(p.numa_node == 0 && strcmp(p.nodes, "0") == 0);
    CHECK(strcmp(p.cpus, "0-1") == 0);
    CHECK(cb_topo_pci_locality(&t, "0000:14:00.0", &p) == 0 && p.numa_node == 1);
    CHECK(cb_topo_pci_locality(&t, "0000:11:00.0", &p) == 0 && p.numa_node == 1);
    CHECK(strcmp(p.cpus, "2-3") == 0);
    CHECK(cb_topo_pci_locality(&t, "0000:99:00.0", &p) == -1 && p.numa_node == -1);
    /* another machine's topology: no binding and no bound memory through it */
    CHECK(cb_bind_thread_to_cpulist(&t, "0") == -1);
    int bound = 1;
    void *m = cb_alloc_on_nodelist(&t, "0", 1 << 20, &bound);
    CHECK(m != NULL && !bound);
    cb_free_on_nodelist(&t, m, 1 << 20, bound);
    cb_topo_free(&t);
    CHECK(cb_topo_load_pci(&t, "no-such.xml") == -1);

    /* this machine: its CPUs and node-local memory by list */
    CHECK(cb_topo_load_pci(&t, NULL) == 0);
    CHECK(cb_topo_this_system(&t));
    char cpu[16], node[16];
    snprintf(cpu, sizeof cpu, "%d", t.nodes[0].pus[0]);
    snprintf(node, sizeof node, "%d", t.nodes[0].os_index);
    CHECK(cb_bind_thread_to_cpulist(&t, cpu) == 0);
    CHECK(cb_bind_thread_to_cpulist(&t, "") == -1 && cb_bind_thread_to_cpulist(&t, "x") == -1);
    m = cb_alloc_on_nodelist(&t, node, 1 << 20, &bound);
    CHECK(m != NULL);
    if (m) {
        memset(m, 1, 1 << 20);
        cb_free_on_nodelist(&t, m, 1 << 20, bound);
    }
    cb_topo_free(&t);
}

int main(void)
{
    test_topology();
    test_pci_locality();
    CBT_DONE();
}
