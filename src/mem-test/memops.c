/* mem-test's memory operations. x86-64 gets AVX2 (or SSE2) streaming-store
 * kernels chosen at run time, so one binary runs on any x86-64 node; other
 * architectures (the ARM partition) use portable C the compiler vectorises. */
#include "memops.h"

#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
static int have_avx2(void)
{
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return cached;
}
#endif

const char *mt_isa(void)
{
#if defined(__x86_64__)
    return have_avx2() ? "avx2" : "sse2";
#else
    return "generic";
#endif
}

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
__attribute__((target("avx2"))) static void copy_avx2(char *d, const char *s, size_t n)
{
    size_t i = 0;
    for (; i < n && ((uintptr_t)(d + i) & 31); i += 8)
        memcpy(d + i, s + i, 8);
    for (; i + 128 <= n; i += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + i + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        _mm256_stream_si256((__m256i *)(d + i), a);
        _mm256_stream_si256((__m256i *)(d + i + 32), b);
        _mm256_stream_si256((__m256i *)(d + i + 64), c);
        _mm256_stream_si256((__m256i *)(d + i + 96), e);
    }
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
    if (have_avx2())
        copy_avx2(dst, src, bytes);
    else
        copy_sse2(dst, src, bytes);
#else
    memcpy(dst, src, bytes);
#endif
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

#if defined(__x86_64__)
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

/* 8x8 tiles of 64-bit elements: 8 source rows read as 16 vectors, 8 whole
 * 64-byte destination lines written with streaming stores (rows % 8 == 0 and
 * a 64-byte aligned dst make every output line full and aligned). */
__attribute__((target("avx2"))) static void tr64_avx2(uint64_t *d, const uint64_t *s,
                                                      size_t rows, size_t cols)
{
    size_t cfull = cols & ~(size_t)7;
    for (size_t r = 0; r < rows; r += 8) {
        const uint64_t *sr = s + r * cols;
        for (size_t c = 0; c < cfull; c += 8) {
            __m256i lo[8], hi[8], o[16];
            for (int k = 0; k < 8; k++) {
                lo[k] = _mm256_loadu_si256((const __m256i *)(sr + (size_t)k * cols + c));
                hi[k] = _mm256_loadu_si256((const __m256i *)(sr + (size_t)k * cols + c + 4));
            }
            /* o[2j] = column j, rows 0-3; o[2j+1] = column j, rows 4-7 */
            TR4x4(lo[0], lo[1], lo[2], lo[3], o[0], o[2], o[4], o[6]);
            TR4x4(lo[4], lo[5], lo[6], lo[7], o[1], o[3], o[5], o[7]);
            TR4x4(hi[0], hi[1], hi[2], hi[3], o[8], o[10], o[12], o[14]);
            TR4x4(hi[4], hi[5], hi[6], hi[7], o[9], o[11], o[13], o[15]);
            for (int j = 0; j < 8; j++) {
                uint64_t *dl = d + (c + (size_t)j) * rows + r;
                _mm256_stream_si256((__m256i *)dl, o[2 * j]);
                _mm256_stream_si256((__m256i *)(dl + 4), o[2 * j + 1]);
            }
        }
    }
    _mm_sfence();
    if (cfull < cols) /* the last cols % 8 columns */
        tr64(d, s, rows, cols, 0, rows, cfull, cols);
}
#endif

void mt_transpose(void *dst, const void *src, size_t rows, size_t cols, size_t esize)
{
    switch (esize) {
    case 4:
        tr32(dst, src, rows, cols, 0, rows, 0, cols);
        break;
    case 8:
#if defined(__x86_64__)
        if (have_avx2() && rows % 8 == 0 && ((uintptr_t)dst & 63) == 0) {
            tr64_avx2(dst, src, rows, cols);
            break;
        }
#endif
        tr64(dst, src, rows, cols, 0, rows, 0, cols);
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
        uint64_t v = mt_mix(seed ^ ((uint64_t)k << 48) ^ b);
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
        uint64_t v = mt_mix(seed ^ ((uint64_t)k << 48));
        *expected_sum += v - buf[p];
        buf[p] = v;
    }
}
