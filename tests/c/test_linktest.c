/* Unit tests of cb-linktest's schedule and its .npz writer (no MPI).
 *
 *   test_linktest           the tests
 *   test_linktest DIR       also writes sample .npz files into DIR (plain and
 *                           ZIP64) for tests/test_linktest.py to read with NumPy */
#include "cb_test.h"
#include "cb-linktest/npz.h"
#include "cb-linktest/schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* npz.c's ZIP64 switch, compiled in only for this test (-DLT_NPZ_TEST_ZIP64 in
 * src/cb-linktest/kernel.mk): ZIP64 records even for small files. */
int lt_npz_test_force_zip64;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int exhaustive_ok(int n, const int *host, int group, int bisection, int randomize)
{
    lt_sched s;
    char why[256] = "";
    if (lt_sched_init(&s, n, host, group, bisection) != 0)
        return 0;
    if (randomize)
        lt_sched_randomize(&s, 12345);
    int ok = lt_sched_check_exhaustive(&s, why, sizeof why) == 0;
    if (!ok)
        fprintf(stderr, "N=%d group=%d bisection=%d: %s\n", n, group, bisection, why);
    lt_sched_free(&s);
    return ok;
}

static void test_small_schedules(void)
{
    int bad = 0;
    for (int n = 2; n <= 130; n += 2) {
        bad += !exhaustive_ok(n, NULL, 0, 0, 0);
        bad += !exhaustive_ok(n, NULL, 0, 1, 0);
        bad += !exhaustive_ok(n, NULL, 0, 0, 1);
    }
    CHECK(bad == 0);

    /* the classic shapes: N-1 steps of N/2 pairs; bisection N/2 steps */
    lt_sched s;
    CHECK(lt_sched_init(&s, 8, NULL, 0, 0) == 0);
    CHECK(s.nsteps == 7);
    for (long k = 0; k < s.nsteps; k++)
        CHECK(lt_pairs_in_step(&s, k) == 4);
    CHECK(lt_expected_pairs(&s) == 28);
    lt_sched_free(&s);
    CHECK(lt_sched_init(&s, 8, NULL, 0, 1) == 0);
    CHECK(s.nsteps == 4);
    CHECK(lt_expected_pairs(&s) == 16);
    for (long k = 0; k < s.nsteps; k++)
        for (int r = 0; r < 8; r++) /* always across the halves */
            CHECK((r < 4) != (lt_partner(&s, r, k) < 4));
    lt_sched_free(&s);
    CHECK(lt_sched_init(&s, 1, NULL, 0, 0) == -1);
}

static void test_grouped_schedules(void)
{
    /* hosts of equal and unequal sizes, block and round-robin placement */
    int host[64];
    int bad = 0;
    for (int n = 2; n <= 64; n += 2)
        for (int hosts = 1; hosts <= n && hosts <= 9; hosts++) {
            for (int r = 0; r < n; r++)
                host[r] = r * hosts / n;
            bad += !exhaustive_ok(n, host, 1, 0, 0);
            bad += !exhaustive_ok(n, host, 1, 1, 0);
            for (int r = 0; r < n; r++)
                host[r] = 1000 + r % hosts; /* round-robin, arbitrary numbers */
            bad += !exhaustive_ok(n, host, 1, 0, 1);
            bad += !exhaustive_ok(n, host, 1, 1, 0);
        }
    CHECK(bad == 0);

    /* 4 hosts x 4 ranks: only pairs across hosts, every step full */
    lt_sched s;
    for (int r = 0; r < 16; r++)
        host[r] = r / 4;
    CHECK(lt_sched_init(&s, 16, host, 1, 0) == 0);
    CHECK(s.ngroups == 4 && s.gsize == 4);
    CHECK(s.nsteps == 12);
    CHECK(lt_expected_pairs(&s) == 6 * 16);
    for (long k = 0; k < s.nsteps; k++)
        CHECK(lt_pairs_in_step(&s, k) == 8);
    CHECK(!lt_pair_expected(&s, 0, 3) && lt_pair_expected(&s, 0, 4));
    lt_sched_free(&s);

    /* one host: nothing to test */
    for (int r = 0; r < 16; r++)
        host[r] = 7;
    CHECK(lt_sched_init(&s, 16, host, 1, 0) == 0);
    CHECK(lt_expected_pairs(&s) == 0);
    lt_sched_free(&s);
}

