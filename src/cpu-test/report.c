/* cpu-test's output (report.h): the plan, the figures per core, the JSON document of
 * docs/kernel-contract.md and the results block that ends the output. */
#include "report.h"
#include "../common/cb_common.h"

#include <math.h>
#include <string.h>
#include <sys/utsname.h>

static void cpus_of(const ct_run *run, char *buf, unsigned len)
{
    int cpus[CB_MAX_CPUS];
    for (int i = 0; i < run->ncores; i++)
        cpus[i] = run->cores[i].cpu;
    ct_cpulist_str(cpus, run->ncores, buf, len);
}

void ct_print_plan(const ct_run *run)
{
    FILE *f = cb_human();
    char cpus[1024];
    cpus_of(run, cpus, sizeof cpus);
    fprintf(f, "cpu-test (cobalt-bench) %s on %s, started %s\n", CB_VERSION, run->host,
            run->started);
    fprintf(f, "Workload: %s, %d-bit vectors (%d double%s), %d independent FMA chains per "
               "core, blocks of %d steps, verified against scalar fma()\n",
            run->info->name, 64 * run->info->lanes, run->info->lanes,
            run->info->lanes == 1 ? "" : "s", run->info->accumulators, CT_BLOCK_ITERS);
    fprintf(f, "Cores: %d, one thread bound to each: CPUs %s\n", run->ncores, cpus);
    fprintf(f, "Clock: %s\n", ct_clock_meaning(run->clock));
    fflush(f);
}

void ct_diagnose(const ct_run *run)
{
    FILE *f = cb_human();
    int clock = run->clock != CT_CLOCK_NONE;
    fprintf(f, "%6s %12s %14s %14s%s\n", "CPU", "GFLOP/s", "first GFLOP/s", "sustained",
            clock ? "        GHz  FLOP/cycle" : "");
    for (int i = 0; i < run->ncores; i++) {
        const ct_core *c = &run->cores[i];
        fprintf(f, "%6d %12.2f %14.2f %14.2f", c->cpu, c->total_gflops, c->throttle.first,
                c->throttle.sustained);
        if (clock)
            fprintf(f, " %10.3f %11.2f", c->clock_ghz, c->flop_per_cycle);
        fputc('\n', f);
    }
    fprintf(f, "Intervals: %d of %.2f s; node GFLOP/s first %.2f, sustained %.2f (median of "
               "the last third)\n", run->nintervals, run->cfg.interval_s, run->throttle.first,
            run->throttle.sustained);
    fprintf(f, "Verification: %llu blocks checked, %llu errors\n",
            (unsigned long long)run->blocks, (unsigned long long)run->errors);
    if (run->errors) {
        for (int i = 0; i < run->ncores; i++)
            if (run->cores[i].errors)
                fprintf(f, "Wrong result: %s (%llu wrong block%s on this core)\n",
                        run->cores[i].error, (unsigned long long)run->cores[i].errors,
                        run->cores[i].errors == 1 ? "" : "s");
        fprintf(f, "VERIFICATION FAILED: %llu blocks gave wrong results; the FLOP rates are not "
                   "valid\n", (unsigned long long)run->errors);
    }
}

/* ---- the JSON document --------------------------------------------------------------- */
static void doc_config(cb_json *j, const void *ctx)
{
    const ct_run *run = ctx;
    cbj_config_options(j, &ct_cmd, &run->cfg); /* the options, as the run used them */
    cbj_str(j, "isa", run->info->name);
    cbj_int(j, "vector_bits", 64 * run->info->lanes);
    cbj_int(j, "vector_doubles", run->info->lanes);
    cbj_int(j, "accumulators", run->info->accumulators);
    cbj_int(j, "block_steps", CT_BLOCK_ITERS);
    cbj_num(j, "flop_per_block", run->flop_per_block);
    cbj_str(j, "clock_source", ct_clock_name(run->clock));
    cbj_arr_begin(j, "cpus");
    for (int i = 0; i < run->ncores; i++)
        cbj_int(j, NULL, run->cores[i].cpu);
    cbj_arr_end(j);
    struct utsname u;
    cbj_str(j, "arch", uname(&u) == 0 ? u.machine : "unknown");
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const ct_run *run = ctx;
    const cb_metric_def *m = ct_metrics;
    cbj_metric(j, m, "node_gflops", run->node_total_gflops);
    cbj_metric(j, m, "core_gflops_median", run->spread.median);
    cbj_metric(j, m, "core_gflops_min", run->spread.min);
    cbj_metric(j, m, "core_gflops_max", run->spread.max);
    cbj_metric(j, m, "slowest_core_ratio", run->spread.ratio);
    cbj_metric(j, m, "first_interval_gflops", run->throttle.first);
    cbj_metric(j, m, "sustained_gflops", run->throttle.sustained);
    cbj_metric(j, m, "throttle_drop", run->throttle.drop);
    cbj_metric(j, m, "clock_ghz", run->clock_ghz);
    cbj_metric(j, m, "flop_per_cycle", run->flop_per_cycle);
    if (run->cfg.desired_gflops > 0) {
        cbj_metric(j, m, "desired_gflops", run->cfg.desired_gflops);
        cbj_metric(j, m, "percent_of_desired", 100.0 * run->spread.min / run->cfg.desired_gflops);
    }
    cbj_metric(j, m, "cores", run->ncores);
    cbj_metric(j, m, "verified_blocks", (double)run->blocks);
    cbj_metric(j, m, "verification_errors", (double)run->errors);
}

