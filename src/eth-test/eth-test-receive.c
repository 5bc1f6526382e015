/* eth-test-receive: receives eth-test-send's UDP streams on one interface of this host
 * and reports the total speed and the loss, as the compliance document's eth-test does.
 *
 * One socket per stream (ports --port, --port+1, ...), bound to the address under test,
 * with a large receive buffer; receiver threads own the sockets round-robin and drain
 * them with recvmmsg() in batches. Every datagram is classified (eth_proto.h): not
 * eth-test's format (malformed), another session (foreign), a stream on the wrong port
 * (misdirected), a damaged payload (corrupt), rejected (a number or a record no sender
 * of the stream could send), or a data packet: new, reordered or duplicated by its
 * packet number. The session is taken only on consistent evidence (several datagrams of
 * it, et_lock), so that one stray datagram cannot take over or end the run. Loss is
 * counted against the number of packets the sender says it sent (its end-of-stream
 * records, confirmed by a second copy), never guessed. */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "../common/cb_common.h"
#include "../common/cb_options.h"
#include "eth_net.h"
#include "eth_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOT_BYTES 65536 /* any UDP datagram fits; larger ones show as truncated */
/* Slots a power of two apart would all fall into the same cache sets: offset them. */
#define SLOT_STRIDE (SLOT_BYTES + 5 * 64)
#define CTRL_BYTES 128   /* room for the SO_RXQ_OVFL drop counter, a timestamp, UDP_GRO */
#define SEQ_WINDOW (1u << 20)
#define LINGER_S 0.2     /* after the last end record, wait this long for stragglers */

/* ---- options ------------------------------------------------------------------------ */
typedef struct recv_cfg {
    const char *host, *iface, *json_path, *ready_file;
    int port, streams, batch, threads, busy_poll_us, rt_priority, quiet, gro, reuseport;
    size_t rcvbuf;
    double timeout_s, idle_s, threshold, max_loss;
    uint64_t want_session;
    cb_intlist cpus;
} recv_cfg;

/* --busy-poll[=USEC]: 50 us when given without a value; 0 spins without asking the kernel
 * to poll (stored as -1: 0 is "no busy polling"). */
static void parse_busy_poll(const char *opt, const char *arg, void *dest)
{
    int us = arg ? (int)cb_opt_long(opt, arg, 0, 1000000) : 50;
    *(int *)dest = us ? us : -1;
}

static const char *const on_off[] = {"off", "on", NULL};

#define O(field) offsetof(recv_cfg, field)
static const cb_opt opts[] = {
    {.name = "host", .letter = 'H', .type = CB_OPT_STRING, .off = O(host), .arg = "HOST",
     .help = "the address (or name) under test: a local address"},
    {.name = "interface", .letter = 'I', .type = CB_OPT_STRING, .off = O(iface), .arg = "IFACE",
     .help = "or the interface under test (its first IPv4 address)"},
    {.name = "port", .letter = 'p', .type = CB_OPT_INT, .off = O(port), .min = 1, .max = 65535,
     .def = ET_STR(ET_DEFAULT_PORT), .arg = "PORT", .help = "first UDP port"},
    {.name = "streams", .letter = 'n', .type = CB_OPT_INT, .off = O(streams), .min = 1,
     .max = ET_MAX_STREAMS, .def = "12", .arg = "N", .help = "streams, one UDP port each"},
    {.name = "threads", .letter = 'T', .type = CB_OPT_INT, .off = O(threads), .min = 1, .max = 256,
     .def = "1", .arg = "N", .help = "receiver threads; sockets dealt out round-robin"},
    {.name = "cpu", .letter = 'c', .type = CB_OPT_INTLIST, .off = O(cpus), .arg = "LIST",
     .help = "pin receiver thread i to the i-th CPU of LIST"},
    {.name = "batch", .letter = 'b', .type = CB_OPT_INT, .off = O(batch), .min = 1, .max = 1024,
     .def = "128", .arg = "N", .help = "receives per recvmmsg call (a datagram, or with\n"
                                     "UDP GRO several coalesced)"},
    {.name = "gro", .type = CB_OPT_CHOICE, .off = O(gro), .choices = on_off, .def = "on",
     .arg = "on|off", .help = "UDP GRO (UDP_GRO): take datagrams the kernel has\n"
                              "coalesced (GRO, a sender's GSO) in one receive"},
    {.name = "reuseport", .type = CB_OPT_INT, .off = O(reuseport), .min = 1, .max = 64, .def = "1",
     .arg = "N", .help = "N sockets per port (SO_REUSEPORT), datagrams spread\n"
                         "among them at random, so that N threads share a stream"},
    {.name = "rcvbuf", .type = CB_OPT_SIZE, .off = O(rcvbuf), .min = 4096, .max = 1 << 30,
     .def = "32M", .arg = "BYTES", .help = "receive buffer per socket (as root beyond\n"
                                           "net.core.rmem_max, through SO_RCVBUFFORCE)"},
    {.name = "busy-poll", .type = CB_OPT_CUSTOM, .off = O(busy_poll_us), .parse = parse_busy_poll,
     .optional_arg = 1, .arg = "USEC",
     .help = "spin instead of sleeping in poll(), and ask the kernel\n"
             "to busy-poll the device for USEC (default 50) per read\n"
             "(0: spin only); takes a whole CPU per thread"},
    {.name = "rt-priority", .type = CB_OPT_INT, .off = O(rt_priority), .min = 1, .max = 99,
     .arg = "N", .help = "run the receiver threads SCHED_FIFO at priority N (the\n"
                         "compliance document's tip: chrt -f 1); needs root"},
    {.name = "timeout", .type = CB_OPT_DURATION, .off = O(timeout_s), .min = 0.01, .max = 86400,
     .def = "300", .arg = "SECONDS", .help = "wait this long for a sender (then exit 3)"},
    {.name = "idle-timeout", .type = CB_OPT_DURATION, .off = O(idle_s), .min = 0.01, .max = 3600,
     .def = "2", .arg = "SECONDS",
     .help = "end when the sender has been silent this long:\na sender that died mid-run"},
    {.name = "session", .type = CB_OPT_CUSTOM, .off = O(want_session), .parse = et_opt_session,
     .arg = "ID", .help = "accept only this session id (default: the first seen)"},
    {.name = "threshold", .type = CB_OPT_DOUBLE, .off = O(threshold), .min = 0, .max = 100000,
     .def = "9.00", .arg = "GBITS", .help = "compliant total speed"},
    {.name = "max-loss", .type = CB_OPT_DOUBLE, .off = O(max_loss), .min = 0, .max = 100,
     .def = "0", .arg = "PCT", .help = "compliant average loss"},
    {.name = "ready-file", .type = CB_OPT_STRING, .off = O(ready_file), .arg = "FILE",
     .help = "once listening, write \"ADDRESS PORT STREAMS\" to FILE"},
    CB_OPT_JSON_ROW(recv_cfg, json_path),
    CB_OPT_QUIET_ROW(recv_cfg, quiet),
    /* -t was --threads. The contract gives -t to --threshold (docs/kernel-contract.md), but
     * an old "-t 4" must not become a threshold of 4 Gbit/s: -t stays --threads, deprecated,
     * and --threshold has no letter until -t has been retired. */
    {.letter = 't', .replaced_by = "threads"},
    {0}};