static void test_large_schedules(void)
{
    /* exhaustive up to 4096 ranks, as the issue asks, in about a second each */
    int sizes[] = {1000, 4096};
    for (int i = 0; i < 2; i++) {
        double t0 = now_s();
        CHECK(exhaustive_ok(sizes[i], NULL, 0, 0, 0));
        CHECK(exhaustive_ok(sizes[i], NULL, 0, 1, 0));
        printf("exhaustive check, %d ranks (all pairs and bisection): %.2f s\n", sizes[i], now_s() - t0);
    }
    /* 4096 ranks on 512 hosts of 8 */
    int *host = malloc(sizeof(int) * 4096);
    for (int r = 0; r < 4096; r++)
        host[r] = r / 8;
    CHECK(exhaustive_ok(4096, host, 1, 0, 0));
    free(host);

    /* 100000 ranks: partner sequences of sampled ranks are permutations */
    lt_sched s;
    char why[256] = "";
    for (int bis = 0; bis < 2; bis++) {
        double t0 = now_s();
        CHECK(lt_sched_init(&s, 100000, NULL, 0, bis) == 0);
        CHECK(s.nsteps == (bis ? 50000 : 99999));
        CHECK(lt_sched_check_sampled(&s, 64, 42, why, sizeof why) == 0);
        lt_sched_free(&s);
        double dt = now_s() - t0;
        printf("sampled check, 100000 ranks%s: %.2f s\n", bis ? " (bisection)" : "", dt);
        CHECK(dt < 10);
    }
}

static void test_checkers_catch_errors(void)
{
    lt_sched s;
    char why[256] = "";
    /* a rank listed twice in its group's members, another missing */
    int host[12];
    for (int r = 0; r < 12; r++)
        host[r] = r / 3;
    CHECK(lt_sched_init(&s, 12, host, 1, 0) == 0);
    CHECK(lt_sched_check_exhaustive(&s, why, sizeof why) == 0);
    s.members[s.start[1] + 1] = s.members[s.start[1]];
    CHECK(lt_sched_check_exhaustive(&s, why, sizeof why) == -1);
    CHECK(strlen(why) > 0);
    why[0] = '\0';
    CHECK(lt_sched_check_sampled(&s, 12, 1, why, sizeof why) == -1);
    CHECK(strlen(why) > 0);
    lt_sched_free(&s);

    /* a schedule cut short: pairs missing */
    CHECK(lt_sched_init(&s, 10, NULL, 0, 0) == 0);
    s.nsteps--;
    CHECK(lt_sched_check_exhaustive(&s, why, sizeof why) == -1);
    CHECK(strstr(why, "never meets") != NULL);
    CHECK(lt_sched_check_sampled(&s, 10, 1, why, sizeof why) == -1);
    s.nsteps++;
    lt_sched_free(&s);

    /* randomized order is a permutation of the steps */
    CHECK(lt_sched_init(&s, 64, NULL, 0, 0) == 0);
    lt_sched_randomize(&s, 99);
    char *seen = calloc((size_t)s.nsteps, 1);
    int moved = 0;
    for (long k = 0; k < s.nsteps; k++) {
        seen[s.order[k]]++;
        moved += s.order[k] != k;
    }
    int perm = 1;
    for (long k = 0; k < s.nsteps; k++)
        perm &= seen[k] == 1;
    CHECK(perm && moved > 0);
    free(seen);
    lt_sched_free(&s);
}

static void test_crc(void)
{
    CHECK(lt_crc32(0, "123456789", 9) == 0xcbf43926u); /* the standard check value */
    CHECK(lt_crc32(lt_crc32(0, "1234", 4), "56789", 5) == 0xcbf43926u);
}

