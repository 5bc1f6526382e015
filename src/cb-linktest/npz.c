/* NumPy .npz writer (see npz.h). Formats, as their documents describe them:
 *   .npy: magic "\x93NUMPY", version 1.0, 2-byte little-endian header length,
 *     an ASCII Python dict {'descr', 'fortran_order', 'shape'} padded with
 *     spaces and ended by '\n' so the data starts at a multiple of 64 bytes,
 *     then the array in C order.
 *   ZIP: per entry a local file header, the data (method 0, stored), and at
 *     the end a central directory and its end record; ZIP64 extra fields and
 *     the ZIP64 end records where sizes or offsets pass 32 bits.
 * Sizes and CRC-32 are known only after the data: the local header is
 * written first with zeros and patched afterwards (the file is seekable). */
#define _FILE_OFFSET_BITS 64
#include "npz.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define U32_MAX 0xffffffffULL

/* ZIP64 records only where an entry or the archive passes 4 GiB. The unit tests
 * (tests/c/test_linktest.c) build this file with -DLT_NPZ_TEST_ZIP64 to switch
 * them on for small files too; the product has no such switch. */
#ifdef LT_NPZ_TEST_ZIP64
extern int lt_npz_test_force_zip64;
#define FORCE_ZIP64 lt_npz_test_force_zip64
#else
#define FORCE_ZIP64 0
#endif

uint32_t lt_crc32(uint32_t crc, const void *data, size_t n)
{
    static uint32_t table[256];
    static int ready;
    if (!ready) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        ready = 1;
    }
    const unsigned char *p = data;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static int fail(lt_npz *z, const char *fmt, ...)
{
    if (!z->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(z->error, sizeof z->error, fmt, ap);
        va_end(ap);
    }
    z->failed = 1;
    return -1;
}

/* little-endian fields of the ZIP records */
static void le16(unsigned char *p, unsigned v) { p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8); }
static void le32(unsigned char *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i)); }
static void le64(unsigned char *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i)); }

static int put(lt_npz *z, const void *b, size_t n)
{
    if (z->failed)
        return -1;
    if (n && fwrite(b, 1, n, z->f) != n)
        return fail(z, "write failed: %s", strerror(errno));
    return 0;
}

static int host_is_little(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

int lt_npz_open(lt_npz *z, const char *path)
{
    memset(z, 0, sizeof *z);
    if (strlen(path) >= sizeof z->path)
        return fail(z, "path too long");
    snprintf(z->path, sizeof z->path, "%s", path);
    snprintf(z->tmp, sizeof z->tmp, "%s.XXXXXX", path);
    int fd = mkstemp(z->tmp);
    if (fd < 0) {
        z->tmp[0] = '\0';
        return fail(z, "cannot create a file beside %s: %s", path, strerror(errno));
    }
    fchmod(fd, 0644);
    z->f = fdopen(fd, "w+b");
    if (!z->f) {
        close(fd);
        unlink(z->tmp);
        z->tmp[0] = '\0';
        return fail(z, "fdopen: %s", strerror(errno));
    }
    return 0;
}

/* Local file header; sizes and CRC patched by lt_npz_end. ZIP64 entries carry
 * the sizes in an extra field (and 0xffffffff in the 32-bit fields). */
static int local_header(lt_npz *z, const lt_npz_entry *e)
{
    unsigned char h[30 + 64 + 20];
    size_t nlen = strlen(e->name);
    memset(h, 0, sizeof h);
    le32(h, 0x04034b50);
    le16(h + 4, e->zip64 ? 45 : 20);   /* version needed */
    le16(h + 6, 0);                    /* flags */
    le16(h + 8, 0);                    /* stored */
    le16(h + 10, 0);                   /* time 00:00:00 */
    le16(h + 12, (1 << 5) | 1);        /* date 1980-01-01: fixed, reproducible files */
    le32(h + 14, e->crc);
    le32(h + 18, e->zip64 ? (uint32_t)U32_MAX : (uint32_t)e->size);
    le32(h + 22, e->zip64 ? (uint32_t)U32_MAX : (uint32_t)e->size);
    le16(h + 26, (unsigned)nlen);
    le16(h + 28, e->zip64 ? 20 : 0);
    memcpy(h + 30, e->name, nlen);
    size_t n = 30 + nlen;
    if (e->zip64) {
        le16(h + n, 0x0001);
        le16(h + n + 2, 16);
        le64(h + n + 4, e->size);      /* uncompressed */
        le64(h + n + 12, e->size);     /* compressed */
        n += 20;
    }
    return put(z, h, n);
}

int lt_npz_begin(lt_npz *z, const char *name, const char *dtype, size_t itemsize,
                 const uint64_t *shape, int ndim)
{
    if (z->failed)
        return -1;
    if (z->open_entry)
        return fail(z, "entry still open");
    if (strlen(name) + 4 >= sizeof z->entries[0].name)
        return fail(z, "array name too long");
    if (z->nentries == z->cap) {
        int cap = z->cap ? z->cap * 2 : 8;
        lt_npz_entry *e = realloc(z->entries, sizeof *e * (size_t)cap);
        if (!e)
            return fail(z, "out of memory");
        z->entries = e;
        z->cap = cap;
    }
    /* the .npy header */
    char dict[512], shp[256] = "";
    uint64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        snprintf(shp + strlen(shp), sizeof shp - strlen(shp), "%llu,%s",
                 (unsigned long long)shape[i], i + 1 < ndim ? " " : "");
        count *= shape[i];
    }
    if (ndim > 1) /* "(4, 4)" rather than "(4, 4,)"; "(4,)" for one dimension */
        shp[strlen(shp) - 1] = '\0';
    char order = itemsize == 1 ? '|' : host_is_little() ? '<' : '>';
    int dl = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': (%s), }",
                      order, dtype, shp);
    size_t total = 10 + (size_t)dl + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = (size_t)dl + pad + 1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    le16(pre + 8, (unsigned)hlen);

    lt_npz_entry *e = &z->entries[z->nentries];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s.npy", name);
    off_t off = ftello(z->f);
    if (off < 0)
        return fail(z, "ftell: %s", strerror(errno));
    e->offset = (uint64_t)off;
    e->size = 10 + hlen + count * itemsize;
    e->zip64 = FORCE_ZIP64 || e->size >= U32_MAX || e->offset >= U32_MAX;
    if (local_header(z, e) != 0)
        return -1;
    z->open_entry = 1;
    z->expect = e->size;
    z->written = 0;
    z->crc = 0;
    char spaces[64];
    memset(spaces, ' ', sizeof spaces);
    if (lt_npz_write(z, pre, sizeof pre) || lt_npz_write(z, dict, (size_t)dl) ||
        lt_npz_write(z, spaces, pad) || lt_npz_write(z, "\n", 1))
        return -1;
    return 0;
}

