/* gpu-copy's plan: buffer layout, which copies a phase makes, and what the buffers must
 * hold afterwards. Plain C (the CUDA engine only executes it), so the unit tests can
 * run a whole phase on host memory, with and without a lost copy.
 *
 * Data layout. Buffers are cut into chunks (one cudaMemcpyAsync each); the host buffer
 * holds H chunks, the device buffer D >= H. Data are pattern words: word x of "pattern
 * chunk" p (seed s) is gc_pattern(s, p * chunk_words + x).
 *   write: the host holds pattern chunks 0..H-1 in order. In iteration k device chunk c
 *          receives host chunk (c + k) mod H, so every iteration puts different data in
 *          each place: after the last, device chunk c must hold pattern chunk
 *          (c + K-1) mod H, and a copy lost in the last iteration leaves other data.
 *   read:  device chunk c holds pattern chunk c (every chunk different). In iteration k
 *          device chunk c goes to host chunk (c + k) mod H; copies into one host chunk
 *          run on one stream, in order, so it ends holding the last of them: the largest
 *          c with c + K-1 = h (mod H).
 *   bidir: both at once, on separate halves: host half A to device half A as in write,
 *          device half B to host half B as in read.
 * Copies into the same destination always use the same stream (ordered); the stream of
 * a copy is its destination chunk modulo the streams of its direction. */
#ifndef GC_PLAN_H
#define GC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "../common/cb_hash.h"

#ifdef __CUDACC__
#define GC_HD static inline __host__ __device__
#else
#define GC_HD static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum gc_kind { GC_WRITE, GC_READ, GC_BIDIR, GC_NKINDS };
enum gc_dir { GC_H2D, GC_D2H };

/* ---- values ------------------------------------------------------------------ */
/* The pattern word at host word index `word`: splitmix64's output function of seed +
 * word increments (cb_hash.h). */
GC_HD uint64_t gc_pattern(uint64_t seed, uint64_t word)
{
    return cb_mix64_final(seed + word * CB_GOLDEN_GAMMA);
}

/* What a region holds. Device side: region chunk c holds pattern chunk
 * (c + rot) mod period. Host side (after read copies from a device region laid out with
 * rot 0 and `period`): host chunk h holds the last device chunk copied into it. */
typedef struct gc_map {
    uint64_t chunk_words;
    uint64_t period;          /* pattern chunks before the device layout repeats */
    uint64_t rot;
    uint64_t host_chunks;     /* host side: the host chunks copied into */
    uint64_t dev_chunks;      /* host side: the device chunks copied from */
} gc_map;

/* Expected value of word `w` of a device region laid out by m. */
GC_HD uint64_t gc_dev_expected(const gc_map *m, uint64_t seed, uint64_t w)
{
    uint64_t c = w / m->chunk_words, x = w % m->chunk_words;
    return gc_pattern(seed, ((c + m->rot) % m->period) * m->chunk_words + x);
}

/* The pattern chunk host chunk h holds after read copies whose last iteration had
 * rotation m->rot: the largest device chunk c < dev_chunks with (c + rot) mod H = h. */
GC_HD uint64_t gc_host_src_chunk(const gc_map *m, uint64_t h)
{
    uint64_t H = m->host_chunks, r = (h + H - m->rot % H) % H;
    uint64_t c = r + H * ((m->dev_chunks - 1 - r) / H);
    return c % m->period;
}

/* ---- layout --------------------------------------------------------------------- */
typedef struct gc_layout {
    size_t chunk;            /* bytes per copy */
    int streams;             /* per direction (gc_layout_make sets 1) */
    uint64_t dev_chunks;     /* even, >= host_chunks */
    uint64_t host_chunks;    /* even, >= 4 */
    size_t dev_bytes, host_bytes;
} gc_layout;

#define GC_DEFAULT_CHUNK (64u << 20)
#define GC_DEFAULT_HOST_MAX (4ull << 30)
#define GC_MIN_CHUNK 4096

/* Sizes the buffers: device buffer of about dev_request bytes (whole chunks), host
 * buffer host_request (0: the smaller of the device buffer and 4 GiB), chunk
 * chunk_request (0: 64 MiB, smaller for small buffers). Returns NULL, or why not. */
const char *gc_layout_make(gc_layout *l, size_t dev_request, size_t host_request, size_t chunk_request);
/* The device buffer for a GPU: fraction of its total memory, but leaving reserve bytes
 * of what is free. */
size_t gc_device_request(size_t total, size_t free_bytes, double fraction, size_t reserve);

/* ---- a phase: copies, preparation and verification ------------------------- */
typedef struct gc_copy {
    size_t dev_off, host_off, bytes;
    int dir;                 /* GC_H2D or GC_D2H */
    int stream;              /* which of the direction's streams */
} gc_copy;

/* Number of copies per iteration of a phase, and the i-th copy of iteration k (in the
 * order to issue them; bidir alternates the directions). */
uint64_t gc_phase_copies(const gc_layout *l, int kind);
void gc_phase_copy(const gc_layout *l, int kind, uint64_t k, uint64_t i, gc_copy *out);
/* Bytes one iteration moves in each direction. */
void gc_phase_bytes(const gc_layout *l, int kind, size_t *h2d, size_t *d2h);

typedef struct gc_region {
    size_t off, bytes;       /* bytes == 0: none */
    gc_map map;
    uint64_t seed;
} gc_region;

/* Before the timed copies: fill[0] on the device, then the staging copy (device
 * [stage_dev_off, +stage_bytes) to host [stage_host_off, ...): makes host data canonical),
 * then fill[1], fill[2]. After them: dev_check and host_check must hold. */
typedef struct gc_phase_plan {
    gc_region fill[3];
    size_t stage_dev_off, stage_host_off, stage_bytes;
    gc_region dev_check, host_check;
} gc_phase_plan;

void gc_phase_plan_make(const gc_layout *l, int kind, uint64_t iterations, uint64_t seed,
                        gc_phase_plan *p);

/* Host-side check of a host region after read copies (words relative to the region
 * start `base`, which points at the region's first byte): the mismatching words, and
 * the byte offset of the first (within the region) in *first. (The device side is
 * filled and checked by the engine's kernels; the unit tests' host-memory versions are
 * in tests/c/test_gpu_copy.c.) */
uint64_t gc_region_check_host(const uint64_t *base, const gc_region *r, uint64_t *first);

/* ---- options ------------------------------------------------------------------- */
/* "write,read,bidir" into a mask of 1 << kind; 0 on error. */
unsigned gc_parse_phases(const char *s);
extern const char *const gc_kind_names[GC_NKINDS];

#ifdef __cplusplus
}
#endif
#endif
