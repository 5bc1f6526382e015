/* eth-test-send: streams rate-paced UDP datagrams of eth-test's format (eth_proto.h) to
 * eth-test-receive on another host (or another interface of this one).
 *
 * The load is shaped like the original compliance tool's: --streams UDP streams (port,
 * port+1, ...), each a share of --rate, sent in batches of --batch datagrams with one
 * sendmmsg() call. Each sender thread owns some streams and sends their batches in turn
 * on a fixed schedule: batch j is due when the bytes before it have had their time at
 * the thread's rate, so a late batch is followed by on-time ones and the average rate
 * never drifts. After its data each stream sends --end-copies end-of-stream records
 * carrying the number of packets it sent, so that the receiver counts loss exactly. */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "../common/cb_common.h"
#include "eth_net.h"
#include "eth_proto.h"

#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

typedef struct sender {
    int index, cpu;
    int nstreams, *stream;       /* the global stream numbers this thread sends */
    int *fd;                     /* one connected socket per stream */
    double bits_per_s;
    uint64_t t0;                 /* this thread's schedule start */
    pthread_t th;
    /* results (written by the thread only) */
    uint64_t *sent;              /* per own stream */
    uint64_t bytes, batches, late_batches, max_lag_ns, refused, nobufs, t_end;
    uint64_t send_ns;            /* its sending time (see sender_main) */
    int stopped_early;
    char error[256];
    _Atomic uint64_t progress_bytes;
} sender;

static struct {
    const char *host;
    uint16_t port;
    int streams, batch, threads, end_copies, rt_priority, quiet;
    double rate_gbits, duration_s;
    uint32_t size;
    long sndbuf;
    uint64_t session;
    int cpus[CB_MAX_CPUS], ncpus;
    const char *json_path;
    et_addr dst;
    uint64_t per_stream;         /* packets per stream */
    uint64_t hard_stop;
    sender *senders;
} run;

static atomic_int finished; /* sender threads done */

static void usage(FILE *f)
{
    fprintf(f,
"Usage: eth-test-send -H HOST [OPTION]...\n"
"Stream rate-paced UDP data to eth-test-receive on HOST (the address of the\n"
"interface under test), like the compliance tool's sender: --streams streams to\n"
"ports --port, --port+1, ..., --rate Gbit/s in all, in batches of --batch\n"
"datagrams (sendmmsg). Start eth-test-receive first.\n"
"\n"
"  -H, --host=HOST         receiver's address or name (required)\n"
"  -p, --port=PORT         first UDP port (default %d)\n"
"  -r, --rate=GBITS        total rate of UDP payload in Gbit/s (default 9)\n"
"  -s, --size=BYTES        datagram (UDP payload) size (default 8900: a jumbo frame\n"
"                          with its IP/UDP headers fits an MTU of 9000)\n"
"  -n, --streams=N         streams, one UDP port each (default 12: 3 antenna fields\n"
"                          x 4 streams per 10GbE port)\n"
"  -d, --duration=SECONDS  sending time (default 10)\n"
"  -b, --batch=N           datagrams per sendmmsg call (default 128)\n"
"  -t, --threads=N         sender threads; streams are dealt out round-robin\n"
"                          (default 1)\n"
"  -c, --cpu=LIST          pin sender thread i to the i-th CPU of LIST (e.g. 0,2)\n"
"      --sndbuf=BYTES      socket send buffer (default 4194304; as root beyond\n"
"                          net.core.wmem_max)\n"
"      --session=ID        session id (default random; 1..2^64-1)\n"
"      --end-copies=N      end-of-stream records per stream (default 8)\n"
"      --rt-priority=N     run the sender threads SCHED_FIFO at priority N (the\n"
"                          compliance document's tip: chrt -f 1); needs root\n"
"  -j, --json=FILE         write the JSON result document to FILE ('-' = stdout)\n"
"  -q, --quiet             no progress lines on stderr\n"
"  -h, --help              this help\n"
"  -V, --version           version\n"
"\n"
"Sent speed = bytes sent / sending time: from the start to the end of the\n"
"schedule, or to the end of the last batch if that came later (a sender never\n"
"runs ahead of its schedule, so it cannot exceed the rate). The end-of-stream\n"
"records carry the sending time. Compliant (exit 0) when it reaches the rate\n"
"within 0.05%% (what prints as the rate: 8.9955 is 9.00).\n"
"\n"
"Exit status: 0 sent at the rate, 1 could not keep the rate, 2 usage error,\n"
"3 could not run.\n", ET_DEFAULT_PORT);
}

