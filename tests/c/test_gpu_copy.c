/* Unit tests of gpu-copy's plain-C parts, without a GPU: the PCIe link arithmetic, the
 * sysfs reader and the one PCIe link rule (which cb-pcie-links and so preflight use too)
 * on the trees of tests/data/gpu-copy/ and tests/data/sysfs/, and the copy plan, run on
 * host memory with and without a lost copy (the verification must catch it). The hwloc
 * locality lookup is tested with the common wrapper, in tests/c/test_topo.c. */
#include "cb_test.h"
#include "common/cb_options.h"
#include "gpu-copy/pcie.h"
#include "gpu-copy/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef GC_TEST_DATA
#define GC_TEST_DATA "tests/data/gpu-copy"
#endif
#define TREE(name) GC_TEST_DATA "/" name
#define PREFLIGHT_TREE(name) GC_TEST_DATA "/../sysfs/" name "/sys"

/* ---- test-only helpers: host-memory versions of the engine's device kernels ---- */
/* Fills a device region as the engine's fill kernel does. */
static void region_fill_dev(uint64_t *base, const gc_region *r)
{
    for (uint64_t w = 0; w < r->bytes / 8; w++)
        base[w] = gc_dev_expected(&r->map, r->seed, w);
}

/* Checks a device region as the engine's check kernel does: the wrong words, and the
 * byte offset of the first in *first. */
static uint64_t region_check_dev(const uint64_t *base, const gc_region *r, uint64_t *first)
{
    uint64_t bad = 0;
    *first = UINT64_MAX;
    for (uint64_t w = 0; w < r->bytes / 8; w++)
        if (base[w] != gc_dev_expected(&r->map, r->seed, w)) {
            if (!bad)
                *first = w * 8;
            bad++;
        }
    return bad;
}

static const double GEN3_X16 = 8.0 * 16 * 128 / 130; /* 126.03 Gbit/s */

static void test_arithmetic(void)
{
    CHECK(gc_parse_link_speed("8.0 GT/s PCIe") == 8.0);
    CHECK(gc_parse_link_speed("8 GT/s") == 8.0);            /* kernels before 5.x */
    CHECK(gc_parse_link_speed("2.5 GT/s PCIe") == 2.5);
    CHECK(gc_parse_link_speed("32.0 GT/s PCIe") == 32.0);
    CHECK(gc_parse_link_speed("Unknown") == 0);
    CHECK(gc_parse_link_speed("Unknown speed") == 0);
    CHECK(gc_parse_link_speed("16") == 0);                  /* a width, not a rate */
    CHECK(gc_parse_link_speed("") == 0);

    CHECK(gc_pcie_gen(2.5) == 1 && gc_pcie_gen(5) == 2 && gc_pcie_gen(8) == 3);
    CHECK(gc_pcie_gen(16) == 4 && gc_pcie_gen(32) == 5 && gc_pcie_gen(64) == 6);
    CHECK(gc_pcie_gen(0) == 0 && gc_pcie_gen(10) == 0);

    /* rate x lanes x line code, Gbit/s per direction */
    CHECK_NEAR(gc_link_gbits(2.5, 16), 32.0, 1e-9);          /* 8b/10b */
    CHECK_NEAR(gc_link_gbits(5.0, 16), 64.0, 1e-9);
    CHECK_NEAR(gc_link_gbits(8.0, 16), 126.0307692, 1e-6);   /* 128b/130b */
    CHECK_NEAR(gc_link_gbits(8.0, 8), 63.0153846, 1e-6);
    CHECK_NEAR(gc_link_gbits(16.0, 16), 252.0615385, 1e-6);
    CHECK_NEAR(gc_link_gbits(32.0, 16), 504.1230769, 1e-6);
    CHECK_NEAR(gc_link_gbits(64.0, 16), 1024.0, 1e-9);       /* Gen6 FLIT: no line code */
    CHECK(gc_link_gbits(0, 16) == 0 && gc_link_gbits(8, 0) == 0);

    /* The compliance document: "the theoretical maximum unidirectional bandwidth is
     * 252 Gbit/s for 2 GPUs, if both are connected through dedicated PCI 3.0 x16 links". */
    char b[32];
    snprintf(b, sizeof b, "%.0f", 2 * gc_link_gbits(8.0, 16));
    CHECK(strcmp(b, "252") == 0);

    /* hwloc computes the same from sysfs (GB/s): a Gen3 x16 link is 15.753846 GB/s, a
     * 2.5 GT/s x16 or 5 GT/s x8 link 4.000000 GB/s. */
    CHECK_NEAR(gc_link_gbits(8.0, 16) / 8, 15.753846, 1e-6);
    CHECK_NEAR(gc_link_gbits(2.5, 16) / 8, 4.0, 1e-9);
    CHECK_NEAR(gc_link_gbits(5.0, 8) / 8, 4.0, 1e-9);

    gc_link_name(b, sizeof b, 8.0, 16);
    CHECK(strcmp(b, "Gen3 x16 (8.0 GT/s)") == 0);
    gc_link_name(b, sizeof b, 0, 0);
    CHECK(strcmp(b, "unknown") == 0);
}

