/* Unit tests of smp-mad-stress's pieces without a fabric: SMP encoding and
 * response checks, destinations, attributes, the latency histogram, durations
 * and the simulated fabric's description. */
#include "cb_test.h"
#include "smp-mad-stress/smp_mad.h"
#include "smp-mad-stress/sim_transport.h"

#include <math.h>
#include <string.h>

static void test_dest_parse(void)
{
    smp_dest d;
    CHECK(smp_dest_parse("9", 0, &d) == NULL && d.lid == 9 && !d.direct);
    CHECK(strcmp(d.name, "lid 9") == 0);
    CHECK(smp_dest_parse("0x1a", 0, &d) == NULL && d.lid == 0x1a);
    CHECK(smp_dest_parse("0xbfff", 0, &d) == NULL);
    CHECK(smp_dest_parse("0", 0, &d) != NULL);      /* not a unicast LID */
    CHECK(smp_dest_parse("0xc000", 0, &d) != NULL); /* multicast */
    CHECK(smp_dest_parse("70000", 0, &d) != NULL);
    CHECK(smp_dest_parse("-3", 0, &d) != NULL);
    CHECK(smp_dest_parse("9x", 0, &d) != NULL);
    CHECK(smp_dest_parse("", 0, &d) != NULL);
    CHECK(smp_dest_parse("0,1,3", 1, &d) == NULL && d.direct && d.hops == 2);
    CHECK(d.path[0] == 0 && d.path[1] == 1 && d.path[2] == 3);
    CHECK(strcmp(d.name, "dr 0,1,3") == 0);
    CHECK(smp_dest_parse("1,3", 1, &d) == NULL && d.hops == 2 && d.path[2] == 3);
    CHECK(smp_dest_parse("0", 1, &d) == NULL && d.hops == 0); /* the local port */
    CHECK(smp_dest_parse("0,1,,3", 1, &d) != NULL);
    CHECK(smp_dest_parse("0,1,", 1, &d) != NULL);
    CHECK(smp_dest_parse("0,0", 1, &d) != NULL);
    CHECK(smp_dest_parse("0,255", 1, &d) != NULL);
    CHECK(smp_dest_parse("0,a", 1, &d) != NULL);
    char longpath[512] = "0";
    for (int i = 0; i < 64; i++)
        strcat(longpath, ",1");
    CHECK(smp_dest_parse(longpath, 1, &d) != NULL); /* 64 hops */
}

static void test_attr(void)
{
    uint16_t a = 0;
    CHECK(smp_attr_parse("0x19", &a) == 0 && a == 0x19);
    CHECK(smp_attr_parse("17", &a) == 0 && a == 0x11);
    CHECK(smp_attr_parse("nodeinfo", &a) == 0 && a == 0x11);
    CHECK(smp_attr_parse("LinearForwardingTable", &a) == 0 && a == 0x19);
    CHECK(smp_attr_parse("NoSuchAttribute", &a) != 0);
    CHECK(smp_attr_parse("0x10000", &a) != 0);
    CHECK(strcmp(smp_attr_name(0x15), "PortInfo") == 0);
    CHECK(strcmp(smp_attr_name(0xff23), "VendorSpecific") == 0);
    CHECK(strcmp(smp_attr_name(0x0099), "Unknown") == 0);
}