#undef O

static const cb_cmd cmd = {
    .name = "eth-test-receive",
    .test_version = ET_TEST_VERSION,
    .usage = "-H HOST | -I IFACE [OPTION]...",
    .about = "Receive eth-test-send's UDP streams on the interface that has address HOST (or on\n"
             "interface IFACE) and report the total speed and the average loss. Compliant (exit\n"
             "0): total speed >= --threshold (9.00 Gbit/s) and average loss <= --max-loss (0%).\n"
             "Start it first, then eth-test-send -H HOST on the sending machine.\n\n",
    .more = "Total speed: UDP payload of the distinct packets received after the first one,\n"
            "over the time from the first to the last, by the kernel's receive timestamps\n"
            "(not when this program got to read them). Average loss = packets lost / packets\n"
            "sent, over all streams, where sent is what the sender's end-of-stream records\n"
            "say. Speeds are judged within 0.05% (what prints as 9.00 meets 9.00); loss, a\n"
            "count, exactly.\n"
            "\n"
            "Exit status: 0 compliant, 1 not compliant (or incomplete: the sender stopped\n"
            "without its end records, or sent damaged data), 2 usage error, 3 could not run\n"
            "(no sender within --timeout, address not on this machine, port in use), 128+N\n"
            "stopped by signal N (SIGINT, SIGTERM, SIGHUP): the figures so far, marked\n"
            "interrupted.\n"
            "\n"
            "A stray or forged datagram changes no figure: the session is taken on several\n"
            "datagrams of it, packet numbers beyond the sender's plan or far beyond what a\n"
            "stream has seen are rejected, records count when a second copy confirms them;\n"
            "what was rejected is reported by reason.\n",
    .opts = opts,
};

/* ---- the run's state ------------------------------------------------------------------ */
typedef struct recv_run recv_run;

typedef struct receiver {
    recv_run *run;               /* the run it belongs to */
    int index, cpu;
    int nsocks, *sock;           /* socket numbers this thread owns (stream: / --reuseport) */
    pthread_t th;
    struct mmsghdr *msgs;
    struct iovec *iov;
    unsigned char *bufs, *ctrl;
    /* classification counts (this thread's) */
    uint64_t datagrams, malformed[ET_NPARSE], truncated, foreign, misdirected;
    uint64_t rejected[ET_NREJECT]; /* those found before a stream's accounting */
    uint64_t gro_receives, gro_datagrams; /* receives that held several datagrams (UDP GRO) */
    int alive;                   /* the batch had a datagram of the session */
    uint64_t first_ns, last_ns, bytes;  /* this machine's monotonic clock, at recvmmsg */
    /* The kernel's receive timestamps (CLOCK_REALTIME, ns) of the first and the last
     * packet counted, and the first one's size: the speed's time base. */
    int64_t first_ts, last_ts;
    uint64_t first_len;
    _Atomic uint64_t progress_bytes;
    char error[256];
} receiver;

enum outcome { RUNNING, DONE, IDLE, NO_SENDER, FAILED, INTERRUPTED };

typedef struct totals {
    uint64_t session;
    int nstreams, counted, missing_streams, exact, passed;
    uint64_t sent, received, lost, dups, reord, stale, corrupt, beyond, bytes, send_ns, drops;
    uint64_t datagrams, malformed, by_reason[ET_NPARSE], truncated, foreign, misdirected;
    uint64_t rejected, rejected_by[ET_NREJECT], gro_receives, gro_datagrams;
    double rx_s, arrival_s, send_s, total_speed, sender_speed, loss_pct;
} totals;

/* Everything one run of eth-test-receive knows, stage by stage: plan (options, address,
 * sockets, receivers), run (the receiver threads, watched), collect (totals), diagnose
 * (the kernel's counters), emit (report and document). */
struct recv_run {
    recv_cfg cfg;
    char started[32];
    et_addr addr;
    char ifname[IFNAMSIZ];
    int nsock, *fd;              /* --reuseport sockets per stream: stream j's are j*N.. */
    long granted;                /* the receive buffer the kernel gave */
    int forced;                  /* through SO_RCVBUFFORCE */
    et_stream *st;               /* per stream, touched only by its sockets' owner threads */
    pthread_mutex_t *st_mu;      /* per stream, when several threads share it (--reuseport) */
    _Atomic uint32_t *sock_drops;/* per socket: the kernel's drop count (SO_RXQ_OVFL) */
    receiver *rx;
    /* Shared between the receiver threads and the main thread. */
    _Atomic uint64_t session;    /* 0 until locked (published after session_nstreams) */
    _Atomic uint32_t session_nstreams;
    /* Until the session is locked, the threads offer datagrams to one et_lock. */
    pthread_mutex_t lock_mu;
    et_lock lock;
    _Atomic int ended_streams, complete_streams, stop;
    _Atomic uint64_t last_packet_ns;
    /* The kernel's drop counters around the run, and how it ended. */
    et_counters before, after;
    enum outcome how;
    totals T;
};

/* ---- run: one receiver thread ---------------------------------------------------------- */
static void reset_msgs(receiver *r)
{
    for (int i = 0; i < r->run->cfg.batch; i++) {
        r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
        r->msgs[i].msg_hdr.msg_iovlen = 1;
        r->msgs[i].msg_hdr.msg_control = r->ctrl + (size_t)i * CTRL_BYTES;
        r->msgs[i].msg_hdr.msg_controllen = CTRL_BYTES;
        r->msgs[i].msg_hdr.msg_flags = 0;
    }
}

/* A datagram of the locked session on its own stream's port (or one kept before the
 * lock): into its stream's accounting. Returns the data bytes it counted as received. */
static uint64_t account(receiver *r, int j, int kind, int corrupt, uint64_t seq, uint64_t aux,
                        size_t len)
{
    recv_run *run = r->run;
    et_stream *st = &run->st[j];
    if (kind == ET_KIND_START) {
        et_stream_start(st, seq, aux);
        return 0;
    }
    if (kind == ET_KIND_END) {
        int was = st->ended;
        et_stream_end(st, seq, aux);
        if (!was && st->ended) {
            atomic_fetch_add(&run->ended_streams, 1);
            if (st->unique >= st->sent)
                atomic_fetch_add(&run->complete_streams, 1);
        }
        return 0;
    }
    if (corrupt) {
        /* a damaged payload numbered where no packet of the stream can be is a stray */
        if (et_stream_admit(st, seq) < 0)
            st->corrupt++;
        return 0;
    }
    uint64_t before = st->unique;
    et_stream_data(st, seq, (uint32_t)len);
    if (st->ended && before < st->sent && st->unique >= st->sent)
        atomic_fetch_add(&run->complete_streams, 1);
    return st->unique > before ? len : 0;
}

