/* Unit tests of mem-test's workload model, memory operations, verification and
 * option table. */
#include "cb_test.h"
#include "mem-test/memops.h"
#include "mem-test/options.h"
#include "mem-test/workload.h"

#include <stdlib.h>
#include <string.h>

static void *aligned(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n) != 0)
        abort();
    memset(p, 0, n);
    return p;
}

/* The workload's defaults are the option table's (mem-test has no other copy). */
static void mt_params_default(mt_params *p)
{
    mt_config c;
    memset(&c, 0, sizeof c);
    cb_opts_defaults(&mt_cmd, &c);
    *p = c.p;
}

static void test_workload(void)
{
    mt_params p;
    mt_params_default(&p);
    CHECK(mt_params_check(&p) == NULL);
    /* src/mem-test/README.md: 18 x (3 x 10 + 1.5 x 6) = 702 Gbit/s */
    CHECK_NEAR(mt_desired_gbits(&p), 702.0, 1e-6);
    mt_stage st[MT_NSTAGES];
    CHECK(mt_stages(&p, st) == 10);
    CHECK_NEAR(st[0].period_s, 128 * 9000 * 8 / 3e9, 1e-12);
    CHECK(st[2].op == MT_TRANSPOSE && st[2].rows == 128 && st[2].cols == 1125);
    CHECK_NEAR(mt_hyperperiod_s(&p), 1024 * 9000 * 8 / 3e9, 1e-12);
    /* every period divides the hyperperiod */
    for (int i = 0; i < 10; i++) {
        double q = mt_hyperperiod_s(&p) / st[i].period_s;
        CHECK_NEAR(q, (double)(long)(q + 0.5), 1e-9);
    }
    p.stations = 1;
    CHECK_NEAR(mt_desired_gbits(&p), 39.0, 1e-9);
    p.reduction = 1;
    CHECK_NEAR(mt_desired_gbits(&p), 3.0 * 16, 1e-9);
    p.reduction = 2;
    mt_set_desired(&p, 8.0);
    CHECK_NEAR(mt_desired_gbits(&p), 8.0, 1e-9);
    CHECK_NEAR(p.input_gbits, 8.0 / 13.0, 1e-12);
    p.op_mask = 1u << MT_COPY;
    CHECK(mt_stages(&p, st) == 4);
    mt_params_default(&p);
    p.op_mask = 1u << MT_COPY;
    /* copies only: 18 x (3 x 2 x 2 + 1.5 x 2 x 2) */
    CHECK_NEAR(mt_desired_gbits(&p), 18 * (12 + 6.0), 1e-6);

    mt_params_default(&p);
    p.packet_bytes = 9001;
    CHECK(mt_params_check(&p) != NULL);
    mt_params_default(&p);
    p.large_packets = 1000;
    CHECK(mt_params_check(&p) != NULL);
    mt_params_default(&p);
    p.sample_bytes = 3;
    CHECK(mt_params_check(&p) != NULL);
    mt_params_default(&p);
    p.stations = 0;
    CHECK(mt_params_check(&p) != NULL);
}

static void test_ops(void)
{
    const size_t n = 1 << 16; /* words */
    uint64_t *a = aligned(n * 8), *b = aligned(n * 8);
    mt_fill(a, n, 1000);
    int ok = 1;
    for (size_t i = 0; i < n; i++)
        ok &= a[i] == 1000 + i;
    CHECK(ok);
    CHECK(mt_sum(a, n) == 1000 * (uint64_t)n + (uint64_t)n * (n - 1) / 2);
    CHECK(mt_sum(a, 3) == 1000 + 1001 + 1002);
    /* copy of odd lengths and offsets against memcmp */
    for (size_t len = 8; len < 2000; len += 40) {
        memset(b, 0, n * 8);
        mt_copy((char *)b + 8, (char *)a + 16, len);
        CHECK(memcmp((char *)b + 8, (char *)a + 16, len) == 0);
        CHECK(((uint64_t *)((char *)b + 8 + len))[0] == 0); /* no overrun */
    }
    mt_copy(b, a, n * 8);
    CHECK(memcmp(a, b, n * 8) == 0);
    free(a);
    free(b);
}

static void test_transpose_shape(size_t rows, size_t cols, size_t es)
{
    unsigned char *s = aligned(rows * cols * es), *d = aligned(rows * cols * es);
    for (size_t i = 0; i < rows * cols * es; i++)
        s[i] = (unsigned char)(i * 7 + i / 251);
    mt_transpose(d, s, rows, cols, es);
    int ok = 1;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            ok &= memcmp(d + (c * rows + r) * es, s + (r * cols + c) * es, es) == 0;
    CHECK(ok);
    free(s);
    free(d);
}

