/* The FMA streams: per ISA, `accumulators` independent chains of x = x + a * x, one
 * vector each, each chain depending only on itself, so that the FMA pipes always have
 * work while each result waits out the FMA latency. Each x86 kernel is compiled for its
 * own ISA (target attributes) and only called where the CPU runs it (isa.c), so one
 * binary serves every x86 CPU. */
#include "isa.h"

#include <math.h>
#include <string.h>

/* One ISA's block: ACC vectors of LANES doubles, the chains of the ISA's table (isa.c),
 * each x = fma(x, a, x) for iters steps, kept in registers (the loops over k unroll);
 * SET1, LOAD, FMA (FMA(x, a, c) = x * a + c, rounded once) and STORE are the ISA's
 * intrinsics. x is both the product's and the sum's operand, so that the multiplier's
 * input changes every step (as in real work, not a constant product) and every ISA's
 * FMA writes its result over x without a copy (NEON's FMLA overwrites its addend). */
#define FMA_BLOCK(NAME, ATTR, VEC, ACC, LANES, SET1, LOAD, FMA, STORE)                         \
    ATTR static void NAME(const double *start, double *out, double a, uint64_t iters)           \
    {                                                                                           \
        const VEC va = SET1(a);                                                                 \
        VEC x[ACC];                                                                             \
        _Pragma("GCC unroll 16") for (int k = 0; k < ACC; k++) x[k] = LOAD(start + k * LANES);  \
        for (uint64_t i = 0; i < iters; i++) {                                                  \
            _Pragma("GCC unroll 16") for (int k = 0; k < ACC; k++) x[k] = FMA(x[k], va, x[k]);  \
        }                                                                                       \
        _Pragma("GCC unroll 16") for (int k = 0; k < ACC; k++) STORE(out + k * LANES, x[k]);    \
    }

#if defined(__x86_64__)
#include <immintrin.h>
FMA_BLOCK(block_avx512, __attribute__((target("avx512f"))), __m512d, 16, 8, _mm512_set1_pd,
          _mm512_loadu_pd, _mm512_fmadd_pd, _mm512_storeu_pd)
FMA_BLOCK(block_avx2, __attribute__((target("avx2,fma"))), __m256d, 12, 4, _mm256_set1_pd,
          _mm256_loadu_pd, _mm256_fmadd_pd, _mm256_storeu_pd)
#endif

#if defined(__aarch64__)
#include <arm_neon.h>
#define NEON_FMA(x, a, c) vfmaq_f64((c), (x), (a)) /* c + x * a */
FMA_BLOCK(block_neon, , float64x2_t, 16, 2, vdupq_n_f64, vld1q_f64, NEON_FMA, vst1q_f64)
#endif

/* Scalar: one double per chain, fma() of the C library where the base ISA has no FMA
 * instruction (x86-64 before Haswell: correct, slow, a fallback); an x86 CPU with FMA
 * runs the same chains with its scalar FMA instruction (the same bits, at full speed),
 * aarch64 always. */
#define SCALAR_SET1(a) (a)
#define SCALAR_LOAD(p) (*(p))
#define SCALAR_STORE(p, x) (*(p) = (x))
FMA_BLOCK(block_scalar, , double, 8, 1, SCALAR_SET1, SCALAR_LOAD, fma, SCALAR_STORE)
#if defined(__x86_64__)
FMA_BLOCK(block_scalar_fma, __attribute__((target("fma"))), double, 8, 1, SCALAR_SET1,
          SCALAR_LOAD, fma, SCALAR_STORE)
#endif

void ct_fma_block(ct_isa isa, const double *start, double *out, double a, uint64_t iters)
{
    switch (isa) {
#if defined(__x86_64__)
    case CT_AVX512:
        block_avx512(start, out, a, iters);
        return;
    case CT_AVX2:
        block_avx2(start, out, a, iters);
        return;
#endif
#if defined(__aarch64__)
    case CT_NEON:
        block_neon(start, out, a, iters);
        return;
#endif
    default:
#if defined(__x86_64__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("fma")) {
            block_scalar_fma(start, out, a, iters);
            return;
        }
#endif
        block_scalar(start, out, a, iters);
        return;
    }
}

void ct_fma_reference(const double *start, double *out, int n, double a, uint64_t iters)
{
    for (int k = 0; k < n; k++) {
        double x = start[k];
        for (uint64_t i = 0; i < iters; i++)
            x = fma(x, a, x);
        out[k] = x;
    }
}

/* ---- the workload's numbers ----------------------------------------------------------- */
const double ct_a = -0x1.4cccccccccccdp-21;

void ct_start_values(double *v, int n)
{
    for (int k = 0; k < n; k++)
        v[k] = 1.0 + (k + 1) * 0x1.01p-8;
}

int ct_check(const double *got, const double *want, int n, int *first)
{
    int bad = 0;
    if (first)
        *first = -1;
    for (int k = 0; k < n; k++) {
        uint64_t g, w;
        memcpy(&g, &got[k], sizeof g);
        memcpy(&w, &want[k], sizeof w);
        if (g != w) {
            if (first && *first < 0)
                *first = k;
            bad++;
        }
    }
    return bad;
}
