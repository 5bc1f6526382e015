/* Unit tests of eth-test's datagram format, parser, per-stream accounting and schedule. */
#include "cb_test.h"
#include "eth-test/eth_proto.h"
#include "test_eth.h"

#include <stdlib.h>
#include <string.h>

static unsigned char buf[ET_MAX_DATAGRAM];

static void test_data_roundtrip(void)
{
    et_header h;
    memset(buf, 0x5a, sizeof buf);
    et_build_data(buf, 0x1122334455667788ULL, 3, 12, 987654321ULL, 8900);
    CHECK(memcmp(buf, "CBET", 4) == 0); /* the magic reads "CBET" on the wire */
    CHECK(et_parse(buf, 8900, &h) == ET_OK);
    CHECK(h.kind == ET_KIND_DATA && h.version == ET_VERSION);
    CHECK(h.session == 0x1122334455667788ULL && h.stream == 3 && h.nstreams == 12);
    CHECK(h.seq == 987654321ULL && h.size == 8900 && h.aux == 0);
    /* the smallest data datagram: header and one stamp word */
    et_build_data(buf, 7, 0, 1, 0, ET_MIN_DATA_BYTES);
    CHECK(et_parse(buf, ET_MIN_DATA_BYTES, &h) == ET_OK);
    et_build_data(buf, 7, 0, 1, 5, ET_MAX_DATAGRAM);
    CHECK(et_parse(buf, ET_MAX_DATAGRAM, &h) == ET_OK);
}

static void test_end_record(void)
{
    et_header h;
    et_build_end(buf, 42, 11, 12, 31601, 3000000000ULL, 7);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_OK);
    CHECK(h.kind == ET_KIND_END && h.seq == 31601 && h.aux == 3000000000ULL && h.copy == 7);
    CHECK(h.stream == 11 && h.nstreams == 12 && h.session == 42);
    /* an end record with bytes after it is not one */
    CHECK(et_parse(buf, ET_HEADER_BYTES + 8, &h) == ET_BAD_LENGTH);
}

static void test_rejections(void)
{
    et_header h;
    et_build_data(buf, 99, 1, 4, 10, 1000);
    CHECK(et_parse(buf, 0, &h) == ET_BAD_SHORT);
    CHECK(et_parse(buf, ET_HEADER_BYTES - 1, &h) == ET_BAD_SHORT);
    CHECK(et_parse(buf, 999, &h) == ET_BAD_LENGTH);  /* truncated */
    CHECK(et_parse(buf, 1001, &h) == ET_BAD_LENGTH); /* longer than its header says */

    /* every single bit flip in the header is caught, by magic, version or check */
    for (int bit = 0; bit < ET_HEADER_BYTES * 8; bit++) {
        et_build_data(buf, 99, 1, 4, 10, 1000);
        buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        et_parse_result r = et_parse(buf, 1000, &h);
        CHECK(r == ET_BAD_MAGIC || r == ET_BAD_VERSION || r == ET_BAD_CHECK);
    }

    /* fields out of range, with a correct check (a forged or buggy sender) */
    et_header bad = {.version = ET_VERSION, .kind = ET_KIND_DATA, .stream = 4, .nstreams = 4,
                     .size = 1000, .session = 99, .seq = 1};
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_STREAM);
    bad.stream = 0;
    bad.session = 0;
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_STREAM);
    bad.session = 1;
    bad.nstreams = ET_MAX_STREAMS + 1;
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_STREAM);
    bad.nstreams = 4;
    bad.kind = 3;
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_KIND);
    bad.kind = ET_KIND_DATA;
    bad.size = ET_HEADER_BYTES; /* a data packet without room for a stamp */
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_BAD_LENGTH);
    bad.version = 2;
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_BAD_VERSION);

    /* payload: the stamps are checked, the filler is not */
    et_build_data(buf, 99, 1, 4, 10, 1000);
    buf[ET_HEADER_BYTES] ^= 1; /* first stamp */
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_PAYLOAD);
    CHECK(h.seq == 10); /* the header is still reported */
    et_build_data(buf, 99, 1, 4, 10, 1000);
    buf[999] ^= 0x80; /* last stamp */
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_PAYLOAD);
    /* a payload from another packet number (a stale buffer) fails its stamps */
    et_build_data(buf, 99, 1, 4, 11, 1000);
    unsigned char other[1000];
    memcpy(other, buf, sizeof other);
    et_build_data(buf, 99, 1, 4, 10, 1000);
    memcpy(buf + ET_HEADER_BYTES, other + ET_HEADER_BYTES, 1000 - ET_HEADER_BYTES);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_PAYLOAD);
    /* garbage */
    memset(buf, 0, 100);
    CHECK(et_parse(buf, 100, &h) == ET_BAD_MAGIC);
    memcpy(buf, "CBET", 4);
    buf[4] = ET_VERSION;
    CHECK(et_parse(buf, 100, &h) == ET_BAD_CHECK);
}

