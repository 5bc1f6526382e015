/* mem-test's memory operations. x86-64 gets AVX-512, AVX2 or SSE2 streaming-store
 * kernels chosen at run time, so one binary runs on any x86-64 node; other
 * architectures (the ARM partition) use portable C: GNU C vector extensions, which
 * the compiler maps onto the target's vector instructions where it can (GCC 12 on
 * aarch64 mostly emits scalar loads and stores for them; correct, not tuned).
 * MEM_TEST_KERNELS (mt_set_kernels) forces a lower level, so that every path can be
 * run and tested on one machine. */
#include "memops.h"

#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

/* Levels, lowest first; kernel_names[level] is what mt_isa() reports. */
enum { K_GENERIC, K_SSE2, K_AVX2, K_AVX512, K_NLEVELS };
static const char *const kernel_names[K_NLEVELS] = {"generic", "sse2", "avx2", "avx512"};

/* The highest level this CPU (and its OS, for the AVX state) runs. */
static int best_level(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return K_AVX512;
    if (__builtin_cpu_supports("avx2"))
        return K_AVX2;
    return K_SSE2;
#else
    return K_GENERIC;
#endif
}

static int level = -1; /* chosen once: the best, unless mt_set_kernels lowered it */

static int kernel_level(void)
{
    if (level < 0)
        level = best_level();
    return level;
}

const char *mt_isa(void)
{
    return kernel_names[kernel_level()];
}

int mt_set_kernels(const char *name, const char **why)
{
    int best = best_level();
    for (int k = 0; k < K_NLEVELS; k++) {
        if (strcmp(name, kernel_names[k]) != 0)
            continue;
#if !defined(__x86_64__)
        if (k != K_GENERIC) {
            *why = "this build has only the generic kernels (not x86-64)";
            return -1;
        }
#endif
        if (k > best) {
            *why = "this CPU does not have that instruction set";
            return -1;
        }
        level = k;
        return 0;
    }
    *why = "expected generic, sse2, avx2 or avx512";
    return -1;
}

#if defined(__x86_64__)
static int have_avx2(void)
{
    return kernel_level() >= K_AVX2;
}
#endif

/* ---- fill ------------------------------------------------------------- */
#if defined(__x86_64__)
__attribute__((target("avx2"))) static void fill_avx2(uint64_t *dst, size_t n, uint64_t seed)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(dst + i) & 31); i++)
        dst[i] = seed + i;
    __m256i v = _mm256_set_epi64x((long long)(seed + i + 3), (long long)(seed + i + 2),
                                  (long long)(seed + i + 1), (long long)(seed + i));
    const __m256i four = _mm256_set1_epi64x(4);
    for (; i + 4 <= n; i += 4) {
        _mm256_stream_si256((__m256i *)(dst + i), v);
        v = _mm256_add_epi64(v, four);
    }
    _mm_sfence();
    for (; i < n; i++)
        dst[i] = seed + i;
}
#endif

void mt_fill(uint64_t *dst, size_t n, uint64_t seed)
{
#if defined(__x86_64__)
    if (have_avx2()) {
        fill_avx2(dst, n, seed);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        dst[i] = seed + i;
}

/* ---- read --------------------------------------------------------------- */
uint64_t mt_sum(const uint64_t *src, size_t n)
{
    /* Four independent sums let the loop run at load bandwidth. */
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += src[i];
        s1 += src[i + 1];
        s2 += src[i + 2];
        s3 += src[i + 3];
    }
    for (; i < n; i++)
        s0 += src[i];
    return s0 + s1 + s2 + s3;
}

/* ---- copy --------------------------------------------------------------- */
#if defined(__x86_64__)
/* 128 bytes from i: four 32-byte loads, four streaming stores; with `pf`, the two source
 * lines `pf` bytes ahead prefetched first. */
