/* eth-test-send: streams rate-paced UDP datagrams of eth-test's format (eth_proto.h) to
 * eth-test-receive on another host (or another interface of this one).
 *
 * The load is shaped like the original compliance tool's: --streams UDP streams (port,
 * port+1, ...), each a share of --rate, sent in batches of --batch datagrams with one
 * sendmmsg() call. Each sender thread owns some streams and sends their batches in turn
 * on a fixed schedule: batch j is due when the bytes before it have had their time at
 * the thread's rate, so a late batch is followed by on-time ones and the average rate
 * never drifts. Before its data each stream sends --end-copies start records (the
 * packets it will send), after it as many end-of-stream records carrying the number of
 * packets it sent, so that the receiver counts loss exactly; the receiver takes a record
 * only when a second copy confirms it. SIGINT, SIGTERM or SIGHUP stop the data early:
 * the end records still go out, with the packets really sent.
 *
 * The stages: options (send_options.c), plan, run, collect, emit (this file). */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "../common/cb_common.h"
#include "../common/cb_hash.h"
#include "eth_net.h"
#include "eth_proto.h"
#include "send_options.h"

#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

/* ---- the run's state ------------------------------------------------------------------ */
typedef struct send_run send_run;

typedef struct sender {
    send_run *run;               /* the run it belongs to */
    int index, cpu;
    int nstreams, *stream;       /* the global stream numbers this thread sends */
    int *fd;                     /* one connected socket per stream */
    double bits_per_s;
    uint64_t t0;                 /* this thread's schedule start */
    pthread_t th;
    /* results (written by the thread only) */
    uint64_t *sent;              /* per own stream */
    uint64_t bytes, batches, late_batches, max_lag_ns, refused, nobufs, t_end;
    uint64_t send_ns;            /* its sending time (see send_end_records) */
    int stopped_early, interrupted;
    char error[256];
    _Atomic uint64_t progress_bytes;
} sender;

typedef struct totals {
    uint64_t bytes, packets, refused, nobufs, late, batches, max_lag;
    int stopped, failed, passed, interrupted;
    double send_s, speed, pct;
} totals;

/* Everything one run of eth-test-send knows, stage by stage: plan (options, address,
 * sockets), run (the sender threads), collect (totals), emit (report and document). */
struct send_run {
    send_cfg cfg;
    char started[32];
    et_addr dst;
    char ifname[IFNAMSIZ];       /* the interface towards the receiver; "" if unknown */
    uint64_t per_stream;         /* packets per stream */
    int *fd;                     /* one connected socket per stream */
    long granted;                /* the send buffer the kernel gave */
    uint64_t t0, hard_stop;      /* the schedule's start; when a late sender gives up */
    sender *senders;
    atomic_int finished;         /* sender threads done */
    totals T;
};

/* ---- run: one sender thread ----------------------------------------------------------- */
/* Hands the batch's n messages to the kernel, retrying what it did not take. Returns the
 * number of messages sent (fewer only at the hard stop), or -1 on an error that ends the
 * run. */
static int send_all(sender *s, int fd, struct mmsghdr *msgs, int n)
{
    const send_run *run = s->run;
    int off = 0;
    while (off < n) {
        int r = sendmmsg(fd, msgs + off, (unsigned)(n - off), 0);
        if (r > 0) {
            off += r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == ECONNREFUSED) {
            s->refused++; /* an ICMP port unreachable came back: no receiver on the port */
        } else if (r < 0 && (errno == ENOBUFS || errno == EAGAIN)) {
            s->nobufs++; /* the interface queue is full: wait for it */
            cb_sleep_until_ns(cb_now_ns() + 20000);
        } else {
            int e = errno;
            /* the kernel refuses a GSO send whose datagrams do not fit one frame each */
            snprintf(s->error, sizeof s->error, "sendmmsg to %s: %s%s", run->dst.text,
                     r < 0 ? strerror(e) : "sent nothing",
                     r < 0 && (e == EINVAL || e == EMSGSIZE) && run->cfg.gso
                         ? " (--gso: every --size datagram and its 28 B of headers must fit the MTU)" : "");
            return -1;
        }
        if (cb_now_ns() > run->hard_stop || cb_interrupted)
            break;
    }
    return off;
}

