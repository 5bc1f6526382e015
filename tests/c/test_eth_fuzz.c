/* Fuzz-style test of eth-test's datagram parser: random datagrams and mutations of valid
 * ones must never crash it, read past them, or be taken for valid; each gets exactly one
 * class. Built with AddressSanitizer and UBSan where the compiler has them (kernel.mk),
 * and every datagram lives in a heap block of exactly its length, so a read one byte
 * past the end is reported. Deterministic (fixed seeds): a failure reproduces. */
#include "cb_test.h"
#include "common/cb_common.h"
#include "common/cb_hash.h"
#include "eth-test/eth_proto.h"
#include "test_eth.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x0123456789abcdefULL;
static uint64_t next(void) { return cb_mix64(rng++); }

static unsigned long long classes[ET_NPARSE];

/* Parses a copy of data[0..len) in a block of exactly len bytes. */
static et_parse_result parse_exact(const unsigned char *data, size_t len, et_header *h)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, data, len);
    et_parse_result r = et_parse(copy, len, h);
    free(copy);
    CHECK(r >= ET_OK && r < ET_NPARSE); /* a class, always */
    classes[r]++;
    return r;
}

static unsigned char valid[9000];

static size_t make_valid(void)
{
    uint64_t r = next();
    size_t len;
    if (r % 5 == 0) {
        et_build_end(valid, 1 + r % 1000, (uint16_t)(r % 12), 12, r >> 20, r >> 8, (uint16_t)(r % 8));
        len = ET_HEADER_BYTES;
    } else if (r % 5 == 1) {
        et_build_start(valid, 1 + r % 1000, (uint16_t)(r % 12), 12, r >> 20, (uint32_t)(r >> 48),
                       (uint16_t)(r % 8));
        len = ET_HEADER_BYTES;
    } else {
        len = ET_MIN_DATA_BYTES + (size_t)(next() % (sizeof valid - ET_MIN_DATA_BYTES + 1));
        for (size_t i = 0; i < len; i++)
            valid[i] = (unsigned char)next();
        et_build_data(valid, 1 + r % 1000, (uint16_t)(r % 12), 12, r >> 16, (uint32_t)len);
    }
    return len;
}

static void fuzz_random(int rounds)
{
    static unsigned char d[9100];
    et_header h;
    for (int n = 0; n < rounds; n++) {
        size_t len = (size_t)(next() % sizeof d);
        if (n % 4 == 0)
            len %= 64; /* many short ones, around the header size */
        for (size_t i = 0; i < len; i++)
            d[i] = (unsigned char)next();
        if (n % 3 == 0 && len >= 5) { /* right magic and version: gets as far as the check */
            memcpy(d, "CBET", 4);
            d[4] = ET_VERSION;
        }
        /* random bytes never pass the header check (a 2^-64 chance) */
        CHECK(parse_exact(d, len, &h) != ET_OK);
    }
}

static void fuzz_mutations(int rounds)
{
    static unsigned char d[9100];
    et_header h, orig;
    for (int n = 0; n < rounds; n++) {
        size_t len = make_valid();
        CHECK(parse_exact(valid, len, &orig) == ET_OK);
        memcpy(d, valid, len);
        size_t mlen = len;
        int kind = (int)(next() % 5);
        int edits = 1 + (int)(next() % 4);
        for (int e = 0; e < edits; e++) {
            size_t pos = (size_t)(next() % len);
            switch (kind) {
            case 0: /* bit flip */
                d[pos] ^= (unsigned char)(1u << (next() % 8));
                break;
            case 1: /* byte set to an interesting value */
            {
                static const unsigned char vals[] = {0, 1, 0x7f, 0x80, 0xff};
                d[pos] = vals[next() % sizeof vals];
                break;
            }
            case 2: /* truncation */
                mlen = (size_t)(next() % len);
                break;
            case 3: /* extension with junk */
                mlen = len + 1 + (size_t)(next() % 64);
                for (size_t i = len; i < mlen; i++)
                    d[i] = (unsigned char)next();
                break;
            case 4: /* a header word overwritten with another datagram's */
            {
                unsigned char other[1000];
                et_build_data(other, next() | 1, 0, 1, next(), 1000);
                size_t w = 8 * (size_t)(next() % (ET_HEADER_BYTES / 8));
                memcpy(d + w, other + w, 8);
                break;
            }
            }
        }
        /* edits can undo each other (the same bit flipped twice): compare the result */
        int header_touched = memcmp(d, valid, ET_HEADER_BYTES) != 0;
        int length_changed = mlen != len;
        et_parse_result r = parse_exact(d, mlen, &h);
        if (header_touched || length_changed)
            CHECK(r != ET_OK); /* a changed header or length is never taken for valid */
        if (r == ET_OK) {
            CHECK(h.session == orig.session && h.seq == orig.seq && h.stream == orig.stream);
        }
    }
}

