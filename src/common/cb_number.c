/* The strict number parser of every kernel, and option values through it: a bad value
 * exits 2 naming the option (cb_common.h). */
#include "cb_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the strict number parser ------------------------------------------------ */
/* strtoull and strtol skip spaces and take a sign ("-1" becomes 2^64 - 1) and strtod
 * takes "nan", "inf" and hexadecimal: each value here is checked character by
 * character first, so that these never get through. */
int cb_parse_u64(const char *s, int base, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    int hex = base == 0 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char *p = hex ? s + 2 : s;
    if (!*p)
        return -1;
    for (const char *c = p; *c; c++)
        if (!(hex ? (*c >= '0' && *c <= '9') || ((*c | 0x20) >= 'a' && (*c | 0x20) <= 'f')
                  : *c >= '0' && *c <= '9'))
            return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(p, &end, hex ? 16 : 10);
    if (errno == ERANGE || *end)
        return -1;
    *out = v;
    return 0;
}

int cb_parse_i64(const char *s, int64_t *out)
{
    if (!s)
        return -1;
    const char *p = *s == '-' ? s + 1 : s;
    if (*p < '0' || *p > '9')
        return -1;
    for (const char *c = p; *c; c++)
        if (*c < '0' || *c > '9')
            return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno == ERANGE || *end)
        return -1;
    *out = v;
    return 0;
}

int cb_parse_f64(const char *s, double *out)
{
    if (!s)
        return -1;
    /* a decimal number: sign, digits, point, exponent; nothing else */
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (!((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9')))
        return -1;
    for (const char *c = p; *c; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' ||
              *c == '+'))
            return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    /* ERANGE: overflow, or an underflow that would silently read as 0 */
    if (end == s || *end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cb_list_next(const char **cursor, const char *seps, char *item, size_t len)
{
    const char *p = *cursor;
    if (!p)
        return 0;
    size_t n = strcspn(p, seps);
    if (n == 0 || n >= len)
        return -1;
    memcpy(item, p, n);
    item[n] = '\0';
    /* after a separator another item must follow: "a," ends in an empty one */
    *cursor = p[n] ? p + n + 1 : NULL;
    return 1;
}

/* ---- sizes and durations ------------------------------------------------------ */
int cb_parse_size(const char *s, uint64_t *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -1;
    const char *units = "kmgt";
    const char *u = *end ? strchr(units, *end | 0x20) : NULL;
    unsigned shift = u ? 10 * (unsigned)(u - units + 1) : 0;
    if (shift)
        end++;
    /* 64K, 64KiB and 64KB all mean 65536: binary multiples, as memory is sized */
    if (strcmp(end, "B") == 0 || (shift && strcmp(end, "iB") == 0))
        end += strlen(end);
    if (*end != '\0' || (shift && v > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

int cb_parse_duration(const char *s, double *seconds)
{
    static const struct { const char *suffix; double scale; } units[] = {
        {"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"m", 60}, {"min", 60}, {"h", 3600}, {"d", 86400}};
    /* the number through the one strict parser (strtod alone takes "0x10" as 16, and
     * "nan"), then the unit: the letters at the end (no unit has an 'e', the exponent's) */
    char num[64];
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] | 0x20) >= 'a' && (s[n - 1] | 0x20) <= 'z' && (s[n - 1] | 0x20) != 'e')
        n--;
    if ((*s < '0' || *s > '9') && *s != '.')
        return -1;
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n);
    num[n] = '\0';
    double v;
    const char *end = s + n;
    if (cb_parse_f64(num, &v) != 0 || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            *seconds = v * units[i].scale;
            return 0;
        }
    return -1;
}

/* ---- option values ------------------------------------------------------------- */
static int all_digits(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

double cb_opt_double(const char *opt, const char *arg, double min, double max)
{
    double v;
    if (cb_parse_f64(arg, &v) != 0)
        cb_usage_error("invalid value '%s' for %s: not a number", arg, opt);
    if (v < min || v > max)
        cb_usage_error("invalid value '%s' for %s: must be between %g and %g", arg, opt, min, max);
    return v;
}

long cb_opt_long(const char *opt, const char *arg, long min, long max)
{
    int64_t v;
    int ok = cb_parse_i64(arg, &v) == 0;
    if (!ok && !all_digits(arg[0] == '-' ? arg + 1 : arg)) /* else: too large for 64 bits */
        cb_usage_error("invalid value '%s' for %s: not an integer", arg, opt);
    if (!ok || v < min || v > max)
        cb_usage_error("invalid value '%s' for %s: must be between %ld and %ld", arg, opt, min, max);
    return (long)v;
}

uint64_t cb_opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
    uint64_t v;
    int ok = cb_parse_u64(arg, 0, &v) == 0;
    if (!ok && !all_digits(arg)) /* else: too large for 64 bits */
        cb_usage_error("invalid value '%s' for %s: not a non-negative integer", arg, opt);
    if (!ok || v < min || v > max)
        cb_usage_error("invalid value '%s' for %s: must be between %llu and %llu", arg, opt,
                       (unsigned long long)min, (unsigned long long)max);
    return v;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

#define INTLIST_VALUE_MAX 1000000

/* One number of a list, 0..INTLIST_VALUE_MAX. */
static int list_number(const char *s, long *out)
{
    uint64_t v;
    if (cb_parse_u64(s, 10, &v) != 0 || v > INTLIST_VALUE_MAX)
        return -1;
    *out = (long)v;
    return 0;
}

int cb_parse_intlist(const char *s, int *out, int max)
{
    int n = 0;
    char item[64];
    const char *cursor = s;
    int r;
    while ((r = cb_list_next(&cursor, ",", item, sizeof item)) == 1) {
        long a, b;
        char *dash = strchr(item, '-');
        if (dash)
            *dash = '\0';
        if (list_number(item, &a) != 0)
            return -1;
        b = a;
        if (dash && list_number(dash + 1, &b) != 0)
            return -1;
        if (a > b)
            return -1;
        for (long v = a; v <= b; v++) {
            if (n >= max)
                return -1;
            out[n++] = (int)v;
        }
    }
    if (r < 0)
        return -1;
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