/* One thread's batch: datagram slots 64-byte aligned, filler between the stamps; with
 * --gso the datagrams lie back to back, --gso of them to a message, which the kernel
 * cuts at every --size bytes. */
typedef struct batch_bufs {
    unsigned char *buf;
    size_t slot;                 /* bytes from one datagram to the next */
    struct mmsghdr *msgs;
    struct iovec *iov;
    uint64_t *remaining;         /* packets left per own stream */
} batch_bufs;

static int batch_bufs_init(batch_bufs *b, const sender *s)
{
    const send_cfg *cfg = &s->run->cfg;
    size_t slot = cfg->gso ? cfg->size : (cfg->size + 63) / 64 * 64;
    b->slot = slot;
    b->buf = aligned_alloc(64, (slot * (size_t)cfg->batch + 63) / 64 * 64);
    b->msgs = calloc((size_t)cfg->batch, sizeof *b->msgs);
    b->iov = calloc((size_t)cfg->batch, sizeof *b->iov);
    b->remaining = calloc((size_t)s->nstreams, sizeof *b->remaining);
    if (!b->buf || !b->msgs || !b->iov || !b->remaining)
        return -1;
    for (size_t i = 0; i < slot * (size_t)cfg->batch; i++)
        b->buf[i] = (unsigned char)(0xa5 ^ i);
    for (int i = 0; i < cfg->batch; i++) {
        b->msgs[i].msg_hdr.msg_iov = &b->iov[i];
        b->msgs[i].msg_hdr.msg_iovlen = 1;
    }
    for (int k = 0; k < s->nstreams; k++)
        b->remaining[k] = s->run->per_stream;
    return 0;
}

/* The messages for n datagrams: one each, or --gso to a message (the last may hold
 * fewer). Returns the number of messages. */
static int batch_msgs(batch_bufs *b, const send_cfg *cfg, int n)
{
    int per = cfg->gso ? cfg->gso : 1, m = 0;
    for (int i = 0; i < n; i += per, m++) {
        int k = n - i < per ? n - i : per;
        b->iov[m].iov_base = b->buf + b->slot * (size_t)i;
        b->iov[m].iov_len = (size_t)k * cfg->size;
    }
    return m;
}

static void batch_bufs_free(batch_bufs *b)
{
    free(b->buf);
    free(b->msgs);
    free(b->iov);
    free(b->remaining);
}

/* Waits until the batch is due; notes how late it is. Returns 0, or -1 when the sender is
 * so late that it stops (the hard stop). */
static int wait_due(sender *s, uint64_t bytes_before, double batch_ns)
{
    uint64_t due = et_due_ns(s->t0, bytes_before, s->bits_per_s);
    uint64_t now = cb_now_ns();
    if (now < due) {
        /* in slices, so that a signal stops even a slow schedule at once */
        while (now < due && !cb_interrupted) {
            cb_sleep_until_ns(due - now > 50000000 ? now + 50000000 : due);
            now = cb_now_ns();
        }
        return cb_interrupted ? -1 : 0;
    }
    uint64_t lag = now - due;
    if (lag > s->max_lag_ns)
        s->max_lag_ns = lag;
    if ((double)lag > batch_ns)
        s->late_batches++;
    return now > s->run->hard_stop ? -1 : 0;
}

