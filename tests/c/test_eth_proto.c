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
    /* the start record: the stream's plan and datagram size */
    et_build_start(buf, 42, 3, 12, 105337, 8900, 5);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_OK);
    CHECK(h.kind == ET_KIND_START && h.seq == 105337 && h.aux == 8900 && h.copy == 5);
    CHECK(et_parse(buf, ET_HEADER_BYTES + 1, &h) == ET_BAD_LENGTH);
    /* a version-1 sender's datagram (no start records, one end record decides) */
    et_header v1 = {.version = 1, .kind = ET_KIND_END, .stream = 0, .nstreams = 1,
                    .size = ET_HEADER_BYTES, .session = 42, .seq = 5};
    et_put_header(buf, &v1);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_BAD_VERSION);
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
    bad.kind = 4;
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, 1000, &h) == ET_BAD_KIND);
    bad.kind = ET_KIND_DATA;
    bad.size = ET_HEADER_BYTES; /* a data packet without room for a stamp */
    et_put_header(buf, &bad);
    CHECK(et_parse(buf, ET_HEADER_BYTES, &h) == ET_BAD_LENGTH);
    bad.version = ET_VERSION + 1;
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
    /* the sender says 12: the last two were lost; only the end record tells, once a
     * second copy confirms it */
    CHECK(et_stream_end(&s, 12, 5000) == ET_REC_PENDING);
    CHECK(!s.ended && !et_stream_loss(&s).exact);
    CHECK(et_stream_end(&s, 12, 5000) == ET_REC_CONFIRMED);
    l = et_stream_loss(&s);
    CHECK(l.exact && l.expected == 12 && l.received == 10 && l.lost == 2 && l.beyond == 0);
    CHECK(s.end_records == 2 && s.send_ns == 5000);
    CHECK(et_stream_end(&s, 12, 5000) == ET_REC_COPY && s.end_records == 3);
    /* a record that disagrees with the confirmed one is rejected, and changes nothing */
    CHECK(et_stream_end(&s, 13, 5000) == ET_REC_REJECTED);
    CHECK(s.rejected[ET_REJ_RECORD_CONFLICT] == 1 && s.sent == 12 && s.end_records == 3);
    /* a packet numbered beyond the confirmed sent count is rejected, not received */
    CHECK(et_stream_data(&s, 12, 100) == ET_SEQ_REJECTED);
    CHECK(s.rejected[ET_REJ_BEYOND_SENT] == 1);
    l = et_stream_loss(&s);
    CHECK(l.beyond == 0 && l.received == 10 && l.lost == 2);
    et_stream_free(&s);

    /* one arriving before the end record is counted beyond the sent count */
    CHECK(et_stream_init(&s, 128) == 0);
    for (uint64_t q = 0; q < 13; q++)
        CHECK(et_stream_data(&s, q, 100) == ET_SEQ_NEW);
    et_stream_end(&s, 12, 5000);
    et_stream_end(&s, 12, 5000);
    l = et_stream_loss(&s);
    CHECK(l.beyond == 1 && l.received == 12 && l.lost == 0);

    CHECK(et_stream_data(&s, 13, 100) == ET_SEQ_REJECTED); /* beyond the sent count */
    et_stream_free(&s);

    /* the window slides: far behind is stale, within is exact */
    CHECK(et_stream_init(&s, 128) == 0);
    for (uint64_t q = 0; q <= 1000; q += 50)
        CHECK(et_stream_data(&s, q, 100) == ET_SEQ_NEW);
    CHECK(s.base == 1000 - 128 + 1);
    CHECK(et_stream_data(&s, 3, 100) == ET_SEQ_STALE);
    CHECK(et_stream_data(&s, 901, 100) == ET_SEQ_REORDERED);
    CHECK(et_stream_data(&s, 901, 100) == ET_SEQ_DUPLICATE);
    CHECK(s.stale == 1);
    /* a jump of half the window or more is rejected: it would push the packets still
     * to come out of the window (a stray with a huge number must change nothing) */
    CHECK(et_stream_data(&s, 1000000, 100) == ET_SEQ_REJECTED);
    CHECK(et_stream_data(&s, 1001 + 64, 100) == ET_SEQ_REJECTED);
    CHECK(et_stream_data(&s, 1ULL << 62, 100) == ET_SEQ_REJECTED);
    CHECK(et_stream_data(&s, UINT64_MAX, 100) == ET_SEQ_REJECTED);
    CHECK(s.rejected[ET_REJ_OUT_OF_WINDOW] == 4 && s.highest == 1001 && s.base == 1000 - 128 + 1);
    CHECK(et_stream_data(&s, 1001 + 63, 100) == ET_SEQ_NEW);  /* just within: accounted */
    CHECK(et_stream_data(&s, 1001 + 63 - 127, 100) == ET_SEQ_REORDERED);
    CHECK(et_stream_data(&s, 1001 + 63 - 128, 100) == ET_SEQ_STALE);
    /* an end record claiming more than the window could have seen is impossible */
    CHECK(et_stream_end(&s, 1ULL << 62, 1) == ET_REC_REJECTED);
    CHECK(s.rejected[ET_REJ_RECORD_RANGE] == 1 && !s.ended);
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
    et_stream_end(&s, 5, 1);
    l = et_stream_loss(&s);
    CHECK(l.lost == 5 && l.received == 0);
    et_stream_free(&s);
}