/* Headers with a correct check but any field values (a forged or broken sender), at
 * lengths near and far from the one claimed. */
static void fuzz_fields(int rounds)
{
    static unsigned char d[9100];
    et_header h;
    for (int n = 0; n < rounds; n++) {
        uint64_t r = next();
        et_header f = {.version = ET_VERSION, .kind = (uint8_t)(r % 5), .stream = (uint16_t)(next() % 20),
                       .nstreams = (uint16_t)(next() % 20), .copy = (uint16_t)next(),
                       .size = (uint32_t)(next() % 9000), .session = next() % 3, .seq = next(), .aux = next()};
        if (r % 2 == 0) /* plausible: mostly in range */
            f.nstreams = 20, f.session = 1 + f.session, f.kind = (uint8_t)(1 + r / 2 % 2);
        size_t len = r % 3 == 0 ? (size_t)(next() % sizeof d) : f.size;
        if (len < ET_HEADER_BYTES)
            len = ET_HEADER_BYTES;
        for (size_t i = 0; i < len; i++)
            d[i] = (unsigned char)next();
        et_put_header(d, &f);
        if (f.kind == ET_KIND_DATA && f.size == len && len >= ET_MIN_DATA_BYTES && r % 4 == 0)
            et_stamp_payload(d, &f);
        et_parse_result c = parse_exact(d, len, &h);
        int in_range = f.nstreams && f.stream < f.nstreams && f.session;
        if (c == ET_OK)
            CHECK(in_range && f.size == len &&
                  (f.kind == ET_KIND_DATA || f.kind == ET_KIND_END || f.kind == ET_KIND_START));
        if (f.kind != ET_KIND_DATA && f.kind != ET_KIND_END && f.kind != ET_KIND_START)
            CHECK(c == ET_BAD_KIND);
    }
}

/* Any sequence of well-formed datagrams, of one session or many, offered to the lock:
 * no session is taken without ET_LOCK_EVIDENCE different pieces of evidence, none is
 * taken on datagrams that are none (far packet numbers, end records), and every
 * datagram offered is accounted exactly once: kept, foreign or rejected. */