/* The data: the own streams' batches in turn, each when it is due. */
static void send_data(sender *s, batch_bufs *b)
{
    const send_cfg *cfg = &s->run->cfg;
    uint64_t per_stream = s->run->per_stream;
    uint64_t left = per_stream * (uint64_t)s->nstreams;
    double batch_ns = (double)cfg->batch * (double)cfg->size * 8e9 / s->bits_per_s;
    uint64_t bytes_before = 0;

    cb_sleep_until_ns(s->t0);
    for (int k = 0; left > 0; k = (k + 1) % s->nstreams) {
        if (b->remaining[k] == 0)
            continue;
        int n = b->remaining[k] < (uint64_t)cfg->batch ? (int)b->remaining[k] : cfg->batch;
        if (cb_interrupted || wait_due(s, bytes_before, batch_ns) != 0) {
            if (cb_interrupted)
                s->interrupted = 1;
            else
                s->stopped_early = 1;
            break;
        }
        uint64_t seq0 = per_stream - b->remaining[k];
        for (int i = 0; i < n; i++)
            et_build_data(b->buf + b->slot * (size_t)i, cfg->session, (uint16_t)s->stream[k],
                          (uint16_t)cfg->streams, seq0 + (uint64_t)i, (uint32_t)cfg->size);
        int nmsgs = batch_msgs(b, cfg, n);
        int sent = send_all(s, s->fd[k], b->msgs, nmsgs);
        if (sent < 0)
            break;
        /* messages to datagrams: all but the last message hold --gso of them */
        sent = sent == nmsgs ? n : sent * (cfg->gso ? cfg->gso : 1);
        s->sent[k] += (uint64_t)sent;
        s->bytes += (uint64_t)sent * cfg->size;
        s->batches++;
        atomic_store_explicit(&s->progress_bytes, s->bytes, memory_order_relaxed);
        if (sent < n) { /* hard stop or a signal inside the batch */
            if (cb_interrupted)
                s->interrupted = 1;
            else
                s->stopped_early = 1;
            break;
        }
        b->remaining[k] -= (uint64_t)n;
        left -= (uint64_t)n;
        bytes_before += (uint64_t)n * cfg->size;
    }
    s->t_end = cb_now_ns();
}

/* The sending time, which the end records tell the receiver: the schedule's, or longer
 * if the last batch went out late; then --end-copies end records per stream. */
static void send_end_records(sender *s)
{
    const send_cfg *cfg = &s->run->cfg;
    uint64_t sched_end = et_due_ns(s->t0, s->bytes, s->bits_per_s);
    s->send_ns = (s->t_end > sched_end ? s->t_end : sched_end) - s->t0;
    if (s->error[0])
        return;
    for (int c = 0; c < cfg->end_copies; c++) {
        unsigned char rec[ET_HEADER_BYTES];
        for (int k = 0; k < s->nstreams; k++) {
            et_build_end(rec, cfg->session, (uint16_t)s->stream[k], (uint16_t)cfg->streams,
                         s->sent[k], s->send_ns, (uint16_t)c);
            /* Best effort: a record that cannot be sent is what the copies are for,
             * and a receiver that has all it needs may already have closed its port. */
            (void)send(s->fd[k], rec, sizeof rec, 0);
        }
        cb_sleep_until_ns(cb_now_ns() + 2000000); /* spread the copies over time */
    }
}

