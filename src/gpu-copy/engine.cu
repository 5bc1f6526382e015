/* gpu-copy's copy engine (CUDA C): one host thread per GPU, bound near the GPU, with a
 * pinned host buffer on the GPU's NUMA node and a device buffer of most of the GPU's
 * memory. It executes the plan of each phase (plan.h): device fills and a staging copy,
 * the timed cudaMemcpyAsync copies on several streams per direction, and the checks of
 * what the copies left behind. */
#ifndef GC_FAKE_CUDA
#include <cuda_runtime.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
extern "C" {
#include "../common/cb_common.h"
}

#define MAX_STREAMS 16

/* Kernel launches go through this macro so that the tests' host-memory stand-in for
 * CUDA (tests/c/test_gpu_copy_fake_cuda.h, no GPU needed) can run them too. */
#ifndef GC_LAUNCH
#define GC_LAUNCH(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

/* ---- device kernels: fill and check a region laid out by a gc_map ------------- */
__global__ void fill_kernel(uint64_t *d, uint64_t words, gc_map m, uint64_t seed)
{
    for (uint64_t w = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w < words;
         w += (uint64_t)gridDim.x * blockDim.x)
        d[w] = gc_dev_expected(&m, seed, w);
}

__global__ void check_kernel(const uint64_t *d, uint64_t words, gc_map m, uint64_t seed,
                             unsigned long long *bad, unsigned long long *first)
{
    for (uint64_t w = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w < words;
         w += (uint64_t)gridDim.x * blockDim.x)
        if (d[w] != gc_dev_expected(&m, seed, w)) {
            atomicAdd(bad, 1ULL);
            atomicMin(first, (unsigned long long)w * 8);
        }
}

/* ---- discovery ------------------------------------------------------------------ */
extern "C" int gc_cuda_devices(gc_cuda_dev *out, int max, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return -1;
    }
    if (n == 0) {
        snprintf(err, errlen, "CUDA sees no device");
        return -1;
    }
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        gc_cuda_dev *d = &out[i];
        memset(d, 0, sizeof *d);
        d->index = i;
        if ((e = cudaGetDeviceProperties(&p, i)) != cudaSuccess ||
            (e = cudaDeviceGetPCIBusId(d->busid, (int)sizeof d->busid, i)) != cudaSuccess) {
            snprintf(err, errlen, "CUDA device %d: %s", i, cudaGetErrorString(e));
            return -1;
        }
        snprintf(d->name, sizeof d->name, "%s", p.name);
        for (char *c = d->busid; *c; c++)
            if (*c >= 'A' && *c <= 'F')
                *c = (char)(*c - 'A' + 'a');
        d->total_mem = p.totalGlobalMem;
        d->copy_engines = p.asyncEngineCount;
        size_t fr = 0, tot = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&fr, &tot) == cudaSuccess)
            d->free_mem = fr;
        else
            d->free_mem = d->total_mem;
    }
    return n;
}

extern "C" void gc_cuda_versions(char *buf, size_t len)
{
#ifdef GC_FAKE_CUDA
    snprintf(buf, len, "SIMULATED CUDA (host memory, for tests; speeds mean nothing)");
    return;
#endif
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    if (drv)
        snprintf(buf, len, "CUDA runtime %d.%d, driver %d.%d", rt / 1000, rt % 1000 / 10,
                 drv / 1000, drv % 1000 / 10);
    else
        snprintf(buf, len, "CUDA runtime %d.%d, driver none", rt / 1000, rt % 1000 / 10);
}

/* ---- the worker ---------------------------------------------------------------------- */
struct state {
    gc_worker *w;
    uint64_t *dev;
    uint64_t *host;
    int host_bound;
    cudaStream_t s[2][MAX_STREAMS];   /* [GC_H2D / GC_D2H][i] */
    cudaEvent_t start, end[2][MAX_STREAMS], mark[2][MAX_STREAMS];
    unsigned long long *counters;     /* device: bad, first */
    int grid;
    int fault_pending;
};

/* Records the first CUDA error; returns nonzero if e is one. */
static int failed(state *st, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    if (!st->w->error[0])
        snprintf(st->w->error, sizeof st->w->error, "GPU %d (%s): %s: %s", st->w->device,
                 st->w->busid, what, cudaGetErrorString(e));
    return 1;
}

