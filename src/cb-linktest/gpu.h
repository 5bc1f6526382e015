/* cb-linktest's CUDA calls for --use-gpu-memory (gpu.c), or its stubs in a build without
 * nvcc; plain C, no MPI. */
#ifndef CB_LINKTEST_GPU_H
#define CB_LINKTEST_GPU_H

#include <stddef.h>

/* gpu.c: 0, or -1 with the reason in why */
int lt_gpu_select(int local_rank, int *device, int *count, char *name, size_t namelen, char *why, size_t len);
void *lt_gpu_alloc(size_t bytes);
void lt_gpu_free(void *p);
void *lt_gpu_host_alloc(size_t bytes);
void lt_gpu_host_free(void *p);
void lt_gpu_to_host(void *dst, const void *src, size_t n);
void lt_gpu_from_host(void *dst, const void *src, size_t n);
void lt_gpu_zero(void *p, size_t n);
extern const int lt_gpu_built;

#endif