static void *sender_main(void *arg)
{
    sender *s = arg;
    send_run *run = s->run;
    et_place_thread(s->cpu, run->cfg.rt_priority, s->index == 0);
    /* Wake-ups on time: the default 50 us timer slack would smear the schedule. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    batch_bufs b = {0};
    if (batch_bufs_init(&b, s) != 0) {
        snprintf(s->error, sizeof s->error, "out of memory");
    } else {
        send_data(s, &b);
        send_end_records(s);
    }
    batch_bufs_free(&b);
    atomic_fetch_add(&run->finished, 1);
    return NULL;
}

/* ---- plan --------------------------------------------------------------------------------- */
/* One connected socket per stream: each stream is its own flow (source port). */
static void open_sockets(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    int forced = 0;
    run->fd = calloc((size_t)cfg->streams, sizeof *run->fd);
    if (!run->fd)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < cfg->streams; i++) {
        et_addr a = run->dst;
        et_addr_set_port(&a, (uint16_t)(cfg->port + i));
        run->fd[i] = socket(a.ss.ss_family, SOCK_DGRAM, 0);
        if (run->fd[i] < 0)
            cb_die(CB_EXIT_CANNOT_RUN, "socket: %s", strerror(errno));
        run->granted = et_set_sockbuf(run->fd[i], 0, (long)cfg->sndbuf, &forced);
        /* UDP GSO: a send longer than --size is cut into --size datagrams (a record, 48
         * bytes, is shorter and goes as it is) */
        int seg = (int)cfg->size;
        if (cfg->gso && setsockopt(run->fd[i], SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "--gso: this kernel refuses UDP GSO (UDP_SEGMENT): %s",
                   strerror(errno));
        if (connect(run->fd[i], (struct sockaddr *)&a.ss, a.len) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot reach %s port %d: %s", a.text, cfg->port + i,
                   strerror(errno));
    }
    fprintf(cb_human(), "  socket send buffer: asked %zu B, granted %ld B%s\n", cfg->sndbuf, run->granted,
           forced ? " (SO_SNDBUFFORCE)" : "");
    if (cfg->gso)
        fprintf(cb_human(), "  UDP GSO (UDP_SEGMENT): %d datagrams of %zu B per send\n", cfg->gso, cfg->size);
    else
        fprintf(cb_human(), "  UDP GSO: off (one datagram per message)\n");
    if (run->granted < (long)cfg->sndbuf)
        cb_warn("the kernel granted a send buffer of %ld B of the %zu B asked: net.core.wmem_max is %ld "
                "(raise it with sysctl -w net.core.wmem_max=%zu, or run as root)",
                run->granted, cfg->sndbuf, et_sysctl_long("net.core.wmem_max"), cfg->sndbuf);
}

/* Address, session and packet count, the preflight, the sockets. */
static void plan(send_run *run)
{
    send_cfg *cfg = &run->cfg;
    char err[256];
    cb_iso8601_now(run->started, sizeof run->started);
    if (cfg->json_path && cb_json_path_ok(cfg->json_path) != 0)
        cb_die(CB_EXIT_USAGE, "cannot write the JSON result to %s: no such writable directory",
               cfg->json_path);
    if (et_resolve(cfg->host, (uint16_t)cfg->port, &run->dst, err, sizeof err) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    if (cfg->cpus.n)
        et_check_cpus(cfg->cpus.v, cfg->cpus.n);
    while (cfg->session == 0)
        if (getrandom(&cfg->session, sizeof cfg->session, 0) != sizeof cfg->session)
            cfg->session = cb_mix64(cb_now_ns() ^ (uint64_t)getpid());
    run->per_stream = et_packets_per_stream(cfg->duration_s, cfg->rate_gbits / cfg->streams,
                                            (uint32_t)cfg->size);

    et_addr local;
    if (et_route_iface(&run->dst, run->ifname, &local) != 0)
        run->ifname[0] = '\0';
    fprintf(cb_human(), "eth-test-send %s: %d streams to %s ports %d-%d, %.2f Gbit/s, %zu B datagrams, "
           "batches of %d, %.1f s, session %#llx\n",
           CB_VERSION, cfg->streams, run->dst.text, cfg->port, cfg->port + cfg->streams - 1,
           cfg->rate_gbits, cfg->size, cfg->batch, cfg->duration_s,
           (unsigned long long)cfg->session);
    et_preflight_print(cb_human(), run->ifname[0] ? run->ifname : NULL, &run->dst, (uint32_t)cfg->size);
    open_sockets(run);
    fflush(cb_human());
}

/* ---- run ------------------------------------------------------------------------------------ */
/* Deals the streams out round-robin; each thread's rate is its streams' share. */
static void make_senders(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    run->senders = calloc((size_t)cfg->threads, sizeof *run->senders);
    if (!run->senders)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int t = 0; t < cfg->threads; t++) {
        sender *s = &run->senders[t];
        s->run = run;
        s->index = t;
        s->cpu = cfg->cpus.n ? cfg->cpus.v[t % cfg->cpus.n] : -1;
        s->stream = calloc((size_t)cfg->streams, sizeof *s->stream);
        s->fd = calloc((size_t)cfg->streams, sizeof *s->fd);
        s->sent = calloc((size_t)cfg->streams, sizeof *s->sent);
        if (!s->stream || !s->fd || !s->sent)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int i = t; i < cfg->streams; i += cfg->threads) {
            s->stream[s->nstreams] = i;
            s->fd[s->nstreams++] = run->fd[i];
        }
        s->bits_per_s = cfg->rate_gbits * 1e9 * s->nstreams / cfg->streams;
        /* Stagger the threads' schedules so that their bursts interleave. */
        s->t0 = run->t0 + (uint64_t)((double)cfg->batch * (double)cfg->size * 8e9 / s->bits_per_s *
                                     t / cfg->threads);
    }
}