/* The start record bounds the packet numbers; records count only when confirmed. */
static void test_records(void)
{
    et_stream s;
    CHECK(et_stream_init(&s, 1 << 20) == 0);
    /* a forged start record first: a candidate, never in force */
    CHECK(et_stream_start(&s, 5, 8900) == ET_REC_PENDING);
    CHECK(et_stream_start(&s, 700, 8900) == ET_REC_PENDING);
    CHECK(!s.planned_known);
    CHECK(et_stream_start(&s, 700, 8900) == ET_REC_CONFIRMED);
    CHECK(s.planned_known && s.planned == 700 && s.start_records == 2);
    /* the forged candidate's copy is a conflict once the real one is confirmed */
    CHECK(s.rejected[ET_REJ_RECORD_CONFLICT] == 1);
    CHECK(et_stream_start(&s, 700, 8900) == ET_REC_COPY && s.start_records == 3);
    CHECK(et_stream_start(&s, 0, 8900) == ET_REC_REJECTED);   /* a plan of nothing */
    CHECK(et_stream_start(&s, 700, 20) == ET_REC_REJECTED);   /* a size no sender sends */
    CHECK(s.rejected[ET_REJ_RECORD_RANGE] == 2);
    /* data: within the plan accounted, at or beyond it rejected */
    for (uint64_t q = 0; q < 700; q++)
        CHECK(et_stream_data(&s, q, 8900) == ET_SEQ_NEW);
    CHECK(et_stream_data(&s, 700, 8900) == ET_SEQ_REJECTED);
    CHECK(et_stream_data(&s, 1ULL << 62, 8900) == ET_SEQ_REJECTED);
    CHECK(s.rejected[ET_REJ_BEYOND_PLAN] == 2 && s.unique == 700 && s.highest == 700);
    /* an end record beyond the plan is impossible; one forged end record alone stays a
     * candidate, and never confirmed it is rejected when the run's counts are read */
    CHECK(et_stream_end(&s, 701, 1) == ET_REC_REJECTED);
    CHECK(et_stream_end(&s, 3, 1) == ET_REC_PENDING);
    CHECK(!s.ended);
    et_loss l = et_stream_loss(&s);
    CHECK(!l.exact && l.expected == 700 && l.lost == 0);
    et_stream_settle(&s);
    CHECK(s.rejected[ET_REJ_RECORD_UNCONFIRMED] == 1);
    et_stream_settle(&s); /* once */
    CHECK(s.rejected[ET_REJ_RECORD_UNCONFIRMED] == 1);
    CHECK(et_stream_end(&s, 700, 9) == ET_REC_PENDING);
    CHECK(et_stream_end(&s, 700, 9) == ET_REC_CONFIRMED);
    l = et_stream_loss(&s);
    CHECK(l.exact && l.expected == 700 && l.received == 700 && l.lost == 0);
    /* more disagreeing candidates than slots: the extra ones are rejected at once */
    et_stream_free(&s);
    CHECK(et_stream_init(&s, 64) == 0);
    for (uint64_t k = 0; k < ET_VOTE_SLOTS; k++)
        CHECK(et_stream_end(&s, k, 1) == ET_REC_PENDING);
    CHECK(et_stream_end(&s, 30, 1) == ET_REC_REJECTED);
    CHECK(et_stream_end(&s, 2, 1) == ET_REC_CONFIRMED && s.sent == 2);
    CHECK(s.rejected[ET_REJ_RECORD_CONFLICT] == 1 + ET_VOTE_SLOTS - 1);
    et_stream_free(&s);
}