static int64_t rx_timestamp(struct msghdr *m);
static void note_span(receiver *r, int64_t first_ts, uint64_t first_len, int64_t last_ts,
                      uint64_t bytes);

/* Before the session is locked: the datagram goes to the lock (et_lock_offer). The one
 * that locks it has the kept datagrams of the session accounted, by this thread, before
 * the session is published: until then no thread touches the streams. Returns -1 when
 * another thread locked the session meanwhile (the caller accounts it as usual). */
static int offer(receiver *r, int j, const et_header *h, int corrupt, size_t len, struct msghdr *m)
{
    recv_run *run = r->run;
    pthread_mutex_lock(&run->lock_mu);
    if (atomic_load_explicit(&run->session, memory_order_acquire)) {
        pthread_mutex_unlock(&run->lock_mu);
        return -1;
    }
    et_lock_result lr = et_lock_offer(&run->lock, h, corrupt, (uint32_t)len, rx_timestamp(m));
    if (lr == ET_LOCK_FOREIGN)
        r->foreign++;
    if (lr == ET_LOCK_TOOK) {
        const et_candidate *c = &run->lock.c[0];
        for (uint32_t k = 0; k < c->npending; k++) {
            const et_pending *p = &c->pending[k];
            uint64_t b = account(r, p->stream, p->kind, p->corrupt, p->seq, p->aux, p->len);
            if (b)
                note_span(r, p->ts, p->len, p->ts, b);
        }
        atomic_store(&run->session_nstreams, c->nstreams);
        atomic_store_explicit(&run->last_packet_ns, cb_now_ns(), memory_order_relaxed);
        atomic_store_explicit(&run->session, c->session, memory_order_release);
    }
    pthread_mutex_unlock(&run->lock_mu);
    return 0;
}

/* One datagram from socket j. Returns the data bytes it counted as received. */
static uint64_t classify(receiver *r, int j, const unsigned char *buf, size_t len, int truncated,
                         struct msghdr *m)
{
    recv_run *run = r->run;
    et_header h;
    r->datagrams++;
    if (truncated) {
        r->truncated++;
        return 0;
    }
    et_parse_result pr = et_parse(buf, len, &h);
    if (pr != ET_OK && pr != ET_BAD_PAYLOAD) {
        r->malformed[pr]++;
        return 0;
    }
    uint64_t s = atomic_load_explicit(&run->session, memory_order_acquire);
    if (!s) {
        if (run->lock.want && h.session != run->lock.want) { /* --session: no lock needed */
            r->foreign++;
            return 0;
        }
        if (h.stream != j) {
            r->misdirected++;
            return 0;
        }
        if (offer(r, j, &h, pr == ET_BAD_PAYLOAD, len, m) == 0)
            return 0;
        s = atomic_load_explicit(&run->session, memory_order_acquire);
    }
    if (h.session != s) {
        r->foreign++;
        return 0;
    }
    if (h.nstreams != atomic_load_explicit(&run->session_nstreams, memory_order_relaxed)) {
        r->rejected[ET_REJ_STREAM_COUNT]++;
        return 0;
    }
    if (h.stream != j) {
        r->misdirected++;
        return 0;
    }
    r->alive = 1;
    return account(r, j, h.kind, pr == ET_BAD_PAYLOAD, h.seq, h.aux, len);
}

/* When the kernel received the datagram (SO_TIMESTAMPNS), in ns of CLOCK_REALTIME; the
 * time now if it has no timestamp. */
static int64_t rx_timestamp(struct msghdr *m)
{
    struct timespec ts;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The kernel's count of receives it dropped at socket sk (SO_RXQ_OVFL): datagrams, or with
 * UDP GRO coalesced groups of them. */
static void note_drops(recv_run *run, int sk, struct msghdr *m)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t v;
            memcpy(&v, CMSG_DATA(c), sizeof v);
            atomic_store_explicit(&run->sock_drops[sk], v, memory_order_relaxed);
        }
}

/* The datagram size of a receive the kernel coalesced (UDP GRO: the UDP_GRO control
 * message), or 0 for a single datagram. */
static size_t gro_segment(struct msghdr *m)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int v;
            memcpy(&v, CMSG_DATA(c), sizeof v);
            return v > 0 ? (size_t)v : 0;
        }
    return 0;
}

/* Message i of the batch, from a socket of stream j: one datagram, or with UDP GRO
 * several of the same size back to back (the last may be shorter), each classified on
 * its own as if it had come alone. Returns the data bytes counted; *first_len is set to
 * the first counted datagram's length if it is still 0. */
static uint64_t classify_msg(receiver *r, int j, int i, uint64_t *first_len)
{
    struct msghdr *m = &r->msgs[i].msg_hdr;
    const unsigned char *buf = r->iov[i].iov_base;
    size_t len = r->msgs[i].msg_len, seg = r->run->cfg.gro ? gro_segment(m) : 0;
    int truncated = (m->msg_flags & MSG_TRUNC) != 0;
    if (!seg || seg >= len) {
        uint64_t b = classify(r, j, buf, len, truncated, m);
        if (b && !*first_len)
            *first_len = b;
        return b;
    }
    r->gro_receives++;
    uint64_t bytes = 0;
    for (size_t off = 0; off < len; off += seg) {
        size_t l = len - off < seg ? len - off : seg;
        r->gro_datagrams++;
        /* a coalesced receive cut short by the buffer: its last piece is incomplete */
        uint64_t b = classify(r, j, buf + off, l, truncated && off + seg >= len, m);
        if (b && !*first_len)
            *first_len = b;
        bytes += b;
    }
    return bytes;
}

/* Data counted: bytes, the first of them (first_len bytes) received at first_ts and the
 * last at last_ts by the kernel's clock; the sender is alive. */
static void note_span(receiver *r, int64_t first_ts, uint64_t first_len, int64_t last_ts,
                      uint64_t bytes)
{
    uint64_t now = cb_now_ns();
    if (!r->first_ns || first_ts < r->first_ts) {
        r->first_ts = first_ts;
        r->first_len = first_len;
    }
    if (!r->first_ns)
        r->first_ns = now;
    if (last_ts > r->last_ts)
        r->last_ts = last_ts;
    r->last_ns = now;
    r->bytes += bytes;
    atomic_store_explicit(&r->progress_bytes, r->bytes, memory_order_relaxed);
    atomic_store_explicit(&r->run->last_packet_ns, now, memory_order_relaxed);
}

/* One recvmmsg on socket sk, every datagram classified. Returns the receives read, or -1
 * on an error that ends the run. */
