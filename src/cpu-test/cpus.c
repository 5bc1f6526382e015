/* The cores to load: every CPU of the process's affinity, one per core, each worker
 * bound to its own with sched_setaffinity (no hwloc needed). */
#define _GNU_SOURCE
#include "cpus.h"
#include "../common/cb_common.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ct_affinity(int *out, int max)
{
    cpu_set_t *set = CPU_ALLOC(CB_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(CB_MAX_CPUS);
    if (!set)
        return -1;
    CPU_ZERO_S(size, set);
    int n = -1;
    if (sched_getaffinity(0, size, set) == 0) {
        n = 0;
        for (int c = 0; c < CB_MAX_CPUS && n < max; c++)
            if (CPU_ISSET_S(c, size, set))
                out[n++] = c;
    }
    CPU_FREE(set);
    return n;
}

/* The CPUs sharing cpu's core, from sysfs; the count, or -1 where sysfs does not say. */
static int core_siblings(const char *sysfs_root, int cpu, int *sib, int max)
{
    static const char *const files[] = {"core_cpus_list", "thread_siblings_list"};
    for (int f = 0; f < 2; f++) {
        char path[512], line[4096];
        snprintf(path, sizeof path, "%s/cpu%d/topology/%s", sysfs_root, cpu, files[f]);
        if (cb_read_first_line(path, line, sizeof line) != 0)
            continue;
        int n = cb_parse_intlist(line, sib, max);
        if (n > 0)
            return n;
    }
    return -1;
}

static int in_list(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

int ct_first_per_core(const int *allowed, int n, const char *sysfs_root, int *out)
{
    int *sib = malloc(CB_MAX_CPUS * sizeof *sib);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        int ns = sib ? core_siblings(sysfs_root, allowed[i], sib, CB_MAX_CPUS) : -1;
        int first = 1;
        for (int s = 0; s < ns && first; s++)
            if (sib[s] < allowed[i] && in_list(allowed, i, sib[s]))
                first = 0;
        if (first)
            out[kept++] = allowed[i];
    }
    free(sib);
    return kept;
}

int ct_bind_self(int cpu)
{
    cpu_set_t *set = CPU_ALLOC(CB_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(CB_MAX_CPUS);
    if (!set)
        return -1;
    CPU_ZERO_S(size, set);
    CPU_SET_S(cpu, size, set);
    int rc = pthread_setaffinity_np(pthread_self(), size, set);
    CPU_FREE(set);
    return rc == 0 ? 0 : -1;
}

void ct_cpulist_str(const int *cpus, int n, char *buf, unsigned len)
{
    buf[0] = '\0';
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        size_t at = strlen(buf);
        if (j > i)
            snprintf(buf + at, len - at, "%s%d-%d", at ? "," : "", cpus[i], cpus[j]);
        else
            snprintf(buf + at, len - at, "%s%d", at ? "," : "", cpus[i]);
        i = j + 1;
    }
}
