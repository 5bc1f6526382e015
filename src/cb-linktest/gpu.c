/* --use-gpu-memory: the few CUDA runtime calls cb-linktest makes. Built with LT_CUDA
 * where nvcc (the CUDA toolkit) is present, linking the CUDA runtime statically: the
 * binary then needs only the NVIDIA driver where it runs, and where there is none or no
 * GPU, cudaGetDeviceCount says so and the run exits 3. Without LT_CUDA the same calls
 * say that this build has no CUDA. */
#include "gpu.h"
#include "../common/cb_common.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef LT_CUDA
#include <cuda_runtime_api.h>

const int lt_gpu_built = 1;

int lt_gpu_select(int local_rank, int *device, int *count, char *name, size_t namelen, char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(why, len, "no GPU visible (cudaGetDeviceCount: %s; CUDA_VISIBLE_DEVICES=%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices",
                 getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        return -1;
    }
    *count = n;
    *device = local_rank % n; /* the GPU local to this rank: one per local rank, round robin */
    struct cudaDeviceProp prop;
    if ((e = cudaSetDevice(*device)) != cudaSuccess || (e = cudaGetDeviceProperties(&prop, *device)) != cudaSuccess) {
        snprintf(why, len, "GPU %d: %s", *device, cudaGetErrorString(e));
        return -1;
    }
    snprintf(name, namelen, "%s", prop.name);
    return 0;
}

void *lt_gpu_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

void lt_gpu_free(void *p)
{
    if (p)
        cudaFree(p);
}

void *lt_gpu_host_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMallocHost(&p, bytes) == cudaSuccess ? p : NULL;
}

void lt_gpu_host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

static void gpu_check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        cb_die(CB_EXIT_CANNOT_RUN, "%s failed: %s", what, cudaGetErrorString(e));
}

void lt_gpu_to_host(void *dst, const void *src, size_t n)
{
    gpu_check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy (GPU to host)");
}

void lt_gpu_from_host(void *dst, const void *src, size_t n)
{
    gpu_check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy (host to GPU)");
}

void lt_gpu_zero(void *p, size_t n)
{
    gpu_check(cudaMemset(p, 0, n), "cudaMemset");
    gpu_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

#else /* built without the CUDA toolkit */

const int lt_gpu_built = 0;

int lt_gpu_select(int local_rank, int *device, int *count, char *name, size_t namelen, char *why, size_t len)
{
    (void)local_rank, (void)device, (void)count, (void)name, (void)namelen;
    snprintf(why, len, "no GPU support: this cb-linktest was built without CUDA (nvcc not found at build time)");
    return -1;
}

void *lt_gpu_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void lt_gpu_free(void *p)
{
    (void)p;
}

void *lt_gpu_host_alloc(size_t bytes)
{
    (void)bytes;
    return NULL;
}

void lt_gpu_host_free(void *p)
{
    (void)p;
}

void lt_gpu_to_host(void *dst, const void *src, size_t n)
{
    (void)dst, (void)src, (void)n;
}

void lt_gpu_from_host(void *dst, const void *src, size_t n)
{
    (void)dst, (void)src, (void)n;
}

void lt_gpu_zero(void *p, size_t n)
{
    (void)p, (void)n;
}
#endif
