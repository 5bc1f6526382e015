/* eth-test's datagram format, parser and per-stream accounting (see eth_proto.h). */
#include "eth_proto.h"
#include "../common/cb_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const et_parse_names[ET_NPARSE] = {
    [ET_OK] = "ok",
    [ET_BAD_SHORT] = "too short",
    [ET_BAD_MAGIC] = "not eth-test (magic)",
    [ET_BAD_VERSION] = "unknown version",
    [ET_BAD_CHECK] = "header check failed",
    [ET_BAD_KIND] = "unknown kind",
    [ET_BAD_LENGTH] = "length differs from header",
    [ET_BAD_STREAM] = "stream or session out of range",
    [ET_BAD_PAYLOAD] = "payload stamps wrong",
};

/* ---- little-endian fields, whatever the host's byte order ------------------ */
static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* Hash of the header's first 40 bytes (five words), chained so that every bit counts. */
static uint64_t header_check(const unsigned char *p)
{
    uint64_t c = 0x6574682d74657374ULL; /* "eth-test" */
    for (int w = 0; w < 5; w++)
        c = cb_mix64(c ^ get64(p + 8 * w));
    return c;
}

void et_put_header(void *buf, const et_header *h)
{
    unsigned char *p = buf;
    put32(p, ET_MAGIC);
    p[4] = h->version;
    p[5] = h->kind;
    put16(p + 6, h->stream);
    put16(p + 8, h->nstreams);
    put16(p + 10, h->copy);
    put32(p + 12, h->size);
    put64(p + 16, h->session);
    put64(p + 24, h->seq);
    put64(p + 32, h->aux);
    put64(p + 40, header_check(p));
}

/* ---- payload stamps ------------------------------------------------------------ */
static uint64_t stamp_value(const et_header *h, uint64_t word)
{
    return cb_mix64(h->session ^ cb_mix64(((uint64_t)h->stream << 48) ^ h->seq) ^ (word << 1));
}

/* The three stamped word indices of a payload of nwords words (may coincide). */
static void stamp_words(const et_header *h, uint64_t nwords, uint64_t w[3])
{
    w[0] = 0;
    w[1] = nwords - 1;
    w[2] = cb_mix64(h->seq ^ h->session) % nwords;
}

void et_stamp_payload(void *buf, const et_header *h)
{
    unsigned char *payload = (unsigned char *)buf + ET_HEADER_BYTES;
    uint64_t nwords = (h->size - ET_HEADER_BYTES) / 8, w[3];
    stamp_words(h, nwords, w);
    for (int i = 0; i < 3; i++)
        put64(payload + 8 * w[i], stamp_value(h, w[i]));
}

static int payload_ok(const unsigned char *buf, const et_header *h)
{
    const unsigned char *payload = buf + ET_HEADER_BYTES;
    uint64_t nwords = (h->size - ET_HEADER_BYTES) / 8, w[3];
    stamp_words(h, nwords, w);
    for (int i = 0; i < 3; i++)
        if (get64(payload + 8 * w[i]) != stamp_value(h, w[i]))
            return 0;
    return 1;
}

void et_build_data(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                   uint64_t seq, uint32_t size)
{
    et_header h = {.version = ET_VERSION, .kind = ET_KIND_DATA, .stream = stream,
                   .nstreams = nstreams, .size = size, .session = session, .seq = seq};
    et_put_header(buf, &h);
    et_stamp_payload(buf, &h);
}

void et_build_end(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                  uint64_t sent, uint64_t send_ns, uint16_t copy)
{
    et_header h = {.version = ET_VERSION, .kind = ET_KIND_END, .stream = stream,
                   .nstreams = nstreams, .copy = copy, .size = ET_HEADER_BYTES,
                   .session = session, .seq = sent, .aux = send_ns};
    et_put_header(buf, &h);
}

