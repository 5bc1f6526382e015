/* cb-linktest's schedule (see schedule.h). No MPI here: `cb-linktest --plan`
 * and the unit tests use it as it is. */
#include "schedule.h"
#include "../common/cb_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lt_sched_free(lt_sched *s)
{
    free(s->group_of);
    free(s->index_of);
    free(s->start);
    free(s->members);
    free(s->order);
    memset(s, 0, sizeof *s);
}

int lt_sched_init(lt_sched *s, int nranks, const int *host_of, int group, int bisection)
{
    memset(s, 0, sizeof *s);
    if (nranks < 2)
        return -1;
    s->nranks = nranks;
    s->bisection = bisection;
    s->group_of = malloc(sizeof(int) * (size_t)nranks);
    s->index_of = malloc(sizeof(int) * (size_t)nranks);
    s->members = malloc(sizeof(int) * (size_t)nranks);
    s->start = malloc(sizeof(int) * ((size_t)nranks + 1));
    if (!s->group_of || !s->index_of || !s->members || !s->start)
        goto fail;

    if (!group || !host_of) {
        for (int r = 0; r < nranks; r++)
            s->group_of[r] = r;
        s->ngroups = nranks;
    } else {
        /* Group numbers in order of each host's lowest rank: an open-addressing
         * table from host number to group, O(N). */
        size_t cap = 1;
        while (cap < (size_t)nranks * 2)
            cap <<= 1;
        int *key = malloc(sizeof(int) * cap), *val = malloc(sizeof(int) * cap);
        if (!key || !val) {
            free(key);
            free(val);
            goto fail;
        }
        for (size_t i = 0; i < cap; i++)
            val[i] = -1;
        for (int r = 0; r < nranks; r++) {
            size_t h = cb_mix64((uint64_t)(uint32_t)host_of[r]) & (cap - 1);
            while (val[h] >= 0 && key[h] != host_of[r])
                h = (h + 1) & (cap - 1);
            if (val[h] < 0) {
                key[h] = host_of[r];
                val[h] = s->ngroups++;
            }
            s->group_of[r] = val[h];
        }
        free(key);
        free(val);
    }

    /* members by group, in rank order (counting sort) */
    memset(s->start, 0, sizeof(int) * ((size_t)s->ngroups + 1));
    for (int r = 0; r < nranks; r++)
        s->start[s->group_of[r] + 1]++;
    for (int g = 0; g < s->ngroups; g++) {
        s->start[g + 1] += s->start[g];
        int size = s->start[g + 1] - s->start[g];
        if (size > s->gsize)
            s->gsize = size;
    }
    {
        int *next = calloc((size_t)s->ngroups, sizeof(int));
        if (!next)
            goto fail;
        for (int r = 0; r < nranks; r++) {
            int g = s->group_of[r];
            s->index_of[r] = next[g]++;
            s->members[s->start[g] + s->index_of[r]] = r;
        }
        free(next);
    }

    int G = s->ngroups;
    if (bisection) {
        s->half = G / 2;
        s->rounds = G - s->half; /* b >= a rounds: every x < a meets every y >= a */
    } else {
        s->rounds = G % 2 ? G : G - 1; /* circle method over G rounded up to even */
    }
    s->nsteps = (long)s->rounds * s->gsize;
    s->order = malloc(sizeof(long) * (size_t)(s->nsteps ? s->nsteps : 1));
    if (!s->order)
        goto fail;
    for (long k = 0; k < s->nsteps; k++)
        s->order[k] = k;
    return 0;
fail:
    lt_sched_free(s);
    return -1;
}

void lt_sched_randomize(lt_sched *s, uint64_t seed)
{
    /* Fisher-Yates with a splitmix64 stream: identical on every rank. */
    uint64_t state = seed;
    for (long k = s->nsteps - 1; k > 0; k--) {
        state += CB_GOLDEN_GAMMA;
        uint64_t r = cb_mix64(state);
        long j = (long)(r % (uint64_t)(k + 1));
        long t = s->order[k];
        s->order[k] = s->order[j];
        s->order[j] = t;
    }
}

/* The group group g meets in round r, or -1 (idle). */
static int group_partner(const lt_sched *s, int g, int r)
{
    int G = s->ngroups;
    if (s->bisection) {
        int a = s->half, b = G - a;
        if (g < a)
            return a + (g + r) % b;
        int x = ((g - a - r) % b + b) % b;
        return x < a ? x : -1;
    }
    int M = G % 2 ? G + 1 : G; /* teams, with a phantom when G is odd */
    int h;
    if (g == M - 1)
        h = r;
    else if (g == r)
        h = M - 1;
    else
        h = (int)(((2L * r - g) % (M - 1) + (M - 1)) % (M - 1));
    return h < G ? h : -1;
}

int lt_partner(const lt_sched *s, int rank, long step)
{
    int p = s->gsize;
    int r = (int)(step / p), t = (int)(step % p);
    int g = s->group_of[rank];
    int h = group_partner(s, g, r);
    if (h < 0)
        return -1;
    int i = s->index_of[rank];
    int j = g < h ? (i + t) % p : ((i - t) % p + p) % p;
    int size = s->start[h + 1] - s->start[h];
    return j < size ? s->members[s->start[h] + j] : -1;
}

