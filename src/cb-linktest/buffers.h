/* cb-linktest's message buffers (buffers.c): allocators, rings, fills and checks, GPU
 * staging, the MPI calls on them, the payload of checked messages. */
#ifndef CB_LINKTEST_BUFFERS_H
#define CB_LINKTEST_BUFFERS_H

#include "options.h"
#include "world.h"

#include <stddef.h>
#include <stdint.h>

/* where the message buffers are: host memory, GPU memory handed to a CUDA-aware MPI, or GPU
 * memory staged through pinned host memory around every MPI call */
enum lt_gpu_mode { LT_GPU_NONE, LT_GPU_AWARE, LT_GPU_STAGED };

/* The message buffers (buffers.c): rings of nbuf send and receive buffers (1 unless
 * --multi-buffer or --check-buffers); on the GPU with --use-gpu-memory. */
typedef struct lt_buffers {
    int allocator;           /* enum lt_alloc, for the rings and for other host buffers */
    char **sring, **rring;
    int nbuf;
    size_t buf_bytes;        /* allocated size of each buffer */
    int gpu_mode;            /* enum lt_gpu_mode */
    int gpu_device, gpu_count;
    char gpu_name[128];
    char *stage_s, *stage_r; /* LT_GPU_STAGED: pinned host copies */
    char *scratch;           /* host copy for fills and checks of GPU buffers */
    int mlocked;             /* pinned-memory-map: mlock succeeded on every buffer */
} lt_buffers;

/* buffers.c */
void lt_buffers_set_up(lt_buffers *b, const lt_config *cfg, const lt_world *w);
void lt_buffers_free(lt_buffers *b);
void *lt_host_alloc(lt_buffers *b, size_t bytes);
void lt_host_free(const lt_buffers *b, void *p, size_t bytes);
int lt_on_gpu(const lt_buffers *b);
void lt_buf_fill(lt_buffers *b, char *buf, size_t n, uint64_t seed);
void lt_buf_zero(lt_buffers *b, char *buf, size_t n);
double lt_buf_check(lt_buffers *b, const char *buf, size_t n, uint64_t seed);
uint32_t lt_buf_crc(lt_buffers *b, const char *buf, size_t n);
void lt_send(lt_buffers *b, const char *buf, int n, int peer, int tag);
void lt_recv(lt_buffers *b, char *buf, int n, int peer, int tag);
void lt_sendrecv(lt_buffers *b, const char *sb, char *rb, int n, int peer, int tag);
const char *lt_alloc_descr(const lt_buffers *b);
uint64_t lt_payload_seed(const lt_config *cfg, int from, int to, long tag, long msg);
void lt_fill_payload(char *buf, size_t n, uint64_t seed);
double lt_check_payload(const char *buf, size_t n, uint64_t seed);

#endif
