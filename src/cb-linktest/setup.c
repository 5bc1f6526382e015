/* Set-up of the MPI run: MPI_Init and the checks on what it gives, the fault
 * injection read from the environment, host names, the schedule, the buffers;
 * and the tear-down. */
#include "setup.h"
#include "buffers.h"
#include "monitor.h"
#include "options.h"
#include "run.h"
#include "schedule.h"
#include "world.h"
#include "../common/cb_hash.h"

#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* Tasks the launcher started, or 0 if unknown: MPI should see as many. PMI's
 * size before Slurm's: MPICH's hydra starts one proxy per node with srun, so the
 * step's task count is its node count, not the ranks'. */
static int launcher_size(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v)
        v = getenv("PMI_SIZE");
    if (!v && getenv("SLURM_PROCID"))
        v = getenv("SLURM_STEP_NUM_TASKS");
    return v ? atoi(v) : 0;
}

/* Whether Slurm's task variables are this task's own: hydra (mpiexec.mpich) hands
 * every rank the environment of the batch step it started from, whose
 * SLURMD_NODENAME is the first node's. */
static int slurm_env_is_own(void)
{
    const char *pmi = getenv("PMI_RANK"), *slurm = getenv("SLURM_PROCID");
    return !pmi || !slurm || strcmp(pmi, slurm) == 0;
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

int lt_mute_stdout(void)
{
    fflush(stdout);
    int saved = dup(1), devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 1);
        close(devnull);
    }
    return saved;
}

void lt_unmute_stdout(int saved)
{
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, 1);
        close(saved);
    }
}

void lt_unmute_stderr(int saved)
{
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
}

/* CB_LINKTEST_DELAY=I-J:USEC[,K-L:USEC...] (slow links) and CB_LINKTEST_CORRUPT=R[:K] (a
 * corrupted transfer): faults the tests inject into a real run. Every rank reads the same
 * environment; a bad value is said once, by rank 0, and all ranks end together (exit 2):
 * ranks that each printed and exited at once raced mpirun's abort of the job, which could
 * drop every copy of the message (seen in CI). */
static void read_fault_env(lt_faults *f, const lt_world *w, const lt_config *cfg)
{
    char why[512] = "";
    const char *d = getenv("CB_LINKTEST_DELAY");
    for (const char *p = d && *d ? d : NULL; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        int a, b, used = 0;
        double us;
        if (sscanf(p, "%d-%d:%lf%n", &a, &b, &us, &used) != 3 || (p[used] && p[used] != ',') || a < 0 || b < 0 ||
            a >= w->size || b >= w->size || a == b || us <= 0 || f->ndelay == LT_MAX_DELAYS) {
            snprintf(why, sizeof why, "CB_LINKTEST_DELAY='%s': expected I-J:USEC (up to %d, comma-separated), "
                     "two different ranks below %d", d, LT_MAX_DELAYS, w->size);
            break;
        }
        f->delay_a[f->ndelay] = a;
        f->delay_b[f->ndelay] = b;
        f->delay_us[f->ndelay++] = us;
    }
    const char *c = getenv("CB_LINKTEST_CORRUPT");
    if (c && *c && !why[0]) {
        int r = -1, used = 0;
        long k = 0;
        int got = sscanf(c, "%d%n:%ld%n", &r, &used, &k, &used);
        if (got < 1 || c[used] || r < 0 || r >= w->size || (got == 2 && (k < 1 || k > cfg->nmsg))) {
            snprintf(why, sizeof why, "CB_LINKTEST_CORRUPT='%s': expected R or R:K, a rank below %d and a timed "
                     "message 1..%ld", c, w->size, cfg->nmsg);
        } else {
            f->corrupt_rank = r;
            f->corrupt_msg = got == 2 ? k : cfg->nmsg;
            f->corrupt_pending = w->rank == r;
        }
    }
    lt_all_ok_or_exit(w, !why[0], CB_EXIT_USAGE, why);
}

