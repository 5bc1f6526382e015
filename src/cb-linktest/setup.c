/* Set-up of the MPI run: MPI_Init and the checks on what it gives, the fault
 * injection read from the environment, host names, the schedule, the buffers;
 * and the tear-down. */
#include "linktest.h"

#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Rank as the launcher tells it, before MPI_Init: only rank 0 prints usage errors. */
int lt_launcher_rank(void)
{
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return 0;
}

/* Tasks the launcher started, or 0 if unknown: MPI should see as many. */
static int launcher_size(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v && getenv("SLURM_PROCID"))
        v = getenv("SLURM_STEP_NUM_TASKS");
    if (!v)
        v = getenv("PMI_SIZE");
    return v ? atoi(v) : 0;
}

/* stderr to /dev/null (ranks other than 0 while checking input: one message
 * per usage error, not one per rank); returns what lt_unmute_stderr restores. */
int lt_mute_stderr(void)
{
    int saved = dup(2), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 2);
        close(devnull);
    }
    return saved;
}

void lt_unmute_stderr(int saved)
{
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* CB_LINKTEST_DELAY=I-J:USEC (a slow link) and CB_LINKTEST_CORRUPT=R (a
 * corrupted transfer): faults the tests inject into a real run. */
static void read_fault_env(lt_run *run)
{
    const char *d = getenv("CB_LINKTEST_DELAY");
    if (d && *d) {
        int a, b, used = 0;
        double us;
        if (sscanf(d, "%d-%d:%lf%n", &a, &b, &us, &used) != 3 || d[used] || a < 0 || b < 0 ||
            a >= run->size || b >= run->size || a == b || us <= 0)
            cb_usage_error("CB_LINKTEST_DELAY='%s': expected I-J:USEC, two different ranks below %d",
                           d, run->size);
        run->delay_a = a;
        run->delay_b = b;
        run->delay_us = us;
    }
    const char *c = getenv("CB_LINKTEST_CORRUPT");
    if (c && *c) {
        char *end;
        long r = strtol(c, &end, 10);
        if (*end || r < 0 || r >= run->size)
            cb_usage_error("CB_LINKTEST_CORRUPT='%s': expected a rank below %d", c, run->size);
        run->corrupt_rank = (int)r;
        run->corrupt_pending = run->rank == r;
    }
}

/* MPI_Init and the checks on what it gives: returns 0, or the exit code. */
int lt_start_mpi(lt_run *run, int *argc, char ***argv, int pre_rank)
{
    run->delay_a = run->delay_b = run->corrupt_rank = -1;
    /* Open MPI ends the process itself (its message, exit 1) when MPI_Init
     * fails fatally. The usual cause, srun without an MPI plugin, is caught
     * here first: tasks of a step but no PMI in the environment. */
    if (getenv("SLURM_PROCID") && launcher_size() > 1 && !getenv("PMIX_RANK") && !getenv("PMI_RANK") &&
        !getenv("OMPI_COMM_WORLD_RANK")) {
        if (pre_rank == 0)
            fprintf(stderr, "cb-linktest: started by srun without an MPI plugin (no PMIx/PMI in the "
                            "environment): use srun --mpi=pmix\n");
        return CB_EXIT_CANNOT_RUN;
    }
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "cb-linktest: MPI_Init failed: start it with mpirun or srun\n");
        return CB_EXIT_CANNOT_RUN;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &run->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &run->size);
    int launched = launcher_size();
    if (launched > 0 && launched != run->size) {
        fprintf(stderr, "cb-linktest: the launcher started %d tasks but MPI connects %d: MPI and the launcher "
                        "do not work together (under Slurm: srun --mpi=pmix)\n", launched, run->size);
        MPI_Finalize();
        return CB_EXIT_CANNOT_RUN;
    }
    if (run->size % 2) {
        if (run->rank == 0)
            fprintf(stderr, "cb-linktest: needs an even number of ranks, got %d (start it with "
                            "mpirun -n N or srun -n N, N even)\n", run->size);
        MPI_Finalize();
        return CB_EXIT_USAGE;
    }
    int saved = run->rank != 0 ? lt_mute_stderr() : -1;
    read_fault_env(run);
    lt_unmute_stderr(saved);
    cb_iso8601_now(run->started, sizeof run->started);
    run->t0_ns = cb_now_ns();
    return 0;
}

