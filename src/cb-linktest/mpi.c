/* The MPI calls every stage makes the same way: a call checked (a failure aborts every
 * rank, exit 3), the ranks' agreement on whether something failed anywhere, and whether
 * the MPI takes GPU memory. Below every stage: setup.c, buffers.c, exchange.c and
 * monitor.c call these, none of them is called from here. */
#include "world.h"
#include "../common/cb_common.h"

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h> /* MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support */
#endif
#include <stdio.h>
#include <stdlib.h>

void lt_mpi_check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0, rank = -1;
        MPI_Error_string(rc, msg, &len);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "cb-linktest: rank %d: %s failed: %s\n", rank, what, msg);
        MPI_Abort(MPI_COMM_WORLD, CB_EXIT_CANNOT_RUN);
    }
}

/* All ranks agree whether something failed anywhere; exits with code if so. */
void lt_all_ok_or_exit(const lt_world *w, int ok, int code, const char *what)
{
    int all = 0;
    lt_mpi_check(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
    if (!all) {
        if (w->rank == 0)
            fprintf(stderr, "cb-linktest: %s\n", what);
        MPI_Finalize();
        exit(code);
    }
}

/* Whether MPI takes GPU memory (Open MPI's extension; other MPIs: assumed not, and the
 * buffers are staged through pinned host memory). */
int lt_mpi_cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support();
#else
    return 0;
#endif
}