__attribute__((target("avx2"), always_inline)) static inline void
copy_step_avx2(char *d, const char *s, size_t i, size_t pf)
{
    if (pf) {
        _mm_prefetch(s + i + pf, _MM_HINT_T0);
        _mm_prefetch(s + i + pf + 64, _MM_HINT_T0);
    }
    __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
    __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
    __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
    __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
    _mm256_stream_si256((__m256i *)(d + i), a);
    _mm256_stream_si256((__m256i *)(d + i + 32), b);
    _mm256_stream_si256((__m256i *)(d + i + 64), c);
    _mm256_stream_si256((__m256i *)(d + i + 96), e);
}

/* `pf`: how far ahead the source is prefetched (the tuning table's copy_prefetch; 0:
 * none, the hardware prefetcher alone). A loop each, so that the test is not made per
 * step. */
__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n, size_t pf)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(d + i) & 31); i += 8)
        memcpy(d + i, s + i, 8);
    if (pf) {
        /* prefetches stop short of the end: none reaches past the source */
        for (; i + pf + 128 <= n; i += 128)
            copy_step_avx2(d, s, i, pf);
    }
    for (; i + 128 <= n; i += 128)
        copy_step_avx2(d, s, i, 0);
    _mm_sfence();
    if (i < n)
        memcpy(d + i, s + i, n - i);
}

static void copy_sse2(char *d, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(d + i) & 15); i += 8)
        memcpy(d + i, s + i, 8);
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_stream_si128((__m128i *)(d + i), a);
        _mm_stream_si128((__m128i *)(d + i + 16), b);
        _mm_stream_si128((__m128i *)(d + i + 32), c);
        _mm_stream_si128((__m128i *)(d + i + 48), e);
    }
    _mm_sfence();
    if (i < n)
        memcpy(d + i, s + i, n - i);
}
#endif

void mt_copy(void *dst, const void *src, size_t bytes)
{
#if defined(__x86_64__)
    if (have_avx2()) {
        copy_avx2(dst, src, bytes, (size_t)mt_copy_prefetch_bytes());
        return;
    }
    if (kernel_level() == K_SSE2) {
        copy_sse2(dst, src, bytes);
        return;
    }
#endif
    memcpy(dst, src, bytes);
}

/* ---- transpose ------------------------------------------------------------ */
/* Cache-blocked tiles: a tile's source rows and destination rows both stay in
 * L1 while it is turned. */
#define TILE 32

#define DEFINE_TRANSPOSE(name, T)                                                  \
    static void name(T *d, const T *s, size_t rows, size_t cols, size_t r0,        \
                     size_t r1, size_t c0, size_t c1)                              \
    {                                                                              \
        for (size_t rb = r0; rb < r1; rb += TILE)                                  \
            for (size_t cb = c0; cb < c1; cb += TILE) {                            \
                size_t re = rb + TILE < r1 ? rb + TILE : r1;                       \
                size_t ce = cb + TILE < c1 ? cb + TILE : c1;                       \
                for (size_t c = cb; c < ce; c++)                                   \
                    for (size_t r = rb; r < re; r++)                               \
                        d[c * rows + r] = s[r * cols + c];                         \
            }                                                                      \
    }

typedef struct {
    uint64_t a, b;
} u128;
DEFINE_TRANSPOSE(tr32, uint32_t)
DEFINE_TRANSPOSE(tr64, uint64_t)
DEFINE_TRANSPOSE(tr128, u128)

