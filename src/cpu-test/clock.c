/* Cycles, to turn FLOP/s into a clock and FLOP per cycle: each core's own cycles where
 * perf_event counts them (the effective clock, turbo and throttling included), else the
 * x86 TSC (a constant rate: the nominal clock, which says nothing of turbo or
 * throttling), else none. */
#include "cpus.h"
#include "../common/cb_common.h"

#include <linux/perf_event.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

const char *ct_clock_name(ct_clock_source s)
{
    return s == CT_CLOCK_PERF ? "perf_event" : s == CT_CLOCK_TSC ? "tsc" : "none";
}

const char *ct_clock_meaning(ct_clock_source s)
{
    switch (s) {
    case CT_CLOCK_PERF:
        return "each core's own cycles (perf_event): its effective clock";
    case CT_CLOCK_TSC:
        return "the TSC's constant rate: the nominal clock, not the effective one "
               "(perf_event counts no cycles here)";
    default:
        return "no cycle counter readable here (no perf_event cycles, no TSC): no clock";
    }
}

int ct_perf_open_self(void)
{
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_CPU_CYCLES;
    attr.exclude_kernel = 1; /* what perf_event_paranoid 2 allows an ordinary user */
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1, -1, 0UL);
    return fd < 0 ? -1 : (int)fd;
}

int ct_perf_read(int fd, uint64_t *cycles)
{
    return read(fd, cycles, sizeof *cycles) == (ssize_t)sizeof *cycles ? 0 : -1;
}

int ct_tsc_usable(void)
{
#if defined(__x86_64__)
    /* Linux's constant_tsc: the TSC ticks at one rate whatever the core's clock */
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0)
            found = strstr(line, " constant_tsc") != NULL;
    if (f)
        fclose(f);
    return found;
#else
    return 0;
#endif
}

uint64_t ct_tsc_now(void)
{
#if defined(__x86_64__)
    return __rdtsc();
#else
    return 0;
#endif
}