static void test_verification(void)
{
    /* the spot positions, pinned: the tags must stay where they always were */
    CHECK(mt_spot(7, 0, 1000) == 0 && mt_spot(7, 1, 1000) == 999);
    CHECK(mt_spot(7, 3, 1000) == 300 && mt_spot(12345, 7, 1u << 20) == 500997);
    const size_t rows = 128, cols = 1125, n = rows * cols;
    uint64_t *s = aligned(n * 8), *d = aligned(n * 8);
    mt_fill(s, n, 5);
    for (uint64_t seed = 1; seed < 50; seed++) {
        /* a real copy passes, a skipped one fails */
        mt_stamp(s, n, 8, seed);
        mt_copy(d, s, n * 8);
        CHECK(mt_check_copy(d, n, 8, seed) == 0);
        mt_stamp(s, n, 8, seed + 1000);
        CHECK(mt_check_copy(d, n, 8, seed + 1000) > 0);
        /* a copy one word short is always caught (last element is a spot) */
        mt_stamp(s, n, 8, seed + 2000);
        mt_copy(d, s, (n - 1) * 8);
        CHECK(mt_check_copy(d, n, 8, seed + 2000) > 0);
        /* transposes: the tag must move to (c, r) */
        mt_stamp(s, n, 8, seed);
        mt_transpose(d, s, rows, cols, 8);
        CHECK(mt_check_transpose(d, rows, cols, 8, seed) == 0);
        mt_copy(d, s, n * 8); /* a copy is not a transpose */
        CHECK(mt_check_transpose(d, rows, cols, 8, seed) > 0);
        /* fills */
        mt_fill(d, n, seed);
        CHECK(mt_check_fill(d, n, seed) == 0);
        CHECK(mt_check_fill(d, n, seed + 1) > 0);
    }
    /* reads: the known sum follows the stamps; a short read is caught */
    uint64_t expect = mt_sum(s, n);
    for (uint64_t seed = 1; seed < 20; seed++) {
        mt_stamp_sum(s, n, seed, &expect);
        CHECK(mt_sum(s, n) == expect);
        CHECK(mt_sum(s, n - 1) != expect);
    }
    /* 4- and 16-byte samples */
    mt_stamp(s, rows * cols * 2, 4, 77);
    mt_transpose(d, s, rows, cols * 2, 4);
    CHECK(mt_check_transpose(d, rows, cols * 2, 4, 77) == 0);
    mt_stamp(s, rows * (cols / 2), 16, 78);
    mt_transpose(d, s, rows, cols / 2, 16);
    CHECK(mt_check_transpose(d, rows, cols / 2, 16, 78) == 0);
    free(s);
    free(d);
}

/* Every kernel level this machine runs (MEM_TEST_KERNELS): each turns the mem-test
 * shapes exactly (every element compared), copies exactly, and a corrupted transposed
 * element in its output is caught by the block's check. On a CPU with AVX-512 the
 * avx512 level runs too; the generic level is the same source compiled without it. */
static void test_kernel_levels(void)
{
    static const char *const names[] = {"generic", "sse2", "avx2", "avx512"};
    const char *why = NULL;
    int ran = 0;
    CHECK(mt_set_kernels("bogus", &why) == -1 && why && strstr(why, "expected"));
    for (int k = 0; k < 4; k++) {
        if (mt_set_kernels(names[k], &why) != 0) {
            printf("mem-test kernels %s: not run here (%s)\n", names[k], why);
            continue;
        }
        ran++;
        CHECK(strcmp(mt_isa(), names[k]) == 0);
        static const char *const bands[] = {"8", "16", "32", "64"};
        for (int b = 0; b < 4; b++) { /* every band height it may use */
            CHECK(mt_set_band_rows(bands[b], &why) == 0 && mt_band_rows() == atoi(bands[b]));
            test_transpose_shape(128, 1125, 8);
            test_transpose_shape(1024, 1125, 8);
            test_transpose_shape(24, 16, 8);   /* one band of 3 tiles (fewer than 64 rows) */
            test_transpose_shape(72, 19, 8);   /* a full band of 64 rows, then one of 8 */
            test_transpose_shape(200, 1125, 8); /* 3 full bands, then one of 8 rows */
            test_transpose_shape(8, 8, 8);
            test_transpose_shape(16, 3, 8);    /* fewer columns than a tile */
        }
        CHECK(mt_set_band_rows("", &why) == 0);
        const size_t rows = 1024, cols = 1125, n = rows * cols;
        uint64_t *s = aligned(n * 8), *d = aligned(n * 8);
        mt_fill(s, n, 9);
        mt_copy(d, s, n * 8);
        CHECK(memcmp(d, s, n * 8) == 0);
        for (uint64_t seed = 1; seed < 20; seed++) {
            mt_stamp(s, n, 8, seed);
            mt_transpose(d, s, rows, cols, 8);
            CHECK(mt_check_transpose(d, rows, cols, 8, seed) == 0);
            mt_fault_transposed(d, rows, cols, 8, seed);
            CHECK(mt_check_transpose(d, rows, cols, 8, seed) == 1);
        }
        free(s);
        free(d);
    }
#if defined(__x86_64__)
    CHECK(ran >= 2); /* generic and sse2 run on every x86-64 CPU */
#else
    CHECK(ran == 1 && mt_set_kernels("avx2", &why) == -1);
#endif
    /* back to the best level, which the rest of the tests use */
    CHECK(mt_set_kernels(names[ran - 1], &why) == 0);
}

