/* The cores cpu-test runs on (the process's CPU affinity, one CPU per core) and the
 * clock it counts cycles with. */
#ifndef CT_CPUS_H
#define CT_CPUS_H

#include <stdint.h>

/* ---- cores (cpus.c) ----------------------------------------------------------------- */
/* The CPUs this process may run on (sched_getaffinity: taskset, a Slurm job's cpuset),
 * ascending, into out[max]; the count, or -1. */
int ct_affinity(int *out, int max);
/* Of the CPUs allowed[0..n) (ascending), the first of each core: a CPU is dropped when a
 * lower allowed CPU shares its core (sysfs_root/cpuN/topology/core_cpus_list, else
 * thread_siblings_list; sysfs_root is normally /sys/devices/system/cpu). A CPU whose
 * core sysfs does not name is kept. Returns the count written to out. */
int ct_first_per_core(const int *allowed, int n, const char *sysfs_root, int *out);
/* cpus[0..n) as a list like "0-3,8" (ascending input). */
void ct_cpulist_str(const int *cpus, int n, char *buf, unsigned len);
/* Binds the calling thread to one CPU: 0, or -1. */
int ct_bind_self(int cpu);

/* ---- cycles (clock.c) --------------------------------------------------------------- */
typedef enum ct_clock_source {
    CT_CLOCK_NONE,  /* no cycle count: no clock, no FLOP per cycle */
    CT_CLOCK_TSC,   /* x86's constant-rate time-stamp counter: the nominal clock */
    CT_CLOCK_PERF,  /* each core's own cycles (perf_event): its effective clock */
} ct_clock_source;

const char *ct_clock_name(ct_clock_source s);   /* "none", "tsc", "perf_event" */
const char *ct_clock_meaning(ct_clock_source s); /* a few words for the human output */
/* A counter of the calling thread's cycles in user mode (perf_event_open), or -1 where
 * perf_event gives none (no PMU, as in most VMs; perf_event_paranoid). */
int ct_perf_open_self(void);
/* The counter's value: 0, or -1. */
int ct_perf_read(int fd, uint64_t *cycles);
/* Whether this CPU has a constant-rate TSC (x86 only), and its value now. */
int ct_tsc_usable(void);
uint64_t ct_tsc_now(void);

#endif
