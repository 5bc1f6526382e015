/* The message buffers: the allocators of --memory-buffer-allocator (LinkTest's, and
 * our huge pages), the rings of --multi-buffer and --check-buffers, their contents
 * (zeros, --randomize-buffers, or the pattern of each checked message), and the MPI
 * calls on them, which stage GPU buffers through pinned host memory when the MPI is
 * not CUDA-aware; the payload of --check-buffers (exchange.c fills and checks its
 * messages with it). */
#include "buffers.h"
#include "gpu.h"
#include "npz.h"
#include "options.h"
#include "world.h"
#include "../common/cb_hash.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20)
/* --check-buffers without --multi-buffer: the ring holds the timed messages of one batch,
 * at most this many bytes per direction (and at least one message) */
#define CHECK_RING_BYTES (64u << 20)

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* One host buffer of bytes (a multiple of the page size, see buffers_set_up). */
void *lt_host_alloc(lt_buffers *b, size_t bytes)
{
    void *p = NULL;
    int a = b->allocator;
    int huge = a == LT_ALLOC_HUGE || (a == LT_ALLOC_DEFAULT && bytes >= HUGE_PAGE);
    switch (a) {
    case LT_ALLOC_ALIGNED:
        return aligned_alloc(4096, bytes);
    case LT_ALLOC_PINNED_MMAP:
        p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        /* pinned: the pages stay resident (RLIMIT_MEMLOCK may refuse; reported, not fatal) */
        if (mlock(p, bytes) != 0)
            b->mlocked = 0;
        return p;
    default:
        /* Large buffers 2 MiB aligned and asked to be backed by transparent huge pages
         * (where the kernel leaves that to the program, THP "madvise"): single-copy
         * transports (CMA, RDMA registration) then handle far fewer pages, as for the
         * large buffers of NumPy or most MPI codes. */
        if (posix_memalign(&p, huge ? HUGE_PAGE : 4096, bytes) != 0)
            return NULL;
#ifdef MADV_HUGEPAGE
        if (huge)
            madvise(p, bytes, MADV_HUGEPAGE);
#endif
        return p;
    }
}

void lt_host_free(const lt_buffers *b, void *p, size_t bytes)
{
    if (!p)
        return;
    if (b->allocator == LT_ALLOC_PINNED_MMAP)
        munmap(p, bytes);
    else
        free(p);
}

const char *lt_alloc_descr(const lt_buffers *b)
{
    static char buf[200];
    switch (b->allocator) {
    case LT_ALLOC_ALIGNED:
        return "aligned-memory_allocator (aligned_alloc, 4 KiB aligned)";
    case LT_ALLOC_PINNED_MMAP:
        snprintf(buf, sizeof buf, "pinned-memory-map_allocator (mmap, %s)",
                 b->mlocked ? "locked in memory by mlock" : "mlock refused (RLIMIT_MEMLOCK): not locked");
        return buf;
    case LT_ALLOC_POSIX:
        return "POSIX_aligned-memory_allocator (posix_memalign, 4 KiB aligned, no huge pages)";
    case LT_ALLOC_HUGE:
        return "huge-pages (posix_memalign, 2 MiB aligned, transparent huge pages asked by madvise)";
    case LT_ALLOC_CUDA:
        snprintf(buf, sizeof buf, "CUDA_memory_allocator (cudaMalloc on GPU %d of %d, %s)", b->gpu_device,
                 b->gpu_count, b->gpu_name);
        return buf;
    default:
        return b->buf_bytes * (size_t)b->nbuf >= HUGE_PAGE /* a ring is one allocation */
                   ? "DEFAULT (posix_memalign, 2 MiB aligned, transparent huge pages asked by madvise)"
                   : "DEFAULT (posix_memalign, 4 KiB aligned; huge pages from 2 MiB rings)";
    }
}

/* Buffers per ring: --multi-buffer's K; with --check-buffers one per timed message of a
 * batch; else one. */
static int ring_size(const lt_config *cfg)
{
    if (cfg->multi_buffer)
        return (int)cfg->num_multi_buffer;
    if (!cfg->check_buffers)
        return 1;
    size_t each = round_up(cfg->size, cfg->allocator == LT_ALLOC_HUGE ? HUGE_PAGE : 4096); /* as allocated */
    long fit = (long)(CHECK_RING_BYTES / each);
    fit = fit < 1 ? 1 : fit;
    return (int)(fit < cfg->nmsg ? fit : cfg->nmsg);
}

/* --use-gpu-memory: the GPU local to this rank (local rank modulo the GPUs visible), and
 * how MPI reaches its memory. Exits 3 on every rank when some rank has no GPU. */
