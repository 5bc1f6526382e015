/* cb-linktest's communication schedule, without MPI: which rank meets which
 * in every step, so that each pair to be tested meets exactly once and no rank
 * is in two pairs of one step.
 *
 * Ranks are put in groups (one per host with --group-processes-by-hostname,
 * else one per rank). Groups meet in rounds; in a round, two groups X < Y of
 * at most p members meet in p steps: in inner step t, member i of X meets
 * member (i + t) mod p of Y. A missing member (a group smaller than p) leaves
 * its partner idle for that step.
 *   all pairs: a round-robin tournament of the groups (circle method: in round
 *     r group x meets (2r - x) mod (M-1), group M-1 meets r, M = groups rounded
 *     up to even; a group that meets the phantom group M-1 >= G idles);
 *   bisection: groups 0..a-1 (a = G/2) against a..G-1 (b = G - a): in round r
 *     group x < a meets a + (x + r) mod b.
 * With one rank per group this is the classic schedule: N-1 steps of N/2
 * pairs (all pairs) or N/2 steps of N/2 pairs (bisection). The partner of a
 * rank in a step is computed in O(1); the schedule holds O(N) memory. */
#ifndef CB_LINKTEST_SCHEDULE_H
#define CB_LINKTEST_SCHEDULE_H

#include <stdint.h>

typedef struct lt_sched {
    int nranks;
    int ngroups;     /* G */
    int gsize;       /* p: members of the largest group */
    int bisection;
    int half;        /* bisection: groups in the first half (a) */
    int rounds;
    long nsteps;     /* rounds * gsize */
    int *group_of;   /* [nranks] group of each rank */
    int *index_of;   /* [nranks] position of each rank in its group */
    int *start;      /* [ngroups + 1] first member of each group in members[] */
    int *members;    /* [nranks] ranks by group, in rank order */
    long *order;     /* [nsteps] execution order: step k runs schedule step order[k] */
} lt_sched;

/* Builds the schedule for nranks ranks; host_of[r] is rank r's host number
 * (any int; NULL or group == 0: one group per rank). Groups are numbered in
 * order of their lowest rank. Returns 0, or -1 on allocation failure or bad
 * input (nranks < 2). */
int lt_sched_init(lt_sched *s, int nranks, const int *host_of, int group, int bisection);
void lt_sched_free(lt_sched *s);

/* Runs the steps in a pseudo-random order (the same on every rank for a seed). */
void lt_sched_randomize(lt_sched *s, uint64_t seed);

/* Partner of rank in schedule step (0..nsteps-1), or -1 when it idles. */
int lt_partner(const lt_sched *s, int rank, long step);

/* Whether the schedule should test the pair a, b (a != b): ranks in different
 * groups and, with bisection, in different halves. */
int lt_pair_expected(const lt_sched *s, int a, int b);

/* Partners each rank should meet; pairs the whole schedule should test. */
long lt_expected_partners(const lt_sched *s, int rank);
long long lt_expected_pairs(const lt_sched *s);

/* Pairs in one step (O(N)). */
long lt_pairs_in_step(const lt_sched *s, long step);

/* Verification. Each returns 0 if the schedule is right, else -1 with the
 * first problem in why[len].
 *   exhaustive: every step is a matching (partner of partner is the rank
 *     itself), every expected pair meets exactly once, no other pair meets.
 *     Memory N(N-1)/2 bits, time O(N * steps): for N up to a few thousand.
 *   sampled: for nsample ranks (spread over all ranks, seeded), the partner
 *     sequence over all steps is a permutation of exactly the partners it
 *     should meet, and each step's pairing is mutual. Time O(nsample * steps). */
int lt_sched_check_exhaustive(const lt_sched *s, char *why, int len);
int lt_sched_check_sampled(const lt_sched *s, int nsample, uint64_t seed, char *why, int len);

#endif