static void parse_args(int argc, char **argv)
{
    enum { O_SNDBUF = 256, O_SESSION, O_END_COPIES, O_RT };
    static const struct option opts[] = {
        {"host", required_argument, 0, 'H'},
        {"port", required_argument, 0, 'p'},
        {"rate", required_argument, 0, 'r'},
        {"size", required_argument, 0, 's'},
        {"streams", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 'd'},
        {"batch", required_argument, 0, 'b'},
        {"threads", required_argument, 0, 't'},
        {"cpu", required_argument, 0, 'c'},
        {"sndbuf", required_argument, 0, O_SNDBUF},
        {"session", required_argument, 0, O_SESSION},
        {"end-copies", required_argument, 0, O_END_COPIES},
        {"rt-priority", required_argument, 0, O_RT},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    run.port = ET_DEFAULT_PORT;
    run.rate_gbits = 9.0;
    run.size = 8900;
    run.streams = 12;
    run.duration_s = 10;
    run.batch = 128;
    run.threads = 1;
    run.sndbuf = 4 << 20;
    run.end_copies = 8;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":H:p:r:s:n:d:b:t:c:j:qhV", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'H': run.host = optarg; break;
        case 'p': run.port = (uint16_t)cb_opt_long("--port", optarg, 1, 65535); break;
        case 'r': run.rate_gbits = cb_opt_double("--rate", optarg, 1e-6, 10000); break;
        case 's':
            run.size = (uint32_t)cb_opt_long("--size", optarg, ET_MIN_DATA_BYTES, ET_MAX_DATAGRAM);
            break;
        case 'n': run.streams = (int)cb_opt_long("--streams", optarg, 1, ET_MAX_STREAMS); break;
        case 'd': run.duration_s = cb_opt_double("--duration", optarg, 0.001, 86400); break;
        case 'b': run.batch = (int)cb_opt_long("--batch", optarg, 1, 1024); break;
        case 't': run.threads = (int)cb_opt_long("--threads", optarg, 1, 256); break;
        case 'c': run.ncpus = cb_opt_intlist("--cpu", optarg, run.cpus, CB_MAX_CPUS); break;
        case O_SNDBUF: run.sndbuf = cb_opt_long("--sndbuf", optarg, 4096, 1L << 30); break;
        case O_SESSION: run.session = et_opt_session(optarg); break;
        case O_RT: run.rt_priority = (int)cb_opt_long("--rt-priority", optarg, 1, 99); break;
        case O_END_COPIES: run.end_copies = (int)cb_opt_long("--end-copies", optarg, 1, 1000); break;
        case 'j': run.json_path = optarg; break;
        case 'q': run.quiet = 1; break;
        case 'h': usage(stdout); exit(0);
        case 'V': cb_print_version(ET_TEST_VERSION); exit(0);
        case ':': cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cb_usage_error("unexpected argument '%s'", argv[optind]);
    if (!run.host)
        cb_usage_error("-H HOST is required: the receiver's address");
    if ((long)run.port + run.streams - 1 > 65535)
        cb_usage_error("--port %u with %d streams runs past port 65535", run.port, run.streams);
    if (run.threads > run.streams)
        run.threads = run.streams;
}

/* Hands the batch to the kernel, retrying what it did not take. Returns the number of
 * datagrams sent (fewer only at the hard stop), or -1 on an error that ends the run. */
static int send_all(sender *s, int fd, struct mmsghdr *msgs, int n)
{
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
            snprintf(s->error, sizeof s->error, "sendmmsg to %s: %s", run.dst.text,
                     r < 0 ? strerror(errno) : "sent nothing");
            return -1;
        }
        if (cb_now_ns() > run.hard_stop)
            break;
    }
    return off;
}

