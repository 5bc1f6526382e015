/* Unit tests of cpu-test: the FMA streams and their verification, the ISA table and
 * --isa, the cores kept per core, the spread and the drop, and the option table. */
#define _GNU_SOURCE
#include "cb_test.h"
#include "cpu-test/cpus.h"
#include "cpu-test/isa.h"
#include "cpu-test/options.h"
#include "cpu-test/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The reference against results known in closed form: x + a x with a = 1 doubles x and
 * with a = -1/2 halves it, exactly; with a = 2^-10 from 1 it is (1 + 2^-10)^n, exact in
 * a double while its 10 n + 1 bits fit (n <= 5); one step further it must round. */
static void test_reference_closed_form(void)
{
    double start[3] = {1.0, 3.0, 1.5}, out[3];
    ct_fma_reference(start, out, 3, 1.0, 40);
    for (int k = 0; k < 3; k++)
        CHECK(out[k] == start[k] * 0x1p40);
    ct_fma_reference(start, out, 3, -0.5, 40);
    for (int k = 0; k < 3; k++)
        CHECK(out[k] == start[k] * 0x1p-40);
    double one = 1.0, x, p = 1.0;
    for (int n = 1; n <= 5; n++)
        p *= 1 + 0x1p-10;
    ct_fma_reference(&one, &x, 1, 0x1p-10, 5);
    CHECK(x == p);
    long double exact = (long double)p * (1 + 0x1p-10L) * (1 + 0x1p-10L);
    ct_fma_reference(&one, &x, 1, 0x1p-10, 7);
    CHECK(fabsl((long double)x - exact) <= 0x1p-52L && (long double)x != exact);
}

/* The workload's chains: distinct starts in [1, 2); a block moves them (every step
 * rounds) down by a few percent at most; a start off by 2^-20 still ends elsewhere
 * after a whole block (scaling by 1 + a does not heal an error), so CPU_TEST_FAULT=lane
 * must be caught. */
static void test_workload_numbers(void)
{
    double start[CT_MAX_VALUES], want[CT_MAX_VALUES], off[CT_MAX_VALUES], got[CT_MAX_VALUES];
    ct_start_values(start, CT_MAX_VALUES);
    for (int k = 0; k < CT_MAX_VALUES; k++) {
        CHECK(start[k] >= 1.0 && start[k] < 2.0);
        CHECK(k == 0 || start[k] > start[k - 1]);
    }
    CHECK(ct_a < 0 && ct_a > -1e-5);
    ct_fma_reference(start, want, CT_MAX_VALUES, ct_a, CT_BLOCK_ITERS);
    int moved = 0;
    for (int k = 0; k < CT_MAX_VALUES; k++) {
        CHECK(isfinite(want[k]) && want[k] > 0.97 * start[k] && want[k] < start[k]);
        moved += want[k] != start[k];
    }
    CHECK(moved == CT_MAX_VALUES);
    memcpy(off, start, sizeof off);
    off[77] += 0x1p-20;
    ct_fma_reference(off, got, CT_MAX_VALUES, ct_a, CT_BLOCK_ITERS);
    int first;
    CHECK(ct_check(got, want, CT_MAX_VALUES, &first) == 1 && first == 77);
}

/* Every ISA this CPU runs gives the reference's bits: an FMA rounds once, so a vector
 * FMA and scalar fma() agree exactly; the check finds a flipped last bit in any lane and
 * a NaN. */
static void test_each_isa_matches_the_reference(void)
{
    double start[CT_MAX_VALUES], want[CT_MAX_VALUES], got[CT_MAX_VALUES];
    ct_start_values(start, CT_MAX_VALUES);
    ct_fma_reference(start, want, CT_MAX_VALUES, ct_a, 1000);
    int ran = 0;
    for (int i = 0; i < CT_NISA; i++) {
        if (!ct_isa_supported((ct_isa)i))
            continue;
        ran++;
        const ct_isa_info *info = ct_isa_of((ct_isa)i);
        int n = info->lanes * info->accumulators;
        memset(got, 0, sizeof got);
        ct_fma_block((ct_isa)i, start, got, ct_a, 1000);
        int first;
        CHECK(ct_check(got, want, n, &first) == 0 && first == -1);
        printf("isa %s: %d chains match the reference\n", info->name, n);
        for (int k = 0; k < n; k += 7) {
            uint64_t bits;
            memcpy(&bits, &got[k], sizeof bits);
            bits ^= 1;
            memcpy(&got[k], &bits, sizeof bits);
            CHECK(ct_check(got, want, n, &first) == 1 && first == k);
            memcpy(&got[k], &want[k], sizeof got[k]);
        }
        got[n - 1] = NAN;
        CHECK(ct_check(got, want, n, NULL) == 1);
    }
    CHECK(ran >= 1 && ct_isa_supported(CT_SCALAR));
}

static void test_isa_table(void)
{
    for (int i = 0; i < CT_NISA; i++) {
        const ct_isa_info *info = ct_isa_of((ct_isa)i);
        CHECK(info->lanes * info->accumulators <= CT_MAX_VALUES);
        CHECK(info->accumulators >= 8); /* two FMA pipes of latency 4, at least */
        ct_isa back;
        CHECK(ct_isa_from_name(info->name, &back) == 0 && back == (ct_isa)i);
    }
    /* --isa's names: "auto" first, then one per ISA */
    CHECK(strcmp(ct_isa_choices[0], "auto") == 0);
    int n = 0;
    for (int c = 1; ct_isa_choices[c]; c++, n++) {
        ct_isa isa;
        CHECK(ct_isa_from_name(ct_isa_choices[c], &isa) == 0);
    }
    CHECK(n == CT_NISA);
    ct_isa isa;
    CHECK(ct_isa_from_name("auto", &isa) == -1 && ct_isa_from_name("sse2", &isa) == -1);
    CHECK(ct_isa_supported(ct_isa_best()));
    char list[128];
    ct_isa_list_supported(list, sizeof list);
    CHECK(strstr(list, ct_isa_of(ct_isa_best())->name) == list);
    CHECK(strstr(list, "scalar") != NULL);
#if defined(__x86_64__)
    CHECK(!ct_isa_supported(CT_NEON));
#elif defined(__aarch64__)
    CHECK(ct_isa_best() == CT_NEON && !ct_isa_supported(CT_AVX2));
#endif
}