/* Host numbers in order of first appearance, at rank 0 (hash table, O(N)). */
static void number_hosts(lt_run *run)
{
    size_t cap = 1;
    while (cap < (size_t)run->size * 2)
        cap <<= 1;
    int *slot = malloc(sizeof(int) * cap);
    if (!slot)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (size_t i = 0; i < cap; i++)
        slot[i] = -1;
    run->nhosts = 0;
    for (int r = 0; r < run->size; r++) {
        const char *name = run->hosts + (size_t)r * LT_HOST_LEN;
        uint64_t h = 1469598103934665603ULL;
        for (const char *p = name; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        size_t i = h & (cap - 1);
        while (slot[i] >= 0 && strcmp(run->hosts + (size_t)slot[i] * LT_HOST_LEN, name) != 0)
            i = (i + 1) & (cap - 1);
        if (slot[i] < 0) {
            slot[i] = r;
            run->host_id[r] = run->nhosts++;
        } else {
            run->host_id[r] = run->host_id[slot[i]];
        }
    }
    free(slot);
}

static void host_names(lt_run *run)
{
    char me[LT_HOST_LEN] = "";
    /* Under Slurm, the node's name (several slurmd "nodes" may share one machine). */
    const char *node = getenv("SLURMD_NODENAME");
    if (node && *node)
        snprintf(me, sizeof me, "%s", node);
    else
        cb_hostname(me, sizeof me);
    if (run->rank == 0) {
        run->hosts = calloc((size_t)run->size, LT_HOST_LEN);
        if (!run->hosts)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory for %d host names", run->size);
    }
    lt_mpi_check(MPI_Gather(me, LT_HOST_LEN, MPI_CHAR, run->hosts, LT_HOST_LEN, MPI_CHAR, 0,
                            MPI_COMM_WORLD), "MPI_Gather");
    run->host_id = malloc(sizeof(int) * (size_t)run->size);
    if (!run->host_id)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    if (run->rank == 0)
        number_hosts(run);
    lt_mpi_check(MPI_Bcast(run->host_id, run->size, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    lt_mpi_check(MPI_Bcast(&run->nhosts, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

/* All ranks agree whether something failed anywhere; exits with code if so. */
static void all_ok_or_exit(const lt_run *run, int ok, int code, const char *what)
{
    int all = 0;
    lt_mpi_check(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
    if (!all) {
        if (run->rank == 0)
            fprintf(stderr, "cb-linktest: %s\n", what);
        MPI_Finalize();
        exit(code);
    }
}

/* A message buffer. Large ones are 2 MiB aligned and asked to be backed by
 * transparent huge pages (where the kernel leaves that to the program, THP
 * "madvise"): the single-copy transports (CMA, RDMA registration) then handle
 * far fewer pages, as they do for the large buffers of NumPy or most MPI codes. */
static void *alloc_buffer(size_t bytes, int small_pages)
{
    const size_t huge = 2u << 20;
    void *p = NULL;
    int want_huge = bytes >= huge && !small_pages;
    if (posix_memalign(&p, want_huge ? huge : 4096, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    if (want_huge)
        madvise(p, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    return p;
}

/* Host names, the schedule, the buffers; exits (on every rank) on failure. */
void lt_set_up(lt_run *run)
{
    const lt_config *cfg = run->cfg;
    host_names(run);
    int sched_ok = lt_sched_init(&run->sched, run->size, run->host_id, cfg->group_host, cfg->bisection) == 0;
    all_ok_or_exit(run, sched_ok, CB_EXIT_CANNOT_RUN, "cannot build the schedule (out of memory)");
    if (cfg->randomize)
        lt_sched_randomize(&run->sched, cfg->seed);
    run->expected = lt_expected_pairs(&run->sched);
    if (run->expected == 0) {
        if (run->rank == 0)
            fprintf(stderr, "cb-linktest: no pair to test: all %d ranks are on one host "
                            "(--group-processes-by-hostname tests only pairs on different hosts)\n", run->size);
        MPI_Finalize();
        exit(CB_EXIT_USAGE);
    }
    size_t bytes = cfg->size;
    void *sb = alloc_buffer(bytes, cfg->small_pages), *rb = alloc_buffer(bytes, cfg->small_pages);
    int ok = sb && rb;
    run->row = malloc(sizeof(double) * (size_t)run->size);
    ok = ok && run->row;
    char msg[160];
    snprintf(msg, sizeof msg, "cannot allocate two message buffers of %zu bytes on some rank", bytes);
    all_ok_or_exit(run, ok, CB_EXIT_CANNOT_RUN, msg);
    run->sbuf = sb;
    run->rbuf = rb;
    lt_fill_payload(run->sbuf, bytes, lt_payload_seed(run->rank, 0, 0)); /* touch the pages */
    memset(run->rbuf, 0, bytes);
    for (int r = 0; r < run->size; r++)
        run->row[r] = NAN;
}

void lt_tear_down(lt_run *run)
{
    free(run->retest);
    free(run->slow);
    free(run->row);
    free(run->sbuf);
    free(run->rbuf);
    free(run->hosts);
    free(run->host_id);
    lt_sched_free(&run->sched);
    MPI_Finalize();
}
