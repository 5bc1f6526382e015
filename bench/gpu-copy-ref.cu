/* gpu-copy-ref: a plain cudaMemcpyAsync bandwidth loop, the independent reference that
 * bench/gpu-copy runs beside gpu-copy. It shares no code with gpu-copy.
 *
 * Per GPU one host thread with a cudaMallocHost buffer and a cudaMalloc buffer of SIZE
 * bytes and one stream: one untimed copy each way, then ITER timed whole-buffer copies
 * host to device, then ITER device to host, each direction timed with two CUDA events.
 * All GPUs start each direction together (a barrier). No NUMA placement, no chunking.
 *
 *   gpu-copy-ref [SIZE_MIB [ITER]]      defaults: 1024 MiB, 10
 *
 * Output, Gbit/s (10^9 bit/s) per direction:
 *   gpu 0 0000:3b:00.0 h2d 98.12 d2h 101.03
 *   total h2d 196.20 d2h 201.88
 * Exit status: 0 ran, 2 usage, 3 no usable GPU or a CUDA error. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_GPUS 64

static size_t size_bytes;
static int iterations, ngpus;
static pthread_barrier_t barrier;

struct result {
    double h2d_gbits, d2h_gbits;
    char busid[32];
    char error[256];
};
static result results[MAX_GPUS];

static bool ok(cudaError_t e, result *r, const char *what)
{
    if (e != cudaSuccess && !r->error[0])
        snprintf(r->error, sizeof r->error, "%s: %s", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

/* ITER copies in one direction; Gbit/s, or 0 after an error. */
static double timed(void *dst, const void *src, cudaMemcpyKind kind, cudaStream_t s, result *r)
{
    cudaEvent_t start, stop;
    float ms = 0;
    if (!ok(cudaEventCreate(&start), r, "cudaEventCreate") || !ok(cudaEventCreate(&stop), r, "cudaEventCreate"))
        return 0;
    bool good = ok(cudaEventRecord(start, s), r, "cudaEventRecord");
    for (int i = 0; good && i < iterations; i++)
        good = ok(cudaMemcpyAsync(dst, src, size_bytes, kind, s), r, "cudaMemcpyAsync");
    good = good && ok(cudaEventRecord(stop, s), r, "cudaEventRecord") &&
           ok(cudaEventSynchronize(stop), r, "copying") && ok(cudaEventElapsedTime(&ms, start, stop), r, "timing");
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    return good && ms > 0 ? (double)size_bytes * iterations * 8 / (ms / 1e3) / 1e9 : 0;
}

static void *worker(void *arg)
{
    int dev = (int)(long)arg;
    result *r = &results[dev];
    void *host = NULL, *devbuf = NULL;
    cudaStream_t s = NULL;
    bool good = ok(cudaSetDevice(dev), r, "cudaSetDevice") &&
                ok(cudaDeviceGetPCIBusId(r->busid, sizeof r->busid, dev), r, "cudaDeviceGetPCIBusId") &&
                ok(cudaMallocHost(&host, size_bytes), r, "cudaMallocHost") &&
                ok(cudaMalloc(&devbuf, size_bytes), r, "cudaMalloc") &&
                ok(cudaStreamCreate(&s), r, "cudaStreamCreate") &&
                ok(cudaMemcpyAsync(devbuf, host, size_bytes, cudaMemcpyHostToDevice, s), r, "warm-up") &&
                ok(cudaMemcpyAsync(host, devbuf, size_bytes, cudaMemcpyDeviceToHost, s), r, "warm-up") &&
                ok(cudaStreamSynchronize(s), r, "warm-up");
    pthread_barrier_wait(&barrier);
    if (good)
        r->h2d_gbits = timed(devbuf, host, cudaMemcpyHostToDevice, s, r);
    pthread_barrier_wait(&barrier);
    if (good)
        r->d2h_gbits = timed(host, devbuf, cudaMemcpyDeviceToHost, s, r);
    if (s)
        cudaStreamDestroy(s);
    cudaFree(devbuf);
    cudaFreeHost(host);
    return NULL;
}

int main(int argc, char **argv)
{
    long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
    iterations = argc > 2 ? atoi(argv[2]) : 10;
    if (argc > 3 || mib < 1 || iterations < 1) {
        fprintf(stderr, "usage: gpu-copy-ref [SIZE_MIB [ITERATIONS]]\n");
        return 2;
    }
    size_bytes = (size_t)mib << 20;
    cudaError_t e = cudaGetDeviceCount(&ngpus);
    if (e != cudaSuccess || ngpus == 0) {
        fprintf(stderr, "gpu-copy-ref: no usable NVIDIA GPU: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "CUDA sees no device");
        return 3;
    }
    if (ngpus > MAX_GPUS)
        ngpus = MAX_GPUS;
    pthread_barrier_init(&barrier, NULL, (unsigned)ngpus);
    pthread_t th[MAX_GPUS];
    for (int i = 0; i < ngpus; i++)
        pthread_create(&th[i], NULL, worker, (void *)(long)i);
    double h2d = 0, d2h = 0;
    int rc = 0;
    for (int i = 0; i < ngpus; i++) {
        pthread_join(th[i], NULL);
        if (results[i].error[0]) {
            fprintf(stderr, "gpu-copy-ref: GPU %d: %s\n", i, results[i].error);
            rc = 3;
        }
        printf("gpu %d %s h2d %.2f d2h %.2f\n", i, results[i].busid, results[i].h2d_gbits, results[i].d2h_gbits);
        h2d += results[i].h2d_gbits;
        d2h += results[i].d2h_gbits;
    }
    printf("total h2d %.2f d2h %.2f\n", h2d, d2h);
    return rc;
}