/* The band height: this CPU's own unless forced; a height outside the choices is
 * refused; "" goes back to the CPU's own. */
static void test_band_rows(void)
{
    const char *why = NULL;
    int own = mt_band_rows();
    /* the row of the table the CPU matched, and that row's parameters */
    if (strcmp(mt_transpose_tuning(), "amd-avx512") == 0)
        CHECK(own == 16 && mt_prefetch_bytes() == 256 && mt_copy_prefetch_bytes() == 0);
    else if (strcmp(mt_transpose_tuning(), "intel-amx") == 0)
        CHECK(own == 32 && mt_prefetch_bytes() == 768 && mt_copy_prefetch_bytes() == 768);
    else
        CHECK(strcmp(mt_transpose_tuning(), "default") == 0 && own == 64 &&
              mt_prefetch_bytes() == 768 && mt_copy_prefetch_bytes() == 0);
    CHECK(mt_set_band_rows("24", &why) == -1 && why && strstr(why, "8, 16, 32, 64"));
    CHECK(mt_set_band_rows("016", &why) == -1 && mt_set_band_rows("16x", &why) == -1);
    CHECK(mt_band_rows() == own);
    CHECK(mt_set_band_rows("32", &why) == 0 && mt_band_rows() == 32);
    CHECK(mt_set_band_rows("", &why) == 0 && mt_band_rows() == own);
}

static void test_options(void)
{
    mt_config c;
    const char *none[] = {"mem-test", NULL};
    mt_config_parse(&c, 1, (char **)none);
    CHECK(c.p.stations == 18 && c.p.input_gbits == 3.0 && c.p.reduction == 2);
    CHECK(c.p.packet_bytes == 9000 && c.p.small_packets == 128 && c.p.large_packets == 1024);
    CHECK(c.p.sample_bytes == 8 && c.p.op_mask == (1u << MT_NOPS) - 1);
    CHECK(c.duration_s == 10 && c.threshold == 99.75 && !c.max_mode && !c.quiet);
    CHECK(c.nodes.n == 0 && c.threads_per_domain == 0 && c.json_path == NULL);

    const char *some[] = {"mem-test", "--packet-size", "9K", "--ops", "copy,read", "-d", "2m",
                          "-r", "8", "-n", "0-1", "-T", "2", "-t", "90", "-m", "-q", NULL};
    mt_config_parse(&c, 17, (char **)some);
    CHECK(c.p.packet_bytes == 9216 && c.p.op_mask == ((1u << MT_COPY) | (1u << MT_READ)));
    CHECK(c.duration_s == 120 && c.max_mode && c.quiet && c.threshold == 90);
    CHECK(c.nodes.n == 2 && c.nodes.v[1] == 1 && c.threads_per_domain == 2);
    CHECK_NEAR(mt_desired_gbits(&c.p), 8.0, 1e-9); /* --desired-rate scales the input rate */

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cb_opts_help(&mt_cmd, f);
    fclose(f);
    CHECK(strstr(text, "702 Gbit/s") && strstr(text, "Exit status"));
    CHECK(strstr(text, "--stations=N") && strstr(text, "(default 18)"));
    CHECK(strstr(text, "--packet-size=BYTES") && strstr(text, "(default 9000)"));
    free(text);
}

int main(void)
{
    test_workload();
    test_options();
    test_ops();
    test_transpose_shape(128, 1125, 8);
    test_transpose_shape(1024, 1125, 8);
    test_transpose_shape(8, 8, 8);
    test_transpose_shape(7, 13, 8); /* not a multiple of the tile: generic path */
    test_transpose_shape(128, 2250, 4);
    test_transpose_shape(64, 562, 16);
    test_transpose_shape(33, 65, 16);
    test_verification();
    test_kernel_levels();
    test_band_rows();
    printf("mem-test kernels: %s\n", mt_isa());
    CBT_DONE();
}