/* The 64-bit kernels: bands of up to 64 source rows (the height suits one CPU and not
 * another: band_tiles_here), walked 8 columns at a time. Each step turns the band's
 * 8x8 tiles in registers and writes each of the 8 destination rows' run (512 bytes in
 * a 64-row band: eight whole, aligned lines) back to back with streaming stores. Why
 * this shape (measured on AMD Zen 3 with a
 * harness over mem-test's two block shapes, 128 and 1024 packets of 9000 bytes):
 * - the stores of one destination run are consecutive, so each line's write-combining
 *   buffer fills and leaves at once, and DRAM sees 512-byte runs: with 1024-packet
 *   blocks a destination row is 8 KiB long, so the 128-byte runs of 16-row bands were
 *   each a DRAM page of their own; 64-row bands took that block from 0.56 to 0.73 x
 *   the copy's speed (the 128-packet block stays at ~0.87);
 * - each source row is read sequentially across the band (64 read streams) with a
 *   software prefetch 12 steps (768 bytes) ahead: the hardware prefetcher does not
 *   follow that many streams, and 2 steps ahead left the loads waiting on DRAM (the
 *   height and the distance suit one CPU and not another: see tuning_here);
 * - interleaving the 8 destination rows line by line instead halves the speed: loads
 *   whose address matches a pending streaming store modulo 4 KiB wait for it to reach
 *   memory, and scattered stores keep more of them pending.
 * - the last cols % 8 columns (5 of mem-test's 1125) are turned in the band too, as a
 *   tile whose loads stop at the row's end: a pass of their own after the bands read
 *   every source row's last line again, a strided walk, from DRAM.
 * Needs rows % 8 == 0 and a 64-byte aligned dst (whole, aligned output lines). */
#define BAND_TILES_MAX 8

/* 8x8 tiles in the band starting at row rb, bands of `tiles` tiles */
static inline int band_tiles(size_t rows, size_t rb, int tiles)
{
    size_t left = (rows - rb) / 8;
    return left < (size_t)tiles ? (int)left : tiles;
}

/* The portable 8x8 kernel, written with GNU C vector extensions (gcc, clang): rows
 * of 8 elements in, columns out, in three rounds of two-input shuffles. The AVX-512
 * kernel is this same code compiled for AVX-512 (one zmm per row), so the test of
 * the generic path on any machine checks the AVX-512 path's logic too. */
typedef uint64_t mt_v8 __attribute__((vector_size(64)));
#if defined(__clang__)
#define SHUF(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define SHUF(a, b, ...) __builtin_shuffle(a, b, (mt_v8){__VA_ARGS__})
#endif
#define TR8x8_V(r)                                                                 \
    do {                                                                           \
        mt_v8 t_[8], u_[8];                                                        \
        for (int p_ = 0; p_ < 8; p_ += 2) {  /* pairs of rows, element by element */ \
            t_[p_] = SHUF(r[p_], r[p_ + 1], 0, 8, 2, 10, 4, 12, 6, 14);            \
            t_[p_ + 1] = SHUF(r[p_], r[p_ + 1], 1, 9, 3, 11, 5, 13, 7, 15);        \
        }                                                                          \
        for (int p_ = 0; p_ < 8; p_ += 4)    /* then pairs of pairs */             \
            for (int q_ = 0; q_ < 2; q_++) {                                       \
                u_[p_ + 2 * q_] = SHUF(t_[p_ + q_], t_[p_ + q_ + 2], 0, 1, 8, 9, 4, 5, 12, 13);    \
                u_[p_ + 2 * q_ + 1] = SHUF(t_[p_ + q_], t_[p_ + q_ + 2], 2, 3, 10, 11, 6, 7, 14, 15); \
            }                                                                      \
        /* u_[0..3]: rows 0-3 of columns (0,4) (2,6) (1,5) (3,7); u_[4..7]: rows 4-7 */ \
        static const int col_[4] = {0, 2, 1, 3};                                   \
        for (int q_ = 0; q_ < 4; q_++) {                                           \
            r[col_[q_]] = SHUF(u_[q_], u_[q_ + 4], 0, 1, 2, 3, 8, 9, 10, 11);      \
            r[col_[q_] + 4] = SHUF(u_[q_], u_[q_ + 4], 4, 5, 6, 7, 12, 13, 14, 15); \
        }                                                                          \
    } while (0)

/* Step c of a band: the 8 columns from c (n of them, 8 but in the last step) of its
 * 8 * nt rows turned in registers, each of the n destination rows' run written back to
 * back. LOAD(v, p, n) loads a row's n columns, STORE(p, v) writes one aligned output
 * line. */
