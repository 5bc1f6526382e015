/* --plan N: build the schedule for N ranks without MPI, print its shape, and
 * check it (exhaustively up to PLAN_EXHAUSTIVE_MAX ranks, else for a sample). */
#include "options.h"
#include "schedule.h"
#include "../common/cb_hash.h"

#include <stdlib.h>

#define PLAN_EXHAUSTIVE_MAX 8192
#define PLAN_SAMPLE_RANKS 64

/* Pairs per step: every step for moderate N, a sample of steps beyond. */
static void print_pairs_per_step(const lt_config *cfg, const lt_sched *s)
{
    int n = s->nranks;
    int all_steps = n <= PLAN_EXHAUSTIVE_MAX;
    long nsamp = all_steps ? s->nsteps : (s->nsteps < 32 ? s->nsteps : 32);
    long pmin = -1, pmax = 0;
    double psum = 0;
    for (long k = 0; k < nsamp; k++) {
        long step = all_steps || nsamp == s->nsteps
                        ? k : (long)(cb_mix64(cfg->seed + (uint64_t)k) % (uint64_t)s->nsteps);
        long p = lt_pairs_in_step(s, step);
        pmin = pmin < 0 || p < pmin ? p : pmin;
        pmax = p > pmax ? p : pmax;
        psum += (double)p;
    }
    fprintf(cb_human(), "Pairs per step:   min %ld, avg %.1f, max %ld (of %d possible)%s\n", pmin < 0 ? 0 : pmin,
           nsamp ? psum / (double)nsamp : 0, pmax, n / 2,
           all_steps || nsamp == s->nsteps ? "" : " [sampled steps]");
}

static void print_plan(const lt_config *cfg, const lt_sched *s)
{
    int n = s->nranks;
    fprintf(cb_human(), "cb-linktest plan: %d ranks", n);
    if (cfg->group_host)
        fprintf(cb_human(), " on %d host%s (block distribution), pairs on different hosts only", s->ngroups,
               s->ngroups == 1 ? "" : "s");
    fprintf(cb_human(), ", %s\n", cfg->bisection ? "bisection: the first half of the ranks against the second"
                                    : "all pairs");
    if (cfg->group_host)
        fprintf(cb_human(), "Groups:           %d, at most %d rank%s each; %d rounds of %d steps\n", s->ngroups,
               s->gsize, s->gsize == 1 ? "" : "s", s->rounds, s->gsize);
    fprintf(cb_human(), "Steps:            %ld%s\n", s->nsteps, cfg->randomize ? " (in randomized order)" : "");
    print_pairs_per_step(cfg, s);
    fprintf(cb_human(), "Pairs to test:    %lld\n", lt_expected_pairs(s));
    double sched_kib = (sizeof(int) * (3.0 * n + s->ngroups + 1) + sizeof(long) * (double)s->nsteps) / 1024;
    fprintf(cb_human(), "Memory per rank:  schedule %.1f KiB, matrix row %.1f KiB (O(N); rank 0 streams the matrix)\n",
           sched_kib, n * sizeof(double) / 1024.0);
    if (!cfg->plan_print)
        return;
    for (long k = 0; k < s->nsteps; k++) {
        fprintf(cb_human(), "step %ld:", k + 1);
        for (int r = 0; r < n; r++) {
            int q = lt_partner(s, r, s->order[k]);
            if (q > r)
                fprintf(cb_human(), " %d-%d", r, q);
        }
        fputc('\n', cb_human());
    }
}

/* The coverage check; returns 0 when the schedule is right. */
static int check_plan(const lt_config *cfg, const lt_sched *s, double build_s)
{
    char why[256] = "";
    uint64_t t0 = cb_now_ns();
    int bad;
    const char *how;
    if (s->nranks <= PLAN_EXHAUSTIVE_MAX) {
        bad = lt_sched_check_exhaustive(s, why, sizeof why);
        how = "exhaustive: every step pairs each rank at most once, every pair to test meets exactly once, no other pair";
    } else {
        bad = lt_sched_check_sampled(s, PLAN_SAMPLE_RANKS, cfg->seed, why, sizeof why);
        how = "sampled: for 64 ranks (first, last, random), the partners over all steps are a "
              "permutation of all the ranks each should meet, and every pairing is mutual";
    }
    double check_s = (cb_now_ns() - t0) / 1e9;
    fprintf(cb_human(), "Check:            %s (built in %.3f s, checked in %.3f s)\n", how, build_s, check_s);
    fprintf(cb_human(), "Coverage:         %s%s\n", bad ? "FAILED: " : "OK", bad ? why : "");
    return bad;
}

int lt_plan(const lt_config *cfg)
{
    int n = (int)cfg->plan_n;
    int *host_of = NULL;
    if (cfg->group_host) {
        long hosts = cfg->plan_hosts ? cfg->plan_hosts : 1;
        host_of = malloc(sizeof(int) * (size_t)n);
        if (!host_of)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int r = 0; r < n; r++) /* block distribution, as srun places tasks */
            host_of[r] = (int)((long long)r * hosts / n);
    }
    uint64_t t0 = cb_now_ns();
    lt_sched s;
    if (lt_sched_init(&s, n, host_of, cfg->group_host, cfg->bisection) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot build the schedule for %d ranks (out of memory)", n);
    if (cfg->randomize)
        lt_sched_randomize(&s, cfg->seed);
    double build_s = (cb_now_ns() - t0) / 1e9;
    print_plan(cfg, &s);
    int bad = check_plan(cfg, &s, build_s);
    lt_sched_free(&s);
    free(host_of);
    return bad ? CB_EXIT_NOT_COMPLIANT : CB_EXIT_OK;
}
