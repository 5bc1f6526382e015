/* Messages and option-value parsing shared by all kernels. */
#include "cb_common.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *cb_prog = "cobalt-bench";

void cb_usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cb_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", cb_prog);
    exit(CB_EXIT_USAGE);
}

void cb_die(int code, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", cb_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

void cb_warn(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: warning: ", cb_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cb_print_version(const char *test_version)
{
    printf("%s (cobalt-bench) %s\nTest version %s\n", cb_prog, CB_VERSION, test_version);
}

double cb_opt_double(const char *opt, const char *arg, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno == ERANGE || !isfinite(v))
        cb_usage_error("invalid value '%s' for %s: not a number", arg, opt);
    if (v < min || v > max)
        cb_usage_error("invalid value '%s' for %s: must be between %g and %g", arg, opt, min, max);
    return v;
}

long cb_opt_long(const char *opt, const char *arg, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end != '\0' || errno == ERANGE)
        cb_usage_error("invalid value '%s' for %s: not an integer", arg, opt);
    if (v < min || v > max)
        cb_usage_error("invalid value '%s' for %s: must be between %ld and %ld", arg, opt, min, max);
    return v;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int cb_parse_intlist(const char *s, int *out, int max)
{
    int n = 0;
    const char *p = s;
    if (*p == '\0')
        return -1;
    while (*p) {
        char *end;
        if (*p < '0' || *p > '9')
            return -1;
        long a = strtol(p, &end, 10), b = a;
        p = end;
        if (*p == '-') {
            p++;
            if (*p < '0' || *p > '9')
                return -1;
            b = strtol(p, &end, 10);
            p = end;
        }
        if (a > b || b > 1000000)
            return -1;
        for (long v = a; v <= b; v++) {
            if (n >= max)
                return -1;
            out[n++] = (int)v;
        }
        if (*p == ',') {
            p++;
            if (*p == '\0')
                return -1;
        } else if (*p != '\0') {
            return -1;
        }
    }
    qsort(out, (size_t)n, sizeof *out, cmp_int);
    int u = 0;
    for (int i = 0; i < n; i++)
        if (u == 0 || out[u - 1] != out[i])
            out[u++] = out[i];
    return u;
}

int cb_opt_intlist(const char *opt, const char *arg, int *out, int max)
{
    int n = cb_parse_intlist(arg, out, max);
    if (n < 0)
        cb_usage_error("invalid list '%s' for %s: expected numbers and ranges like 0-3,8", arg, opt);
    return n;
}