#define BAND_STEP_V8(c, n, LOAD, STORE)                                            \
    do {                                                                           \
        mt_v8 a[BAND_TILES_MAX][8];                                                \
        for (int k = 0; k < 8 * nt; k++)                                           \
            LOAD(a[k / 8][k % 8], sb + (size_t)k * cols + (c), n);                 \
        for (int t = 0; t < nt; t++)                                               \
            TR8x8_V(a[t]);                                                         \
        for (size_t j = 0; j < (n); j++) {                                         \
            uint64_t *dl = d + ((c) + j) * rows + rb;                              \
            for (int t = 0; t < nt; t++)                                           \
                STORE(dl + 8 * t, a[t][j]);                                        \
        }                                                                          \
    } while (0)

/* One band kernel per target: ATTR its target attribute, LOADTAIL(v, p, n) loads the
 * first n (1-7) elements of a row and nothing past them, STORE(p, v) writes one aligned
 * 64-byte output line, FENCE orders the streaming stores before the caller's
 * verification reads. pf: the prefetch distance on each source row, in elements. */
#define DEFINE_BAND_V8(name, ATTR, LOADTAIL, STORE, FENCE)                         \
    ATTR static void name(uint64_t *d, const uint64_t *s, size_t rows, size_t cols, \
                          int tiles, size_t pf)                                    \
    {                                                                              \
        size_t cfull = cols & ~(size_t)7;                                          \
        for (size_t rb = 0; rb < rows; rb += 8 * (size_t)tiles) {                  \
            int nt = band_tiles(rows, rb, tiles);                                  \
            const uint64_t *sb = s + rb * cols;                                    \
            for (size_t c = 0; c < cfull; c += 8)                                  \
                BAND_STEP_V8(c, 8, LOAD_PF, STORE);                                \
            if (cfull < cols)                                                      \
                BAND_STEP_V8(cfull, cols - cfull, LOADTAIL, STORE);                \
        }                                                                          \
        FENCE;                                                                     \
    }
/* a whole row of 8 columns, and a prefetch pf elements further along it */
#define LOAD_PF(v, p, n)                                                           \
    do {                                                                           \
        __builtin_prefetch((p) + pf);                                              \
        memcpy(&(v), (p), 64);                                                     \
    } while (0)

#define LOADTAIL_PLAIN(v, p, n)                                                    \
    do {                                                                           \
        (v) = (mt_v8){0};                                                          \
        memcpy(&(v), (p), 8 * (n));                                                \
    } while (0)
#define STORE_PLAIN(p, v) memcpy((p), &(v), 64)
DEFINE_BAND_V8(tr64_generic, , LOADTAIL_PLAIN, STORE_PLAIN, (void)0)

#if defined(__x86_64__)
/* a masked load: the elements past n are neither read nor able to fault */
#define LOADTAIL_512(v, p, n) ((v) = (mt_v8)_mm512_maskz_loadu_epi64((__mmask8)((1u << (n)) - 1), (p)))
#define STORE_NT512(p, v) _mm512_stream_si512((void *)(p), (__m512i)(v))
DEFINE_BAND_V8(tr64_avx512, __attribute__((target("avx512f"))), LOADTAIL_512, STORE_NT512,
               _mm_sfence())

/* 4x4 of 64-bit elements: rows a0..a3 in, columns out. */
#define TR4x4(a0, a1, a2, a3, o0, o1, o2, o3)                                      \
    do {                                                                           \
        __m256i t0 = _mm256_unpacklo_epi64(a0, a1);                                \
        __m256i t1 = _mm256_unpackhi_epi64(a0, a1);                                \
        __m256i t2 = _mm256_unpacklo_epi64(a2, a3);                                \
        __m256i t3 = _mm256_unpackhi_epi64(a2, a3);                                \
        o0 = _mm256_permute2x128_si256(t0, t2, 0x20);                              \
        o1 = _mm256_permute2x128_si256(t1, t3, 0x20);                              \
        o2 = _mm256_permute2x128_si256(t0, t2, 0x31);                              \
        o3 = _mm256_permute2x128_si256(t1, t3, 0x31);                              \
    } while (0)