static void test_accounting(void)
{
    et_stream s;
    CHECK(et_stream_init(&s, 100) == 0);
    CHECK(s.window == 128);
    /* 0..9 in order, 5 missing, 3 again, 5 late */
    for (uint64_t q = 0; q < 10; q++)
        if (q != 5)
            CHECK(et_stream_data(&s, q, 100) == ET_SEQ_NEW);
    CHECK(et_stream_data(&s, 3, 100) == ET_SEQ_DUPLICATE);
    et_loss l = et_stream_loss(&s);
    CHECK(!l.exact && l.expected == 10 && l.received == 9 && l.lost == 1);
    CHECK(et_stream_data(&s, 5, 100) == ET_SEQ_REORDERED);
    CHECK(s.unique == 10 && s.duplicates == 1 && s.reordered == 1 && s.unique_bytes == 1000);
    /* the sender says 12: the last two were lost; only the end record tells */
    et_stream_end(&s, 12, 5000);
    et_stream_end(&s, 12, 5000);
    l = et_stream_loss(&s);
    CHECK(l.exact && l.expected == 12 && l.received == 10 && l.lost == 2 && l.beyond == 0);
    CHECK(s.end_records == 2 && s.end_conflicts == 0 && s.send_ns == 5000);
    et_stream_end(&s, 13, 5000);
    CHECK(s.end_conflicts == 1 && s.sent == 12);
    /* a packet numbered beyond the sent count is not counted as received */
    CHECK(et_stream_data(&s, 12, 100) == ET_SEQ_NEW);
    l = et_stream_loss(&s);
    CHECK(l.beyond == 1 && l.received == 10 && l.lost == 2);

    /* the window slides: far behind is stale, within is exact */
    CHECK(et_stream_data(&s, 1000, 100) == ET_SEQ_NEW);
    CHECK(s.base == 1000 - 128 + 1);
    CHECK(et_stream_data(&s, 3, 100) == ET_SEQ_STALE);
    CHECK(et_stream_data(&s, 900, 100) == ET_SEQ_REORDERED);
    CHECK(et_stream_data(&s, 900, 100) == ET_SEQ_DUPLICATE);
    CHECK(s.stale == 1);
    /* a jump of more than the window clears it */
    CHECK(et_stream_data(&s, 1000000, 100) == ET_SEQ_NEW);
    CHECK(et_stream_data(&s, 1000000 - 127, 100) == ET_SEQ_REORDERED);
    CHECK(et_stream_data(&s, 1000000 - 128, 100) == ET_SEQ_STALE);
    et_stream_free(&s);

    /* a long in-order run across many window slides, with every 7th packet lost */
    CHECK(et_stream_init(&s, 256) == 0);
    uint64_t n = 100000, got = 0;
    for (uint64_t q = 0; q < n; q++)
        if (q % 7 != 3) {
            CHECK(et_stream_data(&s, q, 8900) == ET_SEQ_NEW);
            got++;
        }
    et_stream_end(&s, n, 1);
    l = et_stream_loss(&s);
    CHECK(l.received == got && l.lost == n - got && s.unique_bytes == got * 8900);
    et_stream_free(&s);

    /* nothing received at all, sender sent 5 */
    CHECK(et_stream_init(&s, 64) == 0);
    et_stream_end(&s, 5, 1);
    l = et_stream_loss(&s);
    CHECK(l.lost == 5 && l.received == 0);
    et_stream_free(&s);
}

static void test_schedule(void)
{
    /* 9 Gbit/s over 12 streams of 8900 B for 10 s */
    CHECK(et_packets_per_stream(10, 0.75, 8900) == 105337);
    CHECK(et_packets_per_stream(0.000001, 0.75, 8900) == 1);
    /* batch due times: 128 x 8900 B at 9 Gbit/s is 1.0126 ms apart */
    CHECK(et_due_ns(1000, 0, 9e9) == 1000);
    CHECK(et_due_ns(0, 128 * 8900, 9e9) == 1012622);
    CHECK(et_due_ns(0, 9000000000ULL / 8, 9e9) == 1000000000ULL);
    /* judged at the printed precision */
    CHECK(et_speed_meets(9.0, 9.0));
    CHECK(et_speed_meets(8.996, 9.0));
    CHECK(!et_speed_meets(8.995, 9.0));
    CHECK(et_speed_meets(0.9996, 1.0));
}

int main(void)
{
    test_data_roundtrip();
    test_end_record();
    test_rejections();
    test_accounting();
    test_schedule();
    CBT_DONE();
}
