/* The JSON document builder, and writing a document atomically (--json). */
#include "cb_common.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- JSON builder -------------------------------------------------------- */
void cbj_init(cb_json *j)
{
    memset(j, 0, sizeof *j);
}

void cbj_free(cb_json *j)
{
    free(j->buf);
    memset(j, 0, sizeof *j);
}

static void put(cb_json *j, const char *s, size_t n)
{
    if (j->failed)
        return;
    if (j->len + n + 1 > j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 1024;
        while (cap < j->len + n + 1)
            cap *= 2;
        char *b = realloc(j->buf, cap);
        if (!b) {
            j->failed = 1;
            return;
        }
        j->buf = b;
        j->cap = cap;
    }
    memcpy(j->buf + j->len, s, n);
    j->len += n;
    j->buf[j->len] = '\0';
}

static void puts_(cb_json *j, const char *s) { put(j, s, strlen(s)); }

static void put_string(cb_json *j, const char *s)
{
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': puts_(j, "\\\""); break;
        case '\\': puts_(j, "\\\\"); break;
        case '\n': puts_(j, "\\n"); break;
        case '\r': puts_(j, "\\r"); break;
        case '\t': puts_(j, "\\t"); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(j, esc);
            } else {
                put(j, (const char *)p, 1);
            }
        }
    }
    put(j, "\"", 1);
}

/* Comma and key before every value. */
static void prefix(cb_json *j, const char *key)
{
    if (j->depth > 0 && j->need_comma[j->depth])
        puts_(j, ",");
    if (j->depth > 0) {
        puts_(j, "\n");
        for (int i = 0; i < j->depth; i++)
            puts_(j, "  ");
        j->need_comma[j->depth] = 1;
    }
    if (key) {
        put_string(j, key);
        puts_(j, ": ");
    }
}

static void open_(cb_json *j, const char *key, const char *bracket)
{
    prefix(j, key);
    puts_(j, bracket);
    if (j->depth + 1 >= (int)sizeof j->need_comma) {
        j->failed = 1;
        return;
    }
    j->depth++;
    j->need_comma[j->depth] = 0;
}

static void close_(cb_json *j, const char *bracket)
{
    int had = j->need_comma[j->depth];
    j->depth--;
    if (had) {
        puts_(j, "\n");
        for (int i = 0; i < j->depth; i++)
            puts_(j, "  ");
    }
    puts_(j, bracket);
    if (j->depth == 0)
        puts_(j, "\n");
}

void cbj_obj_begin(cb_json *j, const char *key) { open_(j, key, "{"); }
void cbj_obj_end(cb_json *j) { close_(j, "}"); }
void cbj_arr_begin(cb_json *j, const char *key) { open_(j, key, "["); }
void cbj_arr_end(cb_json *j) { close_(j, "]"); }

void cbj_str(cb_json *j, const char *key, const char *val)
{
    prefix(j, key);
    put_string(j, val);
}

void cbj_num(cb_json *j, const char *key, double val)
{
    char b[64];
    prefix(j, key);
    if (!isfinite(val)) {
        puts_(j, "null");
        return;
    }
    snprintf(b, sizeof b, "%.17g", val);
    /* %.17g is exact but noisy; use the shortest that round-trips. */
    for (int prec = 6; prec < 17; prec++) {
        char t[64];
        snprintf(t, sizeof t, "%.*g", prec, val);
        if (strtod(t, NULL) == val) {
            memcpy(b, t, sizeof t);
            break;
        }
    }
    puts_(j, b);
}

void cbj_int(cb_json *j, const char *key, long long val)
{
    char b[32];
    prefix(j, key);
    snprintf(b, sizeof b, "%lld", val);
    puts_(j, b);
}

void cbj_bool(cb_json *j, const char *key, int val)
{
    prefix(j, key);
    puts_(j, val ? "true" : "false");
}

const cb_metric_def *cb_metric_find(const cb_metric_def *table, const char *name)
{
    for (const cb_metric_def *m = table; m && m->name; m++)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

void cbj_metric(cb_json *j, const cb_metric_def *table, const char *name, double value)
{
    const cb_metric_def *m = cb_metric_find(table, name);
    if (!m)
        cb_die(CB_EXIT_CANNOT_RUN, "internal error: metric '%s' is not in the kernel's table",
               name);
    cbj_obj_begin(j, name);
    cbj_num(j, "value", value);
    cbj_str(j, "unit", m->unit);
    cbj_obj_end(j);
}

static int dir_of(const char *path, char *out, size_t len)
{
    char tmp[4096];
    if (strlen(path) >= sizeof tmp)
        return -1;
    strcpy(tmp, path);
    snprintf(out, len, "%s", dirname(tmp));
    return 0;
}

int cb_json_path_ok(const char *path)
{
    char dir[4096];
    struct stat st;
    if (strcmp(path, "-") == 0)
        return 0;
    if (dir_of(path, dir, sizeof dir) != 0)
        return -1;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return -1;
    return access(dir, W_OK) == 0 ? 0 : -1;
}

int cb_json_write(const cb_json *j, const char *path)
{
    if (j->failed || j->depth != 0) {
        cb_warn("internal error: JSON document incomplete");
        return -1;
    }
    if (strcmp(path, "-") == 0) {
        fwrite(j->buf, 1, j->len, stdout);
        fflush(stdout);
        return 0;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cb_warn("cannot write JSON result %s: %s", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < j->len) {
        ssize_t w = write(fd, j->buf + off, j->len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        off += (size_t)w;
    }
    /* mkstemp makes it 0600: the document gets the mode open() would give it, 0666
     * less the umask (read by setting it back at once). */
    mode_t mask = umask(0);
    umask(mask);
    int ok = off == j->len && fchmod(fd, 0666 & ~mask) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        if (ok)
            saved = errno;
        unlink(tmp);
        cb_warn("cannot write JSON result %s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}
