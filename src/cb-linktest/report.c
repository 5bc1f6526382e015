/* What rank 0 prints and writes: the settings before the run; after it the
 * verdict, the summary, the JSON document (docs/kernel-contract.md) and the
 * results block. */
#include "report.h"
#include "buffers.h"
#include "exchange.h"
#include "options.h"
#include "retest.h"
#include "run.h"
#include "world.h"
#include "../common/cb_options.h"

#include <math.h>
#include <string.h>

static const char *const pattern_descr[] = {
    "semidirectional (ping-pong: one message each way in turn)",
    "unidirectional (lower rank sends, higher rank receives)",
    "bidirectional (both ranks send and receive at once)"};

const char *lt_fmt_time(double s, char *buf, size_t len)
{
    if (!isfinite(s))
        snprintf(buf, len, "n/a");
    else if (s < 1e-6)
        snprintf(buf, len, "%.1f ns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, len, "%.2f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%.3f ms", s * 1e3);
    else
        snprintf(buf, len, "%.3f s", s);
    return buf;
}

double lt_gbits(const lt_config *cfg, double seconds)
{
    return cb_gbits((double)cfg->size, seconds);
}

/* The options, in the JSON document's config and the results file's meta. */
void lt_json_options(cb_json *j, const lt_config *cfg)
{
    cbj_config_options(j, &lt_cmd, cfg); /* the options, as the run used them */
    /* and what follows from them */
    cbj_str(j, "pattern", lt_pattern_names[cfg->pattern]);
    cbj_bool(j, "huge_pages", cfg->allocator == LT_ALLOC_HUGE || cfg->allocator == LT_ALLOC_DEFAULT);
    cbj_str(j, "mode", cfg->mode ? cfg->mode : "mpi");
    cbj_str(j, "memory_buffer_allocator", lt_alloc_names[cfg->allocator]);
    if (cfg->min_bw_gbits > 0)
        cbj_num(j, "min_bandwidth_gbits", cfg->min_bw_gbits);
    if (cfg->max_time_us > 0)
        cbj_num(j, "max_time_us", cfg->max_time_us);
}

/* The settings lines of LinkTest's options beyond the pattern, and what ours did with them. */
static void print_linktest_settings(const lt_config *cfg, const lt_buffers *b)
{
    FILE *h = cb_human();
    fprintf(h, "Transport layer:       %s (from %s; this build supports [mpi])\n", cfg->mode, cfg->mode_from);
    fprintf(h, "Buffers:               %s\n", lt_alloc_descr(b));
    if (cfg->multi_buffer)
        fprintf(h, "Multiple buffers:      %d send and %d receive buffers, used in turn (--multi-buffer)\n", b->nbuf,
                b->nbuf);
    fprintf(h, "Buffer contents:       %s\n", cfg->randomize_buffers ? "pseudo-random bytes (--randomize-buffers)"
                                                                    : "zeros");
    if (cfg->randomize_buffers)
        fprintf(h, "Seed (buffers):        %llu\n", (unsigned long long)cfg->seed_buffers);
    fprintf(h, "Use GPU memory:        %s\n", b->gpu_mode == LT_GPU_AWARE ? "yes, handed to MPI (CUDA-aware MPI)"
                                          : b->gpu_mode == LT_GPU_STAGED
                                              ? "yes, staged through pinned host memory (the MPI is not CUDA-aware)"
                                              : "no");
    if (cfg->check_buffers)
        fprintf(h, "Check buffers:         every timed message (its own pattern), in batches of %d, checked "
                   "outside the timed region\n", b->nbuf);
    else
        fprintf(h, "Check buffers:         no\n");
    fprintf(h, "All-to-all:            %s\n", cfg->all_to_all ? "MPI_Alltoall timed before and after the test" : "no");
    if (cfg->num_randomize_tasks)
        fprintf(h, "Mixing task order:     yes: after the ranks as started, %ld random permutations (seed %llu)\n",
                cfg->num_randomize_tasks, (unsigned long long)cfg->seed_tasks);
    else
        fprintf(h, "Mixing task order:     no\n");
}

void lt_print_settings(const lt_run *run)
{
    const lt_config *cfg = run->cfg;
    char host[256];
    cb_hostname(host, sizeof host);
    fprintf(cb_human(), "cb-linktest (cobalt-bench) %s on %s, started %s\n", CB_VERSION, host, run->world.started);
    fprintf(cb_human(), "-------------------- cb-linktest settings --------------------\n");
    fprintf(cb_human(), "Ranks:                 %d on %d host%s\n", run->world.size, run->world.nhosts, run->world.nhosts == 1 ? "" : "s");
    fprintf(cb_human(), "Message size:          %zu B\n", cfg->size);
    fprintf(cb_human(), "Messages:              %ld timed, %ld warm-up, per pair and step\n", cfg->nmsg, cfg->warmup);
    fprintf(cb_human(), "Communication pattern: %s\n", pattern_descr[cfg->pattern]);
    fprintf(cb_human(), "Pairs:                 %s%s, %lld in all\n",
           cfg->bisection ? "bisection (first half of the ranks against the second)" : "all pairs",
           cfg->group_host ? ", on different hosts only" : "", run->order.expected);
    fprintf(cb_human(), "Steps:                 %ld%s%s\n", run->order.sched.nsteps, cfg->randomize ? ", randomized order" : "",
           cfg->serial ? ", pairs of a step one at a time (--serial-tests)" : "");
    print_linktest_settings(cfg, &run->bufs);
    fprintf(cb_human(), "Serial retest:         %ld slowest pairs\n", cfg->num_slowest);
    if (cfg->min_iterations > 1 || cfg->min_runtime > 0)
        fprintf(cb_human(), "Repeat:                at least %ld iterations and %.1f s (LinkTest then writes no SION "
                "file; the .npz keeps each pair's slowest time)\n", cfg->min_iterations, cfg->min_runtime);
    if (cfg->no_output)
        fprintf(cb_human(), "Results file:          none (%s)\n", cfg->no_sion ? "--no-sion-file: LinkTest's SION "
                "file is cb-linktest's .npz, so none is written" : "--no-output");
    else
        fprintf(cb_human(), "Results file:          %s (.npz in place of LinkTest's SION file%s)\n", cfg->output,
                cfg->parallel_sion ? "; --parallel-sion-file: no parallel writer, rank 0 streams the "
                                     "matrix row by row" : "");
    for (int i = 0; i < run->faults.ndelay; i++)
        fprintf(cb_human(), "TESTING: CB_LINKTEST_DELAY slows pair %d <-> %d by %.1f us per message\n",
               run->faults.delay_a[i], run->faults.delay_b[i], run->faults.delay_us[i]);
    if (run->faults.corrupt_rank >= 0)
        fprintf(cb_human(), "TESTING: CB_LINKTEST_CORRUPT corrupts timed message %ld that rank %d sends first\n",
                run->faults.corrupt_msg, run->faults.corrupt_rank);
    fprintf(cb_human(), "--------------------------------------------------------------\n");
    fflush(cb_human());
}

/* ---- diagnose ------------------------------------------------------------------ */
/* The verdict: after the retest a retested pair counts with its time alone; the
 * slowest pair not retested bounds all the others. */
typedef struct lt_verdict {
    double eff_t, min_bw;
    int eff_a, eff_b, eff_retested;
    int all_tested, passed;
} lt_verdict;

static lt_verdict diagnose(const lt_run *run)
{
    const lt_config *cfg = run->cfg;
    const lt_slow *slow = run->coll.slow;
    lt_verdict v = {.eff_t = -1, .eff_a = -1, .eff_b = -1};
    for (int k = 0; k < run->coll.nretest; k++)
        if (run->coll.retest[k] > v.eff_t) {
            v.eff_t = run->coll.retest[k];
            v.eff_a = (int)slow[k].a;
            v.eff_b = (int)slow[k].b;
            v.eff_retested = 1;
        }
    if (run->coll.nslow > run->coll.nretest && slow[run->coll.nretest].t > v.eff_t) {
        v.eff_t = slow[run->coll.nretest].t;
        v.eff_a = (int)slow[run->coll.nretest].a;
        v.eff_b = (int)slow[run->coll.nretest].b;
        v.eff_retested = 0;
    }
    v.min_bw = lt_gbits(cfg, v.eff_t);
    v.all_tested = (long long)run->coll.sum.npairs == run->order.expected;
    v.passed = !run->test.interrupted && run->errors.bytes == 0 && v.all_tested && v.eff_t > 0 &&
               (cfg->min_bw_gbits <= 0 || v.min_bw >= cfg->min_bw_gbits) &&
               (cfg->max_time_us <= 0 || v.eff_t * 1e6 <= cfg->max_time_us);
    return v;
}

/* A time that may be negative (an overhead share that rank 0's clock overlaps). */
static const char *fmt_signed(double s, char *buf, size_t len)
{
    if (s >= 0)
        return lt_fmt_time(s, buf, len);
    buf[0] = '-';
    lt_fmt_time(-s, buf + 1, len - 1);
    return buf;
}

/* The main test's wall time against its floor (the slowest pair of each step), and where
 * the rest went on rank 0: in the collectives before the messages, in those after them
 * beyond waiting for the slowest pair's messages (which includes that pair starting after
 * rank 0), in --check-buffers' work, and in its own (step lines). */
static void print_main_time(const lt_main_time *m)
{
    char t[6][32];
    double after = m->sync_s - m->start_s - m->wait_s;
    double rest = m->wall_s - m->floor_s - m->start_s - after - m->check_s;
    if (!(m->floor_s > 0)) /* no step ran (a signal before the first) */
        return;
    fprintf(cb_human(), "Main test: %s wall, floor %s (slowest pair per step, warm-up included), overhead "
            "%.1f %%: sync %s before the messages, %s after them (late start included), buffer checks %s, "
            "rest %s\n", lt_fmt_time(m->wall_s, t[0], 32), lt_fmt_time(m->floor_s, t[1], 32),
            100 * (m->wall_s / m->floor_s - 1), lt_fmt_time(m->start_s, t[2], 32), fmt_signed(after, t[3], 32),
            lt_fmt_time(m->check_s, t[4], 32), fmt_signed(rest, t[5], 32));
}

static void print_summary(const lt_run *run, const lt_verdict *v)
{
    const lt_config *cfg = run->cfg;
    const lt_summary *s = &run->coll.sum;
    char t1[32], t2[32], t3[32];
    int max_a = run->coll.nslow ? (int)run->coll.slow[0].a : -1, max_b = run->coll.nslow ? (int)run->coll.slow[0].b : -1;
    fprintf(cb_human(), "Summary: %.0f of %lld pairs tested, %ld iteration%s, %.2f s\n", s->npairs, run->order.expected,
           run->test.iterations, run->test.iterations == 1 ? "" : "s", run->test.duration);
    fprintf(cb_human(), "  parallel test: min %s (%.3f Gbit/s)  avg %s (avg %.3f Gbit/s)  max %s (%.3f Gbit/s, %d <-> %d)\n",
           lt_fmt_time(s->min_t, t1, sizeof t1), lt_gbits(cfg, s->min_t), lt_fmt_time(s->avg_t, t2, sizeof t2),
           s->avg_bw, lt_fmt_time(s->max_t, t3, sizeof t3), lt_gbits(cfg, s->max_t), max_a, max_b);
    fprintf(cb_human(), "  slowest pair after the retest: %d <-> %d, %s (%.3f Gbit/s)%s\n", v->eff_a, v->eff_b,
           lt_fmt_time(v->eff_t, t1, sizeof t1), v->min_bw, v->eff_retested ? ", retested alone" : ", not retested");
    if (!v->all_tested)
        fprintf(cb_human(), "NOT ALL PAIRS TESTED: %.0f of %lld\n", s->npairs, run->order.expected);
    if (cfg->check_buffers)
        fprintf(cb_human(), "Buffer check: %.0f wrong bytes; %.0f pair tests received any\n", run->errors.bytes, run->errors.pairs);
    print_main_time(&run->test.main);
    if (!cfg->no_output && !run->write_failed)
        fprintf(cb_human(), "Matrix: %s (%d x %d, seconds per message; cb-linktest-report %s)\n", cfg->output, run->world.size,
               run->world.size, cfg->output);
}

/* ---- the JSON document ------------------------------------------------------------ */
typedef struct {
    const lt_run *run;
    const lt_verdict *v;
} doc_ctx;

static void doc_config(cb_json *j, const void *ctx)
{
    const lt_run *run = ((const doc_ctx *)ctx)->run;
    cbj_int(j, "ranks", run->world.size);
    cbj_int(j, "hosts", run->world.nhosts);
    cbj_int(j, "steps", run->order.sched.nsteps);
    cbj_int(j, "iterations", run->test.iterations);
    lt_json_options(j, run->cfg);
    cbj_str(j, "output", run->cfg->no_output || run->write_failed ? "" : run->cfg->output);
}

/* --all-to-all: the slowest rank's time per MPI_Alltoall before and after the test (NaN
 * after when a signal stopped the test), and what it sent per second. */
static void alltoall_metrics(cb_json *j, const lt_run *run)
{
    const char *names[2][2] = {{"alltoall_before_time", "alltoall_before_bandwidth"},
                               {"alltoall_after_time", "alltoall_after_bandwidth"}};
    for (int k = 0; k < 2; k++) {
        double worst = NAN;
        for (int r = 0; r < run->world.size; r++) {
            double t = run->mon.a2a_all[(size_t)k * run->world.size + r];
            if (!isnan(t) && (isnan(worst) || t > worst))
                worst = t;
        }
        cbj_metric(j, lt_metrics, names[k][0], worst * 1e6);
        cbj_metric(j, lt_metrics, names[k][1], cb_gbits((double)run->cfg->size * (run->world.size - 1), worst));
    }
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const lt_run *run = ((const doc_ctx *)ctx)->run;
    const lt_verdict *v = ((const doc_ctx *)ctx)->v;
    const lt_summary *s = &run->coll.sum;
    cbj_metric(j, lt_metrics, "min_bandwidth", v->min_bw);
    cbj_metric(j, lt_metrics, "min_bandwidth_bytes", v->min_bw * 1e9 / 8);
    cbj_metric(j, lt_metrics, "max_time", v->eff_t * 1e6);
    cbj_metric(j, lt_metrics, "avg_bandwidth", s->avg_bw);
    cbj_metric(j, lt_metrics, "avg_bandwidth_bytes", s->avg_bw * 1e9 / 8);
    cbj_metric(j, lt_metrics, "avg_time", s->avg_t * 1e6);
    cbj_metric(j, lt_metrics, "max_bandwidth", lt_gbits(run->cfg, s->min_t));
    cbj_metric(j, lt_metrics, "min_time", s->min_t * 1e6);
    cbj_metric(j, lt_metrics, "parallel_max_time", s->max_t * 1e6);
    cbj_metric(j, lt_metrics, "parallel_min_bandwidth", lt_gbits(run->cfg, s->max_t));
    cbj_metric(j, lt_metrics, "pairs_tested", s->npairs);
    cbj_metric(j, lt_metrics, "pairs_expected", (double)run->order.expected);
    if (run->cfg->all_to_all && run->mon.a2a_all)
        alltoall_metrics(j, run);
    if (run->cfg->check_buffers) {
        cbj_metric(j, lt_metrics, "verification_errors", run->errors.pairs);
        cbj_metric(j, lt_metrics, "wrong_bytes", run->errors.bytes);
    }
}

/* slowest_pairs: the retested pairs with their hosts and both figures; main_test: the
 * main test's wall time, its floor and rank 0's overheads (lt_main_time), in seconds. */
static void doc_extra(cb_json *j, const void *ctx)
{
    const lt_run *run = ((const doc_ctx *)ctx)->run;
    const lt_slow *slow = run->coll.slow;
    const lt_main_time *m = &run->test.main;
    cbj_obj_begin(j, "main_test");
    cbj_num(j, "wall_s", m->wall_s);
    cbj_num(j, "floor_s", m->floor_s);
    cbj_num(j, "timed_floor_s", m->timed_floor_s);
    cbj_num(j, "sync_s", m->sync_s);
    cbj_num(j, "sync_start_s", m->start_s);
    cbj_num(j, "sync_wait_s", m->wait_s);
    cbj_num(j, "buffer_check_s", m->check_s);
    cbj_int(j, "steps", m->steps);
    cbj_obj_end(j);
    cbj_arr_begin(j, "slowest_pairs");
    for (int k = 0; k < run->coll.nretest; k++) {
        cbj_obj_begin(j, NULL);
        cbj_int(j, "a", (long long)slow[k].a);
        cbj_int(j, "b", (long long)slow[k].b);
        cbj_str(j, "host_a", run->world.hosts + (size_t)slow[k].a * LT_HOST_LEN);
        cbj_str(j, "host_b", run->world.hosts + (size_t)slow[k].b * LT_HOST_LEN);
        cbj_num(j, "time_us", slow[k].t * 1e6);
        cbj_num(j, "retest_time_us", run->coll.retest[k] * 1e6);
        cbj_num(j, "bandwidth_gbits", lt_gbits(run->cfg, slow[k].t));
        cbj_num(j, "retest_bandwidth_gbits", lt_gbits(run->cfg, run->coll.retest[k]));
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
}

static int write_json(const lt_run *run, const lt_verdict *v)
{
    const lt_config *cfg = run->cfg;
    cb_envelope env = {.test = "cb-linktest", .test_version = LT_TEST_VERSION, .started = run->world.started,
                       .duration_s = run->test.duration,
                       .threshold = cfg->min_bw_gbits > 0 ? cfg->min_bw_gbits : NAN, .passed = v->passed,
                       .interrupted = run->test.interrupted};
    cb_doc_parts parts = {.config = doc_config, .metrics = doc_metrics, .extra = doc_extra};
    doc_ctx ctx = {run, v};
    return cb_doc_write(cfg->json_path, &env, &parts, &ctx);
}

static void results_block(const lt_run *run, const lt_verdict *v)
{
    const lt_config *cfg = run->cfg;
    char t1[32];
    cb_results_begin(cb_human(), LT_TEST_VERSION);
    if (run->test.interrupted) {
        char what[128];
        snprintf(what, sizeof what, "after %.2f s; %.0f of %lld pairs tested", run->test.duration,
                 run->coll.sum.npairs, run->order.expected);
        if (cb_interrupted)
            cb_results_interrupted(cb_human(), what);
        else /* the signal reached another rank first (they agree at each step) */
            cb_results_line(cb_human(), "Interrupted", "a signal to another rank -- %s", what);
    }
    if (cfg->min_bw_gbits > 0) {
        cb_results_line(cb_human(), "Desired speed", "%.2f Gbit/s (every pair)", cfg->min_bw_gbits);
        cb_results_line(cb_human(), "Measured speed", "%.2f Gbit/s (slowest pair %d <-> %d, %.2f%% of desired)",
                        v->min_bw, v->eff_a, v->eff_b, 100.0 * v->min_bw / cfg->min_bw_gbits);
    } else {
        cb_results_line(cb_human(), "Measured speed", "%.2f Gbit/s (slowest pair %d <-> %d)", v->min_bw,
                        v->eff_a, v->eff_b);
    }
    cb_results_line(cb_human(), "Average speed", "%.2f Gbit/s per pair", run->coll.sum.avg_bw);
    cb_results_line(cb_human(), "Slowest time", "%s per message", lt_fmt_time(v->eff_t, t1, sizeof t1));
    if (cfg->max_time_us > 0)
        cb_results_line(cb_human(), "Time limit", "%.2f us per message", cfg->max_time_us);
    cb_results_line(cb_human(), "Pairs tested", "%.0f of %lld", run->coll.sum.npairs, run->order.expected);
    if (cfg->check_buffers)
        cb_results_line(cb_human(), "Buffer errors", "%.0f pairs (%.0f wrong bytes)", run->errors.pairs, run->errors.bytes);
    else
        cb_results_line(cb_human(), "Buffer errors", "not checked (--check-buffers)");
    /* its own threshold (--min-bandwidth, --max-time), labelled so: a site's references
     * judge the run (cobalt-bench judge, the report), and may say otherwise */
    cb_results_line(cb_human(), "Own verdict", "%s (its own threshold, not the site's)",
                    v->passed ? "PASSED" : "FAILED");
    fflush(cb_human());
}

/* Rank 0: the verdict, the summary, the JSON document, the results block.
 * Returns the exit code. */
int lt_report(lt_run *run)
{
    lt_verdict v = diagnose(run);
    /* the document before the human output: on a signal, mpirun stops forwarding the ranks'
     * output while it waits to kill them, and a full pipe would then block rank 0 */
    if (run->cfg->json_path && write_json(run, &v) != 0)
        run->write_failed = 1;
    print_summary(run, &v);
    results_block(run, &v);
    if (run->test.interrupted) /* 128 + the signal, as a shell reports a death by it */
        return cb_interrupted ? cb_exit_interrupted() : 128 + SIGTERM;
    if (run->write_failed)
        return CB_EXIT_CANNOT_RUN;
    return v.passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
}