static void *sender_main(void *arg)
{
    sender *s = arg;
    et_place_thread(s->cpu, run.rt_priority, s->index == 0);
    /* Wake-ups on time: the default 50 us timer slack would smear the schedule. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    size_t slot = (run.size + 63) / 64 * 64;
    unsigned char *buf = aligned_alloc(64, slot * (size_t)run.batch);
    struct mmsghdr *msgs = calloc((size_t)run.batch, sizeof *msgs);
    struct iovec *iov = calloc((size_t)run.batch, sizeof *iov);
    uint64_t *remaining = calloc((size_t)s->nstreams, sizeof *remaining);
    if (!buf || !msgs || !iov || !remaining) {
        snprintf(s->error, sizeof s->error, "out of memory");
        atomic_fetch_add(&finished, 1);
        return NULL;
    }
    for (size_t i = 0; i < slot * (size_t)run.batch; i++) /* filler between the stamps */
        buf[i] = (unsigned char)(0xa5 ^ i);
    for (int i = 0; i < run.batch; i++) {
        iov[i].iov_base = buf + slot * (size_t)i;
        iov[i].iov_len = run.size;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    for (int k = 0; k < s->nstreams; k++)
        remaining[k] = run.per_stream;
    uint64_t left = run.per_stream * (uint64_t)s->nstreams;
    double batch_ns = (double)run.batch * run.size * 8e9 / s->bits_per_s;
    uint64_t bytes_before = 0;

    cb_sleep_until_ns(s->t0);
    for (int k = 0; left > 0; k = (k + 1) % s->nstreams) {
        if (remaining[k] == 0)
            continue;
        int n = remaining[k] < (uint64_t)run.batch ? (int)remaining[k] : run.batch;
        uint64_t due = et_due_ns(s->t0, bytes_before, s->bits_per_s);
        uint64_t now = cb_now_ns();
        if (now < due) {
            cb_sleep_until_ns(due);
        } else {
            uint64_t lag = now - due;
            if (lag > s->max_lag_ns)
                s->max_lag_ns = lag;
            if ((double)lag > batch_ns)
                s->late_batches++;
            if (now > run.hard_stop) {
                s->stopped_early = 1;
                break;
            }
        }
        uint64_t seq0 = run.per_stream - remaining[k];
        for (int i = 0; i < n; i++)
            et_build_data(iov[i].iov_base, run.session, (uint16_t)s->stream[k], (uint16_t)run.streams,
                          seq0 + (uint64_t)i, run.size);
        int sent = send_all(s, s->fd[k], msgs, n);
        if (sent < 0)
            break;
        s->sent[k] += (uint64_t)sent;
        s->bytes += (uint64_t)sent * run.size;
        s->batches++;
        atomic_store_explicit(&s->progress_bytes, s->bytes, memory_order_relaxed);
        if (sent < n) { /* hard stop inside the batch */
            s->stopped_early = 1;
            break;
        }
        remaining[k] -= (uint64_t)n;
        left -= (uint64_t)n;
        bytes_before += (uint64_t)n * run.size;
    }
    s->t_end = cb_now_ns();

    /* The sending time, which the end records tell the receiver: the schedule's, or
     * longer if the last batch went out late. */
    uint64_t sched_end = et_due_ns(s->t0, s->bytes, s->bits_per_s);
    s->send_ns = (s->t_end > sched_end ? s->t_end : sched_end) - s->t0;
    uint64_t send_ns = s->send_ns;
    if (!s->error[0])
        for (int c = 0; c < run.end_copies; c++) {
            unsigned char rec[ET_HEADER_BYTES];
            for (int k = 0; k < s->nstreams; k++) {
                et_build_end(rec, run.session, (uint16_t)s->stream[k], (uint16_t)run.streams,
                             s->sent[k], send_ns, (uint16_t)c);
                /* Best effort: a record that cannot be sent is what the copies are for,
                 * and a receiver that has all it needs may already have closed its port. */
                (void)send(s->fd[k], rec, sizeof rec, 0);
            }
            cb_sleep_until_ns(cb_now_ns() + 2000000); /* spread the copies over time */
        }
    free(buf);
    free(msgs);
    free(iov);
    free(remaining);
    atomic_fetch_add(&finished, 1);
    return NULL;
}



/* One connected socket per stream: each stream is its own flow (source port). Returns the
 * sockets; *granted is the send buffer the kernel gave. */
static int *open_sockets(long *granted)
{
    int *fds = calloc((size_t)run.streams, sizeof *fds), forced = 0;
    if (!fds)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int i = 0; i < run.streams; i++) {
        et_addr a = run.dst;
        et_addr_set_port(&a, (uint16_t)(run.port + i));
        fds[i] = socket(a.ss.ss_family, SOCK_DGRAM, 0);
        if (fds[i] < 0)
            cb_die(CB_EXIT_CANNOT_RUN, "socket: %s", strerror(errno));
        *granted = et_set_sockbuf(fds[i], 0, run.sndbuf, &forced);
        if (connect(fds[i], (struct sockaddr *)&a.ss, a.len) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot reach %s port %u: %s", a.text, run.port + i, strerror(errno));
    }
    printf("  socket send buffer: asked %ld B, granted %ld B%s\n", run.sndbuf, *granted,
           forced ? " (SO_SNDBUFFORCE)" : "");
    if (*granted < run.sndbuf)
        cb_warn("the kernel granted a send buffer of %ld B of the %ld B asked: net.core.wmem_max is %ld "
                "(raise it with sysctl -w net.core.wmem_max=%ld, or run as root)",
                *granted, run.sndbuf, et_sysctl_long("net.core.wmem_max"), run.sndbuf);
    return fds;
}

/* Deals the streams out round-robin; each thread's rate is its streams' share. */
static void make_senders(int *fds, uint64_t t0)
{
    run.senders = calloc((size_t)run.threads, sizeof *run.senders);
    if (!run.senders)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int t = 0; t < run.threads; t++) {
        sender *s = &run.senders[t];
        s->index = t;
        s->cpu = run.ncpus ? run.cpus[t % run.ncpus] : -1;
        s->stream = calloc((size_t)run.streams, sizeof *s->stream);
        s->fd = calloc((size_t)run.streams, sizeof *s->fd);
        s->sent = calloc((size_t)run.streams, sizeof *s->sent);
        if (!s->stream || !s->fd || !s->sent)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int i = t; i < run.streams; i += run.threads) {
            s->stream[s->nstreams] = i;
            s->fd[s->nstreams++] = fds[i];
        }
        s->bits_per_s = run.rate_gbits * 1e9 * s->nstreams / run.streams;
        /* Stagger the threads' schedules so that their bursts interleave. */
        s->t0 = t0 + (uint64_t)((double)run.batch * run.size * 8e9 / s->bits_per_s * t / run.threads);
    }
}

