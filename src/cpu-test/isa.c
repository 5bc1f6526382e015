/* Which vector instruction sets this CPU runs, chosen at run time (one binary for every
 * CPU of an architecture): __builtin_cpu_supports on x86 (it checks that the OS saves
 * the registers too), the auxiliary vector on aarch64. */
#include "isa.h"

#include <stdio.h>
#include <string.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#endif

/* Accumulators: the FMA latency (4 cycles on current x86 and ARM cores) times the FMA
 * pipes (2 on x86; up to 4 of 128 bits on Neoverse V cores), with a margin, within the
 * register file (16 ymm registers beside a and b; 32 zmm or NEON registers). */
static const ct_isa_info table[CT_NISA] = {
    [CT_SCALAR] = {"scalar", 1, 8},
    [CT_NEON] = {"neon", 2, 16},
    [CT_AVX2] = {"avx2", 4, 12},
    [CT_AVX512] = {"avx512", 8, 16},
};

const ct_isa_info *ct_isa_of(ct_isa isa)
{
    return &table[isa];
}

int ct_isa_from_name(const char *name, ct_isa *out)
{
    for (int i = 0; i < CT_NISA; i++)
        if (strcmp(name, table[i].name) == 0) {
            *out = (ct_isa)i;
            return 0;
        }
    return -1;
}

int ct_isa_supported(ct_isa isa)
{
    switch (isa) {
    case CT_SCALAR:
        return 1;
#if defined(__x86_64__)
    case CT_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CT_AVX512:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f");
#elif defined(__aarch64__)
    case CT_NEON:
        return (getauxval(AT_HWCAP) & HWCAP_ASIMD) != 0;
#endif
    default:
        return 0;
    }
}

ct_isa ct_isa_best(void)
{
    for (int i = CT_NISA - 1; i > 0; i--)
        if (ct_isa_supported((ct_isa)i))
            return (ct_isa)i;
    return CT_SCALAR;
}

void ct_isa_list_supported(char *buf, unsigned len)
{
    buf[0] = '\0';
    for (int i = CT_NISA - 1; i >= 0; i--)
        if (ct_isa_supported((ct_isa)i))
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
                     table[i].name);
}