static void fuzz_lock(int rounds)
{
    static et_lock l;
    static unsigned char d[256];
    et_header h;
    int locks = 0;
    for (int n = 0; n < rounds / 64; n++) {
        uint64_t want = n % 4 == 0 ? 1 + next() % 3 : 0;
        et_lock_init(&l, want, 1000);
        uint64_t offered = 0, foreign_now = 0;
        for (int k = 0; k < 64 && !l.locked; k++) {
            uint64_t r = next();
            uint64_t session = 1 + r % 3, seq = r % 7 == 0 ? next() : next() % 1500;
            uint16_t nstreams = (uint16_t)(1 + next() % 2), copy = (uint16_t)(next() % 4);
            int kind = (int)(next() % 3);
            size_t len = ET_HEADER_BYTES;
            if (kind == 0) {
                len = 64 + next() % 128;
                et_build_data(d, session, 0, nstreams, seq, (uint32_t)len);
            } else if (kind == 1) {
                et_build_start(d, session, 0, nstreams, seq % 2000, (uint32_t)(next() % 70000), copy);
            } else {
                et_build_end(d, session, 0, nstreams, seq, 1, copy);
            }
            CHECK(et_parse(d, len, &h) == ET_OK);
            et_lock_result lr = et_lock_offer(&l, &h, (int)(next() % 8 == 0), (uint32_t)len, 0);
            offered++;
            foreign_now += lr == ET_LOCK_FOREIGN;
            if (lr == ET_LOCK_TOOK) {
                locks++;
                const et_candidate *c = &l.c[0];
                CHECK(!want || c->session == want);
                /* its evidence: different start records or good data where a stream begins */
                int ev = 0;
                for (uint32_t a = 0; a < c->npending; a++) {
                    const et_pending *p = &c->pending[a];
                    CHECK(p->stream == 0);
                    if (p->corrupt || p->kind == ET_KIND_END)
                        continue;
                    CHECK(p->kind == ET_KIND_START || p->seq < 1000);
                    int repeat = 0;
                    for (uint32_t b = 0; b < a; b++)
                        repeat |= c->pending[b].kind == p->kind && !c->pending[b].corrupt &&
                                  c->pending[b].seq == p->seq && c->pending[b].copy == p->copy;
                    ev += !repeat;
                }
                CHECK(ev == ET_LOCK_EVIDENCE);
            }
        }
        et_lock_settle(&l);
        uint64_t rejected = 0;
        for (int k = 0; k < ET_NREJECT; k++)
            rejected += l.rejected[k];
        CHECK(offered == foreign_now + l.foreign + rejected + (l.locked ? l.c[0].npending : 0));
    }
    CHECK(locks > 0); /* the rounds reached a lock */
}

/* Valid-format datagrams in any order feed the accounting without breaking its sums. */
static void fuzz_accounting(int rounds)
{
    et_stream s;
    CHECK(et_stream_init(&s, 1024) == 0);
    uint64_t classified = 0;
    for (int n = 0; n < rounds; n++) {
        uint64_t r = next();
        uint64_t seq = r % 16 == 0 ? next() % (1ULL << 40) : r % 5000; /* mostly near, some far */
        uint64_t highest = s.highest;
        et_seq_result c = et_stream_data(&s, seq, 100);
        CHECK(c == ET_SEQ_NEW || c == ET_SEQ_REORDERED || c == ET_SEQ_DUPLICATE || c == ET_SEQ_STALE ||
              c == ET_SEQ_REJECTED);
        /* one datagram moves the highest number seen by less than half the window */
        CHECK(s.highest - highest < s.window / 2 + 1);
        CHECK((c == ET_SEQ_REJECTED) == (seq >= highest && seq - highest >= s.window / 2));
        classified++;
    }
    CHECK(s.unique + s.duplicates + s.stale + s.rejected[ET_REJ_OUT_OF_WINDOW] == classified);
    CHECK(s.reordered <= s.unique);
    et_stream_end(&s, 5000, 1);
    et_stream_end(&s, 5000, 1);
    et_loss l = et_stream_loss(&s);
    CHECK(l.received + l.beyond == s.unique || l.expected < s.base);
    CHECK(l.received <= l.expected ? l.lost == l.expected - l.received : l.lost == 0);
    et_stream_free(&s);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100000;
    fuzz_random(rounds);
    fuzz_mutations(rounds);
    fuzz_fields(rounds);
    fuzz_accounting(rounds);
    fuzz_lock(rounds);
    printf("classes:");
    for (int k = 0; k < ET_NPARSE; k++)
        printf(" %s=%llu", et_parse_names[k], classes[k]);
    printf("\n");
    /* every class was reached: the fuzzing got past each check of the parser */
    for (int k = 0; k < ET_NPARSE; k++)
        CHECK(classes[k] > 0);
    CBT_DONE();
}