static void test_tree_gen3(void)
{
    gc_gpu_topo g[8];
    int n = gc_sysfs_find_gpus(TREE("gen3-x16"), g, 8);
    CHECK(n == 2); /* the ASPEED VGA is a display controller, but not NVIDIA's */
    if (n != 2)
        return;
    CHECK(strcmp(g[0].bdf, "0000:3b:00.0") == 0 && strcmp(g[1].bdf, "0000:d8:00.0") == 0);
    CHECK(g[0].vendor == 0x10de && g[0].device == 0x1db6 && g[0].pci_class == 0x030200);
    CHECK(g[0].numa_node == 0 && g[1].numa_node == 1);
    CHECK(strcmp(g[1].cpulist, "20-39,60-79") == 0);
    double sum = 0;
    for (int i = 0; i < 2; i++) {
        CHECK(g[i].nlinks == 1);
        const gc_link *l = &g[i].links[0];
        CHECK(strcmp(l->down, g[i].bdf) == 0);
        CHECK(l->cur_gts == 8.0 && l->cur_width == 16 && l->dev_max_width == 16 && l->port_max_width == 16);
        gc_link_verdict v;
        gc_judge_link(l, 1, 1, &v);
        CHECK(!v.degraded && v.text[0] == '\0');
        CHECK_NEAR(v.cur_gbits, GEN3_X16, 1e-9);
        sum += gc_gpu_path_gbits(&g[i]);
    }
    CHECK(strcmp(g[0].links[0].up, "0000:3a:00.0") == 0 && strcmp(g[1].links[0].up, "0000:d7:00.0") == 0);
    CHECK_NEAR(sum, 252.0615385, 1e-6);
    CHECK_NEAR(gc_reachable_gbits(g, n), 252.0615385, 1e-6);
    gc_shared_link sh[4];
    CHECK(gc_find_shared_links(g, n, sh, 4) == 0); /* dedicated links */
}