static void test_encode_lid(void)
{
    smp_dest d;
    smp_dest_parse("9", 0, &d);
    smp_request r = {.method = SMP_METHOD_GET, .attr = 0x19, .mod = 0x12345678, .mkey = 0x0102030405060708ULL};
    uint8_t mad[SMP_MAD_SIZE];
    smp_encode(mad, &d, &r, 0xabcdef0011223344ULL, NULL);
    CHECK(mad[0] == 1 && mad[1] == SMP_CLASS_LID && mad[2] == 1 && mad[3] == SMP_METHOD_GET);
    CHECK(smp_tid(mad) == 0xabcdef0011223344ULL);
    CHECK(mad[8] == 0xab && mad[15] == 0x44); /* big-endian on the wire */
    CHECK(mad[16] == 0x00 && mad[17] == 0x19);
    CHECK(mad[20] == 0x12 && mad[23] == 0x78);
    CHECK(mad[24] == 0x01 && mad[31] == 0x08);
    int zeros = 1;
    for (int i = 32; i < SMP_MAD_SIZE; i++)
        zeros &= mad[i] == 0;
    CHECK(zeros);

    /* a device's response passes the checks; every wrong field is caught */
    uint8_t data[SMP_DATA_SIZE], resp[SMP_MAD_SIZE];
    for (int i = 0; i < SMP_DATA_SIZE; i++)
        data[i] = (uint8_t)i;
    smp_make_response(resp, mad, 0, data);
    CHECK(smp_check_response(resp, mad) == NULL);
    CHECK(smp_status(resp) == 0);
    CHECK(memcmp(smp_data(resp), data, SMP_DATA_SIZE) == 0);
    uint8_t bad[SMP_MAD_SIZE];
    memcpy(bad, resp, sizeof bad);
    bad[3] = SMP_METHOD_GET;
    CHECK(smp_check_response(bad, mad) != NULL);
    memcpy(bad, resp, sizeof bad);
    bad[15] ^= 1;
    CHECK(smp_check_response(bad, mad) != NULL);
    memcpy(bad, resp, sizeof bad);
    bad[12] ^= 0x40; /* the tool's half of the TID (bytes 12..15), its high byte */
    CHECK(smp_check_response(bad, mad) != NULL);
    /* the kernel's umad write path replaces the high half of the TID with its
     * agent's id, and the response carries that back: still the request's answer */
    memcpy(bad, resp, sizeof bad);
    bad[8] = 0x00, bad[9] = 0x00, bad[10] = 0x00, bad[11] = 0x2a;
    CHECK(smp_tid(bad) >> 32 != smp_tid(mad) >> 32);
    CHECK(smp_check_response(bad, mad) == NULL);
    memcpy(bad, resp, sizeof bad);
    bad[17] = 0x11;
    CHECK(smp_check_response(bad, mad) != NULL);
    memcpy(bad, resp, sizeof bad);
    bad[23] ^= 0x80;
    CHECK(smp_check_response(bad, mad) != NULL);
    memcpy(bad, resp, sizeof bad);
    bad[1] = SMP_CLASS_DIRECT;
    CHECK(smp_check_response(bad, mad) != NULL);
    smp_make_response(resp, mad, 0x000c, data);
    CHECK(smp_check_response(resp, mad) == NULL && smp_status(resp) == 0x000c);

    /* SET carries its data */
    r.method = SMP_METHOD_SET;
    smp_encode(mad, &d, &r, 1, data);
    CHECK(mad[3] == SMP_METHOD_SET && memcmp(mad + SMP_DATA_OFF, data, SMP_DATA_SIZE) == 0);
}

static void test_encode_dr(void)
{
    smp_dest d;
    smp_dest_parse("0,1,3,7", 1, &d);
    smp_request r = {.method = SMP_METHOD_GET, .attr = 0x11};
    uint8_t mad[SMP_MAD_SIZE], resp[SMP_MAD_SIZE], data[SMP_DATA_SIZE] = {0};
    smp_encode(mad, &d, &r, 42, NULL);
    CHECK(mad[1] == SMP_CLASS_DIRECT);
    CHECK(mad[6] == 0 && mad[7] == 3);                      /* hop pointer, hop count */
    CHECK(mad[32] == 0xff && mad[33] == 0xff);              /* DrSLID permissive */
    CHECK(mad[34] == 0xff && mad[35] == 0xff);              /* DrDLID permissive */
    CHECK(mad[128] == 0 && mad[129] == 1 && mad[130] == 3 && mad[131] == 7); /* initial path */
    CHECK(mad[132] == 0);
    smp_make_response(resp, mad, 0, data);
    CHECK(smp_check_response(resp, mad) == NULL);
    CHECK((resp[4] & 0x80) && smp_status(resp) == 0); /* the D bit is not a status */
    resp[4] &= 0x7f;                                  /* a response without direction */
    CHECK(smp_check_response(resp, mad) != NULL);
}