/* One 8x8 tile of rows sr[0..7 * cols]: o[2j], o[2j+1] = column j, rows 0-3 and 4-7.
 * n: the columns there are, 8 (with a prefetch pf elements ahead on each row) or, at
 * the rows' end, 1-7 (masked loads: nothing past them is read). */
__attribute__((target("avx2"), always_inline)) static inline void
tile8_avx2(const uint64_t *sr, size_t cols, size_t pf, size_t n, __m256i o[16])
{
    __m256i lo[8], hi[8];
    const __m256i lane = _mm256_set_epi64x(3, 2, 1, 0);
    const __m256i mlo = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)n), lane);
    const __m256i mhi = _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)n - 4), lane);
    for (int k = 0; k < 8; k++) {
        const uint64_t *p = sr + (size_t)k * cols;
        if (n == 8) {
            _mm_prefetch((const char *)(p + pf), _MM_HINT_T0);
            lo[k] = _mm256_loadu_si256((const __m256i *)p);
            hi[k] = _mm256_loadu_si256((const __m256i *)(p + 4));
        } else {
            lo[k] = _mm256_maskload_epi64((const long long *)p, mlo);
            hi[k] = _mm256_maskload_epi64((const long long *)(p + 4), mhi);
        }
    }
    TR4x4(lo[0], lo[1], lo[2], lo[3], o[0], o[2], o[4], o[6]);
    TR4x4(lo[4], lo[5], lo[6], lo[7], o[1], o[3], o[5], o[7]);
    TR4x4(hi[0], hi[1], hi[2], hi[3], o[8], o[10], o[12], o[14]);
    TR4x4(hi[4], hi[5], hi[6], hi[7], o[9], o[11], o[13], o[15]);
}

/* Step c of a band with 256-bit registers: n (8, or 1-7 at the rows' end) columns. */
__attribute__((target("avx2"), always_inline)) static inline void
step_avx2(uint64_t *d, const uint64_t *sb, size_t rows, size_t cols, size_t rb, int nt,
          size_t c, size_t n, size_t pf)
{
    __m256i o[BAND_TILES_MAX][16];
    for (int t = 0; t < nt; t++)
        tile8_avx2(sb + (size_t)t * 8 * cols + c, cols, pf, n, o[t]);
    for (size_t j = 0; j < n; j++) {
        __m256i *dl = (__m256i *)(d + (c + j) * rows + rb);
        for (int t = 0; t < nt; t++) {
            _mm256_stream_si256(dl + 2 * t, o[t][2 * j]);
            _mm256_stream_si256(dl + 2 * t + 1, o[t][2 * j + 1]);
        }
    }
}

/* The band kernel of the comment above with 256-bit registers. */
__attribute__((target("avx2"))) static void tr64_avx2(uint64_t *d, const uint64_t *s,
                                                      size_t rows, size_t cols, int tiles,
                                                      size_t pf)
{
    size_t cfull = cols & ~(size_t)7;
    for (size_t rb = 0; rb < rows; rb += 8 * (size_t)tiles) {
        int nt = band_tiles(rows, rb, tiles);
        const uint64_t *sb = s + rb * cols;
        for (size_t c = 0; c < cfull; c += 8)
            step_avx2(d, sb, rows, cols, rb, nt, c, 8, pf);
        if (cfull < cols)
            step_avx2(d, sb, rows, cols, rb, nt, cfull, cols - cfull, pf);
    }
    _mm_sfence();
}
#endif

typedef void band_fn(uint64_t *d, const uint64_t *s, size_t rows, size_t cols, int tiles,
                     size_t pf);

/* The band kernel of the chosen level. */
static band_fn *band_kernel(void)
{
#if defined(__x86_64__)
    if (kernel_level() == K_AVX512)
        return tr64_avx512;
    if (kernel_level() == K_AVX2)
        return tr64_avx2;
#endif
    return tr64_generic;
}

/* Whether the band kernels take this shape: whole, aligned output lines. */
static int banded(const void *dst, size_t rows)
{
    return rows % 8 == 0 && ((uintptr_t)dst & 63) == 0;
}