/* A small results file: time[3,3] with NaN, hosts, meta; ZIP64 if asked. */
static int write_sample(const char *path, int zip64)
{
    lt_npz z;
    if (lt_npz_open(&z, path) != 0)
        return -1;
    lt_npz_test_force_zip64 = zip64;
    uint64_t shape[2] = {3, 3};
    lt_npz_begin(&z, "time", "f8", 8, shape, 2);
    for (int r = 0; r < 3; r++) { /* streamed by rows */
        double row[3];
        for (int c = 0; c < 3; c++)
            row[c] = r == c ? NAN : (r + 1) * 10 + (c + 1);
        lt_npz_write(&z, row, sizeof row);
    }
    lt_npz_end(&z);
    const char *hosts[3] = {"node-a", "n\xc3\xa9", "c"};
    lt_npz_strings(&z, "hosts", hosts, 3);
    int64_t pairs[4] = {0, 1, 1, 2};
    uint64_t s2[2] = {2, 2};
    lt_npz_array(&z, "pairs", "i8", 8, s2, 2, pairs);
    uint64_t s0[2] = {0, 2};
    lt_npz_array(&z, "empty", "i8", 8, s0, 2, NULL);
    lt_npz_string(&z, "meta", "{\"format\": \"test\"}");
    int rc = lt_npz_close(&z);
    lt_npz_test_force_zip64 = 0;
    return rc;
}

static void test_npz(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sample.npz", dir);
    CHECK(write_sample(path, 0) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size > 0);
    snprintf(path, sizeof path, "%s/sample64.npz", dir);
    CHECK(write_sample(path, 1) == 0);

    /* ZIP structure: local header first, end record last */
    FILE *f = fopen(path, "rb");
    unsigned char head[4], tail[22];
    CHECK(f && fread(head, 1, 4, f) == 4);
    CHECK(head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4);
    CHECK(fseek(f, -22, SEEK_END) == 0 && fread(tail, 1, 22, f) == 22);
    CHECK(tail[0] == 'P' && tail[1] == 'K' && tail[2] == 5 && tail[3] == 6);
    CHECK(tail[10] == 5); /* five entries */
    fclose(f);

    /* a failed writer leaves nothing: not the target, not its temporary */
    snprintf(path, sizeof path, "%s/broken.npz", dir);
    lt_npz z;
    CHECK(lt_npz_open(&z, path) == 0);
    uint64_t shape[1] = {4};
    lt_npz_begin(&z, "x", "f8", 8, shape, 1);
    double two[2] = {1, 2};
    lt_npz_write(&z, two, sizeof two);
    CHECK(lt_npz_close(&z) == -1); /* the array is incomplete */
    CHECK(strstr(z.error, "incomplete") != NULL || strstr(z.error, "not ended") != NULL);
    CHECK(access(path, F_OK) != 0);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s", z.tmp);
    CHECK(z.tmp[0] == '\0' || access(tmp, F_OK) != 0);
    /* more data than the shape */
    CHECK(lt_npz_open(&z, path) == 0);
    lt_npz_begin(&z, "x", "f8", 8, shape, 1);
    double five[5] = {0};
    CHECK(lt_npz_write(&z, five, sizeof five) == -1);
    lt_npz_abort(&z);
    CHECK(access(path, F_OK) != 0);
    /* no directory */
    CHECK(lt_npz_open(&z, "/nonexistent-dir/x.npz") == -1);
}

int main(int argc, char **argv)
{
    test_small_schedules();
    test_grouped_schedules();
    test_checkers_catch_errors();
    test_large_schedules();
    test_crc();
    char dir[] = "/tmp/test_linktest.XXXXXX";
    const char *out = argc > 1 ? argv[1] : mkdtemp(dir);
    CHECK(out != NULL);
    if (out)
        test_npz(out);
    if (argc <= 1 && out) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
        CHECK(system(cmd) == 0);
    }
    CBT_DONE();
}
