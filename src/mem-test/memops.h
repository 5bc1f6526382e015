/* The four memory operations of mem-test and their verification.
 * All sizes in bytes are multiples of 8; buffers are 64-byte aligned. */
#ifndef MEMOPS_H
#define MEMOPS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/cb_hash.h"

/* dst[i] = seed + i for nwords 64-bit words (streaming stores where available). */
void mt_fill(uint64_t *dst, size_t nwords, uint64_t seed);
/* Sum of nwords 64-bit words (wrapping). */
uint64_t mt_sum(const uint64_t *src, size_t nwords);
/* Copy bytes (multiple of 8) with streaming stores where available. */
void mt_copy(void *dst, const void *src, size_t bytes);
/* Corner turn: src is rows x cols elements of esize bytes (row-major),
 * dst becomes cols x rows: dst[c][r] = src[r][c]. esize is 4, 8 or 16. */
void mt_transpose(void *dst, const void *src, size_t rows, size_t cols, size_t esize);
/* Forces the band height of the 64-bit corner turn (MEM_TEST_BAND_ROWS): "8", "16",
 * "32" or "64" rows; "" goes back to this CPU's own. Returns 0, or -1 with *why saying
 * what is wrong. */
int mt_set_band_rows(const char *rows, const char **why);
/* The band height of the 64-bit corner turn on this CPU, in rows (or as forced). */
int mt_band_rows(void);
/* The row of the table of parameters this CPU matched ("amd-avx512", "intel-amx",
 * "default"), the distance the corner turn's software prefetch runs ahead on each source
 * row, and the distance the copy's runs ahead on its source (0: none). */
const char *mt_transpose_tuning(void);
int mt_prefetch_bytes(void);
int mt_copy_prefetch_bytes(void);
/* Which kernels run: "avx512", "avx2", "sse2" (x86-64, the best the CPU has unless
 * lowered) or "generic" (portable C; other architectures). */
const char *mt_isa(void);
/* Forces a kernel level by name (MEM_TEST_KERNELS): generic, sse2, avx2 or avx512,
 * at most what this CPU runs. Returns 0, or -1 with *why saying what is wrong. */
int mt_set_kernels(const char *name, const char **why);

/* Spot verification: each block is stamped with MT_SPOTS pseudo-random tags
 * before the operation and the tags are looked for afterwards, so a skipped,
 * partial or misplaced operation is caught and the compiler cannot elide the
 * work. Positions and tags depend on the seed (block number and stage). */
#define MT_SPOTS 8

/* Element index i in [0, n) for spot k of a block seeded with seed. */
static inline size_t mt_spot(uint64_t seed, int k, size_t n);

/* Stamp tags into src (nelem elements of esize bytes); returns nothing. */
void mt_stamp(void *src, size_t nelem, size_t esize, uint64_t seed);
/* Check a copy: dst must hold the tags at the same positions. Returns mismatches. */
int mt_check_copy(const void *dst, size_t nelem, size_t esize, uint64_t seed);
/* Check a transpose of rows x cols: tag at src (r,c) must be at dst (c,r). */
int mt_check_transpose(const void *dst, size_t rows, size_t cols, size_t esize, uint64_t seed);
/* Fault injection for the tests (MEM_TEST_FAULT=transpose-element): flips a bit of
 * the transposed element that mt_check_transpose looks at last, as a kernel that
 * misplaced or mangled one element would. */
void mt_fault_transposed(void *dst, size_t rows, size_t cols, size_t esize, uint64_t seed);
/* Check a fill: spot words must equal seed + index. */
int mt_check_fill(const uint64_t *dst, size_t nwords, uint64_t seed);
/* Stamp tags into a read buffer and update its known sum, so the next mt_sum
 * must equal *expected_sum. */
void mt_stamp_sum(uint64_t *buf, size_t nwords, uint64_t seed, uint64_t *expected_sum);

static inline size_t mt_spot(uint64_t seed, int k, size_t n)
{
    /* Spot 0 and 1 are the first and last element: a truncated copy is always caught. */
    if (k == 0)
        return 0;
    if (k == 1)
        return n - 1;
    return (size_t)(cb_mix64(seed * 31 + (uint64_t)k) % n);
}

#endif