/* Which session a receiver takes: consistent evidence, never one datagram. */
static void test_lock(void)
{
    static et_lock l;
    et_header h;
    const uint64_t S = 0x5eed, OTHER = 0xf0e1, WINDOW = 1 << 19;
    et_lock_init(&l, 0, WINDOW);
    /* a stray of another session with a huge packet number: rejected, not a candidate */
    et_build_data(buf, OTHER, 0, 2, 1ULL << 62, 1000);
    CHECK(et_parse(buf, 1000, &h) == ET_OK);
    CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_REJECTED);
    CHECK(l.rejected[ET_REJ_OUT_OF_WINDOW] == 1 && !l.c[0].datagrams);
    /* a stray where a stream begins: one piece of evidence, kept */
    et_build_data(buf, OTHER, 0, 2, 0, 1000);
    et_parse(buf, 1000, &h);
    CHECK(et_lock_offer(&l, &h, 0, 1000, 2) == ET_LOCK_KEPT);
    /* the same datagram again and again is still one piece of evidence */
    for (int k = 0; k < 10; k++)
        CHECK(et_lock_offer(&l, &h, 0, 1000, 3) == ET_LOCK_KEPT);
    /* a start record with an impossible plan is no evidence */
    et_build_start(buf, OTHER, 1, 2, 0, 1000, 0);
    et_parse(buf, ET_HEADER_BYTES, &h);
    CHECK(et_lock_offer(&l, &h, 0, ET_HEADER_BYTES, 4) == ET_LOCK_REJECTED);
    /* end records are no evidence (a leftover of an earlier run) */
    for (uint16_t c = 0; c < 8; c++) {
        et_build_end(buf, S, 0, 2, 10, 1, c);
        et_parse(buf, ET_HEADER_BYTES, &h);
        CHECK(et_lock_offer(&l, &h, 0, ET_HEADER_BYTES, 5) == ET_LOCK_KEPT);
    }
    /* the real sender: start records, then data; the fourth different one locks */
    et_lock_result r = ET_LOCK_KEPT;
    for (uint16_t c = 0; c < 2; c++)
        for (uint16_t st = 0; st < 2; st++) {
            et_build_start(buf, S, st, 2, 10, 1000, c);
            et_parse(buf, ET_HEADER_BYTES, &h);
            r = et_lock_offer(&l, &h, 0, ET_HEADER_BYTES, 6);
            CHECK(r == (c == 1 && st == 1 ? ET_LOCK_TOOK : ET_LOCK_KEPT));
        }
    CHECK(l.locked && l.c[0].session == S && l.c[0].nstreams == 2);
    CHECK(l.c[0].npending == 8 + 4 && l.c[0].pending[0].kind == ET_KIND_END);
    CHECK(l.c[0].pending[11].kind == ET_KIND_START && l.c[0].pending[11].stream == 1);
    /* the stray session's datagrams: foreign */
    CHECK(l.foreign == 11);
    for (int k = 1; k < ET_LOCK_CANDIDATES; k++)
        CHECK(!l.c[k].datagrams);

    /* --session: only that session's datagrams count; the rest are foreign */
    et_lock_init(&l, S, WINDOW);
    et_build_data(buf, OTHER, 0, 1, 0, 1000);
    et_parse(buf, 1000, &h);
    CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_FOREIGN);
    /* the wanted session with a damaged payload: kept, no evidence */
    et_build_data(buf, S, 0, 1, 0, 1000);
    et_parse(buf, 1000, &h);
    CHECK(et_lock_offer(&l, &h, 1, 1000, 1) == ET_LOCK_KEPT && l.c[0].evidence == 0);
    /* the same id with two stream counts: two candidates; neither has enough alone */
    for (uint64_t q = 0; q < 3; q++) {
        et_build_data(buf, S, 0, 1, q, 1000);
        et_parse(buf, 1000, &h);
        CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_KEPT);
        et_build_data(buf, S, 0, 3, q, 1000);
        et_parse(buf, 1000, &h);
        CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_KEPT);
    }
    et_build_data(buf, S, 0, 3, 3, 1000);
    et_parse(buf, 1000, &h);
    CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_TOOK && l.c[0].nstreams == 3);
    CHECK(l.foreign == 4); /* the nstreams=1 candidate's: the corrupt one and three */

    /* a flood of strays, each another session, cannot push out a stronger candidate */
    et_lock_init(&l, 0, WINDOW);
    for (uint64_t q = 0; q < 3; q++) {
        et_build_data(buf, S, 0, 1, q, 1000);
        et_parse(buf, 1000, &h);
        et_lock_offer(&l, &h, 0, 1000, 1);
    }
    for (uint64_t k = 1; k <= 100; k++) {
        et_build_data(buf, 1000 + k, 0, 1, 0, 1000);
        et_parse(buf, 1000, &h);
        CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_KEPT);
    }
    et_build_data(buf, S, 0, 1, 3, 1000);
    et_parse(buf, 1000, &h);
    CHECK(et_lock_offer(&l, &h, 0, 1000, 1) == ET_LOCK_TOOK && l.c[0].session == S);
    CHECK(l.foreign == 100);
    /* never locked: at the end every candidate's datagrams are foreign */
    et_lock_init(&l, 0, WINDOW);
    et_build_data(buf, S, 0, 1, 0, 1000);
    et_parse(buf, 1000, &h);
    et_lock_offer(&l, &h, 0, 1000, 1);
    et_lock_settle(&l);
    CHECK(l.foreign == 1 && !l.locked);
    /* more than a candidate can keep: the rest rejected, counted */
    et_lock_init(&l, 0, WINDOW);
    for (uint16_t c = 0; c < ET_LOCK_PENDING + 3; c++) {
        et_build_end(buf, S, 0, 1, 10, 1, c);
        et_parse(buf, ET_HEADER_BYTES, &h);
        et_lock_offer(&l, &h, 0, ET_HEADER_BYTES, 1);
    }
    CHECK(l.rejected[ET_REJ_BEFORE_LOCK] == 3 && l.c[0].npending == ET_LOCK_PENDING);
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
    test_records();
    test_lock();
    test_schedule();
    CBT_DONE();
}