/* The copy's and the corner turn's parameters by microarchitecture, the row of this table
 * the CPU matches (config.transpose_tuning): the band height, how far ahead each source
 * row of a band is prefetched, and how far ahead the copy prefetches its source (none:
 * the hardware prefetcher alone). Measured with bench/mem-test and MEM_TEST_BAND_ROWS,
 * and with a harness that turns mem-test's two block shapes between runs of a plain streaming copy in one
 * process (this VM's bandwidth changes from minute to minute):
 * - AMD with AVX-512 (Zen 4; Zen 5 assumed alike): 16-row bands turned both block shapes
 *   10-20 % faster than 64-row ones, at the AVX2 and AVX-512 levels alike, and a
 *   prefetch 4 steps (256 bytes) ahead 0.85 x the copy's speed where 12 steps gave 0.74
 *   x: with 16 read streams the hardware prefetcher follows the rows, and prefetches
 *   further ahead evict lines before they are used;
 * - Intel with AMX (Sapphire Rapids and later; a VM may report another model number, but
 *   not hide the AMX flags, so those tell it): 32-row bands, 12 steps ahead, turned
 *   337-358 Gbit/s on a 2-core VM where 64-row bands gave 270-291 and 16-row ones
 *   334-353 (likwid-bench's best copy 321-327, on huge pages); and the copy, with no
 *   prefetch of its own 270-283 Gbit/s, 0.82-0.86 x that copy, reached 382-388 Gbit/s
 *   with its source prefetched 512, 768, 1024 or 2048 bytes ahead alike (768 taken);
 * - Intel (a Xeon with AVX-512, no AMX) and AMD Zen 3: 64-row bands, 12 steps ahead, and
 *   the copy without a prefetch (1.01-1.04 x likwid-bench's best copy there).
 * Timing the heights on the thread's own rings before the run was tried and rejected:
 * back-to-back turns of one ring ranked them within 5 % of each other and picked a
 * different one from run to run. */
typedef struct {
    const char *name;
    int tiles;          /* 8x8 tiles per band: the band height / 8 */
    int prefetch_steps; /* 64-byte steps ahead on each source row */
    int copy_prefetch;  /* bytes ahead the copy prefetches its source; 0: none */
} tuning;
static const tuning amd_avx512 = {"amd-avx512", 2, 4, 0}, intel_amx = {"intel-amx", 4, 12, 768},
                    other = {"default", BAND_TILES_MAX, 12, 0};

#if defined(__x86_64__)
/* Whether the CPU has AMX tiles (CPUID leaf 7, EDX bit 24): Intel Sapphire Rapids and
 * later. GCC 12's __builtin_cpu_supports has no name for it. */
static int has_amx_tile(void)
{
    unsigned a, b, c, d;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d >> 24 & 1);
}
#endif