/* MPI_Init and the checks on what it gives: returns 0, or the exit code. */
int lt_start_mpi(lt_run *run, int *argc, char ***argv, int pre_rank)
{
    lt_world *w = &run->world;
    run->faults.corrupt_rank = -1;
    /* Open MPI ends the process itself (its message, exit 1) when MPI_Init
     * fails fatally. The usual cause, srun without an MPI plugin, is caught
     * here first: tasks of a step but no PMI in the environment. */
    if (getenv("SLURM_PROCID") && launcher_size() > 1 && !getenv("PMIX_RANK") && !getenv("PMI_RANK") &&
        !getenv("OMPI_COMM_WORLD_RANK")) {
        if (pre_rank == 0)
            fprintf(stderr, "cb-linktest: started by srun without an MPI plugin (no PMIx/PMI in the "
                            "environment): use srun --mpi=pmix for Open MPI, --mpi=pmi2 for MPICH\n");
        return CB_EXIT_CANNOT_RUN;
    }
    if (MPI_Init(argc, argv) != MPI_SUCCESS) {
        fprintf(stderr, "cb-linktest: MPI_Init failed: start it with mpirun or srun\n");
        return CB_EXIT_CANNOT_RUN;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w->size);
    int launched = launcher_size();
    if (launched > 0 && launched != w->size) {
        fprintf(stderr, "cb-linktest: the launcher started %d tasks but MPI connects %d: MPI and the launcher "
                        "do not work together (under Slurm: srun --mpi=pmix for Open MPI, --mpi=pmi2 "
                        "for MPICH)\n", launched, w->size);
        MPI_Finalize();
        return CB_EXIT_CANNOT_RUN;
    }
    if (w->size % 2) {
        if (w->rank == 0)
            fprintf(stderr, "cb-linktest: needs an even number of ranks, got %d (start it with "
                            "mpirun -n N or srun -n N, N even)\n", w->size);
        MPI_Finalize();
        return CB_EXIT_USAGE;
    }
    read_fault_env(&run->faults, w, run->cfg);
    cb_iso8601_now(w->started, sizeof w->started);
    w->t0_ns = cb_now_ns();
    return 0;
}