static void test_tree_gen4_switch(void)
{
    gc_gpu_topo g[8];
    int n = gc_sysfs_find_gpus(TREE("gen4-x16"), g, 8);
    CHECK(n == 2);
    if (n != 2)
        return;
    CHECK(strcmp(g[0].bdf, "0000:43:00.0") == 0 && strcmp(g[1].bdf, "0000:44:00.0") == 0);
    for (int i = 0; i < 2; i++) {
        CHECK(g[i].nlinks == 2); /* its own link to the switch, the switch's uplink */
        CHECK(strcmp(g[i].links[1].down, "0000:41:00.0") == 0 && strcmp(g[i].links[1].up, "0000:40:01.1") == 0);
        CHECK_NEAR(gc_gpu_path_gbits(&g[i]), 252.0615385, 1e-6);
        for (int k = 0; k < 2; k++) {
            gc_link_verdict v;
            gc_judge_link(&g[i].links[k], k == 0, 1, &v);
            CHECK(!v.degraded);
        }
    }
    CHECK(strcmp(g[0].links[0].up, "0000:42:00.0") == 0 && strcmp(g[1].links[0].up, "0000:42:01.0") == 0);
    gc_shared_link sh[4];
    CHECK(gc_find_shared_links(g, n, sh, 4) == 1);
    CHECK(sh[0].count == 2 && sh[0].members == 3 && strcmp(sh[0].link.down, "0000:41:00.0") == 0);
    CHECK_NEAR(sh[0].sum_gbits, 2 * 252.0615385, 1e-6);
    CHECK_NEAR(gc_link_gbits(sh[0].link.cur_gts, sh[0].link.cur_width), 252.0615385, 1e-6);
    /* two Gen4 x16 GPUs, but one Gen4 x16 uplink: 252, not 504 */
    CHECK_NEAR(gc_reachable_gbits(g, n), 252.0615385, 1e-6);
    CHECK_NEAR(gc_reachable_gbits(g, 1), 252.0615385, 1e-6);
    /* with a Gen3 x8 uplink, that is the limit */
    g[0].links[1].cur_gts = g[1].links[1].cur_gts = 8.0;
    g[0].links[1].cur_width = g[1].links[1].cur_width = 8;
    CHECK_NEAR(gc_reachable_gbits(g, n), GEN3_X16 / 2, 1e-9);
}

static void test_tree_gen5(void)
{
    gc_gpu_topo g[8];
    CHECK(gc_sysfs_find_gpus(TREE("gen5-x16"), g, 8) == 1);
    CHECK(strcmp(g[0].bdf, "0000:16:00.0") == 0 && g[0].device == 0x2331);
    CHECK(g[0].nlinks == 1 && g[0].links[0].cur_gts == 32.0);
    CHECK_NEAR(gc_gpu_path_gbits(&g[0]), 504.1230769, 1e-6);
    CHECK_NEAR(gc_gpu_max_gbits(&g[0]), 504.1230769, 1e-6);
}

static void test_tree_riser(void)
{
    gc_gpu_topo g[8];
    int n = gc_sysfs_find_gpus(TREE("gen3-x8-riser"), g, 8);
    CHECK(n == 2); /* not the audio, USB and UCSI functions */
    if (n != 2)
        return;
    CHECK(strcmp(g[0].bdf, "0000:3b:00.0") == 0 && strcmp(g[1].bdf, "0000:86:00.0") == 0);
    gc_link_verdict v;
    gc_judge_link(&g[0].links[0], 1, 1, &v);
    CHECK(!v.degraded);
    const gc_link *l = &g[1].links[0];
    CHECK(l->cur_width == 8 && l->dev_max_width == 16 && l->port_max_width == 8);
    gc_judge_link(l, 1, 1, &v);
    CHECK(v.degraded && v.width_below && v.port_limits_width);
    CHECK(!v.speed_below && !v.maybe_power_saving);
    CHECK(strstr(v.text, "x8") && strstr(v.text, "x16") && strstr(v.text, "0000:85:02.0"));
    CHECK(strstr(v.text, "riser") != NULL);
    CHECK_NEAR(v.cur_gbits, GEN3_X16 / 2, 1e-9);
    CHECK_NEAR(gc_gpu_path_gbits(&g[1]), GEN3_X16 / 2, 1e-9);
    CHECK_NEAR(gc_gpu_max_gbits(&g[1]), GEN3_X16, 1e-9); /* what the GPU could do */
    CHECK_NEAR(gc_reachable_gbits(g, n), 1.5 * GEN3_X16, 1e-9);
    /* the same verdict under load */
    gc_judge_link(l, 1, 0, &v);
    CHECK(v.degraded);
}

