/* What cb-linktest collects after the test (retest.c): the matrix summary, the slowest
 * pairs and their serial retest. */
#ifndef CB_LINKTEST_RETEST_H
#define CB_LINKTEST_RETEST_H

/* One of the slowest pairs (t < 0: an empty slot). */
typedef struct lt_slow {
    double t, a, b;
} lt_slow;

/* The kept matrix, summarized at rank 0 (each pair once, by its lower rank). */
typedef struct lt_summary {
    double min_t, max_t, avg_t, avg_bw, npairs;
} lt_summary;

/* Collected after the test (retest.c). */
typedef struct lt_collected {
    lt_summary sum;          /* rank 0 */
    int slow_k;              /* num_slowest + 1: one more than retested */
    lt_slow *slow;           /* [slow_k] on every rank, slowest first */
    int nslow, nretest;
    double *retest;          /* [slow_k] rank 0: each retested pair's time alone */
} lt_collected;

#endif