static const tuning *tuning_here(void)
{
    static const tuning *own; /* found once */
    if (!own) {
        own = &other;
#if defined(__x86_64__)
        __builtin_cpu_init();
        if (__builtin_cpu_is("amd") && __builtin_cpu_supports("avx512f"))
            own = &amd_avx512;
        else if (__builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f") && has_amx_tile())
            own = &intel_amx;
#endif
    }
    return own;
}

static int forced_tiles; /* mt_set_band_rows; 0: the CPU's own height */

static int band_tiles_here(void)
{
    return forced_tiles ? forced_tiles : tuning_here()->tiles;
}

const char *mt_transpose_tuning(void)
{
    return tuning_here()->name;
}

int mt_prefetch_bytes(void)
{
    return 64 * tuning_here()->prefetch_steps;
}

int mt_copy_prefetch_bytes(void)
{
    return tuning_here()->copy_prefetch;
}

int mt_set_band_rows(const char *rows, const char **why)
{
    static const char *const heights[] = {"", "8", "16", "32", "64"};
    for (int k = 0; k < 5; k++)
        if (strcmp(rows, heights[k]) == 0) {
            forced_tiles = k ? 1 << (k - 1) : 0;
            return 0;
        }
    *why = "not one of the band heights 8, 16, 32, 64";
    return -1;
}

int mt_band_rows(void)
{
    return 8 * band_tiles_here();
}

void mt_transpose(void *dst, const void *src, size_t rows, size_t cols, size_t esize)
{
    switch (esize) {
    case 4:
        tr32(dst, src, rows, cols, 0, rows, 0, cols);
        break;
    case 8:
        if (!banded(dst, rows)) {
            tr64(dst, src, rows, cols, 0, rows, 0, cols);
            break;
        }
        band_kernel()(dst, src, rows, cols, band_tiles_here(),
                      8 * (size_t)tuning_here()->prefetch_steps);
        break;
    default:
        tr128(dst, src, rows, cols, 0, rows, 0, cols);
        break;
    }
}

/* ---- verification ------------------------------------------------------------ */
static void tag_bytes(uint64_t seed, int k, unsigned char *out, size_t esize)
{
    for (size_t b = 0; b < esize; b += 8) {
        uint64_t v = cb_mix64(seed ^ ((uint64_t)k << 48) ^ b);
        memcpy(out + b, &v, esize - b < 8 ? esize - b : 8);
    }
}

void mt_stamp(void *src, size_t nelem, size_t esize, uint64_t seed)
{
    unsigned char tag[16];
    for (int k = 0; k < MT_SPOTS; k++) {
        tag_bytes(seed, k, tag, esize);
        memcpy((char *)src + mt_spot(seed, k, nelem) * esize, tag, esize);
    }
}

/* Later spots may overwrite earlier ones at the same position: only the last
 * tag written to a position is expected there. */
static int last_at(uint64_t seed, int k, size_t nelem)
{
    size_t p = mt_spot(seed, k, nelem);
    for (int m = k + 1; m < MT_SPOTS; m++)
        if (mt_spot(seed, m, nelem) == p)
            return 0;
    return 1;
}

int mt_check_copy(const void *dst, size_t nelem, size_t esize, uint64_t seed)
{
    unsigned char tag[16];
    int bad = 0;
    for (int k = 0; k < MT_SPOTS; k++) {
        if (!last_at(seed, k, nelem))
            continue;
        tag_bytes(seed, k, tag, esize);
        bad += memcmp((const char *)dst + mt_spot(seed, k, nelem) * esize, tag, esize) != 0;
    }
    return bad;
}

int mt_check_transpose(const void *dst, size_t rows, size_t cols, size_t esize, uint64_t seed)
{
    unsigned char tag[16];
    int bad = 0;
    size_t n = rows * cols;
    for (int k = 0; k < MT_SPOTS; k++) {
        if (!last_at(seed, k, n))
            continue;
        size_t p = mt_spot(seed, k, n), r = p / cols, c = p % cols;
        tag_bytes(seed, k, tag, esize);
        bad += memcmp((const char *)dst + (c * rows + r) * esize, tag, esize) != 0;
    }
    return bad;
}

void mt_fault_transposed(void *dst, size_t rows, size_t cols, size_t esize, uint64_t seed)
{
    /* the last spot is never overwritten by a later one, so it is always checked */
    size_t p = mt_spot(seed, MT_SPOTS - 1, rows * cols), r = p / cols, c = p % cols;
    ((unsigned char *)dst)[(c * rows + r) * esize] ^= 0x10;
}

int mt_check_fill(const uint64_t *dst, size_t nwords, uint64_t seed)
{
    int bad = 0;
    for (int k = 0; k < MT_SPOTS; k++) {
        size_t p = mt_spot(seed, k, nwords);
        bad += dst[p] != seed + p;
    }
    return bad;
}

void mt_stamp_sum(uint64_t *buf, size_t nwords, uint64_t seed, uint64_t *expected_sum)
{
    for (int k = 0; k < MT_SPOTS; k++) {
        size_t p = mt_spot(seed, k, nwords);
        uint64_t v = cb_mix64(seed ^ ((uint64_t)k << 48));
        *expected_sum += v - buf[p];
        buf[p] = v;
    }
}