static void test_judge_cases(void)
{
    gc_link_verdict v;
    /* both ends x16, trained x8: seating or signal */
    gc_link low = {"0000:02:00.0", "0000:00:01.0", 16.0, 8, 16.0, 16, 16.0, 16};
    gc_judge_link(&low, 1, 1, &v);
    CHECK(v.degraded && v.width_below && !v.port_limits_width);
    CHECK(strstr(v.text, "badly seated") != NULL);
    /* a Gen4 GPU at 2.5 GT/s: idle power saving when idle, degraded under load */
    gc_link idle = {"0000:02:00.0", "0000:00:01.0", 2.5, 16, 16.0, 16, 16.0, 16};
    gc_judge_link(&idle, 1, 1, &v);
    CHECK(!v.degraded && v.maybe_power_saving && strstr(v.text, "idle"));
    gc_judge_link(&idle, 1, 0, &v);
    CHECK(v.degraded && v.speed_below && strstr(v.text, "Gen1") && strstr(v.text, "Gen4"));
    /* a switch uplink is not power-managed by the GPU: low even when idle */
    gc_judge_link(&idle, 0, 1, &v);
    CHECK(v.degraded);
    /* a Gen4 GPU in a Gen3 slot: below the GPU's maximum, because of the port */
    gc_link slot = {"0000:02:00.0", "0000:00:01.0", 8.0, 16, 16.0, 16, 8.0, 16};
    gc_judge_link(&slot, 1, 0, &v);
    CHECK(v.degraded && v.port_limits_speed && strstr(v.text, "only Gen3"));
    CHECK_NEAR(v.max_gbits, GEN3_X16, 1e-9);
    /* unknown attributes (a VM): nothing to judge, no false alarm */
    gc_link none = {"0000:02:00.0", "", 0, 0, 0, 0, 0, 0};
    gc_judge_link(&none, 1, 0, &v);
    CHECK(!v.degraded && v.cur_gbits == 0);
}

/* The one PCIe link rule: a verdict per link and per device chain, as cb-pcie-links
 * reports it to preflight and gpu-copy applies it to its GPUs. */
static void test_link_status(void)
{
    gc_link_verdict v;
    int at;
    gc_link ok = {"0000:02:00.0", "0000:00:01.0", 16.0, 16, 16.0, 16, 16.0, 16};
    gc_judge_link(&ok, 1, 1, &v);
    CHECK(v.status == GC_LINK_OK && strcmp(gc_link_status_names[v.status], "ok") == 0);
    gc_link idle = {"0000:02:00.0", "0000:00:01.0", 2.5, 16, 16.0, 16, 16.0, 16};
    gc_judge_link(&idle, 1, 1, &v);
    CHECK(v.status == GC_LINK_IDLE_LOW && strcmp(gc_link_status_names[v.status], "idle-low") == 0);
    gc_judge_link(&idle, 1, 0, &v); /* a GPU under load */
    CHECK(v.status == GC_LINK_DEGRADED);
    gc_judge_link_of(&idle, 1, 0, 1, &v); /* a NIC: it does not rest its link */
    CHECK(v.status == GC_LINK_DEGRADED && strstr(v.text, "the device") != NULL);
    gc_link none = {"0000:02:00.0", "", 0, 0, 0, 0, 0, 0};
    gc_judge_link(&none, 1, 1, &v);
    CHECK(v.status == GC_LINK_UNKNOWN && !v.degraded);
    /* a width that is readable and low is evidence enough, whatever the rate says */
    gc_link half = {"0000:02:00.0", "", 0, 8, 0, 16, 0, 0};
    gc_judge_link(&half, 1, 1, &v);
    CHECK(v.status == GC_LINK_DEGRADED);

    /* Where the two old rules disagreed: a Gen4 GPU in a Gen3 slot, read idle. preflight's
     * rule saw only "8.0 of 16.0 GT/s on an idle GPU" and warned (power saving); the rule
     * sees that the port supports only Gen3, so the rate is not the GPU resting: degraded. */
    gc_link slot = {"0000:02:00.0", "0000:00:01.0", 8.0, 16, 16.0, 16, 8.0, 16};
    gc_judge_link(&slot, 1, 1, &v);
    CHECK(v.status == GC_LINK_DEGRADED && v.port_limits_speed && !v.maybe_power_saving);

    /* a device's chain: a degraded switch uplink decides, even when the own link is fine */
    gc_gpu_topo g[8];
    CHECK(gc_sysfs_find_gpus(TREE("gen4-x16"), g, 8) == 2);
    CHECK(gc_judge_device(&g[0], 1, &v, &at) == GC_LINK_OK && at == 0);
    g[0].links[1].cur_width = 8;
    CHECK(gc_judge_device(&g[0], 1, &v, &at) == GC_LINK_DEGRADED && at == 1);
    CHECK(strstr(v.text, "the switch") != NULL);
    /* no link information at all: unknown */
    gc_gpu_topo bare = {.bdf = "0000:05:00.0", .numa_node = -1};
    CHECK(gc_judge_device(&bare, 1, &v, &at) == GC_LINK_UNKNOWN && at == -1);
}