static int drain_socket(receiver *r, int sk)
{
    recv_run *run = r->run;
    int j = sk / run->cfg.reuseport; /* the stream whose port the socket listens on */
    reset_msgs(r);
    int n = recvmmsg(run->fd[sk], r->msgs, (unsigned)run->cfg.batch, MSG_DONTWAIT, NULL);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED)
            return 0;
        snprintf(r->error, sizeof r->error, "recvmmsg on port %d: %s", run->cfg.port + j,
                 strerror(errno));
        return -1;
    }
    uint64_t bytes = 0, first_len = 0;
    int first = -1, last = -1; /* the batch's first and last receive with data counted */
    r->alive = 0;
    /* Only datagrams of stream j are accounted from its port: its lock, once a batch,
     * keeps the stream's accounting whole when several threads share it. */
    if (run->st_mu)
        pthread_mutex_lock(&run->st_mu[j]);
    for (int i = 0; i < n; i++) {
        uint64_t b = classify_msg(r, j, i, &first_len);
        if (b) {
            bytes += b;
            last = i;
            if (first < 0)
                first = i;
        }
    }
    if (run->st_mu)
        pthread_mutex_unlock(&run->st_mu[j]);
    if (n > 0)
        note_drops(run, sk, &r->msgs[n - 1].msg_hdr);
    if (bytes)
        note_span(r, rx_timestamp(&r->msgs[first].msg_hdr), first_len,
                  rx_timestamp(&r->msgs[last].msg_hdr), bytes);
    else if (r->alive)
        /* records, duplicates: the sender is alive (strays and forgeries do not count) */
        atomic_store_explicit(&run->last_packet_ns, cb_now_ns(), memory_order_relaxed);
    return n;
}

static void *receiver_main(void *arg)
{
    receiver *r = arg;
    recv_run *run = r->run;
    et_place_thread(r->cpu, run->cfg.rt_priority, r->index == 0);
    struct pollfd *pfd = calloc((size_t)r->nsocks, sizeof *pfd);
    if (!pfd) {
        snprintf(r->error, sizeof r->error, "out of memory");
        atomic_store(&run->stop, 1);
        return NULL;
    }
    for (int k = 0; k < r->nsocks; k++) {
        pfd[k].fd = run->fd[r->sock[k]];
        pfd[k].events = POLLIN;
    }
    while (!atomic_load_explicit(&run->stop, memory_order_relaxed)) {
        int got = 0;
        for (int k = 0; k < r->nsocks; k++) {
            int n = drain_socket(r, r->sock[k]);
            if (n < 0) {
                atomic_store(&run->stop, 1);
                break;
            }
            got += n;
        }
        if (!got && run->cfg.busy_poll_us == 0)
            poll(pfd, (nfds_t)r->nsocks, 20);
    }
    free(pfd);
    return NULL;
}

/* ---- plan ---------------------------------------------------------------------------- */
/* The rules between options, after the table has checked each. */
static void check_options(recv_cfg *cfg)
{
    if (!cfg->host == !cfg->iface)
        cb_usage_error("give exactly one of -H HOST and -I IFACE: the address or interface under test");
    if ((long)cfg->port + cfg->streams - 1 > 65535)
        cb_usage_error("--port %d with %d streams runs past port 65535", cfg->port, cfg->streams);
    if (cfg->threads > cfg->streams * cfg->reuseport)
        cfg->threads = cfg->streams * cfg->reuseport; /* a thread per socket at most */
}

static void find_address(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    char err[256];
    if (cfg->iface) {
        if (if_nametoindex(cfg->iface) == 0)
            cb_die(CB_EXIT_CANNOT_RUN, "no interface '%s' on this machine", cfg->iface);
        if (et_addr_of_iface(cfg->iface, &run->addr) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "interface '%s' has no IP address", cfg->iface);
        snprintf(run->ifname, sizeof run->ifname, "%s", cfg->iface);
        return;
    }
    if (et_resolve(cfg->host, (uint16_t)cfg->port, &run->addr, err, sizeof err) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    if (et_iface_of_addr(&run->addr, run->ifname) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s (%s) is not an address of this machine: run eth-test-receive "
               "on the machine under test, with the address of the interface to test",
               cfg->host, run->addr.text);
}

/* Several sockets on one port (--reuseport): the kernel would give all of one flow's
 * datagrams to the same socket (it picks by a hash of the addresses); this classic BPF
 * program, attached to the port's group, picks one at random for each receive. */
static void spread_at_random(int fd, int nsockets)
{
    struct sock_filter code[] = {
        {BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)(SKF_AD_OFF + SKF_AD_RANDOM)},
        {BPF_ALU | BPF_MOD | BPF_K, 0, 0, (uint32_t)nsockets},
        {BPF_RET | BPF_A, 0, 0, 0},
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "--reuseport: cannot attach the program that spreads datagrams "
               "over the sockets (SO_ATTACH_REUSEPORT_CBPF): %s", strerror(errno));
}

/* Socket sk (stream sk / --reuseport), with its options, bound to the stream's port. */
static int open_socket(recv_run *run, int sk)
{
    const recv_cfg *cfg = &run->cfg;
    int j = sk / cfg->reuseport, one = 1;
    et_addr a = run->addr;
    et_addr_set_port(&a, (uint16_t)(cfg->port + j));
    int fd = socket(a.ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        cb_die(CB_EXIT_CANNOT_RUN, "socket: %s", strerror(errno));
    run->granted = et_set_sockbuf(fd, 1, (long)cfg->rcvbuf, &run->forced);
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (cfg->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "this kernel refuses UDP GRO (UDP_GRO): %s; use --gro off",
               strerror(errno));
    if (cfg->busy_poll_us > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &cfg->busy_poll_us, sizeof cfg->busy_poll_us) != 0 &&
        sk == 0)
        cb_warn("SO_BUSY_POLL %d us refused (%s): spinning in user space only; raising it above "
                "net.core.busy_read needs CAP_NET_ADMIN", cfg->busy_poll_us, strerror(errno));
    if (cfg->reuseport > 1) {
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "--reuseport: SO_REUSEPORT refused: %s", strerror(errno));
        if (sk % cfg->reuseport == 0) /* the first of the port's group, before it is bound */
            spread_at_random(fd, cfg->reuseport);
    }
    if (bind(fd, (struct sockaddr *)&a.ss, a.len) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot listen on %s port %d: %s", a.text, cfg->port + j,
               strerror(errno));
    return fd;
}