int lt_npz_write(lt_npz *z, const void *data, size_t bytes)
{
    if (z->failed)
        return -1;
    if (!z->open_entry || z->written + bytes > z->expect)
        return fail(z, "more data than the array's shape holds");
    z->crc = lt_crc32(z->crc, data, bytes);
    z->written += bytes;
    return put(z, data, bytes);
}

int lt_npz_end(lt_npz *z)
{
    if (z->failed)
        return -1;
    if (!z->open_entry || z->written != z->expect)
        return fail(z, "array data incomplete (%llu of %llu bytes)",
                    (unsigned long long)z->written, (unsigned long long)z->expect);
    lt_npz_entry *e = &z->entries[z->nentries];
    e->crc = z->crc;
    off_t end = ftello(z->f);
    if (end < 0 || fseeko(z->f, (off_t)e->offset, SEEK_SET) != 0)
        return fail(z, "seek: %s", strerror(errno));
    if (local_header(z, e) != 0)
        return -1;
    if (fseeko(z->f, end, SEEK_SET) != 0)
        return fail(z, "seek: %s", strerror(errno));
    z->nentries++;
    z->open_entry = 0;
    return 0;
}

int lt_npz_array(lt_npz *z, const char *name, const char *dtype, size_t itemsize,
                 const uint64_t *shape, int ndim, const void *data)
{
    uint64_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= shape[i];
    if (lt_npz_begin(z, name, dtype, itemsize, shape, ndim) != 0)
        return -1;
    if (count && lt_npz_write(z, data, count * itemsize) != 0)
        return -1;
    return lt_npz_end(z);
}

/* UTF-8 to code points (invalid bytes become U+FFFD); returns the count. */
static size_t utf8_decode(const char *s, uint32_t *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        uint32_t c = *p;
        int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
        if (more < 0) {
            c = 0xfffd;
            p++;
        } else {
            c = more ? c & (0x3f >> more) : c;
            p++;
            for (int k = 0; k < more; k++, p++) {
                if ((*p & 0xc0) != 0x80) {
                    c = 0xfffd;
                    break;
                }
                c = (c << 6) | (*p & 0x3f);
            }
        }
        if (out)
            out[n] = c;
        n++;
    }
    return n;
}

static int write_strings(lt_npz *z, const char *name, const char *const *strs, size_t n, int ndim)
{
    size_t width = 1;
    for (size_t i = 0; i < n; i++) {
        size_t w = utf8_decode(strs[i], NULL);
        if (w > width)
            width = w;
    }
    char dtype[32];
    snprintf(dtype, sizeof dtype, "U%zu", width);
    uint64_t shape[1] = {n};
    if (lt_npz_begin(z, name, dtype, 4 * width, shape, ndim) != 0)
        return -1;
    uint32_t *buf = calloc(width, sizeof(uint32_t));
    if (!buf)
        return fail(z, "out of memory");
    for (size_t i = 0; i < n && !z->failed; i++) {
        memset(buf, 0, width * sizeof(uint32_t));
        /* UCS-4 in host order, which the descr names */
        utf8_decode(strs[i], buf);
        lt_npz_write(z, buf, width * sizeof(uint32_t));
    }
    free(buf);
    return lt_npz_end(z);
}