/* Every endpoint of the preflight trees (tests/data/sysfs), as cb-pcie-links lists them. */
static void test_endpoints(void)
{
    gc_gpu_topo d[32];
    int n = gc_sysfs_find_endpoints(PREFLIGHT_TREE("noncompliant"), d, 32);
    CHECK(n == 5); /* not the host bridge 0000:00:00.0 */
    static const struct { const char *bdf; int status; } want[] = {
        {"0000:17:00.0", GC_LINK_OK},
        {"0000:17:00.1", GC_LINK_DEGRADED},   /* a NIC at 5.0 of 8.0 GT/s */
        {"0000:3b:00.0", GC_LINK_IDLE_LOW},   /* an idle GPU at 2.5 of 8.0 GT/s */
        {"0000:5e:00.0", GC_LINK_OK},
        {"0000:d8:00.0", GC_LINK_DEGRADED},   /* a GPU at x8 of x16 */
    };
    for (int i = 0; i < n && i < 5; i++) {
        gc_link_verdict v;
        CHECK(strcmp(d[i].bdf, want[i].bdf) == 0);
        CHECK(gc_judge_device(&d[i], 1, &v, NULL) == want[i].status);
        CHECK(gc_class_is_gpu(d[i].pci_class) == (want[i].bdf[5] == '3' || want[i].bdf[5] == 'd'));
    }
    CHECK(gc_sysfs_find_endpoints(TREE("no-such-tree"), d, 32) == -1);
}

static void test_sysfs_errors(void)
{
    gc_gpu_topo g;
    CHECK(gc_sysfs_read_gpu(TREE("gen3-x16"), "0000:99:00.0", &g) == -1);
    CHECK(gc_sysfs_read_gpu(TREE("gen3-x16"), "0000:3B:00.0", &g) == 0); /* CUDA's spelling */
    CHECK(strcmp(g.bdf, "0000:3b:00.0") == 0 && g.nlinks == 1);
    gc_gpu_topo many[4];
    CHECK(gc_sysfs_find_gpus(TREE("no-such-tree"), many, 4) == -1);
    char b[GC_BDF_LEN];
    gc_bdf_normalise(b, "0000:AF:00.0");
    CHECK(strcmp(b, "0000:af:00.0") == 0);
}