static void spread_and_throttle(void)
{
    double v[4] = {30, 10, 40, 20};
    ct_spread s = ct_spread_of(v, 4);
    CHECK(s.min == 10 && s.max == 40 && s.median == 25 && s.slowest == 1);
    CHECK_NEAR(s.ratio, 40.0, 1e-12);
    s = ct_spread_of(v, 0);
    CHECK(isnan(s.median) && s.slowest == -1);
    CHECK(ct_median((double[]){5, 1, 3}, 3) == 3);

    double rate[7] = {100, 90, 95, 80, 84, 80, 10}, len[7] = {1, 1, 1, 1, 1, 1.02, 0.3};
    /* the 0.3 s tail does not count; the last third of the six whole ones: 84, 80 */
    ct_throttle t = ct_throttle_of(rate, len, 7, 1.0);
    CHECK(t.first == 100 && t.sustained == 82);
    CHECK_NEAR(t.drop, 18.0, 1e-12);
    double rise[2] = {50, 60}, one[2] = {1, 1};
    t = ct_throttle_of(rise, one, 2, 1.0);
    CHECK(t.first == 50 && t.sustained == 60 && t.drop == -20);
    t = ct_throttle_of(rise, one, 1, 1.0);
    CHECK(isnan(t.first) && isnan(t.sustained) && isnan(t.drop));
    len[1] = 0.5; /* a short interval between whole ones is left out too */
    t = ct_throttle_of(rate, len, 3, 1.0);
    CHECK(t.first == 100 && t.sustained == 95);
}

static void put(const char *root, int cpu, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cpu%d", root, cpu);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/cpu%d/topology", root, cpu);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/cpu%d/topology/%s", root, cpu, file);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", text);
        fclose(f);
    }
}

/* One CPU per core: SMT siblings (0 and 2, 1 and 3 as Intel numbers them; 4-5 as
 * AMD's) are one core; the first sibling allowed counts, whichever that is. */
static void test_first_per_core(void)
{
    char root[] = "/tmp/cputest-sysfs-XXXXXX";
    if (!mkdtemp(root)) {
        CHECK(0);
        return;
    }
    put(root, 0, "core_cpus_list", "0,2");
    put(root, 2, "core_cpus_list", "0,2");
    put(root, 1, "core_cpus_list", "1,3");
    put(root, 3, "core_cpus_list", "1,3");
    put(root, 4, "thread_siblings_list", "4-5"); /* an older kernel's name */
    put(root, 5, "thread_siblings_list", "4-5");
    int out[8];
    int n = ct_first_per_core((int[]){0, 1, 2, 3, 4, 5, 6}, 7, root, out);
    CHECK(n == 4 && out[0] == 0 && out[1] == 1 && out[2] == 4 && out[3] == 6); /* 6: unknown */
    n = ct_first_per_core((int[]){2, 3, 5}, 3, root, out);
    CHECK(n == 3 && out[0] == 2 && out[1] == 3 && out[2] == 5);
    n = ct_first_per_core((int[]){1, 3}, 2, "/nonexistent", out);
    CHECK(n == 2);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);

    char list[64];
    ct_cpulist_str((int[]){0, 1, 2, 3, 8, 10, 11}, 7, list, sizeof list);
    CHECK(strcmp(list, "0-3,8,10-11") == 0);
    int mine[CB_MAX_CPUS];
    CHECK(ct_affinity(mine, CB_MAX_CPUS) >= 1);
}

static void test_options(void)
{
    ct_config c;
    const char *none[] = {"cpu-test", NULL};
    ct_config_parse(&c, 1, (char **)none);
    CHECK(c.duration_s == 10 && c.interval_s == 1 && c.isa_choice == 0 && c.burn_min == 0);
    CHECK(c.threads == 0 && c.cpus.n == 0 && c.desired_gflops == 0 && !c.quiet);
    const char *burn[] = {"cpu-test", "--burn", "2.5", "-i", "500ms", "--isa", "scalar",
                          "-c", "0", "-r", "30", "-q", NULL};
    ct_config_parse(&c, 12, (char **)burn);
    CHECK(c.duration_s == 150 && c.burn_min == 2.5 && c.interval_s == 0.5);
    CHECK(strcmp(ct_isa_choices[c.isa_choice], "scalar") == 0);
    CHECK(c.cpus.n == 1 && c.cpus.v[0] == 0 && c.desired_gflops == 30 && c.quiet);
    for (const cb_opt *o = ct_cmd.opts; o->name; o++)
        CHECK(o->doc_key || strcmp(o->name, "json") == 0 || strcmp(o->name, "quiet") == 0);
    for (const cb_metric_def *m = ct_metrics; m->name; m++)
        CHECK(cb_metric_find(ct_metrics, m->name) == m && m->unit && m->meaning);
}

int main(void)
{
    test_reference_closed_form();
    test_workload_numbers();
    test_each_isa_matches_the_reference();
    test_isa_table();
    spread_and_throttle();
    test_first_per_core();
    test_options();
    CBT_DONE();
}
