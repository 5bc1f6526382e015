/* A host-memory stand-in for the part of the CUDA runtime that gpu-copy's engine uses,
 * for tests on machines without an NVIDIA GPU (fakes only for absent hardware). The
 * engine source (src/gpu-copy/engine.cu) is compiled unchanged as C++ with this header
 * (-include ... -DGC_FAKE_CUDA) into build/tests/gpu-copy-sim: the real program, its
 * threads, barriers, plan, verification and reports, with copies that are memcpy.
 *
 * Copies run synchronously when issued, so stream order holds trivially; events record
 * the host clock. Kernels run on the host as one "thread" (their grid-stride loops then
 * cover everything). The simulated GPUs come from the environment:
 *   GPU_COPY_FAKE_GPUS="0000:3b:00.0=256M@100,0000:86:00.0=256M@50"
 * bus id, memory, and optionally a link rate in Gbit/s per direction that copies are
 * slowed to (without it they run at memcpy speed). Unset: no device (cudaErrorNoDevice).
 * Speeds of this binary say nothing about any hardware. */
#ifndef TEST_GPU_COPY_FAKE_CUDA_H
#define TEST_GPU_COPY_FAKE_CUDA_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#define __global__ static
#define __host__
#define __device__
#define __forceinline__ inline

struct gc_fake_dim3 {
    unsigned x, y, z;
};
static thread_local gc_fake_dim3 blockIdx, threadIdx, blockDim, gridDim;

/* one host "thread" runs the whole grid-stride loop */
#define GC_LAUNCH(kernel, grid, block, stream, ...)                                   \
    do {                                                                              \
        (void)(grid), (void)(block), (void)(stream);                                  \
        blockIdx = threadIdx = gc_fake_dim3{0, 0, 0};                                 \
        blockDim = gridDim = gc_fake_dim3{1, 1, 1};                                   \
        kernel(__VA_ARGS__);                                                          \
    } while (0)

static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = *p;
    *p += v;
    return old;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    unsigned long long old = *p;
    if (v < *p)
        *p = v;
    return old;
}

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
#define cudaStreamNonBlocking 0x01
#define cudaHostRegisterDefault 0x00

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int asyncEngineCount;
};
struct gc_fake_stream {
    int dev;
};
struct gc_fake_event {
    uint64_t ns;
};
typedef gc_fake_stream *cudaStream_t;
typedef gc_fake_event *cudaEvent_t;

struct gc_fake_dev {
    char busid[32];
    size_t mem;
    double gbits; /* 0: unthrottled */
};
static gc_fake_dev gc_fake_devs[64];
static int gc_fake_ndevs = -1;
static thread_local int gc_fake_current;
static std::once_flag gc_fake_once;

static inline uint64_t gc_fake_now(void)
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void gc_fake_init(void)
{
    std::call_once(gc_fake_once, [] {
        gc_fake_ndevs = 0;
        const char *env = getenv("GPU_COPY_FAKE_GPUS");
        char buf[4096];
        snprintf(buf, sizeof buf, "%s", env ? env : "");
        char *save = NULL;
        for (char *tok = strtok_r(buf, ",", &save); tok && gc_fake_ndevs < 64; tok = strtok_r(NULL, ",", &save)) {
            gc_fake_dev *d = &gc_fake_devs[gc_fake_ndevs];
            char *eq = strchr(tok, '=');
            if (!eq)
                continue;
            *eq = '\0';
            snprintf(d->busid, sizeof d->busid, "%s", tok);
            for (char *c = d->busid; *c; c++) /* CUDA spells hex digits upper case */
                if (*c >= 'a' && *c <= 'f')
                    *c = (char)(*c - 'a' + 'A');
            char *end;
            unsigned long long v = strtoull(eq + 1, &end, 10);
            unsigned shift = *end == 'G' ? 30 : *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
            d->mem = (size_t)(v << shift);
            char *at = strchr(eq + 1, '@');
            d->gbits = at ? atof(at + 1) : 0;
            gc_fake_ndevs++;
        }
    });
}

static inline const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    }
    return "unknown error";
}
static inline const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    }
    return "cudaErrorUnknown";
}

static inline cudaError_t cudaGetDeviceCount(int *n)
{
    gc_fake_init();
    *n = gc_fake_ndevs;
    return gc_fake_ndevs ? cudaSuccess : cudaErrorNoDevice;
}
static inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev)
{
    gc_fake_init();
    if (dev < 0 || dev >= gc_fake_ndevs)
        return cudaErrorInvalidDevice;
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "Simulated GPU (tests)");
    p->totalGlobalMem = gc_fake_devs[dev].mem;
    p->asyncEngineCount = 2;
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceGetPCIBusId(char *buf, int len, int dev)
{
    if (dev < 0 || dev >= gc_fake_ndevs)
        return cudaErrorInvalidDevice;
    int n = snprintf(buf, (size_t)len, "%s", gc_fake_devs[dev].busid);
    return n >= 0 && n < len ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaSetDevice(int dev)
{
    gc_fake_init();
    if (dev < 0 || dev >= gc_fake_ndevs)
        return cudaErrorInvalidDevice;
    gc_fake_current = dev;
    return cudaSuccess;
}
static inline cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = gc_fake_devs[gc_fake_current].mem;
    return cudaSuccess;
}
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev)
{
    (void)a, (void)dev;
    *v = 1;
    return cudaSuccess;
}
static inline cudaError_t cudaRuntimeGetVersion(int *v) { *v = 0; return cudaSuccess; }
static inline cudaError_t cudaDriverGetVersion(int *v) { *v = 0; return cudaSuccess; }
static inline cudaError_t cudaGetLastError(void) { return cudaSuccess; }

static inline cudaError_t cudaMalloc(void **p, size_t n)
{
    if (n > gc_fake_devs[gc_fake_current].mem)
        return cudaErrorMemoryAllocation;
    *p = malloc(n);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
static inline cudaError_t cudaHostRegister(void *p, size_t n, unsigned flags)
{
    (void)flags;
    return p && n ? cudaSuccess : cudaErrorInvalidValue;
}
static inline cudaError_t cudaHostUnregister(void *p) { (void)p; return cudaSuccess; }

static inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
    (void)flags;
    *s = new gc_fake_stream{gc_fake_current};
    return cudaSuccess;
}
static inline cudaError_t cudaStreamDestroy(cudaStream_t s) { delete s; return cudaSuccess; }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
static inline cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new gc_fake_event{0};
    return cudaSuccess;
}
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)s;
    e->ns = gc_fake_now();
    return cudaSuccess;
}
static inline cudaError_t cudaEventSynchronize(cudaEvent_t e) { (void)e; return cudaSuccess; }
static inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f)
{
    (void)s, (void)e, (void)f;
    return cudaSuccess;
}
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    *ms = (float)((double)(b->ns - a->ns) / 1e6);
    return cudaSuccess;
}

/* A copy: memcpy, then (with a link rate) wait until it took as long as the link needs. */
static inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, cudaMemcpyKind k,
                                          cudaStream_t s)
{
    (void)k;
    uint64_t t0 = gc_fake_now();
    memcpy(dst, src, n);
    double rate = gc_fake_devs[s ? s->dev : gc_fake_current].gbits;
    if (rate > 0) {
        uint64_t until = t0 + (uint64_t)((double)n * 8 / rate); /* Gbit/s = bit/ns */
        timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
            ;
    }
    return cudaSuccess;
}

#endif