/* ---- the parser: every check before any field is trusted ----------------------- */
et_parse_result et_parse(const void *buf, size_t len, et_header *h)
{
    const unsigned char *p = buf;
    memset(h, 0, sizeof *h);
    if (len < ET_HEADER_BYTES)
        return ET_BAD_SHORT;
    if (get32(p) != ET_MAGIC)
        return ET_BAD_MAGIC;
    if (p[4] != ET_VERSION)
        return ET_BAD_VERSION;
    if (get64(p + 40) != header_check(p))
        return ET_BAD_CHECK;
    h->version = p[4];
    h->kind = p[5];
    h->stream = get16(p + 6);
    h->nstreams = get16(p + 8);
    h->copy = get16(p + 10);
    h->size = get32(p + 12);
    h->session = get64(p + 16);
    h->seq = get64(p + 24);
    h->aux = get64(p + 32);
    if (h->kind != ET_KIND_DATA && h->kind != ET_KIND_END)
        return ET_BAD_KIND;
    if (h->size != len)
        return ET_BAD_LENGTH;
    if (h->kind == ET_KIND_DATA ? len < ET_MIN_DATA_BYTES : len != ET_HEADER_BYTES)
        return ET_BAD_LENGTH;
    if (h->nstreams == 0 || h->nstreams > ET_MAX_STREAMS || h->stream >= h->nstreams ||
        h->session == 0)
        return ET_BAD_STREAM;
    if (h->kind == ET_KIND_DATA && !payload_ok(p, h))
        return ET_BAD_PAYLOAD;
    return ET_OK;
}

/* ---- per-stream accounting ------------------------------------------------------ */
int et_stream_init(et_stream *s, uint64_t window)
{
    memset(s, 0, sizeof *s);
    uint64_t w = 64;
    while (w < window)
        w <<= 1;
    s->window = w;
    s->bits = calloc(w / 64, sizeof *s->bits);
    return s->bits ? 0 : -1;
}

static int test_bit(const et_stream *s, uint64_t seq)
{
    uint64_t i = seq & (s->window - 1);
    return (int)(s->bits[i / 64] >> (i % 64) & 1);
}

static void set_bit(et_stream *s, uint64_t seq)
{
    uint64_t i = seq & (s->window - 1);
    s->bits[i / 64] |= 1ULL << (i % 64);
}

/* Moves the window up so that it ends at seq (inclusive), forgetting what falls out. */
static void slide_to(et_stream *s, uint64_t seq)
{
    uint64_t new_base = seq - s->window + 1;
    if (new_base - s->base >= s->window) {
        memset(s->bits, 0, s->window / 8);
    } else {
        for (uint64_t q = s->base; q < new_base; q++) {
            uint64_t i = q & (s->window - 1);
            if (i % 64 == 0 && new_base - q >= 64) { /* a whole word at a time */
                s->bits[i / 64] = 0;
                q += 63;
            } else {
                s->bits[i / 64] &= ~(1ULL << (i % 64));
            }
        }
    }
    s->base = new_base;
}

et_seq_result et_stream_data(et_stream *s, uint64_t seq, uint32_t bytes)
{
    if (seq < s->base) {
        s->stale++;
        return ET_SEQ_STALE;
    }
    if (seq - s->base >= s->window)
        slide_to(s, seq);
    if (test_bit(s, seq)) {
        s->duplicates++;
        return ET_SEQ_DUPLICATE;
    }
    set_bit(s, seq);
    s->unique++;
    s->unique_bytes += bytes;
    if (seq + 1 <= s->highest) {
        s->reordered++;
        return ET_SEQ_REORDERED;
    }
    s->highest = seq + 1;
    return ET_SEQ_NEW;
}

void et_stream_end(et_stream *s, uint64_t sent, uint64_t send_ns)
{
    s->end_records++;
    if (!s->ended) {
        s->ended = 1;
        s->sent = sent;
        s->send_ns = send_ns;
    } else if (s->sent != sent || s->send_ns != send_ns) {
        s->end_conflicts++;
    }
}

et_loss et_stream_loss(const et_stream *s)
{
    et_loss l = {0};
    l.exact = s->ended;
    l.expected = s->ended ? s->sent : s->highest;
    /* Distinct packets at or beyond `expected`: all within the window, since nothing
     * at or above `highest` exists and the window reaches it. */
    uint64_t from = l.expected > s->base ? l.expected : s->base;
    for (uint64_t q = from; q < s->highest; q++)
        l.beyond += (uint64_t)test_bit(s, q);
    if (l.expected < s->base) /* a sender that claims fewer than it sent */
        l.beyond = s->unique;
    l.received = s->unique - l.beyond;
    l.lost = l.expected > l.received ? l.expected - l.received : 0;
    return l;
}

uint64_t et_packets_per_stream(double duration_s, double stream_gbits, uint32_t size)
{
    double n = floor(duration_s * stream_gbits * 1e9 / (8.0 * size) + 0.5);
    return n < 1 ? 1 : (uint64_t)n;
}