/* "cores": each core's figures; "intervals": the node's rate per interval. */
static void doc_parts(cb_json *j, const void *ctx)
{
    const ct_run *run = ctx;
    cbj_arr_begin(j, "cores");
    for (int i = 0; i < run->ncores; i++) {
        const ct_core *c = &run->cores[i];
        cbj_obj_begin(j, NULL);
        cbj_int(j, "cpu", c->cpu);
        cbj_num(j, "gflops", c->total_gflops);
        cbj_num(j, "first_interval_gflops", c->throttle.first);
        cbj_num(j, "sustained_gflops", c->throttle.sustained);
        cbj_num(j, "clock_ghz", c->clock_ghz);
        cbj_num(j, "flop_per_cycle", c->flop_per_cycle);
        cbj_int(j, "verified_blocks", (long long)atomic_load(&c->blocks));
        cbj_int(j, "verification_errors", (long long)atomic_load(&c->errors));
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
    cbj_arr_begin(j, "intervals");
    for (int k = 0; k < run->nintervals; k++) {
        double lo = INFINITY;
        for (int i = 0; i < run->ncores; i++)
            lo = fmin(lo, run->cores[i].gflops[k]);
        cbj_obj_begin(j, NULL);
        cbj_num(j, "end_s", run->interval_end_s[k]);
        cbj_num(j, "seconds", run->interval_len_s[k]);
        cbj_num(j, "node_gflops", run->node_gflops[k]);
        cbj_num(j, "min_core_gflops", lo);
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

/* ---- the results block --------------------------------------------------------------- */
static void results_block(const ct_run *run)
{
    FILE *f = cb_human();
    const ct_spread *s = &run->spread;
    cb_results_begin(f, CT_TEST_VERSION);
    if (run->interrupted) {
        char what[128];
        snprintf(what, sizeof what, "after %.2f s of %.2f s; the figures cover that time",
                 run->elapsed_s, run->cfg.duration_s);
        cb_results_interrupted(f, what);
    }
    cb_results_line(f, "ISA", "%s, %d-bit vectors, %d FMA chains per core", run->info->name,
                    64 * run->info->lanes, run->info->accumulators);
    cb_results_line(f, "Node FLOP rate", "%.2f GFLOP/s on %d core%s", run->node_total_gflops,
                    run->ncores, run->ncores == 1 ? "" : "s");
    cb_results_line(f, "Per core", "%.2f GFLOP/s median, %.2f min, %.2f max", s->median,
                    s->min, s->max);
    cb_results_line(f, "Slowest core", "CPU %d, %.2f%% of the median core",
                    s->slowest >= 0 ? run->cores[s->slowest].cpu : -1, s->ratio);
    if (run->clock == CT_CLOCK_NONE)
        cb_results_line(f, "Clock", "none counted (no perf_event cycles, no TSC)");
    else
        cb_results_line(f, "Clock", "%.3f GHz (%s), %.2f FLOP/cycle per core", run->clock_ghz,
                        ct_clock_name(run->clock), run->flop_per_cycle);
    if (isnan(run->throttle.drop))
        cb_results_line(f, "Throttle drop", "n/a (fewer than 2 whole intervals)");
    else
        cb_results_line(f, "Throttle drop", "%.2f%% (first interval %.2f, sustained %.2f GFLOP/s)",
                        run->throttle.drop, run->throttle.first, run->throttle.sustained);
    if (run->cfg.desired_gflops > 0)
        cb_results_line(f, "Desired rate", "%.2f GFLOP/s per core; slowest core %.2f%% of it",
                        run->cfg.desired_gflops, 100.0 * s->min / run->cfg.desired_gflops);
    cb_results_line(f, "Errors", "%llu of %llu blocks verified", (unsigned long long)run->errors,
                    (unsigned long long)run->blocks);
    fflush(f);
}

int ct_emit(const ct_run *run)
{
    int rc = run->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (run->cfg.json_path) {
        const cb_envelope env = {.test = "cpu-test", .test_version = CT_TEST_VERSION,
                                 .started = run->started, .duration_s = run->elapsed_s,
                                 .threshold = run->cfg.desired_gflops > 0 ? run->cfg.desired_gflops : NAN,
                                 .passed = run->passed, .interrupted = run->interrupted};
        const cb_doc_parts parts = {.config = doc_config, .metrics = doc_metrics,
                                    .extra = doc_parts};
        if (cb_doc_write(run->cfg.json_path, &env, &parts, run) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    results_block(run);
    if (run->interrupted)
        return cb_exit_interrupted();
    return rc;
}
