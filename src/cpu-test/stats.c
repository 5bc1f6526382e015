/* The spread between cores and the drop over a run (stats.h). */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ct_median(const double *v, int n)
{
    if (n <= 0)
        return NAN;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return NAN;
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}

ct_spread ct_spread_of(const double *v, int n)
{
    ct_spread s = {NAN, NAN, NAN, -1, NAN};
    if (n <= 0)
        return s;
    s.min = s.max = v[0];
    s.slowest = 0;
    for (int i = 1; i < n; i++) {
        if (v[i] < s.min) {
            s.min = v[i];
            s.slowest = i;
        }
        if (v[i] > s.max)
            s.max = v[i];
    }
    s.median = ct_median(v, n);
    s.ratio = s.median > 0 ? 100.0 * s.min / s.median : NAN;
    return s;
}

ct_throttle ct_throttle_of(const double *rate, const double *len, int n, double interval)
{
    ct_throttle t = {NAN, NAN, NAN};
    double *whole = malloc((size_t)(n > 0 ? n : 1) * sizeof *whole);
    int nw = 0;
    for (int i = 0; whole && i < n; i++)
        if (len[i] >= 0.9 * interval)
            whole[nw++] = rate[i];
    if (nw >= 2) {
        t.first = whole[0];
        /* the last third, at least one interval, never the first */
        int tail = nw / 3 > 0 ? nw / 3 : 1;
        t.sustained = ct_median(whole + nw - tail, tail);
        t.drop = t.first > 0 ? 100.0 * (t.first - t.sustained) / t.first : NAN;
    }
    free(whole);
    return t;
}