static void open_sockets(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    run->nsock = cfg->streams * cfg->reuseport;
    run->fd = calloc((size_t)run->nsock, sizeof *run->fd);
    if (!run->fd)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int sk = 0; sk < run->nsock; sk++)
        run->fd[sk] = open_socket(run, sk);
    fprintf(cb_human(), "  socket receive buffer: asked %zu B per socket, granted %ld B%s\n", cfg->rcvbuf,
           run->granted, run->forced ? " (SO_RCVBUFFORCE)" : "");
    /* what of Linux's receive path this run uses */
    fprintf(cb_human(), "  receive path: recvmmsg batches of %d, UDP GRO %s, %d socket%s per port%s, "
            "%d thread%s, busy polling %s\n", cfg->batch, cfg->gro ? "on" : "off", cfg->reuseport,
            cfg->reuseport > 1 ? "s" : "", cfg->reuseport > 1 ? " (SO_REUSEPORT, spread at random)" : "",
            cfg->threads, cfg->threads > 1 ? "s" : "",
            cfg->busy_poll_us > 0 ? "on (SO_BUSY_POLL)" : cfg->busy_poll_us < 0 ? "on (spinning only)" : "off");
    if (run->granted < (long)cfg->rcvbuf)
        cb_warn("the kernel granted a receive buffer of %ld B of the %zu B asked: net.core.rmem_max is %ld "
                "(raise it: sysctl -w net.core.rmem_max=%zu, or run as root to use SO_RCVBUFFORCE)",
                run->granted, cfg->rcvbuf, et_sysctl_long("net.core.rmem_max"), cfg->rcvbuf);
}

static void write_ready_file(const recv_run *run)
{
    const char *path = run->cfg.ready_file;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot write the ready file %s: %s", path, strerror(errno));
    dprintf(fd, "%s %d %d\n", run->addr.text, run->cfg.port, run->cfg.streams);
    fchmod(fd, 0644);
    close(fd);
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        cb_die(CB_EXIT_CANNOT_RUN, "cannot write the ready file %s: %s", path, strerror(errno));
    }
}

/* Per-stream state and the receiver threads' buffers; sockets dealt out round-robin. */
static void make_receivers(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    run->st = calloc((size_t)cfg->streams, sizeof *run->st);
    run->sock_drops = calloc((size_t)run->nsock, sizeof *run->sock_drops);
    run->rx = calloc((size_t)cfg->threads, sizeof *run->rx);
    if (!run->st || !run->sock_drops || !run->rx)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int j = 0; j < cfg->streams; j++)
        if (et_stream_init(&run->st[j], SEQ_WINDOW) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    if (cfg->reuseport > 1) {
        run->st_mu = calloc((size_t)cfg->streams, sizeof *run->st_mu);
        if (!run->st_mu)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int j = 0; j < cfg->streams; j++)
            pthread_mutex_init(&run->st_mu[j], NULL);
    }
    for (int t = 0; t < cfg->threads; t++) {
        receiver *r = &run->rx[t];
        r->run = run;
        r->index = t;
        r->cpu = cfg->cpus.n ? cfg->cpus.v[t % cfg->cpus.n] : -1;
        r->sock = calloc((size_t)run->nsock, sizeof *r->sock);
        r->msgs = calloc((size_t)cfg->batch, sizeof *r->msgs);
        r->iov = calloc((size_t)cfg->batch, sizeof *r->iov);
        r->bufs = aligned_alloc(64, (size_t)SLOT_STRIDE * cfg->batch);
        r->ctrl = calloc((size_t)cfg->batch, CTRL_BYTES);
        if (!r->sock || !r->msgs || !r->iov || !r->bufs || !r->ctrl)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int sk = t; sk < run->nsock; sk += cfg->threads)
            r->sock[r->nsocks++] = sk;
        for (int i = 0; i < cfg->batch; i++) {
            r->iov[i].iov_base = r->bufs + (size_t)i * SLOT_STRIDE;
            r->iov[i].iov_len = SLOT_BYTES;
        }
    }
}

/* The address, the preflight, the sockets and the receivers' state. */
static void plan(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    cb_iso8601_now(run->started, sizeof run->started);
    if (cfg->json_path && cb_json_path_ok(cfg->json_path) != 0)
        cb_die(CB_EXIT_USAGE, "cannot write the JSON result to %s: no such writable directory",
               cfg->json_path);
    if (cfg->cpus.n)
        et_check_cpus(cfg->cpus.v, cfg->cpus.n);
    find_address(run);
    fprintf(cb_human(), "eth-test-receive %s: %d streams on %s ports %d-%d (interface %s)\n", CB_VERSION,
           cfg->streams, run->addr.text, cfg->port, cfg->port + cfg->streams - 1, run->ifname);
    et_preflight_print(cb_human(), run->ifname, &run->addr, 0);
    open_sockets(run);
    fflush(cb_human());
    make_receivers(run);
    pthread_mutex_init(&run->lock_mu, NULL);
    et_lock_init(&run->lock, cfg->want_session, SEQ_WINDOW / 2);
}

/* ---- run ------------------------------------------------------------------------------- */
/* Progress once a second on stderr. */
static void report_progress(recv_run *run, uint64_t now, uint64_t start, int expect)
{
    uint64_t b = 0;
    for (int t = 0; t < run->cfg.threads; t++)
        b += atomic_load_explicit(&run->rx[t].progress_bytes, memory_order_relaxed);
    fprintf(stderr, "[%6.1f s] received %.3f GB, %d of %d streams ended\n", (now - start) / 1e9,
            b / 1e9, atomic_load(&run->ended_streams), expect);
}

/* Watches the run until every stream's end record is in (and its packets, or a short
 * linger for stragglers), the sender has gone silent, or no sender came. */
static enum outcome watch(recv_run *run, uint64_t start)
{
    const recv_cfg *cfg = &run->cfg;
    enum outcome how = RUNNING;
    uint64_t next_report = 0;
    while (how == RUNNING) {
        cb_sleep_until_ns(cb_now_ns() + 10000000);
        if (cb_interrupted)
            return INTERRUPTED;
        uint64_t now = cb_now_ns();
        for (int t = 0; t < cfg->threads; t++)
            if (run->rx[t].error[0])
                return FAILED;
        uint64_t last = atomic_load(&run->last_packet_ns);
        if (!atomic_load(&run->session) || !last) {
            if (now - start > (uint64_t)(cfg->timeout_s * 1e9))
                how = NO_SENDER;
            continue;
        }
        int expect = (int)atomic_load(&run->session_nstreams);
        if (expect > cfg->streams)
            expect = cfg->streams;
        uint64_t silent = now > last ? now - last : 0; /* a thread's clock read may be newer */
        if (atomic_load(&run->ended_streams) >= expect &&
            (atomic_load(&run->complete_streams) >= expect || silent > (uint64_t)(LINGER_S * 1e9)))
            how = DONE;
        else if (silent > (uint64_t)(cfg->idle_s * 1e9))
            how = IDLE;
        if (cfg->quiet || how != RUNNING)
            continue;
        if (!next_report)
            next_report = now + 1000000000;
        if (now >= next_report) {
            next_report += 1000000000;
            report_progress(run, now, start, expect);
        }
    }
    return how;
}

/* Starts the receiver threads, says it listens, watches, stops and joins them; the
 * kernel's drop counters before and after. */