static void test_layout(void)
{
    gc_layout l;
    /* an 80 GB GPU at 90%: 64 MiB chunks, 4 GiB host buffer */
    size_t want = gc_device_request(80ull << 30, 79ull << 30, 0.90, 256u << 20);
    CHECK(want == (size_t)((80ull << 30) * 0.90));
    CHECK(gc_layout_make(&l, want, 0, 0) == NULL);
    CHECK(l.chunk == 64u << 20 && l.host_chunks == 64 && l.host_bytes == 4ull << 30);
    CHECK(l.dev_chunks % 2 == 0 && l.dev_bytes <= want && l.dev_bytes + 2 * l.chunk > want);
    /* little free memory: the request shrinks to what is free minus the reserve */
    CHECK(gc_device_request(80ull << 30, 10ull << 30, 0.90, 256u << 20) == (10ull << 30) - (256u << 20));
    CHECK(gc_device_request(80ull << 30, 100u << 20, 0.90, 256u << 20) == 0);
    /* small buffers get smaller chunks */
    CHECK(gc_layout_make(&l, 256u << 20, 0, 0) == NULL);
    CHECK(l.chunk == 16u << 20 && l.dev_chunks == 16 && l.host_chunks == 16);
    /* a host buffer larger than the device's is cut to it */
    CHECK(gc_layout_make(&l, 256u << 20, 1u << 30, 0) == NULL && l.host_bytes == 256u << 20);
    CHECK(gc_layout_make(&l, 1u << 20, 0, 1u << 20) != NULL);        /* < 4 device chunks */
    CHECK(gc_layout_make(&l, 1u << 30, 2u << 20, 1u << 20) != NULL); /* < 4 host chunks */
    CHECK(gc_layout_make(&l, 1u << 30, 0, 5000) != NULL);            /* not 4 KiB granular */
    CHECK(gc_layout_make(&l, 0, 0, 0) != NULL);
}

/* The pattern words, pinned: gpu-copy's verification compares against them. */
static void test_pattern_words(void)
{
    CHECK(gc_pattern(0, 0) == 0);
    CHECK(gc_pattern(99, 5) == 0x2b88fba386c0f8f4ULL);
    CHECK(gc_pattern(0x1234, ~0ULL) == 0x3a6a0fbd1dbecc8cULL);
}

/* One phase on host memory: preparation, K iterations of copies (one lost in the last
 * iteration if asked), then the plan's checks. Returns the wrong words found. */
static uint64_t simulate(const gc_layout *l, int kind, uint64_t K, int lose_last)
{
    char *dev = malloc(l->dev_bytes), *host = malloc(l->host_bytes);
    for (size_t w = 0; w < l->host_bytes / 8; w++) /* whatever a previous phase left */
        ((uint64_t *)host)[w] = gc_pattern(99, w);
    gc_phase_plan p;
    gc_phase_plan_make(l, kind, K, 0x1234, &p);
    if (p.fill[0].bytes)
        region_fill_dev((uint64_t *)(dev + p.fill[0].off), &p.fill[0]);
    if (p.stage_bytes)
        memcpy(host + p.stage_host_off, dev + p.stage_dev_off, p.stage_bytes);
    for (int f = 1; f < 3; f++)
        if (p.fill[f].bytes)
            region_fill_dev((uint64_t *)(dev + p.fill[f].off), &p.fill[f]);
    uint64_t n = gc_phase_copies(l, kind);
    for (uint64_t k = 0; k < K; k++)
        for (uint64_t i = 0; i < n; i++) {
            if (lose_last && k == K - 1 && i == n - 1)
                continue;
            gc_copy c;
            gc_phase_copy(l, kind, k, i, &c);
            if (c.dir == GC_H2D)
                memcpy(dev + c.dev_off, host + c.host_off, c.bytes);
            else
                memcpy(host + c.host_off, dev + c.dev_off, c.bytes);
        }
    uint64_t bad = 0, first;
    if (p.dev_check.bytes)
        bad += region_check_dev((uint64_t *)(dev + p.dev_check.off), &p.dev_check, &first);
    if (p.host_check.bytes)
        bad += gc_region_check_host((uint64_t *)(host + p.host_check.off), &p.host_check, &first);
    free(dev);
    free(host);
    return bad;
}

