/* A writer of NumPy .npz files (a ZIP archive of .npy arrays, entries stored
 * uncompressed), written as the formats are documented: the NumPy .npy
 * format (version 1.0 header, little- or big-endian as the host is) and the
 * ZIP application note (with ZIP64 records when an entry or the archive
 * passes 4 GiB). Arrays can be streamed: begin an entry with its shape, then
 * write its data in pieces (rows of a matrix), then end it.
 *
 * The archive goes to a temporary file beside the target and is renamed over
 * it only by lt_npz_close, after fsync: a failed run never leaves a broken
 * file, and an existing file stays until the new one is complete. */
#ifndef CB_LINKTEST_NPZ_H
#define CB_LINKTEST_NPZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct lt_npz_entry {
    char name[64];
    uint64_t offset;   /* of its local header */
    uint64_t size;     /* bytes of the .npy file */
    uint32_t crc;
    int zip64;
} lt_npz_entry;

typedef struct lt_npz {
    FILE *f;
    char path[4096], tmp[4200];
    lt_npz_entry *entries;
    int nentries, cap;
    /* the entry being written */
    int open_entry;
    uint64_t expect, written;
    uint32_t crc;
    int failed;
    char error[256];
} lt_npz;

/* dtype strings: "f8" (double), "i8" (int64), "i4" (int32); byte order is
 * added. Unicode strings are written as NumPy "<U" arrays (UCS-4). */
int lt_npz_open(lt_npz *z, const char *path);
int lt_npz_begin(lt_npz *z, const char *name, const char *dtype, size_t itemsize,
                 const uint64_t *shape, int ndim);
int lt_npz_write(lt_npz *z, const void *data, size_t bytes);
int lt_npz_end(lt_npz *z);
/* begin + write + end */
int lt_npz_array(lt_npz *z, const char *name, const char *dtype, size_t itemsize,
                 const uint64_t *shape, int ndim, const void *data);
/* A 0-d string array (UTF-8 in, UCS-4 out). */
int lt_npz_string(lt_npz *z, const char *name, const char *utf8);
/* A 1-d string array of n strings. */
int lt_npz_strings(lt_npz *z, const char *name, const char *const *strs, size_t n);
/* Central directory, fsync, rename. Returns 0, or -1 (temporary file removed). */
int lt_npz_close(lt_npz *z);
/* Gives up: removes the temporary file. */
void lt_npz_abort(lt_npz *z);

uint32_t lt_crc32(uint32_t crc, const void *data, size_t n);

#endif