static void test_hist(void)
{
    /* buckets are contiguous and increasing */
    int ok = 1;
    for (int i = 1; i < SMP_HIST_BUCKETS; i++)
        ok &= smp_hist_low(i) > smp_hist_low(i - 1);
    CHECK(ok);
    ok = 1;
    for (int i = 0; i < SMP_HIST_BUCKETS - 1; i++) {
        ok &= smp_hist_index(smp_hist_low(i)) == i;
        ok &= smp_hist_index(smp_hist_low(i + 1) - 1) == i;
    }
    CHECK(ok);
    /* relative bucket width below 1/32 */
    ok = 1;
    for (int i = SMP_HIST_SUB; i < SMP_HIST_BUCKETS - 1; i++)
        ok &= (double)(smp_hist_low(i + 1) - smp_hist_low(i)) / (double)smp_hist_low(i) <= 1.0 / 32 + 1e-12;
    CHECK(ok);

    static smp_hist h;
    memset(&h, 0, sizeof h);
    CHECK(smp_hist_quantile(&h, 0.5) == 0 && smp_hist_mean(&h) == 0);
    /* 1..1000 us: median 500 us, p99 990 us, within the bucket resolution */
    for (uint64_t v = 1; v <= 1000; v++)
        smp_hist_add(&h, v * 1000);
    CHECK(h.count == 1000 && h.min_ns == 1000 && h.max_ns == 1000000);
    CHECK_NEAR(smp_hist_mean(&h), 500500.0, 1e-6);
    CHECK(fabs(smp_hist_quantile(&h, 0.5) - 500000) / 500000 < 0.02);
    CHECK(fabs(smp_hist_quantile(&h, 0.99) - 990000) / 990000 < 0.02);
    CHECK(smp_hist_quantile(&h, 1.0) <= 1000000 && smp_hist_quantile(&h, 0.0) >= 1000);
    /* a single value comes back exactly (clamped to min/max) */
    static smp_hist one;
    memset(&one, 0, sizeof one);
    smp_hist_add(&one, 255123);
    CHECK(smp_hist_quantile(&one, 0.5) == 255123 && smp_hist_quantile(&one, 0.99) == 255123);
    /* merging is adding */
    static smp_hist m;
    memset(&m, 0, sizeof m);
    smp_hist_merge(&m, &h);
    smp_hist_merge(&m, &one);
    CHECK(m.count == 1001 && m.sum_ns == h.sum_ns + 255123 && m.max_ns == 1000000 && m.min_ns == 1000);
    /* huge values land in the last bucket */
    CHECK(smp_hist_index(UINT64_MAX) == SMP_HIST_BUCKETS - 1);
}

static void test_duration(void)
{
    uint64_t ns;
    CHECK(smp_parse_duration("200us", 1e3, &ns) == 0 && ns == 200000);
    CHECK(smp_parse_duration("1.5ms", 1e3, &ns) == 0 && ns == 1500000);
    CHECK(smp_parse_duration("2s", 1e3, &ns) == 0 && ns == 2000000000ULL);
    CHECK(smp_parse_duration("45", 1e3, &ns) == 0 && ns == 45000);
    CHECK(smp_parse_duration("500ns", 1e3, &ns) == 0 && ns == 500);
    CHECK(smp_parse_duration("5min", 1e3, &ns) != 0);
    CHECK(smp_parse_duration("-1us", 1e3, &ns) != 0);
    CHECK(smp_parse_duration("", 1e3, &ns) != 0);
}

static void test_sim_parse(void)
{
    smt_sim_params p;
    smt_sim_params_default(&p);
    CHECK(smt_sim_parse("rtt=45us,service=175us,queue=20", &p) == NULL);
    CHECK(p.rtt_ns == 45000 && p.service_ns == 175000 && p.queue == 20);
    CHECK(smt_sim_parse("loss=0.25,error=0.5,jitter=1ms,seed=7,dead=3:0x10", &p) == NULL);
    CHECK(p.loss == 0.25 && p.error == 0.5 && p.jitter_ns == 1000000 && p.seed == 7);
    CHECK(p.ndead == 2 && p.dead[0] == 3 && p.dead[1] == 16);
    CHECK(smt_sim_parse("loss=2", &p) != NULL);
    CHECK(smt_sim_parse("rtt=fast", &p) != NULL);
    CHECK(smt_sim_parse("speed=1", &p) != NULL);
    CHECK(smt_sim_parse("rtt", &p) != NULL);
    CHECK(smt_sim_parse("queue=-1", &p) != NULL);
    CHECK(smt_sim_parse("dead=0", &p) != NULL);
    char buf[256];
    smt_sim_describe(&p, buf, sizeof buf);
    CHECK(strstr(buf, "service=175us") && strstr(buf, "dead=3:16"));
}

int main(void)
{
    test_dest_parse();
    test_attr();
    test_encode_lid();
    test_encode_dr();
    test_hist();
    test_duration();
    test_sim_parse();
    CBT_DONE();
}