static void run_receivers(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    et_counters_read(&run->before, run->ifname);
    uint64_t start = cb_now_ns();
    for (int t = 0; t < cfg->threads; t++)
        if (pthread_create(&run->rx[t].th, NULL, receiver_main, &run->rx[t]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start receiver thread %d", t);
    if (cfg->ready_file)
        write_ready_file(run);
    if (!cfg->quiet)
        fprintf(stderr, "eth-test-receive: listening; waiting up to %g s for eth-test-send -H %s\n",
                cfg->timeout_s, run->addr.text);
    run->how = watch(run, start);
    atomic_store(&run->stop, 1);
    for (int t = 0; t < cfg->threads; t++)
        pthread_join(run->rx[t].th, NULL);
    et_counters_read(&run->after, run->ifname);
    for (int t = 0; t < cfg->threads; t++)
        if (run->rx[t].error[0])
            cb_die(CB_EXIT_CANNOT_RUN, "%s", run->rx[t].error);
}

/* ---- collect ------------------------------------------------------------------------------ */
/* The kernel's drops at stream j's sockets. */
static uint64_t stream_drops(const recv_run *run, int j)
{
    uint64_t d = 0;
    for (int k = 0; k < run->cfg.reuseport; k++)
        d += atomic_load(&run->sock_drops[j * run->cfg.reuseport + k]);
    return d;
}

/* The per-stream accounting, summed. */
static void sum_streams(recv_run *run, totals *T)
{
    for (int j = 0; j < run->cfg.streams; j++) {
        T->drops += stream_drops(run, j);
        et_stream_settle(&run->st[j]);
        for (int k = 0; k < ET_NREJECT; k++)
            T->rejected_by[k] += run->st[j].rejected[k];
    }
    for (int j = 0; j < T->counted; j++) {
        et_stream *st = &run->st[j];
        et_loss l = et_stream_loss(st);
        T->sent += l.expected;
        T->received += l.received;
        T->lost += l.lost;
        T->beyond += l.beyond;
        T->dups += st->duplicates;
        T->reord += st->reordered;
        T->stale += st->stale;
        T->corrupt += st->corrupt;
        T->bytes += st->unique_bytes;
        T->exact &= l.exact;
        if (st->send_ns > T->send_ns)
            T->send_ns = st->send_ns;
        /* the same data over the sender's sending time (its end records) */
        if (st->ended && st->send_ns)
            T->sender_speed += cb_gbits((double)st->unique_bytes, st->send_ns / 1e9);
    }
}

/* The receiver threads' classification counts and clocks, summed; the total speed. */
static void sum_receivers(recv_run *run, totals *T)
{
    uint64_t first_ns = UINT64_MAX, last_ns = 0, first_len = 0;
    int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
    for (int t = 0; t < run->cfg.threads; t++) {
        receiver *r = &run->rx[t];
        T->datagrams += r->datagrams;
        for (int k = 0; k < ET_NPARSE; k++) {
            T->by_reason[k] += r->malformed[k];
            T->malformed += r->malformed[k];
        }
        T->truncated += r->truncated;
        T->malformed += r->truncated;
        T->gro_receives += r->gro_receives;
        T->gro_datagrams += r->gro_datagrams;
        T->foreign += r->foreign;
        T->misdirected += r->misdirected;
        for (int k = 0; k < ET_NREJECT; k++)
            T->rejected_by[k] += r->rejected[k];
        if (r->first_ns && r->first_ns < first_ns)
            first_ns = r->first_ns;
        if (r->last_ns > last_ns)
            last_ns = r->last_ns;
        if (r->first_ns && r->first_ts < first_ts) {
            first_ts = r->first_ts;
            first_len = r->first_len;
        }
        if (r->first_ns && r->last_ts > last_ts)
            last_ts = r->last_ts;
    }
    T->rx_s = last_ns > first_ns ? (last_ns - first_ns) / 1e9 : 0;
    /* Total speed: the bytes after the first packet over the time from the first packet
     * to the last, by the kernel's receive timestamps (so this program's own scheduling
     * delays do not count). Batches arrive as bursts, so this overstates by about one
     * batch in the run's number of batches: 0.01% for the compliance load. */
    T->arrival_s = last_ts > first_ts ? (last_ts - first_ts) / 1e9 : 0;
    T->total_speed = cb_gbits((double)(T->bytes - first_len), T->arrival_s);
}

/* The totals and the verdict; exits 3 when no sender came. */
static void collect(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    totals *T = &run->T;
    memset(T, 0, sizeof *T);
    T->session = atomic_load(&run->session);
    T->nstreams = (int)atomic_load(&run->session_nstreams);
    T->counted = T->nstreams < cfg->streams ? T->nstreams : cfg->streams;
    T->missing_streams = T->nstreams > cfg->streams ? T->nstreams - cfg->streams : 0;
    T->exact = 1;
    sum_streams(run, T);
    sum_receivers(run, T);
    /* what the lock rejected, and the datagrams of sessions it never took */
    et_lock_settle(&run->lock);
    T->foreign += run->lock.foreign;
    for (int k = 0; k < ET_NREJECT; k++) {
        T->rejected_by[k] += run->lock.rejected[k];
        T->rejected += T->rejected_by[k];
    }
    T->send_s = T->send_ns / 1e9;
    T->loss_pct = T->sent ? 100.0 * (double)T->lost / (double)T->sent : 0;
    T->passed = T->exact && !T->corrupt && !T->missing_streams && T->session &&
                run->how != INTERRUPTED && et_speed_meets(T->total_speed, cfg->threshold) &&
                T->loss_pct <= cfg->max_loss;
    if (run->how == NO_SENDER)
        cb_die(CB_EXIT_CANNOT_RUN, "no data from a sender in %g s on %s ports %d-%d (%llu other datagrams "
               "ignored): is eth-test-send -H %s running, and can it reach this machine?",
               cfg->timeout_s, run->addr.text, cfg->port, cfg->port + cfg->streams - 1,
               (unsigned long long)T->datagrams, run->addr.text);
}

/* ---- emit -------------------------------------------------------------------------------- */
/* Per stream: sent, received, lost, duplicated, reordered, corrupt, dropped. */
static void print_streams(const recv_run *run)
{
    const totals *T = &run->T;
    FILE *out = cb_human();
    fprintf(out, "%6s %6s %10s %10s %9s %9s %9s %8s %8s\n", "stream", "port", "sent", "received", "lost",
           "dup", "reorder", "corrupt", "dropped");
    for (int j = 0; j < T->counted; j++) {
        const et_stream *st = &run->st[j];
        et_loss l = et_stream_loss(st);
        fprintf(out, "%6d %6d %10llu%s %10llu %9llu %9llu %9llu %8llu %8llu\n", j, run->cfg.port + j,
               (unsigned long long)l.expected, l.exact ? " " : "?", (unsigned long long)l.received,
               (unsigned long long)l.lost, (unsigned long long)st->duplicates,
               (unsigned long long)st->reordered, (unsigned long long)st->corrupt,
               (unsigned long long)stream_drops(run, j));
    }
    if (!T->exact)
        fprintf(out, "  ? no end record: sent is unknown, counted up to the highest packet number received; "
               "the loss shown is a lower bound\n");
}

static const char *outcome_text(const recv_run *run)
{
    switch (run->how) {
    case DONE: return "every stream's end record received";
    case INTERRUPTED: return "interrupted: the figures cover the run until then";
    default: return "the sender went silent without end records";
    }
}

static void print_report(const recv_run *run)
{
    const totals *T = &run->T;
    FILE *out = cb_human();
    if (T->session)
        fprintf(out, "Session %#llx: %d streams, %s\n", (unsigned long long)T->session, T->nstreams,
                outcome_text(run));
    else
        fprintf(out, "No session: interrupted before a sender's datagrams were seen\n");
    print_streams(run);
    fprintf(out, "Packets: %llu sent, %llu received, %llu lost (%.3f%%), %llu duplicated, %llu reordered",
            (unsigned long long)T->sent, (unsigned long long)T->received, (unsigned long long)T->lost,
            T->loss_pct, (unsigned long long)T->dups, (unsigned long long)T->reord);
    if (T->stale)
        fprintf(out, ", %llu too late to classify", (unsigned long long)T->stale);
    if (T->beyond)
        fprintf(out, ", %llu numbered beyond the sent count", (unsigned long long)T->beyond);
    fprintf(out, "\n");
    fprintf(out, "Other datagrams: %llu of %llu: %llu malformed, %llu foreign (other session), %llu misdirected "
            "(wrong port), %llu corrupt payloads, %llu rejected\n",
            (unsigned long long)(T->malformed + T->foreign + T->misdirected + T->corrupt + T->rejected),
            (unsigned long long)T->datagrams, (unsigned long long)T->malformed,
            (unsigned long long)T->foreign, (unsigned long long)T->misdirected,
            (unsigned long long)T->corrupt, (unsigned long long)T->rejected);
    for (int k = 1; k < ET_NPARSE; k++)
        if (T->by_reason[k] && k != ET_BAD_PAYLOAD)
            fprintf(out, "  malformed, %s: %llu\n", et_parse_names[k], (unsigned long long)T->by_reason[k]);
    if (T->truncated)
        fprintf(out, "  malformed, larger than %d B: %llu\n", SLOT_BYTES, (unsigned long long)T->truncated);
    /* what a stray or a forgery tried to change, and was not let */
    for (int k = 0; k < ET_NREJECT; k++)
        if (T->rejected_by[k])
            fprintf(out, "  rejected, %s: %llu\n", et_reject_names[k],
                    (unsigned long long)T->rejected_by[k]);
    if (run->cfg.gro && T->gro_receives)
        fprintf(out, "UDP GRO: %llu receives held %llu datagrams (%.1f per receive)\n",
                (unsigned long long)T->gro_receives, (unsigned long long)T->gro_datagrams,
                (double)T->gro_datagrams / (double)T->gro_receives);
    else if (run->cfg.gro)
        fprintf(out, "UDP GRO: on; the kernel coalesced no datagrams\n");
    fprintf(out, "Speed: %.3f GB received in %.3f s (first to last packet, kernel timestamps): %.2f Gbit/s",
            T->bytes / 1e9, T->arrival_s, T->total_speed);
    if (T->exact)
        fprintf(out, "; over the sender's %.3f s of sending: %.2f Gbit/s", T->send_s, T->sender_speed);
    fprintf(out, "\n");
    if (T->missing_streams)
        fprintf(out, "NOT COUNTED: the sender sends %d streams, this receiver listens to %d (--streams)\n",
                T->nstreams, run->cfg.streams);
    if (T->corrupt)
        fprintf(out, "CORRUPT DATA: %llu packets carried a payload other than the one sent\n",
                (unsigned long long)T->corrupt);
}

static void diagnose_line(int *any, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diagnose_line(int *any, const char *fmt, ...)
{
    va_list ap;
    fprintf(cb_human(), "  ");
    va_start(ap, fmt);
    vfprintf(cb_human(), fmt, ap);
    va_end(ap);
    fputc('\n', cb_human());
    *any = 1;
}

/* ---- diagnose ----------------------------------------------------------------------------- */
/* Which limit the loss came from, from the kernel's own counters. */
static void diagnose(const recv_run *run)
{
    const totals *T = &run->T;
    const et_counters *before = &run->before, *after = &run->after;
    const char *ifname = run->ifname;
    double threshold = run->cfg.threshold;
    int any = 0;
    fprintf(cb_human(), "Diagnosis:\n");
    if (T->drops)
        diagnose_line(&any, "LIMIT: socket receive buffers overflowed: %llu %s dropped at the sockets "
                      "(the receiver did not drain them in time; buffer %ld B per socket%s)",
                      (unsigned long long)T->drops,
                      run->cfg.gro ? "receives (with UDP GRO, each may hold several datagrams)" : "datagrams",
                      run->granted,
                      run->granted < (long)run->cfg.rcvbuf ? ", capped by net.core.rmem_max" : "");
    if (after->udp_mem_errors > before->udp_mem_errors)
        diagnose_line(&any, "LIMIT: net.ipv4.udp_mem: UDP ran out of memory %llu times",
                      (unsigned long long)(after->udp_mem_errors - before->udp_mem_errors));
    if (after->softnet_dropped > before->softnet_dropped)
        diagnose_line(&any, "LIMIT: net.core.netdev_max_backlog: %llu packets dropped in the input backlog "
                      "(all interfaces of this machine)",
                      (unsigned long long)(after->softnet_dropped - before->softnet_dropped));
    if (after->have_dev && after->dev_rx_dropped > before->dev_rx_dropped)
        diagnose_line(&any, "LIMIT: interface %s dropped %llu received packets (NIC ring or driver; "
                      "ethtool -G %s rx ...)", ifname,
                      (unsigned long long)(after->dev_rx_dropped - before->dev_rx_dropped), ifname);
    if (after->ip_reasm_fails > before->ip_reasm_fails)
        diagnose_line(&any, "LIMIT: IP reassembly failed %llu times: datagrams larger than the MTU",
                      (unsigned long long)(after->ip_reasm_fails - before->ip_reasm_fails));
    if (T->lost && !any)
        diagnose_line(&any, "packets were lost before this machine's UDP layer counted them: on the "
                      "wire, at the sender, or in a packet filter");
    if (run->how == INTERRUPTED)
        diagnose_line(&any, "interrupted by %s: the result is incomplete", cb_interrupted_name());
    else if (!T->exact)
        diagnose_line(&any, "the sender stopped without end-of-stream records (killed?): the result "
                      "is incomplete");
    if (T->exact && !T->lost && !et_speed_meets(T->total_speed, threshold))
        diagnose_line(&any, "no loss, but the data came at less than %.2f Gbit/s (the sender's own "
                      "figure: %.2f Gbit/s): the sender is the limit", threshold, T->sender_speed);
    if (!any)
        diagnose_line(&any, "no limit hit");
}

/* ---- emit: the JSON document ----------------------------------------------------------------- */
static void doc_config(cb_json *j, const void *ctx)
{
    const recv_run *run = ctx;
    const recv_cfg *cfg = &run->cfg;
    char sid[32];
    snprintf(sid, sizeof sid, "%#llx", (unsigned long long)run->T.session);
    cbj_str(j, "address", run->addr.text);
    cbj_str(j, "interface", run->ifname);
    cbj_int(j, "mtu", et_iface_mtu(run->ifname));
    cbj_int(j, "port", cfg->port);
    cbj_int(j, "streams", cfg->streams);
    cbj_int(j, "threads", cfg->threads);
    cbj_int(j, "batch", cfg->batch);
    cbj_bool(j, "gro", cfg->gro);
    cbj_int(j, "reuseport", cfg->reuseport);
    cbj_int(j, "rcvbuf_asked", (long long)cfg->rcvbuf);
    cbj_int(j, "rcvbuf_granted", run->granted);
    cbj_int(j, "busy_poll_us", cfg->busy_poll_us);
    cbj_int(j, "rt_priority", cfg->rt_priority);
    cbj_str(j, "session", sid);
    cbj_int(j, "sender_streams", run->T.nstreams);
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const recv_run *run = ctx;
    const totals *T = &run->T;
    cbj_metric(j, "total_speed", T->total_speed, "Gbit/s");
    cbj_metric(j, "total_speed_bytes", T->total_speed * 1e9 / 8, "B/s");
    cbj_metric(j, "average_loss", T->loss_pct, "%");
    cbj_metric(j, "sender_clock_speed", T->sender_speed, "Gbit/s");
    cbj_metric(j, "sent_packets", (double)T->sent, "packets");
    cbj_metric(j, "received_packets", (double)T->received, "packets");
    cbj_metric(j, "lost_packets", (double)T->lost, "packets");
    cbj_metric(j, "duplicate_packets", (double)T->dups, "packets");
    cbj_metric(j, "reordered_packets", (double)T->reord, "packets");
    cbj_metric(j, "stale_packets", (double)T->stale, "packets");
    cbj_metric(j, "malformed_datagrams", (double)T->malformed, "datagrams");
    cbj_metric(j, "foreign_datagrams", (double)T->foreign, "datagrams");
    cbj_metric(j, "misdirected_datagrams", (double)T->misdirected, "datagrams");
    cbj_metric(j, "rejected_datagrams", (double)T->rejected, "datagrams");
    cbj_metric(j, "verification_errors", (double)T->corrupt, "errors");
    cbj_metric(j, "socket_drops", (double)T->drops, "datagrams");
    cbj_metric(j, "gro_receives", (double)T->gro_receives, "receives");
    cbj_metric(j, "gro_datagrams", (double)T->gro_datagrams, "datagrams");
    cbj_metric(j, "sender_time", T->send_s, "s");
}

/* The document's own top-level keys: complete, streams[], malformed{}. */
static void doc_extra(cb_json *j, const void *ctx)
{
    const recv_run *run = ctx;
    const totals *T = &run->T;
    cbj_bool(j, "complete", T->exact);
    cbj_arr_begin(j, "streams");
    for (int s = 0; s < T->counted; s++) {
        const et_stream *st = &run->st[s];
        et_loss l = et_stream_loss(st);
        cbj_obj_begin(j, NULL);
        cbj_int(j, "stream", s);
        cbj_int(j, "port", run->cfg.port + s);
        cbj_int(j, "sent", (long long)l.expected);
        cbj_bool(j, "sent_known", l.exact);
        cbj_int(j, "received", (long long)l.received);
        cbj_int(j, "lost", (long long)l.lost);
        cbj_int(j, "duplicated", (long long)st->duplicates);
        cbj_int(j, "reordered", (long long)st->reordered);
        cbj_int(j, "stale", (long long)st->stale);
        cbj_int(j, "beyond_sent", (long long)l.beyond);
        cbj_int(j, "corrupt", (long long)st->corrupt);
        cbj_int(j, "start_records", (long long)st->start_records);
        cbj_int(j, "end_records", (long long)st->end_records);
        cbj_int(j, "socket_drops", (long long)stream_drops(run, s));
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
    /* the datagrams each receiver thread read: how --reuseport spread them */
    cbj_arr_begin(j, "thread_datagrams");
    for (int t = 0; t < run->cfg.threads; t++)
        cbj_int(j, NULL, (long long)run->rx[t].datagrams);
    cbj_arr_end(j);
    cbj_obj_begin(j, "malformed");
    for (int k = 1; k < ET_NPARSE; k++)
        if (k != ET_BAD_PAYLOAD)
            cbj_int(j, et_parse_names[k], (long long)T->by_reason[k]);
    cbj_int(j, "truncated", (long long)T->truncated);
    cbj_obj_end(j);
    /* why datagrams were rejected: each could have changed a figure, and did not */
    cbj_obj_begin(j, "rejected");
    for (int k = 0; k < ET_NREJECT; k++)
        cbj_int(j, et_reject_keys[k], (long long)T->rejected_by[k]);
    cbj_obj_end(j);
}

static void doc_compliance(cb_json *j, const void *ctx)
{
    const recv_run *run = ctx;
    cbj_num(j, "max_loss", run->cfg.max_loss);
}

/* The report, the diagnosis, the JSON document and the results block; returns the exit
 * status. */
static int emit(const recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    const totals *T = &run->T;
    FILE *out = cb_human();
    print_report(run);
    diagnose(run);
    int rc = run->how == INTERRUPTED ? cb_exit_interrupted()
             : T->passed             ? CB_EXIT_OK
                                     : CB_EXIT_NOT_COMPLIANT;
    if (cfg->json_path) {
        cb_envelope env = {.test = "eth-test-receive", .test_version = ET_TEST_VERSION,
                           .started = run->started, .duration_s = T->arrival_s,
                           .threshold = cfg->threshold, .passed = T->passed,
                           .interrupted = run->how == INTERRUPTED};
        cb_doc_parts parts = {.config = doc_config, .metrics = doc_metrics, .extra = doc_extra,
                              .compliance = doc_compliance};
        if (cb_doc_write(cfg->json_path, &env, &parts, run) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    cb_results_begin(out, ET_TEST_VERSION);
    cb_results_line(out, "Total speed", "%.2f Gbit/s", T->total_speed);
    cb_results_line(out, "Average loss", "%.3f%%%s", T->loss_pct,
                    T->exact ? "" : " (at least; incomplete)");
    cb_results_interrupted(out, "the figures cover the run until then");
    fflush(out);
    return rc;
}

int main(int argc, char **argv)
{
    static recv_run run;
    cb_prog = "eth-test-receive";
    cb_opts_parse(&cmd, &run.cfg, argc, argv);
    check_options(&run.cfg);
    /* from here a signal stops the run, which still reports what it counted */
    cb_signals_install();
    plan(&run);
    run_receivers(&run);
    collect(&run);
    return emit(&run);
}