/* Host numbers in order of first appearance, at rank 0 (hash table, O(N)). */
static void number_hosts(lt_world *w)
{
    size_t cap = 1;
    while (cap < (size_t)w->size * 2)
        cap <<= 1;
    int *slot = malloc(sizeof(int) * cap);
    if (!slot)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (size_t i = 0; i < cap; i++)
        slot[i] = -1;
    w->nhosts = 0;
    for (int r = 0; r < w->size; r++) {
        const char *name = w->hosts + (size_t)r * LT_HOST_LEN;
        uint64_t h = 1469598103934665603ULL;
        for (const char *p = name; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        size_t i = h & (cap - 1);
        while (slot[i] >= 0 && strcmp(w->hosts + (size_t)slot[i] * LT_HOST_LEN, name) != 0)
            i = (i + 1) & (cap - 1);
        if (slot[i] < 0) {
            slot[i] = r;
            w->host_id[r] = w->nhosts++;
        } else {
            w->host_id[r] = w->host_id[slot[i]];
        }
    }
    free(slot);
}

static void host_names(lt_world *w)
{
    char me[LT_HOST_LEN] = "";
    /* Under Slurm, the node's name (several slurmd "nodes" may share one machine). */
    const char *node = slurm_env_is_own() ? getenv("SLURMD_NODENAME") : NULL;
    if (node && *node)
        snprintf(me, sizeof me, "%s", node);
    else
        cb_hostname(me, sizeof me);
    if (w->rank == 0) {
        w->hosts = calloc((size_t)w->size, LT_HOST_LEN);
        if (!w->hosts)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory for %d host names", w->size);
    }
    lt_mpi_check(MPI_Gather(me, LT_HOST_LEN, MPI_CHAR, w->hosts, LT_HOST_LEN, MPI_CHAR, 0,
                            MPI_COMM_WORLD), "MPI_Gather");
    w->host_id = malloc(sizeof(int) * (size_t)w->size);
    if (!w->host_id)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    if (w->rank == 0)
        number_hosts(w);
    lt_mpi_check(MPI_Bcast(w->host_id, w->size, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    lt_mpi_check(MPI_Bcast(&w->nhosts, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

/* ---- --num-randomize-tasks: the schedule over permuted task IDs ---------------------- */
int lt_partner_of(const lt_order *o, int rank, long step)
{
    if (!o->vid)
        return lt_partner(&o->sched, rank, step);
    int q = lt_partner(&o->sched, o->vid[rank], step);
    return q < 0 ? q : o->rank_of[q];
}

/* Pass 0: the ranks in the order they were started; pass p > 0: the p-th permutation of
 * --seed-randomize-tasks (the same on every rank, and in every iteration). The schedule
 * is built over the permuted IDs: rank rank_of[v] plays ID v (its host goes with it). */
void lt_task_order(lt_order *o, const lt_world *w, const lt_config *cfg, int pass)
{
    int n = w->size, *host_of = w->host_id;
    if (pass == 0 && o->pass == 0 && o->sched.order)
        return;
    if (pass > 0) {
        if (!o->vid) {
            o->vid = malloc(sizeof(int) * (size_t)n);
            o->rank_of = malloc(sizeof(int) * (size_t)n);
        }
        host_of = malloc(sizeof(int) * (size_t)n);
        if (!o->vid || !o->rank_of || !host_of)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        uint64_t x = cb_mix64(cfg->seed_tasks + (uint64_t)pass);
        for (int v = 0; v < n; v++)
            o->rank_of[v] = v;
        for (int v = n - 1; v > 0; v--) { /* Fisher-Yates */
            x = cb_mix64(x);
            int j = (int)(x % (uint64_t)(v + 1)), t = o->rank_of[v];
            o->rank_of[v] = o->rank_of[j];
            o->rank_of[j] = t;
        }
        for (int v = 0; v < n; v++) {
            o->vid[o->rank_of[v]] = v;
            host_of[v] = w->host_id[o->rank_of[v]];
        }
    } else {
        free(o->vid);
        free(o->rank_of);
        o->vid = o->rank_of = NULL;
    }
    lt_sched_free(&o->sched);
    int ok = lt_sched_init(&o->sched, n, host_of, cfg->group_host, cfg->bisection) == 0;
    if (host_of != w->host_id)
        free(host_of);
    if (!ok)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot build the schedule (out of memory)");
    if (cfg->randomize)
        lt_sched_randomize(&o->sched, cfg->seed);
    o->pass = pass;
}

/* Pairs tested over all task orders (with --bisection the halves differ between
 * orders): each rank counts its row, O(N) per order. */
static long long expected_over_orders(lt_order *o, const lt_world *w, const lt_config *cfg)
{
    int n = w->size;
    char *seen = calloc((size_t)n, 1);
    if (!seen)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    long long mine = 0, all = 0;
    for (int pass = 0; pass <= cfg->num_randomize_tasks; pass++) {
        lt_task_order(o, w, cfg, pass);
        int me = o->vid ? o->vid[w->rank] : w->rank;
        for (int j = w->rank + 1; j < n; j++)
            if (!seen[j] && lt_pair_expected(&o->sched, me, o->vid ? o->vid[j] : j)) {
                seen[j] = 1;
                mine++;
            }
    }
    free(seen);
    lt_task_order(o, w, cfg, 0);
    lt_mpi_check(MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return all;
}

/* Host names, the schedule, the buffers; exits (on every rank) on failure. */
void lt_set_up(lt_run *run)
{
    const lt_config *cfg = run->cfg;
    lt_world *w = &run->world;
    lt_order *o = &run->order;
    host_names(w);
    lt_task_order(o, w, cfg, 0);
    o->expected = cfg->num_randomize_tasks ? expected_over_orders(o, w, cfg) : lt_expected_pairs(&o->sched);
    if (o->expected == 0) {
        if (w->rank == 0)
            fprintf(stderr, "cb-linktest: no pair to test: all %d ranks are on one host "
                            "(--group-processes-by-hostname tests only pairs on different hosts)\n", w->size);
        MPI_Finalize();
        exit(CB_EXIT_USAGE);
    }
    double *row = malloc(sizeof(double) * (size_t)w->size);
    lt_all_ok_or_exit(w, row != NULL, CB_EXIT_CANNOT_RUN, "out of memory");
    for (int r = 0; r < w->size; r++)
        row[r] = NAN;
    run->test.row = row;
    lt_phase(&run->mon, w, "setup");
    lt_buffers_set_up(&run->bufs, cfg, w);
    lt_phase(&run->mon, w, "buffers");
    lt_report_memory(&run->mon, w, &run->bufs, cfg);
}

void lt_tear_down(lt_run *run)
{
    free(run->coll.retest);
    free(run->coll.slow);
    free(run->test.row);
    lt_buffers_free(&run->bufs);
    free(run->order.vid);
    free(run->order.rank_of);
    free(run->mon.task_mem);
    free(run->mon.a2a_all);
    free(run->world.hosts);
    free(run->world.host_id);
    lt_sched_free(&run->order.sched);
    MPI_Finalize();
}
