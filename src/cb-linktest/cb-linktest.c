/* cb-linktest: an MPI all-pairs link test. Every pair of ranks meets exactly
 * once in a schedule of steps (schedule.h); in each step all pairs of the
 * step run a ping-pong (or one-way, or two-way) exchange at once and time it.
 * The slowest pairs are retested one at a time afterwards, which tells a bad
 * link from one that was only slow under the load of the parallel test. The
 * full N x N matrix of times goes to a NumPy .npz file (npz.h), streamed row
 * by row through rank 0, so no rank holds more than O(N) of it.
 *
 * The options follow JSC LinkTest's names where the meaning is the same; the
 * implementation is our own. The stages and their files: run.h. */
#include "run.h"
#include "monitor.h"
#include "options.h"
#include "setup.h"
#include "world.h"

#include <mpi.h>
#include <unistd.h>

/* A rank other than 0 that exits at once on a usage error can make mpirun kill
 * rank 0 before rank 0 has said why; it waits a moment so that rank 0 speaks first. */
static void let_rank_0_speak(void)
{
    sleep(2);
}

int main(int argc, char **argv)
{
    cb_prog = "cb-linktest";
    lt_config cfg;
    /* Usage errors: every rank exits 2, only rank 0 says why. */
    int pre_rank = lt_launcher_rank();
    int saved = pre_rank != 0 ? lt_mute_stderr() : -1;
    int saved_out = pre_rank != 0 ? lt_mute_stdout() : -1; /* --help, --version: once */
    if (pre_rank != 0)
        cb_before_usage_exit = let_rank_0_speak;
    lt_options_parse(&cfg, argc, argv);
    lt_unmute_stdout(saved_out);
    lt_unmute_stderr(saved);
    if (cfg.plan_n)
        return lt_plan(&cfg);

    lt_run run = {.cfg = &cfg};
    int rc = lt_start_mpi(&run, &argc, &argv, pre_rank);
    if (rc)
        return rc;
    /* a signal from here stops the test at the next step; the results still come out */
    cb_signals_install();
    lt_set_up(&run);
    if (run.world.rank == 0)
        lt_print_settings(&run);
    lt_run_iterations(&run);
    lt_collect(&run);
    if (!cfg.no_output) {
        run.write_failed = lt_write_results(&run) != 0;
        lt_phase(&run.mon, &run.world, "write results");
    }
    if (run.world.rank == 0)
        rc = lt_report(&run);
    run.mon.phase_ns = run.world.t0_ns; /* "all": the whole run */
    lt_phase(&run.mon, &run.world, "all");
    lt_mpi_check(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
    lt_tear_down(&run);
    return rc;
}