static void gpu_set_up(lt_buffers *b, const lt_world *w)
{
    MPI_Comm local;
    int lrank = 0;
    lt_mpi_check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
                 "MPI_Comm_split_type");
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    char why[256] = "", me[LT_HOST_LEN] = "";
    int ok = lt_gpu_select(lrank, &b->gpu_device, &b->gpu_count, b->gpu_name, sizeof b->gpu_name, why,
                           sizeof why) == 0;
    int mine[2] = {ok ? w->size : w->rank, !ok}, first[2];
    lt_mpi_check(MPI_Allreduce(&mine[0], &first[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    lt_mpi_check(MPI_Allreduce(&mine[1], &first[1], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    if (first[0] < w->size) { /* the first rank without a GPU says why, for all */
        if (w->rank == first[0]) {
            cb_hostname(me, sizeof me);
            fprintf(stderr, "cb-linktest: --use-gpu-memory: rank %d on %s: %s%s\n", w->rank, me, why,
                    first[1] > 1 ? " (and on other ranks)" : "");
            fflush(stderr);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        exit(CB_EXIT_CANNOT_RUN);
    }
    b->gpu_mode = lt_mpi_cuda_aware() ? LT_GPU_AWARE : LT_GPU_STAGED;
}

/* Whether the rings are on the GPU (--use-gpu-memory, once set up). */
int lt_on_gpu(const lt_buffers *b)
{
    return b->gpu_mode != LT_GPU_NONE;
}

/* The rings (on the GPU or in host memory), touched: zeros, or --randomize-buffers' bytes. */
void lt_buffers_set_up(lt_buffers *b, const lt_config *cfg, const lt_world *w)
{
    b->allocator = cfg->allocator;
    b->nbuf = ring_size(cfg);
    b->buf_bytes = round_up(cfg->size, cfg->allocator == LT_ALLOC_HUGE ? HUGE_PAGE : 4096);
    b->mlocked = cfg->allocator == LT_ALLOC_PINNED_MMAP;
    if (cfg->use_gpu)
        gpu_set_up(b, w);
    /* each ring one allocation: buffer i at i x buf_bytes, every one page aligned */
    size_t ring = b->buf_bytes * (size_t)b->nbuf;
    b->sring = calloc((size_t)b->nbuf, sizeof(char *));
    b->rring = calloc((size_t)b->nbuf, sizeof(char *));
    char *sblock = cfg->use_gpu ? lt_gpu_alloc(ring) : lt_host_alloc(b, ring);
    char *rblock = cfg->use_gpu ? lt_gpu_alloc(ring) : lt_host_alloc(b, ring);
    int ok = b->sring && b->rring && sblock && rblock;
    for (int i = 0; ok && i < b->nbuf; i++) {
        b->sring[i] = sblock + (size_t)i * b->buf_bytes;
        b->rring[i] = rblock + (size_t)i * b->buf_bytes;
    }
    if (ok && cfg->use_gpu) {
        b->scratch = lt_gpu_host_alloc(b->buf_bytes);
        ok = b->scratch != NULL;
        if (ok && b->gpu_mode == LT_GPU_STAGED) {
            b->stage_s = lt_gpu_host_alloc(b->buf_bytes);
            b->stage_r = lt_gpu_host_alloc(b->buf_bytes);
            ok = b->stage_s && b->stage_r;
        }
    }
    char msg[200];
    snprintf(msg, sizeof msg, "cannot allocate %d send and %d receive buffers of %zu bytes (%s) on some rank",
             b->nbuf, b->nbuf, cfg->size, cfg->use_gpu ? "GPU memory" : lt_alloc_names[cfg->allocator]);
    lt_all_ok_or_exit(w, ok, CB_EXIT_CANNOT_RUN, msg);
    for (int i = 0; i < b->nbuf; i++) {
        if (cfg->randomize_buffers) {
            uint64_t base = cfg->seed_buffers ^ ((uint64_t)(uint32_t)w->rank << 32) ^ ((uint64_t)i << 1);
            lt_buf_fill(b, b->sring[i], b->buf_bytes, cb_mix64(base));
            lt_buf_fill(b, b->rring[i], b->buf_bytes, cb_mix64(base ^ 1));
        } else {
            lt_buf_zero(b, b->sring[i], b->buf_bytes);
            lt_buf_zero(b, b->rring[i], b->buf_bytes);
        }
    }
}

void lt_buffers_free(lt_buffers *b)
{
    size_t ring = b->buf_bytes * (size_t)b->nbuf;
    for (int k = 0; k < 2; k++) {
        char **r = k ? b->rring : b->sring;
        if (!r || !r[0])
            continue;
        if (lt_on_gpu(b))
            lt_gpu_free(r[0]);
        else
            lt_host_free(b, r[0], ring);
    }
    lt_gpu_host_free(b->scratch);
    lt_gpu_host_free(b->stage_s);
    lt_gpu_host_free(b->stage_r);
    free(b->sring);
    free(b->rring);
}

/* ---- contents: on the host directly, on the GPU through the scratch copy ---------------- */
void lt_buf_fill(lt_buffers *b, char *buf, size_t n, uint64_t seed)
{
    if (!lt_on_gpu(b)) {
        lt_fill_payload(buf, n, seed);
        return;
    }
    lt_fill_payload(b->scratch, n, seed);
    lt_gpu_from_host(buf, b->scratch, n);
}

void lt_buf_zero(lt_buffers *b, char *buf, size_t n)
{
    if (lt_on_gpu(b))
        lt_gpu_zero(buf, n);
    else
        memset(buf, 0, n);
}

double lt_buf_check(lt_buffers *b, const char *buf, size_t n, uint64_t seed)
{
    if (lt_on_gpu(b)) {
        lt_gpu_to_host(b->scratch, buf, n);
        buf = b->scratch;
    }
    return lt_check_payload(buf, n, seed);
}

uint32_t lt_buf_crc(lt_buffers *b, const char *buf, size_t n)
{
    if (lt_on_gpu(b)) {
        lt_gpu_to_host(b->scratch, buf, n);
        buf = b->scratch;
    }
    return lt_crc32(0, buf, n);
}

/* ---- the MPI calls; GPU buffers staged when the MPI cannot take device pointers -------- */
void lt_send(lt_buffers *b, const char *buf, int n, int peer, int tag)
{
    if (b->gpu_mode == LT_GPU_STAGED) {
        lt_gpu_to_host(b->stage_s, buf, (size_t)n);
        buf = b->stage_s;
    }
    lt_mpi_check(MPI_Send(buf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD), "MPI_Send");
}

void lt_recv(lt_buffers *b, char *buf, int n, int peer, int tag)
{
    char *to = b->gpu_mode == LT_GPU_STAGED ? b->stage_r : buf;
    lt_mpi_check(MPI_Recv(to, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    if (to != buf)
        lt_gpu_from_host(buf, to, (size_t)n);
}

void lt_sendrecv(lt_buffers *b, const char *sb, char *rb, int n, int peer, int tag)
{
    char *to = rb;
    if (b->gpu_mode == LT_GPU_STAGED) {
        lt_gpu_to_host(b->stage_s, sb, (size_t)n);
        sb = b->stage_s;
        to = b->stage_r;
    }
    lt_mpi_check(MPI_Sendrecv(sb, n, MPI_BYTE, peer, tag, to, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE), "MPI_Sendrecv");
    if (to != rb)
        lt_gpu_from_host(rb, to, (size_t)n);
}

/* ---- payload (--check-buffers) ----------------------------------------------- */
/* The pattern of timed message msg (0-based) from rank from to rank to in the pair test
 * tag (--randomize-buffers' seed mixed in): every message of a run has its own. */
uint64_t lt_payload_seed(const lt_config *cfg, int from, int to, long tag, long msg)
{
    uint64_t salt = cfg->randomize_buffers ? cb_mix64(cfg->seed_buffers) : 0;
    return cb_mix64(((uint64_t)(uint32_t)from << 32) ^ (uint64_t)(uint32_t)to ^ ((uint64_t)tag << 48) ^
                    0x6c696e6b74657374ULL ^ cb_mix64((uint64_t)msg) ^ salt);
}

void lt_fill_payload(char *buf, size_t n, uint64_t seed)
{
    size_t words = n / 8;
    uint64_t *w = (uint64_t *)buf;
    for (size_t i = 0; i < words; i++)
        w[i] = cb_mix64(seed + i);
    uint64_t tail = cb_mix64(seed + words);
    memcpy(buf + words * 8, &tail, n - words * 8);
}

/* Bytes of buf that differ from the payload seed makes. */
double lt_check_payload(const char *buf, size_t n, uint64_t seed)
{
    size_t words = n / 8;
    const uint64_t *w = (const uint64_t *)buf;
    double bad = 0;
    for (size_t i = 0; i < words; i++) {
        uint64_t want = cb_mix64(seed + i), x = w[i] ^ want;
        for (; x; x >>= 8)
            bad += (x & 0xff) != 0;
    }
    uint64_t tail = cb_mix64(seed + words);
    const unsigned char *t = (const unsigned char *)&tail;
    for (size_t i = words * 8; i < n; i++)
        bad += (unsigned char)buf[i] != t[i - words * 8];
    return bad;
}
