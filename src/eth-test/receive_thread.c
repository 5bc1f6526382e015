/* One receiver thread of eth-test-receive: it drains its sockets with recvmmsg() in
 * batches and classifies every datagram (eth_proto.h); the session is taken on
 * consistent evidence (et_lock) before any stream's accounting starts. */
#define _GNU_SOURCE /* recvmmsg */
#include "receive.h"

#include <errno.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void *recv_thread_main(void *arg)
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

/* The kernel's drops at stream j's sockets, as the receivers recorded them (here, with
 * what records them: the report and the main program both read it). */
uint64_t recv_stream_drops(const recv_run *run, int j)
{
    uint64_t d = 0;
    for (int k = 0; k < run->cfg.reuseport; k++)
        d += atomic_load(&run->sock_drops[j * run->cfg.reuseport + k]);
    return d;
}