int lt_npz_string(lt_npz *z, const char *name, const char *utf8)
{
    return write_strings(z, name, &utf8, 1, 0);
}

int lt_npz_strings(lt_npz *z, const char *name, const char *const *strs, size_t n)
{
    return write_strings(z, name, strs, n, 1);
}

int lt_npz_close(lt_npz *z)
{
    if (z->failed || z->open_entry) {
        if (!z->failed)
            fail(z, "an array was not ended");
        lt_npz_abort(z);
        return -1;
    }
    off_t cd_start = ftello(z->f);
    if (cd_start < 0) {
        fail(z, "ftell: %s", strerror(errno));
        lt_npz_abort(z);
        return -1;
    }
    int any64 = FORCE_ZIP64;
    for (int i = 0; i < z->nentries; i++) {
        lt_npz_entry *e = &z->entries[i];
        unsigned char h[46 + 64 + 28];
        size_t nlen = strlen(e->name);
        memset(h, 0, sizeof h);
        le32(h, 0x02014b50);
        le16(h + 4, (3 << 8) | (e->zip64 ? 45 : 20)); /* made by: Unix */
        le16(h + 6, e->zip64 ? 45 : 20);
        le16(h + 12, (1 << 5) | 1);
        le32(h + 16, e->crc);
        le32(h + 20, e->zip64 ? (uint32_t)U32_MAX : (uint32_t)e->size);
        le32(h + 24, e->zip64 ? (uint32_t)U32_MAX : (uint32_t)e->size);
        le16(h + 28, (unsigned)nlen);
        le16(h + 30, e->zip64 ? 28 : 0);
        le32(h + 38, 0100644u << 16);                 /* external: regular file 0644 */
        le32(h + 42, e->zip64 ? (uint32_t)U32_MAX : (uint32_t)e->offset);
        memcpy(h + 46, e->name, nlen);
        size_t n = 46 + nlen;
        if (e->zip64) {
            any64 = 1;
            le16(h + n, 0x0001);
            le16(h + n + 2, 24);
            le64(h + n + 4, e->size);
            le64(h + n + 12, e->size);
            le64(h + n + 20, e->offset);
            n += 28;
        }
        put(z, h, n);
    }
    off_t cd_end = ftello(z->f);
    uint64_t cd_size = (uint64_t)(cd_end - cd_start);
    if ((uint64_t)cd_start >= U32_MAX || z->nentries >= 0xffff)
        any64 = 1;
    if (any64) {
        unsigned char r[56 + 20];
        memset(r, 0, sizeof r);
        le32(r, 0x06064b50);
        le64(r + 4, 44);                 /* size of the rest of this record */
        le16(r + 12, (3 << 8) | 45);
        le16(r + 14, 45);
        le64(r + 24, (uint64_t)z->nentries);
        le64(r + 32, (uint64_t)z->nentries);
        le64(r + 40, cd_size);
        le64(r + 48, (uint64_t)cd_start);
        le32(r + 56, 0x07064b50);        /* locator */
        le64(r + 64, (uint64_t)cd_end);  /* offset of the ZIP64 end record */
        le32(r + 72, 1);                 /* disks */
        put(z, r, sizeof r);
    }
    unsigned char eocd[22];
    memset(eocd, 0, sizeof eocd);
    le32(eocd, 0x06054b50);
    unsigned cnt = z->nentries >= 0xffff ? 0xffff : (unsigned)z->nentries;
    le16(eocd + 8, cnt);
    le16(eocd + 10, cnt);
    le32(eocd + 12, cd_size >= U32_MAX ? (uint32_t)U32_MAX : (uint32_t)cd_size);
    le32(eocd + 16, any64 ? (uint32_t)U32_MAX : (uint32_t)cd_start);
    put(z, eocd, sizeof eocd);

    if (!z->failed && (fflush(z->f) != 0 || fsync(fileno(z->f)) != 0))
        fail(z, "cannot write %s: %s", z->tmp, strerror(errno));
    if (fclose(z->f) != 0 && !z->failed)
        fail(z, "cannot write %s: %s", z->tmp, strerror(errno));
    z->f = NULL;
    if (!z->failed && rename(z->tmp, z->path) != 0)
        fail(z, "cannot rename %s to %s: %s", z->tmp, z->path, strerror(errno));
    if (z->failed) {
        unlink(z->tmp);
        free(z->entries);
        z->entries = NULL;
        return -1;
    }
    free(z->entries);
    z->entries = NULL;
    return 0;
}

void lt_npz_abort(lt_npz *z)
{
    if (z->f)
        fclose(z->f);
    z->f = NULL;
    if (z->tmp[0])
        unlink(z->tmp);
    z->tmp[0] = '\0';
    free(z->entries);
    z->entries = NULL;
}