int lt_pair_expected(const lt_sched *s, int a, int b)
{
    int ga = s->group_of[a], gb = s->group_of[b];
    if (a == b || ga == gb)
        return 0;
    if (s->bisection && (ga < s->half) == (gb < s->half))
        return 0;
    return 1;
}

long lt_expected_partners(const lt_sched *s, int rank)
{
    int g = s->group_of[rank];
    int own = s->start[g + 1] - s->start[g];
    if (!s->bisection)
        return s->nranks - own;
    int first_half_ranks = s->start[s->half];
    return g < s->half ? s->nranks - first_half_ranks : first_half_ranks;
}

long long lt_expected_pairs(const lt_sched *s)
{
    long long sum = 0;
    for (int g = 0; g < s->ngroups; g++) {
        long long size = s->start[g + 1] - s->start[g];
        sum += size * lt_expected_partners(s, s->members[s->start[g]]);
    }
    return sum / 2;
}

long lt_pairs_in_step(const lt_sched *s, long step)
{
    long n = 0;
    for (int r = 0; r < s->nranks; r++) {
        int q = lt_partner(s, r, step);
        if (q > r)
            n++;
    }
    return n;
}

/* Index of pair a < b in a triangular bit array. */
static uint64_t pair_index(int a, int b)
{
    return (uint64_t)b * (uint64_t)(b - 1) / 2 + (uint64_t)a;
}

int lt_sched_check_exhaustive(const lt_sched *s, char *why, int len)
{
    int n = s->nranks;
    uint64_t npairs = (uint64_t)n * (uint64_t)(n - 1) / 2;
    uint64_t *seen = calloc((size_t)(npairs / 64 + 1), sizeof(uint64_t));
    if (!seen) {
        snprintf(why, (size_t)len, "cannot allocate %llu bits for the pairs",
                 (unsigned long long)npairs);
        return -1;
    }
    int rc = -1;
    long long met = 0;
    for (long step = 0; step < s->nsteps; step++) {
        for (int r = 0; r < n; r++) {
            int q = lt_partner(s, r, step);
            if (q < 0)
                continue;
            if (q >= n || q == r) {
                snprintf(why, (size_t)len, "step %ld: rank %d has partner %d", step, r, q);
                goto out;
            }
            int back = lt_partner(s, q, step);
            if (back != r) {
                snprintf(why, (size_t)len, "step %ld: rank %d meets %d, but %d meets %d "
                         "(a rank in two pairs)", step, r, q, q, back);
                goto out;
            }
            if (q < r)
                continue;
            if (!lt_pair_expected(s, r, q)) {
                snprintf(why, (size_t)len, "step %ld: pair %d-%d should not be tested", step, r, q);
                goto out;
            }
            uint64_t k = pair_index(r, q);
            if (seen[k / 64] & (1ULL << (k % 64))) {
                snprintf(why, (size_t)len, "step %ld: pair %d-%d tested twice", step, r, q);
                goto out;
            }
            seen[k / 64] |= 1ULL << (k % 64);
            met++;
        }
    }
    long long want = lt_expected_pairs(s);
    if (met != want) {
        /* name one pair that never met */
        for (int b = 1; b < n; b++)
            for (int a = 0; a < b; a++) {
                uint64_t k = pair_index(a, b);
                if (lt_pair_expected(s, a, b) && !(seen[k / 64] & (1ULL << (k % 64)))) {
                    snprintf(why, (size_t)len, "%lld of %lld pairs tested; pair %d-%d never meets",
                             met, want, a, b);
                    goto out;
                }
            }
        snprintf(why, (size_t)len, "%lld of %lld pairs tested", met, want);
        goto out;
    }
    rc = 0;
out:
    free(seen);
    return rc;
}

int lt_sched_check_sampled(const lt_sched *s, int nsample, uint64_t seed, char *why, int len)
{
    int n = s->nranks;
    unsigned char *seen = malloc((size_t)n);
    if (!seen) {
        snprintf(why, (size_t)len, "cannot allocate %d bytes", n);
        return -1;
    }
    if (nsample > n)
        nsample = n;
    int rc = -1;
    for (int k = 0; k < nsample; k++) {
        /* always the first and last rank, the rest spread pseudo-randomly */
        int r = k == 0 ? 0 : k == 1 ? n - 1 : (int)(cb_mix64(seed + (uint64_t)k) % (uint64_t)n);
        if (nsample == n)
            r = k;
        memset(seen, 0, (size_t)n);
        long met = 0;
        for (long step = 0; step < s->nsteps; step++) {
            int q = lt_partner(s, r, step);
            if (q < 0)
                continue;
            if (q >= n || q == r || lt_partner(s, q, step) != r) {
                snprintf(why, (size_t)len, "step %ld: rank %d's pairing with %d is not mutual",
                         step, r, q);
                goto out;
            }
            if (!lt_pair_expected(s, r, q)) {
                snprintf(why, (size_t)len, "step %ld: pair %d-%d should not be tested", step, r, q);
                goto out;
            }
            if (seen[q]) {
                snprintf(why, (size_t)len, "rank %d meets %d twice", r, q);
                goto out;
            }
            seen[q] = 1;
            met++;
        }
        long want = lt_expected_partners(s, r);
        if (met != want) {
            snprintf(why, (size_t)len, "rank %d meets %ld of its %ld partners", r, met, want);
            goto out;
        }
    }
    rc = 0;
out:
    free(seen);
    return rc;
}
