/* eth-test's datagram format, parser and per-stream accounting (see eth_proto.h). */
#include "eth_proto.h"
#include "../common/cb_common.h"
#include "../common/cb_hash.h"

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

const char *const et_reject_keys[ET_NREJECT] = {
    [ET_REJ_OUT_OF_WINDOW] = "out_of_window",
    [ET_REJ_BEYOND_PLAN] = "beyond_plan",
    [ET_REJ_BEYOND_SENT] = "beyond_sent",
    [ET_REJ_RECORD_RANGE] = "record_out_of_range",
    [ET_REJ_RECORD_CONFLICT] = "record_conflict",
    [ET_REJ_RECORD_UNCONFIRMED] = "record_unconfirmed",
    [ET_REJ_STREAM_COUNT] = "stream_count",
    [ET_REJ_BEFORE_LOCK] = "before_lock",
};

const char *const et_reject_names[ET_NREJECT] = {
    [ET_REJ_OUT_OF_WINDOW] = "numbered far beyond what the stream has seen",
    [ET_REJ_BEYOND_PLAN] = "numbered beyond the sender's start record",
    [ET_REJ_BEYOND_SENT] = "numbered beyond the sender's end record",
    [ET_REJ_RECORD_RANGE] = "records with impossible counts",
    [ET_REJ_RECORD_CONFLICT] = "records contradicting the confirmed one",
    [ET_REJ_RECORD_UNCONFIRMED] = "records no second copy confirmed",
    [ET_REJ_STREAM_COUNT] = "the session's id with another stream count",
    [ET_REJ_BEFORE_LOCK] = "too many before the session was locked",
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

void et_build_start(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                    uint64_t planned, uint32_t size, uint16_t copy)
{
    et_header h = {.version = ET_VERSION, .kind = ET_KIND_START, .stream = stream,
                   .nstreams = nstreams, .copy = copy, .size = ET_HEADER_BYTES,
                   .session = session, .seq = planned, .aux = size};
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
    if (h->kind != ET_KIND_DATA && h->kind != ET_KIND_END && h->kind != ET_KIND_START)
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

int et_stream_admit(et_stream *s, uint64_t seq)
{
    int why = -1;
    if (s->planned_known && seq >= s->planned)
        why = ET_REJ_BEYOND_PLAN;
    else if (s->ended && seq >= s->sent)
        why = ET_REJ_BEYOND_SENT;
    else if (seq >= s->highest && seq - s->highest >= s->window / 2)
        why = ET_REJ_OUT_OF_WINDOW;
    if (why >= 0)
        s->rejected[why]++;
    return why;
}

et_seq_result et_stream_data(et_stream *s, uint64_t seq, uint32_t bytes)
{
    if (et_stream_admit(s, seq) >= 0)
        return ET_SEQ_REJECTED;
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

/* One copy of a record (a, b): confirmed by a second copy of the same values. */
static et_rec_result vote(et_stream *s, et_vote *v, uint64_t a, uint64_t b)
{
    if (v->confirmed) {
        if (v->a[0] == a && v->b[0] == b)
            return ET_REC_COPY;
        s->rejected[ET_REJ_RECORD_CONFLICT]++;
        return ET_REC_REJECTED;
    }
    for (int k = 0; k < ET_VOTE_SLOTS; k++) {
        if (v->n[k] && (v->a[k] != a || v->b[k] != b))
            continue;
        if (v->n[k]++ == 0) {
            v->a[k] = a;
            v->b[k] = b;
            return ET_REC_PENDING;
        }
        /* confirmed: the copies of the other candidates were wrong */
        for (int o = 0; o < ET_VOTE_SLOTS; o++)
            if (o != k)
                s->rejected[ET_REJ_RECORD_CONFLICT] += v->n[o];
        v->a[0] = a;
        v->b[0] = b;
        v->n[0] = v->n[k];
        for (int o = 1; o < ET_VOTE_SLOTS; o++)
            v->n[o] = 0;
        v->confirmed = 1;
        return ET_REC_CONFIRMED;
    }
    s->rejected[ET_REJ_RECORD_CONFLICT]++; /* more disagreeing candidates than slots */
    return ET_REC_REJECTED;
}

et_rec_result et_stream_start(et_stream *s, uint64_t planned, uint64_t size)
{
    if (planned == 0 || size < ET_MIN_DATA_BYTES || size > ET_MAX_DATAGRAM) {
        s->rejected[ET_REJ_RECORD_RANGE]++;
        return ET_REC_REJECTED;
    }
    et_rec_result r = vote(s, &s->start_vote, planned, size);
    if (r == ET_REC_CONFIRMED) {
        s->planned_known = 1;
        s->planned = planned;
        s->planned_size = size;
    }
    if (r == ET_REC_CONFIRMED) /* the copies that confirmed it */
        s->start_records = s->start_vote.n[0];
    else if (r == ET_REC_COPY)
        s->start_records++;
    return r;
}

et_rec_result et_stream_end(et_stream *s, uint64_t sent, uint64_t send_ns)
{
    /* more than the plan, or (without one) more than the window could ever have seen */
    if (s->planned_known ? sent > s->planned
                         : sent > s->highest && sent - s->highest > s->window / 2) {
        s->rejected[ET_REJ_RECORD_RANGE]++;
        return ET_REC_REJECTED;
    }
    et_rec_result r = vote(s, &s->end_vote, sent, send_ns);
    if (r == ET_REC_CONFIRMED) {
        s->ended = 1;
        s->sent = sent;
        s->send_ns = send_ns;
    }
    if (r == ET_REC_CONFIRMED) /* the copies that confirmed it */
        s->end_records = s->end_vote.n[0];
    else if (r == ET_REC_COPY)
        s->end_records++;
    return r;
}

static void settle_vote(et_stream *s, et_vote *v)
{
    for (int k = v->confirmed ? 1 : 0; k < ET_VOTE_SLOTS; k++) {
        s->rejected[ET_REJ_RECORD_UNCONFIRMED] += v->n[k];
        v->n[k] = 0;
    }
}

void et_stream_settle(et_stream *s)
{
    settle_vote(s, &s->start_vote);
    settle_vote(s, &s->end_vote);
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

/* ---- which session a receiver measures ------------------------------------------ */
void et_lock_init(et_lock *l, uint64_t want, uint64_t max_seq)
{
    memset(l, 0, sizeof *l);
    l->want = want;
    l->max_seq = max_seq;
}

static void drop_candidate(et_lock *l, et_candidate *c)
{
    l->foreign += c->datagrams;
    memset(c, 0, sizeof *c);
}

/* The candidate of (session, nstreams); a free or the weakest slot for a new one. */
static et_candidate *candidate(et_lock *l, uint64_t session, uint16_t nstreams)
{
    et_candidate *weakest = NULL;
    for (int k = 0; k < ET_LOCK_CANDIDATES; k++) {
        et_candidate *c = &l->c[k];
        if (c->datagrams && c->session == session && c->nstreams == nstreams)
            return c;
    }
    for (int k = 0; k < ET_LOCK_CANDIDATES; k++) {
        et_candidate *c = &l->c[k];
        if (!c->datagrams) {
            weakest = c;
            break;
        }
        if (!weakest || c->evidence < weakest->evidence ||
            (c->evidence == weakest->evidence && c->age < weakest->age))
            weakest = c;
    }
    /* A flood of strays, each of another session, pushes out the weakest (oldest), never
     * one that has more evidence than they. */
    drop_candidate(l, weakest);
    weakest->session = session;
    weakest->nstreams = nstreams;
    weakest->age = ++l->clock;
    return weakest;
}

et_lock_result et_lock_offer(et_lock *l, const et_header *h, int corrupt, uint32_t len, int64_t ts)
{
    if (l->want && h->session != l->want)
        return ET_LOCK_FOREIGN;
    /* What no sender's first packets look like is no evidence and is not kept. */
    if (h->kind == ET_KIND_DATA && h->seq >= l->max_seq) {
        l->rejected[ET_REJ_OUT_OF_WINDOW]++;
        return ET_LOCK_REJECTED;
    }
    if (h->kind == ET_KIND_START &&
        (h->seq == 0 || h->aux < ET_MIN_DATA_BYTES || h->aux > ET_MAX_DATAGRAM)) {
        l->rejected[ET_REJ_RECORD_RANGE]++;
        return ET_LOCK_REJECTED;
    }
    et_candidate *c = candidate(l, h->session, h->nstreams);
    if (c->npending == ET_LOCK_PENDING) {
        l->rejected[ET_REJ_BEFORE_LOCK]++;
        return ET_LOCK_REJECTED;
    }
    /* A start record or a good data packet where a stream begins: evidence, unless it
     * repeats one already counted (one stray sent many times is still one). End records
     * are not (a leftover of an earlier run must not lock). */
    int evidence = !corrupt && (h->kind == ET_KIND_START || h->kind == ET_KIND_DATA);
    for (uint32_t k = 0; evidence && k < c->npending; k++) {
        const et_pending *p = &c->pending[k];
        if (p->kind == h->kind && !p->corrupt && p->stream == h->stream && p->seq == h->seq &&
            p->copy == h->copy)
            evidence = 0;
    }
    c->datagrams++;
    c->pending[c->npending++] = (et_pending){.kind = h->kind, .corrupt = (uint8_t)(corrupt != 0),
                                             .stream = h->stream, .copy = h->copy, .len = len,
                                             .seq = h->seq, .aux = h->aux, .ts = ts};
    c->evidence += (uint32_t)evidence;
    if (c->evidence < ET_LOCK_EVIDENCE)
        return ET_LOCK_KEPT;
    et_candidate won = *c;
    memset(c, 0, sizeof *c);
    for (int k = 0; k < ET_LOCK_CANDIDATES; k++)
        drop_candidate(l, &l->c[k]);
    l->c[0] = won;
    l->locked = 1;
    return ET_LOCK_TOOK;
}

void et_lock_settle(et_lock *l)
{
    for (int k = l->locked ? 1 : 0; k < ET_LOCK_CANDIDATES; k++)
        drop_candidate(l, &l->c[k]);
}

uint64_t et_packets_per_stream(double duration_s, double stream_gbits, uint32_t size)
{
    double n = floor(duration_s * stream_gbits * 1e9 / (8.0 * size) + 0.5);
    return n < 1 ? 1 : (uint64_t)n;
}
