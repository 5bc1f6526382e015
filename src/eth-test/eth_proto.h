/* eth-test's datagram format, its parser, and the per-stream loss accounting.
 * Shared by eth-test-send and eth-test-receive, and tested on its own
 * (tests/c/test_eth_proto.c, tests/c/test_eth_fuzz.c).
 *
 * Every datagram starts with a 48-byte header, little-endian on the wire:
 *
 *   off size field
 *    0   4   magic "CBET"
 *    4   1   version (2)
 *    5   1   kind: 1 data, 2 end of stream, 3 start of stream
 *    6   2   stream number (0 .. nstreams-1; stream i goes to port base+i)
 *    8   2   nstreams of the session
 *   10   2   copy: which repeat of a start or end record (0 for data)
 *   12   4   size: the datagram's length in bytes
 *   16   8   session id (random per sender run, never 0)
 *   24   8   data:  packet number in the stream (0, 1, ...);
 *            end:   packets sent on this stream;
 *            start: packets the stream will send (its plan)
 *   32   8   end: the sender's sending time in ns; start: the data datagrams' size;
 *            data: 0
 *   40   8   check: a hash of bytes 0..39
 *
 * A data datagram's payload (size - 48 bytes) carries three stamps that depend on
 * session, stream and packet number: its first and last 8-byte words and one word at
 * a position derived from the packet number. The rest is filler. The stamps catch a
 * payload that is not the one the sender wrote (a stale or corrupted buffer).
 *
 * Version 2 added the start record and the rule that a start or end record counts only
 * when a second copy confirms it: a receiver on a shared network must not let one
 * datagram decide its verdict (a version-1 sender's datagrams are "unknown version"). */
#ifndef ETH_PROTO_H
#define ETH_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define ET_MAGIC 0x54454243u /* "CBET" read as little-endian */
#define ET_VERSION 2
#define ET_HEADER_BYTES 48
#define ET_MIN_DATA_BYTES (ET_HEADER_BYTES + 8) /* header + at least one stamp word */
#define ET_MAX_DATAGRAM 65507                  /* largest UDP payload over IPv4 */
#define ET_MAX_STREAMS 1024
/* Datagrams per UDP GSO send (--gso): the kernel's UDP_MAX_SEGMENTS before Linux 6.10. */
#define ET_MAX_GSO 64
#define ET_TEST_VERSION "1.0"

enum et_kind { ET_KIND_DATA = 1, ET_KIND_END = 2, ET_KIND_START = 3 };

typedef struct et_header {
    uint8_t version, kind;
    uint16_t stream, nstreams, copy;
    uint32_t size;
    uint64_t session, seq, aux;
} et_header;

/* What a received datagram is, before any session or stream accounting. */
typedef enum et_parse_result {
    ET_OK = 0,
    ET_BAD_SHORT,    /* shorter than a header */
    ET_BAD_MAGIC,    /* not ours at all */
    ET_BAD_VERSION,
    ET_BAD_CHECK,    /* header hash wrong: damaged or forged */
    ET_BAD_KIND,
    ET_BAD_LENGTH,   /* datagram length differs from the header's size */
    ET_BAD_STREAM,   /* stream >= nstreams, nstreams 0 or too large, session 0 */
    ET_BAD_PAYLOAD,  /* header fine, payload stamps wrong */
    ET_NPARSE
} et_parse_result;

extern const char *const et_parse_names[ET_NPARSE];

/* Writes the header (including its check) into buf[0..47]. */
void et_put_header(void *buf, const et_header *h);
/* Writes the payload stamps of data datagram h into buf (h->size bytes). */
void et_stamp_payload(void *buf, const et_header *h);
/* A complete data datagram: header and stamps (filler left as it is). */
void et_build_data(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                   uint64_t seq, uint32_t size);
/* A complete end-of-stream record (ET_HEADER_BYTES long). */
void et_build_end(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                  uint64_t sent, uint64_t send_ns, uint16_t copy);
/* A complete start-of-stream record (ET_HEADER_BYTES long): the stream's plan. */
void et_build_start(void *buf, uint64_t session, uint16_t stream, uint16_t nstreams,
                    uint64_t planned, uint32_t size, uint16_t copy);

/* Classifies len bytes received. Any bytes and any length are safe. On ET_OK (and on
 * ET_BAD_PAYLOAD) *h holds the header. Data payloads are verified. */
et_parse_result et_parse(const void *buf, size_t len, et_header *h);