/* Progress once a second while the threads send; then joins them. */
static void wait_senders(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    uint64_t next_report = run->t0 + 1000000000;
    while (atomic_load(&run->finished) < cfg->threads) {
        cb_sleep_until_ns(cb_now_ns() + 10000000);
        if (cfg->quiet || cb_now_ns() < next_report)
            continue;
        next_report += 1000000000;
        uint64_t b = 0;
        for (int t = 0; t < cfg->threads; t++)
            b += atomic_load_explicit(&run->senders[t].progress_bytes, memory_order_relaxed);
        double el = (cb_now_ns() - run->t0) / 1e9;
        fprintf(stderr, "[%6.1f s] sent %.2f Gbit/s\n", el, cb_gbits((double)b, el));
    }
    for (int t = 0; t < cfg->threads; t++)
        pthread_join(run->senders[t].th, NULL);
}

/* The streams' plans, --end-copies times, before any data: with them the receiver
 * locks onto this session and bounds the packet numbers it accepts. */
static void send_start_records(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    unsigned char rec[ET_HEADER_BYTES];
    for (int c = 0; c < cfg->end_copies && !cb_interrupted; c++) {
        for (int i = 0; i < cfg->streams; i++) {
            et_build_start(rec, cfg->session, (uint16_t)i, (uint16_t)cfg->streams,
                           run->per_stream, (uint32_t)cfg->size, (uint16_t)c);
            /* best effort, as the end records: the copies are for the lost ones */
            (void)send(run->fd[i], rec, sizeof rec, 0);
        }
        cb_sleep_until_ns(cb_now_ns() + 200000); /* spread the copies a little */
    }
}