static void test_plan(void)
{
    gc_layout l;
    /* 12 device chunks, 8 host chunks of 4 KiB: the host buffer wraps */
    CHECK(gc_layout_make(&l, 12 * 4096, 8 * 4096, 4096) == NULL);
    CHECK(l.dev_chunks == 12 && l.host_chunks == 8 && l.streams == 1);
    l.streams = 3;
    for (int kind = 0; kind < GC_NKINDS; kind++) {
        size_t h2d, d2h;
        gc_phase_bytes(&l, kind, &h2d, &d2h);
        CHECK(h2d + d2h == l.dev_bytes);
        /* every device chunk moves exactly once per iteration */
        for (uint64_t k = 0; k < 3; k++) {
            int seen[12] = {0}, stream_of_dest[2][12];
            memset(stream_of_dest, -1, sizeof stream_of_dest);
            for (uint64_t i = 0; i < gc_phase_copies(&l, kind); i++) {
                gc_copy c;
                gc_phase_copy(&l, kind, k, i, &c);
                seen[c.dev_off / l.chunk]++;
                CHECK(c.host_off + c.bytes <= l.host_bytes && c.bytes == l.chunk);
                CHECK(c.stream >= 0 && c.stream < l.streams);
                /* copies into one destination share a stream, so they stay in order */
                size_t dest = (c.dir == GC_H2D ? c.dev_off : c.host_off) / l.chunk;
                if (stream_of_dest[c.dir][dest] >= 0)
                    CHECK(stream_of_dest[c.dir][dest] == c.stream);
                stream_of_dest[c.dir][dest] = c.stream;
                if (kind == GC_BIDIR) /* directions alternate; each on its own half */
                    CHECK(c.dir == (i % 2 ? GC_D2H : GC_H2D) &&
                          (c.dev_off < l.dev_bytes / 2) == (c.dir == GC_H2D) &&
                          (c.host_off < l.host_bytes / 2) == (c.dir == GC_H2D));
            }
            for (int c = 0; c < 12; c++)
                CHECK(seen[c] == 1);
        }
        for (uint64_t K = 1; K <= 4; K++) {
            CHECK(simulate(&l, kind, K, 0) == 0);
            /* a lost copy of the last iteration leaves a whole chunk wrong */
            CHECK(simulate(&l, kind, K, 1) == l.chunk / 8);
        }
    }
    /* the device buffer as large as the host buffer works as well */
    CHECK(gc_layout_make(&l, 8 * 4096, 0, 4096) == NULL && l.host_chunks == 8);
    for (int kind = 0; kind < GC_NKINDS; kind++) {
        CHECK(simulate(&l, kind, 10, 0) == 0);
        CHECK(simulate(&l, kind, 10, 1) > 0);
    }
    /* seeds differ per phase, so one phase's data never passes for another's */
    gc_phase_plan a, b;
    gc_phase_plan_make(&l, GC_READ, 3, 1, &a);
    gc_phase_plan_make(&l, GC_READ, 3, 2, &b);
    CHECK(a.host_check.seed != b.host_check.seed);
}

static void test_options(void)
{
    /* --device-buffer, --host-buffer and --chunk are the shared size option (CB_OPT_SIZE) */
    uint64_t v;
    CHECK(cb_parse_size("4G", &v) == 0 && v == 4ull << 30);
    CHECK(cb_parse_size("64M", &v) == 0 && v == 64u << 20);
    CHECK(cb_parse_size("64MiB", &v) == 0 && v == 64u << 20);
    CHECK(cb_parse_size("512k", &v) == 0 && v == 512u << 10);
    CHECK(cb_parse_size("1048576", &v) == 0 && v == 1048576);
    CHECK(cb_parse_size("4096B", &v) == 0 && v == 4096);
    CHECK(cb_parse_size("4X", &v) == -1 && cb_parse_size("", &v) == -1);
    CHECK(cb_parse_size("-1G", &v) == -1 && cb_parse_size("G", &v) == -1);
    CHECK(cb_parse_size("99999999999T", &v) == -1);
    CHECK(gc_parse_phases("write,read,bidir") == 7);
    CHECK(gc_parse_phases("read") == 1u << GC_READ);
    CHECK(gc_parse_phases("write,") == 0 && gc_parse_phases("copy") == 0 && gc_parse_phases("") == 0);
}

int main(void)
{
    test_arithmetic();
    test_tree_gen3();
    test_tree_gen4_switch();
    test_tree_gen5();
    test_tree_riser();
    test_judge_cases();
    test_link_status();
    test_endpoints();
    test_sysfs_errors();
    test_layout();
    test_pattern_words();
    test_plan();
    test_options();
    CBT_DONE();
}