/* ---- what one datagram may change -------------------------------------------
 * A datagram that passes the parser can still be a stray or a forgery: a number that
 * no sender of this stream could send, or a record that contradicts the stream's. Such
 * a datagram is rejected and counted by reason; it changes nothing else. */
typedef enum et_reject {
    ET_REJ_OUT_OF_WINDOW,      /* data numbered half a window or more beyond the highest seen */
    ET_REJ_BEYOND_PLAN,        /* data numbered >= the packets the start record announced */
    ET_REJ_BEYOND_SENT,        /* data numbered >= the packets the end record says were sent */
    ET_REJ_RECORD_RANGE,       /* a start or end record with counts no sender of it sends */
    ET_REJ_RECORD_CONFLICT,    /* a record contradicting the confirmed one */
    ET_REJ_RECORD_UNCONFIRMED, /* a record no second copy confirmed (counted at the end) */
    ET_REJ_STREAM_COUNT,       /* the session's id with another number of streams */
    ET_REJ_BEFORE_LOCK,        /* more datagrams than kept while the session was not locked */
    ET_NREJECT
} et_reject;

extern const char *const et_reject_keys[ET_NREJECT];  /* JSON keys: "out_of_window", ... */
extern const char *const et_reject_names[ET_NREJECT]; /* for people */

/* A start or end record counts when two copies agree (the sender sends several); until
 * then its values are candidates. The first value confirmed is in force; a copy that
 * disagrees with it is rejected, and so are candidates never confirmed. */
#define ET_VOTE_SLOTS 4
typedef struct et_vote {
    uint64_t a[ET_VOTE_SLOTS], b[ET_VOTE_SLOTS]; /* candidate values */
    uint32_t n[ET_VOTE_SLOTS];                   /* copies of each */
    int confirmed;                               /* 1: a[0], b[0] in force */
} et_vote;

typedef enum et_rec_result {
    ET_REC_CONFIRMED, /* this copy confirmed the record: it is now in force */
    ET_REC_COPY,      /* one more copy of the record in force */
    ET_REC_PENDING,   /* a candidate, waiting for a second copy */
    ET_REC_REJECTED   /* counted in the stream's rejected[] */
} et_rec_result;

/* ---- per-stream accounting --------------------------------------------------
 * Which packet numbers of a stream arrived, in a sliding window of `window` numbers
 * (a power of two) behind the highest one seen. Within the window every packet is
 * classified exactly: new, new but out of order (reordered), or a duplicate. A
 * packet further behind than the window (older than base) is counted as stale: it
 * can no longer be told apart from a duplicate, and does not count as received. A
 * packet half a window or more beyond the highest seen is rejected (ET_REJ_OUT_OF_WINDOW):
 * accepting it would slide the window past the packets still to come. */
typedef enum et_seq_result {
    ET_SEQ_NEW, ET_SEQ_REORDERED, ET_SEQ_DUPLICATE, ET_SEQ_STALE, ET_SEQ_REJECTED
} et_seq_result;

typedef struct et_stream {
    uint64_t window;      /* bits in the window (power of two) */
    uint64_t *bits;       /* window/64 words; bit (seq % window) for seq in [base, base+window) */
    uint64_t base;        /* lowest packet number the window covers */
    uint64_t highest;     /* highest packet number seen + 1; 0 = none yet */
    uint64_t unique, unique_bytes, reordered, duplicates, stale;
    uint64_t corrupt;     /* payload stamps wrong (not counted as received) */
    uint64_t rejected[ET_NREJECT];
    /* from the start records (confirmed) */
    int planned_known;
    uint64_t planned, planned_size, start_records;
    et_vote start_vote;
    /* from the end-of-stream records (confirmed) */
    int ended;
    uint64_t sent, send_ns, end_records;
    et_vote end_vote;
} et_stream;

/* 0, or -1 when out of memory. window is rounded up to a power of two >= 64. (The
 * receiver keeps its streams to the end; the tests free them: tests/c/test_eth.h.) */
int et_stream_init(et_stream *s, uint64_t window);
/* Whether packet number seq may be accounted: -1, or the reason it is rejected (and
 * counted). et_stream_data checks it first; a damaged payload is checked with it too. */
int et_stream_admit(et_stream *s, uint64_t seq);
et_seq_result et_stream_data(et_stream *s, uint64_t seq, uint32_t bytes);
/* A start record: the packets the stream will send and their size. */
et_rec_result et_stream_start(et_stream *s, uint64_t planned, uint64_t size);
/* An end record: the packets sent and the sending time. */
et_rec_result et_stream_end(et_stream *s, uint64_t sent, uint64_t send_ns);
/* Copies of records never confirmed, moved into rejected[ET_REJ_RECORD_UNCONFIRMED]
 * (once, when the run's counts are read). */