/* Progress once a second while the threads send; then joins them. */
static void wait_senders(uint64_t t0)
{
    uint64_t next_report = t0 + 1000000000;
    while (atomic_load(&finished) < run.threads) {
        cb_sleep_until_ns(cb_now_ns() + 10000000);
        if (run.quiet || cb_now_ns() < next_report)
            continue;
        next_report += 1000000000;
        uint64_t b = 0;
        for (int t = 0; t < run.threads; t++)
            b += atomic_load_explicit(&run.senders[t].progress_bytes, memory_order_relaxed);
        double el = (cb_now_ns() - t0) / 1e9;
        fprintf(stderr, "[%6.1f s] sent %.2f Gbit/s\n", el, cb_gbits((double)b, el));
    }
    for (int t = 0; t < run.threads; t++)
        pthread_join(run.senders[t].th, NULL);
}

typedef struct totals {
    uint64_t bytes, packets, refused, nobufs, late, batches, max_lag;
    int stopped, failed, passed;
    double send_s, speed, pct;
} totals;

static void sum_up(totals *T, uint64_t t0)
{
    memset(T, 0, sizeof *T);
    uint64_t end = 0;
    for (int t = 0; t < run.threads; t++) {
        sender *s = &run.senders[t];
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
        if (s->error[0]) {
            cb_warn("%s", s->error);
            T->failed = 1;
        }
        if (s->t0 + s->send_ns > end)
            end = s->t0 + s->send_ns;
    }
    /* All the bytes over the time from the (first thread's) start to the last end. */
    T->send_s = (end - t0) / 1e9;
    T->speed = cb_gbits((double)T->bytes, T->send_s);
    T->pct = 100.0 * T->speed / run.rate_gbits;
    T->passed = !T->failed && !T->stopped && et_speed_meets(T->speed, run.rate_gbits);
}

static void print_report(const totals *T, uint64_t t0)
{
    printf("Sent %llu datagrams (%llu per stream planned) in %.3f s; %llu batches, %llu late by more "
           "than a batch, largest lag %.1f us\n",
           (unsigned long long)T->packets, (unsigned long long)run.per_stream, T->send_s,
           (unsigned long long)T->batches, (unsigned long long)T->late, T->max_lag / 1e3);
    if (T->refused)
        printf("WARNING: %llu sends refused (ICMP port unreachable): is eth-test-receive running on %s "
               "with --streams >= %d?\n", (unsigned long long)T->refused, run.dst.text, run.streams);
    if (T->nobufs)
        printf("Interface queue full %llu times (ENOBUFS); the sender waited\n",
               (unsigned long long)T->nobufs);
    if (T->stopped)
        printf("STOPPED: the sender fell too far behind its schedule and stopped at %.1f s\n",
               (run.hard_stop - t0) / 1e9);
}