static int setup(state *st)
{
    gc_worker *w = st->w;
    const gc_layout *l = &w->layout;
    w->bound_cpu = cb_bind_thread_to_cpulist(w->topo, w->cpus) == 0;
    /* The context is created by the thread that is already near the GPU. */
    if (failed(st, cudaSetDevice(w->device), "cudaSetDevice") || failed(st, cudaFree(0), "creating the context"))
        return -1;
    if (failed(st, cudaMalloc((void **)&st->dev, l->dev_bytes), "allocating the device buffer") ||
        failed(st, cudaMalloc((void **)&st->counters, 2 * sizeof(unsigned long long)), "cudaMalloc"))
        return -1;
    st->host = (uint64_t *)cb_alloc_on_nodelist(w->topo, w->nodes, l->host_bytes, &st->host_bound);
    w->bound_mem = st->host_bound;
    if (!st->host) {
        snprintf(w->error, sizeof w->error, "GPU %d (%s): cannot allocate %zu MiB of host memory",
                 w->device, w->busid, l->host_bytes >> 20);
        return -1;
    }
    /* Pin the node-local pages (page-locked memory is what DMA can reach at full speed). */
    if (failed(st, cudaHostRegister(st->host, l->host_bytes, cudaHostRegisterDefault),
               "pinning the host buffer (cudaHostRegister)")) {
        cb_free_on_nodelist(w->topo, st->host, l->host_bytes, st->host_bound);
        st->host = NULL;
        return -1;
    }
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < w->streams; i++)
            if (failed(st, cudaStreamCreateWithFlags(&st->s[d][i], cudaStreamNonBlocking), "cudaStreamCreate") ||
                failed(st, cudaEventCreate(&st->end[d][i]), "cudaEventCreate") ||
                failed(st, cudaEventCreate(&st->mark[d][i]), "cudaEventCreate"))
                return -1;
    if (failed(st, cudaEventCreate(&st->start), "cudaEventCreate"))
        return -1;
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, w->device);
    st->grid = (sms > 0 ? sms : 16) * 8;
    /* Warm-up, untimed: the host buffer to the device and back once. */
    cudaStream_t s0 = st->s[GC_H2D][0];
    if (failed(st, cudaMemcpyAsync(st->dev, st->host, l->host_bytes, cudaMemcpyHostToDevice, s0), "warm-up copy") ||
        failed(st, cudaMemcpyAsync(st->host, st->dev, l->host_bytes, cudaMemcpyDeviceToHost, s0), "warm-up copy") ||
        failed(st, cudaStreamSynchronize(s0), "warm-up copy"))
        return -1;
    return 0;
}

static void teardown(state *st)
{
    gc_worker *w = st->w;
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < MAX_STREAMS; i++) {
            if (st->s[d][i])
                cudaStreamDestroy(st->s[d][i]);
            if (st->end[d][i])
                cudaEventDestroy(st->end[d][i]);
            if (st->mark[d][i])
                cudaEventDestroy(st->mark[d][i]);
        }
    if (st->start)
        cudaEventDestroy(st->start);
    if (st->host) {
        cudaHostUnregister(st->host);
        cb_free_on_nodelist(w->topo, st->host, w->layout.host_bytes, st->host_bound);
    }
    cudaFree(st->dev);
    cudaFree(st->counters);
}

static int fill_region(state *st, const gc_region *r)
{
    if (!r->bytes)
        return 0;
    GC_LAUNCH(fill_kernel, st->grid, 256, st->s[GC_H2D][0], st->dev + r->off / 8, r->bytes / 8, r->map, r->seed);
    return failed(st, cudaGetLastError(), "fill kernel");
}

static int prepare(state *st, const gc_phase_plan *p)
{
    cudaStream_t s0 = st->s[GC_H2D][0];
    if (fill_region(st, &p->fill[0]))
        return -1;
    if (p->stage_bytes &&
        failed(st, cudaMemcpyAsync((char *)st->host + p->stage_host_off, (char *)st->dev + p->stage_dev_off,
                                   p->stage_bytes, cudaMemcpyDeviceToHost, s0), "staging copy"))
        return -1;
    if (fill_region(st, &p->fill[1]) || fill_region(st, &p->fill[2]))
        return -1;
    return failed(st, cudaStreamSynchronize(s0), "preparing the buffers") ? -1 : 0;
}

