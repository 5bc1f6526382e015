/* cb-linktest's ranks: the world as MPI started it (lt_world, filled by setup.c) and the
 * MPI calls checked over it, the ranks' agreement (mpi.c, below every stage). */
#ifndef CB_LINKTEST_WORLD_H
#define CB_LINKTEST_WORLD_H

#include <stdint.h>

#define LT_HOST_LEN 64

/* The ranks as MPI started them and the hosts they run on (setup.c; fixed from then on). */
typedef struct lt_world {
    int rank, size;
    int *host_id;            /* [size] host number of each rank */
    int nhosts;
    char *hosts;             /* rank 0: [size][LT_HOST_LEN] */
    char started[64];        /* when the run started: wall clock (the documents) */
    uint64_t t0_ns;          /* and monotonic */
} lt_world;

/* mpi.c: MPI calls checked, the ranks' agreement, CUDA-aware MPI */
void lt_mpi_check(int rc, const char *what);
void lt_all_ok_or_exit(const lt_world *w, int ok, int code, const char *what);
int lt_mpi_cuda_aware(void);

#endif