static int write_json(const totals *T, const char *started, const char *ifname, long granted)
{
    char sid[32];
    snprintf(sid, sizeof sid, "%#llx", (unsigned long long)run.session);
    cb_json j;
    cbj_init(&j);
    cbj_doc_begin(&j, "eth-test-send", ET_TEST_VERSION, started);
    cbj_num(&j, "duration_s", T->send_s);
    cbj_obj_begin(&j, "config");
    cbj_str(&j, "host", run.host);
    cbj_str(&j, "address", run.dst.text);
    cbj_str(&j, "interface", ifname);
    cbj_int(&j, "port", run.port);
    cbj_int(&j, "streams", run.streams);
    cbj_num(&j, "rate_gbits", run.rate_gbits);
    cbj_int(&j, "datagram_bytes", run.size);
    cbj_int(&j, "batch", run.batch);
    cbj_int(&j, "threads", run.threads);
    cbj_int(&j, "rt_priority", run.rt_priority);
    cbj_num(&j, "requested_duration_s", run.duration_s);
    cbj_int(&j, "packets_per_stream", (long long)run.per_stream);
    cbj_int(&j, "sndbuf_granted", granted);
    cbj_str(&j, "session", sid);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "metrics");
    cbj_metric(&j, "desired_speed", run.rate_gbits, "Gbit/s");
    cbj_metric(&j, "sent_speed", T->speed, "Gbit/s");
    cbj_metric(&j, "sent_speed_bytes", T->speed * 1e9 / 8, "B/s");
    cbj_metric(&j, "percent_of_desired", T->pct, "%");
    cbj_metric(&j, "sent_packets", (double)T->packets, "packets");
    cbj_metric(&j, "late_batches", (double)T->late, "batches");
    cbj_metric(&j, "max_lag", T->max_lag / 1e3, "us");
    cbj_metric(&j, "refused_sends", (double)T->refused, "sends");
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "compliance");
    cbj_num(&j, "threshold", run.rate_gbits);
    cbj_bool(&j, "passed", T->passed);
    cbj_obj_end(&j);
    cbj_obj_end(&j);
    int rc = cb_json_write(&j, run.json_path);
    cbj_free(&j);
    return rc;
}

int main(int argc, char **argv)
{
    cb_prog = "eth-test-send";
    parse_args(argc, argv);
    char started[32], err[256];
    cb_iso8601_now(started, sizeof started);
    if (run.json_path && cb_json_path_ok(run.json_path) != 0)
        cb_die(CB_EXIT_USAGE, "cannot write the JSON result to %s: no such writable directory",
               run.json_path);
    if (et_resolve(run.host, run.port, &run.dst, err, sizeof err) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    if (run.ncpus)
        et_check_cpus(run.cpus, run.ncpus);
    while (run.session == 0)
        if (getrandom(&run.session, sizeof run.session, 0) != sizeof run.session)
            run.session = cb_mix64(cb_now_ns() ^ (uint64_t)getpid());
    run.per_stream = et_packets_per_stream(run.duration_s, run.rate_gbits / run.streams, run.size);

    char ifname[IFNAMSIZ] = "";
    et_addr local;
    int have_if = et_route_iface(&run.dst, ifname, &local) == 0;
    printf("eth-test-send %s: %d streams to %s ports %u-%u, %.2f Gbit/s, %u B datagrams, "
           "batches of %d, %.1f s, session %#llx\n",
           CB_VERSION, run.streams, run.dst.text, run.port, run.port + run.streams - 1,
           run.rate_gbits, run.size, run.batch, run.duration_s, (unsigned long long)run.session);
    et_preflight_print(stdout, have_if ? ifname : NULL, &run.dst, run.size);
    long granted = 0;
    int *fds = open_sockets(&granted);
    fflush(stdout);

    uint64_t t0 = cb_now_ns() + 20000000; /* all threads set up before the first batch */
    make_senders(fds, t0);
    /* A sender that cannot keep up stops here and says what it sent. */
    run.hard_stop = t0 + (uint64_t)(run.duration_s * 1.5e9) + 5000000000ULL;
    for (int t = 0; t < run.threads; t++)
        if (pthread_create(&run.senders[t].th, NULL, sender_main, &run.senders[t]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start sender thread %d", t);
    wait_senders(t0);

    totals T;
    sum_up(&T, t0);
    print_report(&T, t0);
    int rc = T.failed ? CB_EXIT_CANNOT_RUN : T.passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (run.json_path && write_json(&T, started, have_if ? ifname : "", granted) != 0)
        rc = CB_EXIT_CANNOT_RUN;
    cb_results_begin(stdout, ET_TEST_VERSION);
    cb_results_line(stdout, "Desired speed", "%.2f Gbit/s", run.rate_gbits);
    cb_results_line(stdout, "Sent speed", "%.2f Gbit/s (%.2f%% of desired)", T.speed, T.pct);
    fflush(stdout);
    return rc;
}
