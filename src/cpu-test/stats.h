/* The figures cpu-test derives from its samples: the spread between the cores and the
 * drop from the first interval to the sustained rate (stats.c; pure functions). */
#ifndef CT_STATS_H
#define CT_STATS_H

/* The median of v[0..n) (the mean of the middle two for even n); NaN for n == 0. */
double ct_median(const double *v, int n);

typedef struct ct_spread {
    double min, median, max;
    int slowest;   /* index of the slowest; -1 for none */
    double ratio;  /* min / median in percent: 100 = every core as fast as the median */
} ct_spread;
/* The spread of per-core rates v[0..n); every field NaN (slowest -1) for n == 0. */
ct_spread ct_spread_of(const double *v, int n);

typedef struct ct_throttle {
    double first;     /* the first whole interval's rate */
    double sustained; /* the median of the whole intervals of the run's last third */
    double drop;      /* (first - sustained) / first in percent; negative: it rose */
} ct_throttle;
/* From the node rate of each interval (rate[i] over len[i] seconds; an interval shorter
 * than 0.9 `interval`, the tail of a run or of an interrupted one, does not count):
 * every field NaN with fewer than two whole intervals. */
ct_throttle ct_throttle_of(const double *rate, const double *len, int n, double interval);

#endif