static void run_senders(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    send_start_records(run);
    run->t0 = cb_now_ns() + 20000000; /* all threads set up before the first batch */
    make_senders(run);
    /* A sender that cannot keep up stops here and says what it sent. */
    run->hard_stop = run->t0 + (uint64_t)(cfg->duration_s * 1.5e9) + 5000000000ULL;
    for (int t = 0; t < cfg->threads; t++)
        if (pthread_create(&run->senders[t].th, NULL, sender_main, &run->senders[t]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start sender thread %d", t);
    wait_senders(run);
}

/* ---- collect ------------------------------------------------------------------------------ */
static void collect(send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    totals *T = &run->T;
    memset(T, 0, sizeof *T);
    uint64_t end = 0;
    for (int t = 0; t < cfg->threads; t++) {
        sender *s = &run->senders[t];
        T->bytes += s->bytes;
        for (int k = 0; k < s->nstreams; k++)
            T->packets += s->sent[k];
        T->refused += s->refused;
        T->nobufs += s->nobufs;
        T->late += s->late_batches;
        T->batches += s->batches;
        if (s->max_lag_ns > T->max_lag)
            T->max_lag = s->max_lag_ns;
        T->stopped |= s->stopped_early;
        T->interrupted |= s->interrupted;
        if (s->error[0]) {
            cb_warn("%s", s->error);
            T->failed = 1;
        }
        if (s->t0 + s->send_ns > end)
            end = s->t0 + s->send_ns;
    }
    /* All the bytes over the time from the (first thread's) start to the last end. */
    T->send_s = (end - run->t0) / 1e9;
    T->speed = cb_gbits((double)T->bytes, T->send_s);
    T->pct = 100.0 * T->speed / cfg->rate_gbits;
    T->interrupted |= cb_interrupted != 0; /* also when it came after the data */
    T->passed = !T->failed && !T->stopped && !T->interrupted &&
                et_speed_meets(T->speed, cfg->rate_gbits);
}

/* ---- emit ----------------------------------------------------------------------------------- */
static void print_report(const send_run *run)
{
    const totals *T = &run->T;
    FILE *out = cb_human();
    fprintf(out, "Sent %llu datagrams (%llu per stream planned) in %.3f s; %llu batches, %llu late by more "
           "than a batch, largest lag %.1f us\n",
           (unsigned long long)T->packets, (unsigned long long)run->per_stream, T->send_s,
           (unsigned long long)T->batches, (unsigned long long)T->late, T->max_lag / 1e3);
    if (T->refused)
        fprintf(out, "WARNING: %llu sends refused (ICMP port unreachable): is eth-test-receive running on %s "
               "with --streams >= %d?\n", (unsigned long long)T->refused, run->dst.text,
               run->cfg.streams);
    if (T->nobufs)
        fprintf(out, "Interface queue full %llu times (ENOBUFS); the sender waited\n",
               (unsigned long long)T->nobufs);
    if (T->stopped)
        fprintf(out, "STOPPED: the sender fell too far behind its schedule and stopped at %.1f s\n",
               (run->hard_stop - run->t0) / 1e9);
    if (T->interrupted)
        fprintf(out, "INTERRUPTED by %s: the data stopped early; the end records carry the packets "
                "sent\n", cb_interrupted_name());
}

static void doc_config(cb_json *j, const void *ctx)
{
    const send_run *run = ctx;
    const send_cfg *cfg = &run->cfg;
    char sid[32];
    snprintf(sid, sizeof sid, "%#llx", (unsigned long long)cfg->session);
    cbj_config_options(j, &send_cmd, cfg); /* the options, as the run used them */
    cbj_str(j, "address", run->dst.text);
    cbj_str(j, "interface", run->ifname);
    cbj_int(j, "packets_per_stream", (long long)run->per_stream);
    cbj_int(j, "sndbuf_granted", run->granted);
    cbj_str(j, "session", sid);
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const send_run *run = ctx;
    const totals *T = &run->T;
    cbj_metric(j, send_metrics, "desired_speed", run->cfg.rate_gbits);
    cbj_metric(j, send_metrics, "sent_speed", T->speed);
    cbj_metric(j, send_metrics, "sent_speed_bytes", T->speed * 1e9 / 8);
    cbj_metric(j, send_metrics, "percent_of_desired", T->pct);
    cbj_metric(j, send_metrics, "sent_packets", (double)T->packets);
    cbj_metric(j, send_metrics, "late_batches", (double)T->late);
    cbj_metric(j, send_metrics, "max_lag", T->max_lag / 1e3);
    cbj_metric(j, send_metrics, "refused_sends", (double)T->refused);
}

/* The report, the JSON document and the results block; returns the exit status. */
static int emit(const send_run *run)
{
    const send_cfg *cfg = &run->cfg;
    const totals *T = &run->T;
    print_report(run);
    FILE *out = cb_human();
    int rc = T->failed ? CB_EXIT_CANNOT_RUN : T->interrupted ? cb_exit_interrupted()
             : T->passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (cfg->json_path) {
        cb_envelope env = {.test = "eth-test-send", .test_version = ET_TEST_VERSION,
                           .started = run->started, .duration_s = T->send_s,
                           .threshold = cfg->rate_gbits, .passed = T->passed,
                           .interrupted = T->interrupted};
        cb_doc_parts parts = {.config = doc_config, .metrics = doc_metrics};
        if (cb_doc_write(cfg->json_path, &env, &parts, run) != 0)
            rc = CB_EXIT_CANNOT_RUN;
    }
    cb_results_begin(out, ET_TEST_VERSION);
    cb_results_line(out, "Desired speed", "%.2f Gbit/s", cfg->rate_gbits);
    cb_results_line(out, "Sent speed", "%.2f Gbit/s (%.2f%% of desired)", T->speed, T->pct);
    cb_results_interrupted(out, "the figures cover the data sent until then");
    fflush(out);
    return rc;
}

int main(int argc, char **argv)
{
    static send_run run;
    cb_prog = "eth-test-send";
    send_options_parse(&run.cfg, argc, argv);
    /* from here a signal stops the data, which still ends with its records and report */
    cb_signals_install();
    plan(&run);
    run_senders(&run);
    collect(&run);
    return emit(&run);
}