void et_stream_settle(et_stream *s);

/* The loss of a stream: with its end record, exactly sent minus the distinct packets
 * received below sent; without one, a lower bound: the gaps below the highest packet
 * number seen. *beyond counts distinct packets numbered >= sent (none from a correct
 * sender). */
typedef struct et_loss {
    uint64_t expected;    /* sent (ended) or highest seen + 1 */
    uint64_t received;    /* distinct packets below `expected` */
    uint64_t lost;
    uint64_t beyond;
    int exact;            /* 1 when the end record was received */
} et_loss;
et_loss et_stream_loss(const et_stream *s);

/* ---- which session a receiver measures -----------------------------------------
 * A receiver takes the session (and its number of streams) only on consistent
 * evidence: ET_LOCK_EVIDENCE different datagrams of it (a repeated one counts once),
 * each a start record or a data packet with a correct payload numbered below max_seq
 * (where a stream begins), all with the same number of streams. Until then every datagram of a candidate session is
 * kept (up to ET_LOCK_PENDING per candidate), so that none of the locked session's is
 * lost: the caller accounts them once the session is locked. A stray datagram, even a
 * well-formed one, is at most one piece of evidence: it cannot take the run over. */
#define ET_LOCK_EVIDENCE 4
#define ET_LOCK_CANDIDATES 8
#define ET_LOCK_PENDING 64

typedef struct et_pending {
    uint8_t kind, corrupt;
    uint16_t stream, copy;
    uint32_t len;
    uint64_t seq, aux;
    int64_t ts;           /* the caller's receive time */
} et_pending;

typedef struct et_candidate {
    uint64_t session;
    uint16_t nstreams;
    uint32_t evidence, npending;
    uint64_t datagrams, age;
    et_pending pending[ET_LOCK_PENDING];
} et_candidate;

typedef struct et_lock {
    uint64_t want;        /* only this session (--session), 0: any */
    uint64_t max_seq;     /* a data packet numbered beyond this is no evidence */
    int locked;           /* 1: `c[0]` is the session, its pending to be accounted */
    et_candidate c[ET_LOCK_CANDIDATES];
    uint64_t clock;
    uint64_t foreign;     /* datagrams of candidates dropped or never locked */
    uint64_t rejected[ET_NREJECT];
} et_lock;

typedef enum et_lock_result {
    ET_LOCK_KEPT,         /* held as a candidate's */
    ET_LOCK_TOOK,         /* held, and its session is now locked: l->c[0] */
    ET_LOCK_FOREIGN,      /* another session than --session: the caller counts it */
    ET_LOCK_REJECTED      /* counted in l->rejected[] */
} et_lock_result;

void et_lock_init(et_lock *l, uint64_t want, uint64_t max_seq);
/* Offers a datagram that parsed (ET_OK, or ET_BAD_PAYLOAD: corrupt) and came on its own
 * stream's port, while no session is locked. */
et_lock_result et_lock_offer(et_lock *l, const et_header *h, int corrupt, uint32_t len, int64_t ts);
/* The datagrams of candidates that never locked, moved into l->foreign (at the end). */
void et_lock_settle(et_lock *l);

/* ---- the sender's schedule ---------------------------------------------------
 * A sender thread sends its batches back to back in a fixed order; batch j becomes due
 * when the bytes of batches 0..j-1 have had their time at the thread's rate. */
static inline uint64_t et_due_ns(uint64_t t0_ns, uint64_t bytes_before, double bits_per_s)
{
    return t0_ns + (uint64_t)((double)bytes_before * 8.0 * 1e9 / bits_per_s + 0.5);
}

/* Packets per stream for a run of duration_s at stream_gbits with size-byte datagrams
 * (at least 1). */
uint64_t et_packets_per_stream(double duration_s, double stream_gbits, uint32_t size);

/* Speeds are judged at the precision the compliance document states them: 9.00 Gbit/s
 * is met by anything that prints as 9.00, i.e. within 0.05% below (8.9955). A measured
 * time is never exact; a count is, so loss has no such tolerance. */
#define ET_SPEED_TOLERANCE 0.0005
static inline int et_speed_meets(double gbits, double threshold_gbits)
{
    return gbits >= threshold_gbits * (1 - ET_SPEED_TOLERANCE);
}

#endif