static int timed(state *st, int phase, const gc_phase_spec *ph, gc_result *r)
{
    gc_worker *w = st->w;
    const gc_layout *l = &w->layout;
    uint64_t n = gc_phase_copies(l, ph->kind), K = ph->iterations;
    int used[2] = {ph->kind != GC_READ, ph->kind != GC_WRITE};
    int first_dir = used[GC_H2D] ? GC_H2D : GC_D2H;
    size_t h2d, d2h;
    gc_phase_bytes(l, ph->kind, &h2d, &d2h);

    r->t0_ns = cb_now_ns();
    if (failed(st, cudaEventRecord(st->start, st->s[first_dir][0]), "cudaEventRecord"))
        return -1;
    for (int d = 0; d < 2; d++)
        for (int i = 0; used[d] && i < w->streams; i++)
            cudaStreamWaitEvent(st->s[d][i], st->start, 0);
    for (uint64_t k = 0; k < K; k++) {
        for (uint64_t i = 0; i < n; i++) {
            gc_copy c;
            gc_phase_copy(l, ph->kind, k, i, &c);
            cudaStream_t s = st->s[c.dir][c.stream]; /* one stream per destination: ordered */
            if (st->fault_pending && ph->kind == w->fault_kind && k == K - 1 && i == n - 1) {
                st->fault_pending = 0; /* GPU_COPY_FAULT: this copy is lost */
                continue;
            }
            void *dst = c.dir == GC_H2D ? (void *)((char *)st->dev + c.dev_off) : (void *)((char *)st->host + c.host_off);
            const void *src = c.dir == GC_H2D ? (const void *)((char *)st->host + c.host_off) : (const void *)((char *)st->dev + c.dev_off);
            if (failed(st, cudaMemcpyAsync(dst, src, c.bytes, c.dir == GC_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s),
                       "cudaMemcpyAsync"))
                return -1;
        }
        if (k == 0)
            for (int d = 0; d < 2; d++)
                for (int i = 0; used[d] && i < w->streams; i++)
                    cudaEventRecord(st->mark[d][i], st->s[d][i]);
        /* The link under load: after the first iteration, with the next one queued. */
        if (w->on_load && k == (K > 1 ? 1 : 0)) {
            for (int d = 0; d < 2; d++)
                for (int i = 0; used[d] && i < w->streams; i++)
                    cudaEventSynchronize(st->mark[d][i]);
            w->on_load(w, phase);
        }
    }
    for (int d = 0; d < 2; d++)
        for (int i = 0; used[d] && i < w->streams; i++)
            cudaEventRecord(st->end[d][i], st->s[d][i]);
    double secs[2] = {0, 0};
    for (int d = 0; d < 2; d++)
        for (int i = 0; used[d] && i < w->streams; i++) {
            float ms = 0;
            if (failed(st, cudaEventSynchronize(st->end[d][i]), "copying") ||
                failed(st, cudaEventElapsedTime(&ms, st->start, st->end[d][i]), "cudaEventElapsedTime"))
                return -1;
            if (ms / 1e3 > secs[d])
                secs[d] = ms / 1e3;
        }
    r->t1_ns = cb_now_ns();
    r->h2d_s = secs[GC_H2D];
    r->d2h_s = secs[GC_D2H];
    r->h2d_bytes = (uint64_t)h2d * K;
    r->d2h_bytes = (uint64_t)d2h * K;
    return 0;
}

static int verify(state *st, const gc_phase_plan *p, gc_result *r)
{
    r->first_bad = UINT64_MAX;
    if (p->dev_check.bytes) {
        unsigned long long c[2] = {0, ~0ULL};
        const gc_region *d = &p->dev_check;
        cudaStream_t s0 = st->s[GC_H2D][0];
        if (failed(st, cudaMemcpyAsync(st->counters, c, sizeof c, cudaMemcpyHostToDevice, s0), "cudaMemcpy"))
            return -1;
        GC_LAUNCH(check_kernel, st->grid, 256, s0, st->dev + d->off / 8, d->bytes / 8, d->map, d->seed,
                  st->counters, st->counters + 1);
        if (failed(st, cudaGetLastError(), "check kernel") ||
            failed(st, cudaMemcpyAsync(c, st->counters, sizeof c, cudaMemcpyDeviceToHost, s0), "cudaMemcpy") ||
            failed(st, cudaStreamSynchronize(s0), "checking the device buffer"))
            return -1;
        r->dev_errors = c[0];
        if (c[0])
            r->first_bad = c[1];
    }
    if (p->host_check.bytes) {
        uint64_t first;
        const gc_region *h = &p->host_check;
        r->host_errors = gc_region_check_host(st->host + h->off / 8, h, &first);
        if (r->host_errors && first < r->first_bad)
            r->first_bad = first;
    }
    return 0;
}

extern "C" void *gc_worker_main(void *arg)
{
    gc_worker *w = (gc_worker *)arg;
    state st;
    memset(&st, 0, sizeof st);
    st.w = w;
    st.fault_pending = w->fault_kind >= 0;
    if (w->streams < 1 || w->streams > MAX_STREAMS || w->layout.streams != w->streams) {
        snprintf(w->error, sizeof w->error, "streams per direction must be 1 to %d", MAX_STREAMS);
        w->setup_failed = 1;
    } else if (setup(&st) != 0) {
        w->setup_failed = 1;
    }
    pthread_barrier_wait(w->barrier);
    pthread_barrier_wait(w->barrier); /* the main thread has decided */
    if (*w->abort_run) { /* the main thread joins no phase barrier then */
        teardown(&st);
        return NULL;
    }
    int ok = !w->setup_failed;
    for (int i = 0; i < w->nphases; i++) {
        const gc_phase_spec *ph = &w->phases[i];
        int mine = ph->gpu < 0 || ph->gpu == w->slot;
        pthread_barrier_wait(w->barrier); /* the main thread has decided: go on or stop */
        if (*w->stop_run)
            break;
        gc_phase_plan plan;
        gc_phase_plan_make(&w->layout, ph->kind, ph->iterations, ph->seed, &plan);
        if (ok && mine && prepare(&st, &plan) != 0)
            ok = 0;
        pthread_barrier_wait(w->barrier);
        if (ok && mine && timed(&st, i, ph, &w->results[i]) != 0)
            ok = 0;
        pthread_barrier_wait(w->barrier);
        if (ok && mine && verify(&st, &plan, &w->results[i]) == 0)
            w->results[i].ran = 1;
        else if (mine)
            ok = 0;
        pthread_barrier_wait(w->barrier);
    }
    teardown(&st);
    return NULL;
}
