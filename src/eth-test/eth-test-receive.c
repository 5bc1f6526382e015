/* eth-test-receive: receives eth-test-send's UDP streams on one interface of this host
 * and reports the total speed and the loss, as the compliance document's eth-test does.
 *
 * One socket per stream (ports --port, --port+1, ...), bound to the address under test,
 * with a large receive buffer; receiver threads own the sockets round-robin and drain
 * them with recvmmsg() in batches. Every datagram is classified (eth_proto.h): not
 * eth-test's format (malformed), another session (foreign), a stream on the wrong port
 * (misdirected), a damaged payload (corrupt), or a data packet: new, reordered or
 * duplicated by its packet number. Loss is counted against the number of packets the
 * sender says it sent (its end-of-stream records), never guessed. */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "../common/cb_common.h"
#include "eth_net.h"
#include "eth_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOT_BYTES 65536 /* any UDP datagram fits; larger ones show as truncated */
/* Slots a power of two apart would all fall into the same cache sets: offset them. */
#define SLOT_STRIDE (SLOT_BYTES + 5 * 64)
#define CTRL_BYTES 128   /* room for the SO_RXQ_OVFL drop counter and a timestamp */
#define SEQ_WINDOW (1u << 20)

typedef struct receiver {
    int index, cpu;
    int nsocks, *sock;           /* socket (= stream) numbers this thread owns */
    pthread_t th;
    struct mmsghdr *msgs;
    struct iovec *iov;
    unsigned char *bufs, *ctrl;
    /* classification counts (this thread's) */
    uint64_t datagrams, malformed[ET_NPARSE], truncated, foreign, misdirected, inconsistent;
    uint64_t first_ns, last_ns, bytes;  /* this machine's monotonic clock, at recvmmsg */
    /* The kernel's receive timestamps (CLOCK_REALTIME, ns) of the first and the last
     * packet counted, and the first one's size: the speed's time base. */
    int64_t first_ts, last_ts;
    uint64_t first_len;
    _Atomic uint64_t progress_bytes;
    char error[256];
} receiver;

static struct {
    const char *host, *iface, *json_path, *ready_file;
    uint16_t port;
    int streams, batch, threads, busy_poll_us, rt_priority, quiet;
    long rcvbuf;
    double timeout_s, idle_s, linger_s, threshold, max_loss;
    uint64_t want_session;
    int cpus[CB_MAX_CPUS], ncpus;
    et_addr addr;
    char ifname[IFNAMSIZ];
    int *fd;
    et_stream *st;               /* per socket/stream, touched only by its owner thread */
    _Atomic uint32_t *sock_drops;/* per socket: the kernel's drop count (SO_RXQ_OVFL) */
    receiver *rx;
    long granted;
    int forced;
} run;

/* Shared between the receiver threads and the main thread. */
static _Atomic uint64_t session;        /* 0 until the first data packet (or --session) */
static _Atomic uint32_t session_nstreams;
static _Atomic int ended_streams, complete_streams, stop;
static _Atomic uint64_t last_packet_ns;

static void usage(FILE *f)
{
    fprintf(f,
"Usage: eth-test-receive -H HOST | -I IFACE [OPTION]...\n"
"Receive eth-test-send's UDP streams on the interface that has address HOST (or on\n"
"interface IFACE) and report the total speed and the average loss. Compliant (exit\n"
"0): total speed >= --threshold (9.00 Gbit/s) and average loss <= --max-loss (0%%).\n"
"Start it first, then eth-test-send -H HOST on the sending machine.\n"
"\n"
"  -H, --host=HOST         the address (or name) under test: a local address\n"
"  -I, --interface=IFACE   or the interface under test (its first IPv4 address)\n"
"  -p, --port=PORT         first UDP port (default %d)\n"
"  -n, --streams=N         streams, one UDP port each (default 12)\n"
"  -t, --threads=N         receiver threads; sockets dealt out round-robin (default 1)\n"
"  -c, --cpu=LIST          pin receiver thread i to the i-th CPU of LIST\n"
"  -b, --batch=N           datagrams per recvmmsg call (default 128)\n"
"      --rcvbuf=BYTES      receive buffer per socket (default 33554432; as root\n"
"                          beyond net.core.rmem_max, through SO_RCVBUFFORCE)\n"
"      --busy-poll[=USEC]  spin instead of sleeping in poll(), and ask the kernel\n"
"                          to busy-poll the device for USEC (default 50) per read\n"
"                          (0: spin only); takes a whole CPU per thread\n"
"      --rt-priority=N     run the receiver threads SCHED_FIFO at priority N (the\n"
"                          compliance document's tip: chrt -f 1); needs root\n"
"      --timeout=SECONDS   wait this long for a sender (default 300; exit 3)\n"
"      --idle-timeout=SECONDS  end when the sender has been silent this long\n"
"                          (default 2): a sender that died mid-run\n"
"      --session=ID        accept only this session id (default: the first seen)\n"
"      --threshold=GBITS   compliant total speed (default 9.00)\n"
"      --max-loss=PCT      compliant average loss (default 0)\n"
"      --ready-file=FILE   once listening, write \"ADDRESS PORT STREAMS\" to FILE\n"
"  -j, --json=FILE         write the JSON result document to FILE ('-' = stdout)\n"
"  -q, --quiet             no progress lines on stderr\n"
"  -h, --help              this help\n"
"  -V, --version           version\n"
"\n"
"Total speed: UDP payload of the distinct packets received after the first one,\n"
"over the time from the first to the last, by the kernel's receive timestamps\n"
"(not when this program got to read them). Average loss = packets lost / packets\n"
"sent, over all streams, where sent is what the sender's end-of-stream records\n"
"say. Speeds are judged within 0.05%% (what prints as 9.00 meets 9.00); loss, a\n"
"count, exactly.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant (or incomplete: the sender stopped\n"
"without its end records, or sent damaged data), 2 usage error, 3 could not run\n"
"(no sender within --timeout, address not on this machine, port in use).\n",
            ET_DEFAULT_PORT);
}

static void parse_args(int argc, char **argv)
{
    enum { O_RCVBUF = 256, O_BUSY, O_TIMEOUT, O_IDLE, O_SESSION, O_THRESHOLD, O_MAXLOSS, O_READY, O_RT };
    static const struct option opts[] = {
        {"host", required_argument, 0, 'H'},
        {"interface", required_argument, 0, 'I'},
        {"port", required_argument, 0, 'p'},
        {"streams", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'},
        {"cpu", required_argument, 0, 'c'},
        {"batch", required_argument, 0, 'b'},
        {"rcvbuf", required_argument, 0, O_RCVBUF},
        {"busy-poll", optional_argument, 0, O_BUSY},
        {"rt-priority", required_argument, 0, O_RT},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"idle-timeout", required_argument, 0, O_IDLE},
        {"session", required_argument, 0, O_SESSION},
        {"threshold", required_argument, 0, O_THRESHOLD},
        {"max-loss", required_argument, 0, O_MAXLOSS},
        {"ready-file", required_argument, 0, O_READY},
        {"json", required_argument, 0, 'j'},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},
        {0, 0, 0, 0}};
    run.port = ET_DEFAULT_PORT;
    run.streams = 12;
    run.threads = 1;
    run.batch = 128;
    run.rcvbuf = 32L << 20;
    run.timeout_s = 300;
    run.idle_s = 2;
    run.linger_s = 0.2;
    run.threshold = 9.0;
    run.max_loss = 0;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, ":H:I:p:n:t:c:b:j:qhV", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'H': run.host = optarg; break;
        case 'I': run.iface = optarg; break;
        case 'p': run.port = (uint16_t)cb_opt_long("--port", optarg, 1, 65535); break;
        case 'n': run.streams = (int)cb_opt_long("--streams", optarg, 1, ET_MAX_STREAMS); break;
        case 't': run.threads = (int)cb_opt_long("--threads", optarg, 1, 256); break;
        case 'c': run.ncpus = cb_opt_intlist("--cpu", optarg, run.cpus, CB_MAX_CPUS); break;
        case 'b': run.batch = (int)cb_opt_long("--batch", optarg, 1, 1024); break;
        case O_RCVBUF: run.rcvbuf = cb_opt_long("--rcvbuf", optarg, 4096, 1L << 30); break;
        case O_BUSY:
            run.busy_poll_us = optarg ? (int)cb_opt_long("--busy-poll", optarg, 0, 1000000) : 50;
            if (!run.busy_poll_us)
                run.busy_poll_us = -1; /* spin, without asking the kernel to poll */
            break;
        case O_RT: run.rt_priority = (int)cb_opt_long("--rt-priority", optarg, 1, 99); break;
        case O_TIMEOUT: run.timeout_s = cb_opt_double("--timeout", optarg, 0.01, 86400); break;
        case O_IDLE: run.idle_s = cb_opt_double("--idle-timeout", optarg, 0.01, 3600); break;
        case O_SESSION: run.want_session = et_opt_session(optarg); break;
        case O_THRESHOLD: run.threshold = cb_opt_double("--threshold", optarg, 0, 100000); break;
        case O_MAXLOSS: run.max_loss = cb_opt_double("--max-loss", optarg, 0, 100); break;
        case O_READY: run.ready_file = optarg; break;
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
    if (!run.host == !run.iface)
        cb_usage_error("give exactly one of -H HOST and -I IFACE: the address or interface under test");
    if ((long)run.port + run.streams - 1 > 65535)
        cb_usage_error("--port %u with %d streams runs past port 65535", run.port, run.streams);
    if (run.threads > run.streams)
        run.threads = run.streams;
}

/* ---- receiving ------------------------------------------------------------------- */
static void reset_msgs(receiver *r)
{
    for (int i = 0; i < run.batch; i++) {
        r->msgs[i].msg_hdr.msg_iov = &r->iov[i];
        r->msgs[i].msg_hdr.msg_iovlen = 1;
        r->msgs[i].msg_hdr.msg_control = r->ctrl + (size_t)i * CTRL_BYTES;
        r->msgs[i].msg_hdr.msg_controllen = CTRL_BYTES;
        r->msgs[i].msg_hdr.msg_flags = 0;
    }
}

/* One datagram from socket j. Returns the data bytes it counted as received. */
static uint64_t classify(receiver *r, int j, const unsigned char *buf, size_t len, int truncated)
{
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
    uint64_t s = atomic_load_explicit(&session, memory_order_acquire);
    if (s == 0) {
        /* The first data packet picks the session; a leftover end record of an earlier
         * run must not. */
        if (h.kind != ET_KIND_DATA || pr != ET_OK) {
            r->foreign++;
            return 0;
        }
        uint64_t none = 0;
        atomic_compare_exchange_strong(&session, &none, h.session);
        s = atomic_load(&session);
    }
    if (h.session != s) {
        r->foreign++;
        return 0;
    }
    uint32_t ns = 0;
    atomic_compare_exchange_strong(&session_nstreams, &ns, h.nstreams);
    if (h.nstreams != atomic_load(&session_nstreams)) {
        r->inconsistent++;
        return 0;
    }
    if (h.stream != j) {
        r->misdirected++;
        return 0;
    }
    et_stream *st = &run.st[j];
    if (pr == ET_BAD_PAYLOAD) {
        st->corrupt++;
        return 0;
    }
    if (h.kind == ET_KIND_END) {
        int was = st->ended;
        et_stream_end(st, h.seq, h.aux);
        if (!was)
            atomic_fetch_add(&ended_streams, 1);
        if (!was && st->unique >= st->sent)
            atomic_fetch_add(&complete_streams, 1);
        return 0;
    }
    uint64_t before = st->unique;
    et_stream_data(st, h.seq, (uint32_t)len);
    if (st->ended && before < st->sent && st->unique >= st->sent)
        atomic_fetch_add(&complete_streams, 1);
    return st->unique > before ? len : 0;
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

/* The kernel's count of datagrams it dropped at this socket (SO_RXQ_OVFL). */
static void note_drops(int j, struct msghdr *m)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
            uint32_t v;
            memcpy(&v, CMSG_DATA(c), sizeof v);
            atomic_store_explicit(&run.sock_drops[j], v, memory_order_relaxed);
        }
}

static void *receiver_main(void *arg)
{
    receiver *r = arg;
    et_place_thread(r->cpu, run.rt_priority, r->index == 0);
    struct pollfd *pfd = calloc((size_t)r->nsocks, sizeof *pfd);
    for (int k = 0; k < r->nsocks; k++) {
        pfd[k].fd = run.fd[r->sock[k]];
        pfd[k].events = POLLIN;
    }
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        int got = 0;
        for (int k = 0; k < r->nsocks; k++) {
            int j = r->sock[k];
            reset_msgs(r);
            int n = recvmmsg(run.fd[j], r->msgs, (unsigned)run.batch, MSG_DONTWAIT, NULL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR || errno == ECONNREFUSED)
                    continue;
                snprintf(r->error, sizeof r->error, "recvmmsg on port %d: %s", run.port + j, strerror(errno));
                atomic_store(&stop, 1);
                break;
            }
            uint64_t bytes = 0;
            int first = -1, last = -1; /* the batch's first and last packet counted */
            for (int i = 0; i < n; i++) {
                uint64_t b = classify(r, j, r->iov[i].iov_base, r->msgs[i].msg_len,
                                      (r->msgs[i].msg_hdr.msg_flags & MSG_TRUNC) != 0);
                if (b) {
                    bytes += b;
                    last = i;
                    if (first < 0)
                        first = i;
                }
            }
            if (n > 0)
                note_drops(j, &r->msgs[n - 1].msg_hdr);
            got += n;
            if (bytes) {
                uint64_t now = cb_now_ns();
                int64_t ts = rx_timestamp(&r->msgs[first].msg_hdr);
                if (!r->first_ns || ts < r->first_ts) {
                    r->first_ts = ts;
                    r->first_len = r->msgs[first].msg_len;
                }
                if (!r->first_ns)
                    r->first_ns = now;
                ts = rx_timestamp(&r->msgs[last].msg_hdr);
                if (ts > r->last_ts)
                    r->last_ts = ts;
                r->last_ns = now;
                r->bytes += bytes;
                atomic_store_explicit(&r->progress_bytes, r->bytes, memory_order_relaxed);
                atomic_store_explicit(&last_packet_ns, now, memory_order_relaxed);
            } else if (n > 0 && atomic_load_explicit(&session, memory_order_relaxed)) {
                /* end records and the like: the sender is alive */
                atomic_store_explicit(&last_packet_ns, cb_now_ns(), memory_order_relaxed);
            }
        }
        if (!got && run.busy_poll_us == 0)
            poll(pfd, (nfds_t)r->nsocks, 20);
    }
    free(pfd);
    return NULL;
}

/* ---- set-up ------------------------------------------------------------------------- */
static void find_address(void)
{
    char err[256];
    if (run.iface) {
        if (if_nametoindex(run.iface) == 0)
            cb_die(CB_EXIT_CANNOT_RUN, "no interface '%s' on this machine", run.iface);
        if (et_addr_of_iface(run.iface, &run.addr) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "interface '%s' has no IP address", run.iface);
        snprintf(run.ifname, sizeof run.ifname, "%s", run.iface);
        return;
    }
    if (et_resolve(run.host, run.port, &run.addr, err, sizeof err) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    if (et_iface_of_addr(&run.addr, run.ifname) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s (%s) is not an address of this machine: run eth-test-receive "
               "on the machine under test, with the address of the interface to test",
               run.host, run.addr.text);
}

static void open_sockets(void)
{
    run.fd = calloc((size_t)run.streams, sizeof *run.fd);
    for (int j = 0; j < run.streams; j++) {
        et_addr a = run.addr;
        et_addr_set_port(&a, (uint16_t)(run.port + j));
        int fd = socket(a.ss.ss_family, SOCK_DGRAM, 0);
        if (fd < 0)
            cb_die(CB_EXIT_CANNOT_RUN, "socket: %s", strerror(errno));
        run.granted = et_set_sockbuf(fd, 1, run.rcvbuf, &run.forced);
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
        if (run.busy_poll_us > 0 &&
            setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &run.busy_poll_us, sizeof run.busy_poll_us) != 0 &&
            j == 0)
            cb_warn("SO_BUSY_POLL %d us refused (%s): spinning in user space only; raising it above "
                    "net.core.busy_read needs CAP_NET_ADMIN", run.busy_poll_us, strerror(errno));
        if (bind(fd, (struct sockaddr *)&a.ss, a.len) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot listen on %s port %u: %s", a.text, run.port + j,
                   strerror(errno));
        run.fd[j] = fd;
    }
}

static void write_ready_file(void)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", run.ready_file);
    int fd = mkstemp(tmp);
    if (fd < 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot write the ready file %s: %s", run.ready_file, strerror(errno));
    dprintf(fd, "%s %u %d\n", run.addr.text, run.port, run.streams);
    fchmod(fd, 0644);
    close(fd);
    if (rename(tmp, run.ready_file) != 0) {
        unlink(tmp);
        cb_die(CB_EXIT_CANNOT_RUN, "cannot write the ready file %s: %s", run.ready_file, strerror(errno));
    }
}



/* Per-stream state and the receiver threads' buffers; sockets dealt out round-robin. */
static void make_receivers(void)
{
    run.st = calloc((size_t)run.streams, sizeof *run.st);
    run.sock_drops = calloc((size_t)run.streams, sizeof *run.sock_drops);
    run.rx = calloc((size_t)run.threads, sizeof *run.rx);
    if (!run.st || !run.sock_drops || !run.rx)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int j = 0; j < run.streams; j++)
        if (et_stream_init(&run.st[j], SEQ_WINDOW) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int t = 0; t < run.threads; t++) {
        receiver *r = &run.rx[t];
        r->index = t;
        r->cpu = run.ncpus ? run.cpus[t % run.ncpus] : -1;
        r->sock = calloc((size_t)run.streams, sizeof *r->sock);
        r->msgs = calloc((size_t)run.batch, sizeof *r->msgs);
        r->iov = calloc((size_t)run.batch, sizeof *r->iov);
        r->bufs = aligned_alloc(64, (size_t)SLOT_STRIDE * run.batch);
        r->ctrl = calloc((size_t)run.batch, CTRL_BYTES);
        if (!r->sock || !r->msgs || !r->iov || !r->bufs || !r->ctrl)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int j = t; j < run.streams; j += run.threads)
            r->sock[r->nsocks++] = j;
        for (int i = 0; i < run.batch; i++) {
            r->iov[i].iov_base = r->bufs + (size_t)i * SLOT_STRIDE;
            r->iov[i].iov_len = SLOT_BYTES;
        }
    }
}

enum outcome { RUNNING, DONE, IDLE, NO_SENDER, FAILED };

/* Watches the run until every stream's end record is in (and its packets, or a short
 * linger for stragglers), the sender has gone silent, or no sender came. */
static enum outcome watch(uint64_t start)
{
    enum outcome how = RUNNING;
    uint64_t next_report = 0;
    while (how == RUNNING) {
        cb_sleep_until_ns(cb_now_ns() + 10000000);
        uint64_t now = cb_now_ns();
        for (int t = 0; t < run.threads; t++)
            if (run.rx[t].error[0])
                return FAILED;
        uint64_t last = atomic_load(&last_packet_ns);
        if (!atomic_load(&session) || !last) {
            if (now - start > (uint64_t)(run.timeout_s * 1e9))
                how = NO_SENDER;
            continue;
        }
        int expect = (int)atomic_load(&session_nstreams);
        if (expect > run.streams)
            expect = run.streams;
        uint64_t silent = now > last ? now - last : 0; /* a thread's clock read may be newer */
        if (atomic_load(&ended_streams) >= expect &&
            (atomic_load(&complete_streams) >= expect || silent > (uint64_t)(run.linger_s * 1e9)))
            how = DONE;
        else if (silent > (uint64_t)(run.idle_s * 1e9))
            how = IDLE;
        if (run.quiet || how != RUNNING)
            continue;
        if (!next_report)
            next_report = now + 1000000000;
        if (now >= next_report) {
            next_report += 1000000000;
            uint64_t b = 0;
            for (int t = 0; t < run.threads; t++)
                b += atomic_load_explicit(&run.rx[t].progress_bytes, memory_order_relaxed);
            fprintf(stderr, "[%6.1f s] received %.3f GB, %d of %d streams ended\n", (now - start) / 1e9,
                    b / 1e9, atomic_load(&ended_streams), expect);
        }
    }
    return how;
}

/* ---- results -------------------------------------------------------------------------- */
typedef struct totals {
    uint64_t session;
    int nstreams, counted, missing_streams, exact, passed;
    uint64_t sent, received, lost, dups, reord, stale, corrupt, beyond, bytes, conflicts, send_ns, drops;
    uint64_t datagrams, malformed, by_reason[ET_NPARSE], truncated, foreign, misdirected, inconsistent;
    double rx_s, arrival_s, send_s, total_speed, sender_speed, loss_pct;
} totals;

static void sum_up(totals *T)
{
    memset(T, 0, sizeof *T);
    T->session = atomic_load(&session);
    T->nstreams = (int)atomic_load(&session_nstreams);
    T->counted = T->nstreams < run.streams ? T->nstreams : run.streams;
    T->missing_streams = T->nstreams > run.streams ? T->nstreams - run.streams : 0;
    T->exact = 1;
    for (int j = 0; j < run.streams; j++)
        T->drops += atomic_load(&run.sock_drops[j]);
    for (int j = 0; j < T->counted; j++) {
        et_stream *st = &run.st[j];
        et_loss l = et_stream_loss(st);
        T->sent += l.expected;
        T->received += l.received;
        T->lost += l.lost;
        T->beyond += l.beyond;
        T->dups += st->duplicates;
        T->reord += st->reordered;
        T->stale += st->stale;
        T->corrupt += st->corrupt;
        T->conflicts += st->end_conflicts;
        T->bytes += st->unique_bytes;
        T->exact &= l.exact;
        if (st->send_ns > T->send_ns)
            T->send_ns = st->send_ns;
        /* the same data over the sender's sending time (its end records) */
        if (st->ended && st->send_ns)
            T->sender_speed += cb_gbits((double)st->unique_bytes, st->send_ns / 1e9);
    }
    uint64_t first_ns = UINT64_MAX, last_ns = 0, first_len = 0;
    int64_t first_ts = INT64_MAX, last_ts = INT64_MIN;
    for (int t = 0; t < run.threads; t++) {
        receiver *r = &run.rx[t];
        T->datagrams += r->datagrams;
        for (int k = 0; k < ET_NPARSE; k++) {
            T->by_reason[k] += r->malformed[k];
            T->malformed += r->malformed[k];
        }
        T->truncated += r->truncated;
        T->malformed += r->truncated;
        T->foreign += r->foreign;
        T->misdirected += r->misdirected;
        T->inconsistent += r->inconsistent;
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
    T->send_s = T->send_ns / 1e9;
    /* Total speed: the bytes after the first packet over the time from the first packet
     * to the last, by the kernel's receive timestamps (so this program's own scheduling
     * delays do not count). Batches arrive as bursts, so this overstates by about one
     * batch in the run's number of batches: 0.01% for the compliance load. */
    T->arrival_s = last_ts > first_ts ? (last_ts - first_ts) / 1e9 : 0;
    T->total_speed = cb_gbits((double)(T->bytes - first_len), T->arrival_s);
    T->loss_pct = T->sent ? 100.0 * (double)T->lost / (double)T->sent : 0;
    T->passed = T->exact && !T->corrupt && !T->conflicts && !T->missing_streams && T->session &&
                et_speed_meets(T->total_speed, run.threshold) && T->loss_pct <= run.max_loss;
}

static void print_report(const totals *T, enum outcome how)
{
    printf("Session %#llx: %d streams, %s\n", (unsigned long long)T->session, T->nstreams,
           how == DONE ? "every stream's end record received" : "the sender went silent without end records");
    printf("%6s %6s %10s %10s %9s %9s %9s %8s %8s\n", "stream", "port", "sent", "received", "lost",
           "dup", "reorder", "corrupt", "dropped");
    for (int j = 0; j < T->counted; j++) {
        et_stream *st = &run.st[j];
        et_loss l = et_stream_loss(st);
        printf("%6d %6u %10llu%s %10llu %9llu %9llu %9llu %8llu %8u\n", j, run.port + j,
               (unsigned long long)l.expected, l.exact ? " " : "?", (unsigned long long)l.received,
               (unsigned long long)l.lost, (unsigned long long)st->duplicates,
               (unsigned long long)st->reordered, (unsigned long long)st->corrupt,
               atomic_load(&run.sock_drops[j]));
    }
    if (!T->exact)
        printf("  ? no end record: sent is unknown, counted up to the highest packet number received; "
               "the loss shown is a lower bound\n");
    printf("Packets: %llu sent, %llu received, %llu lost (%.3f%%), %llu duplicated, %llu reordered",
           (unsigned long long)T->sent, (unsigned long long)T->received, (unsigned long long)T->lost,
           T->loss_pct, (unsigned long long)T->dups, (unsigned long long)T->reord);
    if (T->stale)
        printf(", %llu too late to classify", (unsigned long long)T->stale);
    if (T->beyond)
        printf(", %llu numbered beyond the sent count", (unsigned long long)T->beyond);
    printf("\n");
    printf("Other datagrams: %llu of %llu: %llu malformed, %llu foreign (other session), %llu misdirected "
           "(wrong port), %llu corrupt payloads, %llu inconsistent\n",
           (unsigned long long)(T->malformed + T->foreign + T->misdirected + T->corrupt + T->inconsistent),
           (unsigned long long)T->datagrams, (unsigned long long)T->malformed,
           (unsigned long long)T->foreign, (unsigned long long)T->misdirected,
           (unsigned long long)T->corrupt, (unsigned long long)T->inconsistent);
    for (int k = 1; k < ET_NPARSE; k++)
        if (T->by_reason[k] && k != ET_BAD_PAYLOAD)
            printf("  malformed, %s: %llu\n", et_parse_names[k], (unsigned long long)T->by_reason[k]);
    if (T->truncated)
        printf("  malformed, larger than %d B: %llu\n", SLOT_BYTES, (unsigned long long)T->truncated);
    printf("Speed: %.3f GB received in %.3f s (first to last packet, kernel timestamps): %.2f Gbit/s",
           T->bytes / 1e9, T->arrival_s, T->total_speed);
    if (T->exact)
        printf("; over the sender's %.3f s of sending: %.2f Gbit/s", T->send_s, T->sender_speed);
    printf("\n");
    if (T->missing_streams)
        printf("NOT COUNTED: the sender sends %d streams, this receiver listens to %d (--streams)\n",
               T->nstreams, run.streams);
    if (T->corrupt)
        printf("CORRUPT DATA: %llu packets carried a payload other than the one sent\n",
               (unsigned long long)T->corrupt);
    if (T->conflicts)
        printf("INCONSISTENT: %llu end records disagree with an earlier one\n",
               (unsigned long long)T->conflicts);
}

static void diagnose_line(int *any, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void diagnose_line(int *any, const char *fmt, ...)
{
    va_list ap;
    printf("  ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    *any = 1;
}

/* Which limit the loss came from, from the kernel's own counters. */
static void diagnose(const totals *T, const et_counters *before, const et_counters *after)
{
    int any = 0;
    printf("Diagnosis:\n");
    if (T->drops)
        diagnose_line(&any, "LIMIT: socket receive buffers overflowed: %llu datagrams dropped at the sockets "
                      "(the receiver did not drain them in time; buffer %ld B per socket%s)",
                      (unsigned long long)T->drops, run.granted,
                      run.granted < run.rcvbuf ? ", capped by net.core.rmem_max" : "");
    if (after->udp_mem_errors > before->udp_mem_errors)
        diagnose_line(&any, "LIMIT: net.ipv4.udp_mem: UDP ran out of memory %llu times",
                      (unsigned long long)(after->udp_mem_errors - before->udp_mem_errors));
    if (after->softnet_dropped > before->softnet_dropped)
        diagnose_line(&any, "LIMIT: net.core.netdev_max_backlog: %llu packets dropped in the input backlog "
                      "(all interfaces of this machine)",
                      (unsigned long long)(after->softnet_dropped - before->softnet_dropped));
    if (after->have_dev && after->dev_rx_dropped > before->dev_rx_dropped)
        diagnose_line(&any, "LIMIT: interface %s dropped %llu received packets (NIC ring or driver; "
                      "ethtool -G %s rx ...)", run.ifname,
                      (unsigned long long)(after->dev_rx_dropped - before->dev_rx_dropped), run.ifname);
    if (after->ip_reasm_fails > before->ip_reasm_fails)
        diagnose_line(&any, "LIMIT: IP reassembly failed %llu times: datagrams larger than the MTU",
                      (unsigned long long)(after->ip_reasm_fails - before->ip_reasm_fails));
    if (T->lost && !any)
        diagnose_line(&any, "packets were lost before this machine's UDP layer counted them: on the "
                      "wire, at the sender, or in a packet filter");
    if (!T->exact)
        diagnose_line(&any, "the sender stopped without end-of-stream records (killed?): the result "
                      "is incomplete");
    if (T->exact && !T->lost && !et_speed_meets(T->total_speed, run.threshold))
        diagnose_line(&any, "no loss, but the data came at less than %.2f Gbit/s (the sender's own "
                      "figure: %.2f Gbit/s): the sender is the limit", run.threshold, T->sender_speed);
    if (!any)
        diagnose_line(&any, "no limit hit");
}

static int write_json(const totals *T, const char *started)
{
    char sid[32];
    snprintf(sid, sizeof sid, "%#llx", (unsigned long long)T->session);
    cb_json j;
    cbj_init(&j);
    cbj_doc_begin(&j, "eth-test-receive", ET_TEST_VERSION, started);
    cbj_num(&j, "duration_s", T->arrival_s);
    cbj_obj_begin(&j, "config");
    cbj_str(&j, "address", run.addr.text);
    cbj_str(&j, "interface", run.ifname);
    cbj_int(&j, "mtu", et_iface_mtu(run.ifname));
    cbj_int(&j, "port", run.port);
    cbj_int(&j, "streams", run.streams);
    cbj_int(&j, "threads", run.threads);
    cbj_int(&j, "batch", run.batch);
    cbj_int(&j, "rcvbuf_asked", run.rcvbuf);
    cbj_int(&j, "rcvbuf_granted", run.granted);
    cbj_int(&j, "busy_poll_us", run.busy_poll_us);
    cbj_int(&j, "rt_priority", run.rt_priority);
    cbj_str(&j, "session", sid);
    cbj_int(&j, "sender_streams", T->nstreams);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "metrics");
    cbj_metric(&j, "total_speed", T->total_speed, "Gbit/s");
    cbj_metric(&j, "total_speed_bytes", T->total_speed * 1e9 / 8, "B/s");
    cbj_metric(&j, "average_loss", T->loss_pct, "%");
    cbj_metric(&j, "sender_clock_speed", T->sender_speed, "Gbit/s");
    cbj_metric(&j, "sent_packets", (double)T->sent, "packets");
    cbj_metric(&j, "received_packets", (double)T->received, "packets");
    cbj_metric(&j, "lost_packets", (double)T->lost, "packets");
    cbj_metric(&j, "duplicate_packets", (double)T->dups, "packets");
    cbj_metric(&j, "reordered_packets", (double)T->reord, "packets");
    cbj_metric(&j, "stale_packets", (double)T->stale, "packets");
    cbj_metric(&j, "malformed_datagrams", (double)T->malformed, "datagrams");
    cbj_metric(&j, "foreign_datagrams", (double)T->foreign, "datagrams");
    cbj_metric(&j, "misdirected_datagrams", (double)T->misdirected, "datagrams");
    cbj_metric(&j, "verification_errors", (double)T->corrupt, "errors");
    cbj_metric(&j, "socket_drops", (double)T->drops, "datagrams");
    cbj_metric(&j, "sender_time", T->send_s, "s");
    cbj_obj_end(&j);
    cbj_bool(&j, "complete", T->exact);
    cbj_arr_begin(&j, "streams");
    for (int s = 0; s < T->counted; s++) {
        et_stream *st = &run.st[s];
        et_loss l = et_stream_loss(st);
        cbj_obj_begin(&j, NULL);
        cbj_int(&j, "stream", s);
        cbj_int(&j, "port", run.port + s);
        cbj_int(&j, "sent", (long long)l.expected);
        cbj_bool(&j, "sent_known", l.exact);
        cbj_int(&j, "received", (long long)l.received);
        cbj_int(&j, "lost", (long long)l.lost);
        cbj_int(&j, "duplicated", (long long)st->duplicates);
        cbj_int(&j, "reordered", (long long)st->reordered);
        cbj_int(&j, "stale", (long long)st->stale);
        cbj_int(&j, "beyond_sent", (long long)l.beyond);
        cbj_int(&j, "corrupt", (long long)st->corrupt);
        cbj_int(&j, "end_records", (long long)st->end_records);
        cbj_int(&j, "socket_drops", atomic_load(&run.sock_drops[s]));
        cbj_obj_end(&j);
    }
    cbj_arr_end(&j);
    cbj_obj_begin(&j, "malformed");
    for (int k = 1; k < ET_NPARSE; k++)
        if (k != ET_BAD_PAYLOAD)
            cbj_int(&j, et_parse_names[k], (long long)T->by_reason[k]);
    cbj_int(&j, "truncated", (long long)T->truncated);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "compliance");
    cbj_num(&j, "threshold", run.threshold);
    cbj_num(&j, "max_loss", run.max_loss);
    cbj_bool(&j, "passed", T->passed);
    cbj_obj_end(&j);
    cbj_obj_end(&j);
    int rc = cb_json_write(&j, run.json_path);
    cbj_free(&j);
    return rc;
}

int main(int argc, char **argv)
{
    cb_prog = "eth-test-receive";
    parse_args(argc, argv);
    char started[32];
    cb_iso8601_now(started, sizeof started);
    if (run.json_path && cb_json_path_ok(run.json_path) != 0)
        cb_die(CB_EXIT_USAGE, "cannot write the JSON result to %s: no such writable directory",
               run.json_path);
    if (run.ncpus)
        et_check_cpus(run.cpus, run.ncpus);
    find_address();
    printf("eth-test-receive %s: %d streams on %s ports %u-%u (interface %s)\n", CB_VERSION,
           run.streams, run.addr.text, run.port, run.port + run.streams - 1, run.ifname);
    et_preflight_print(stdout, run.ifname, &run.addr, 0);
    open_sockets();
    printf("  socket receive buffer: asked %ld B per socket, granted %ld B%s\n", run.rcvbuf,
           run.granted, run.forced ? " (SO_RCVBUFFORCE)" : "");
    if (run.granted < run.rcvbuf)
        cb_warn("the kernel granted a receive buffer of %ld B of the %ld B asked: net.core.rmem_max is %ld "
                "(raise it: sysctl -w net.core.rmem_max=%ld, or run as root to use SO_RCVBUFFORCE)",
                run.granted, run.rcvbuf, et_sysctl_long("net.core.rmem_max"), run.rcvbuf);
    fflush(stdout);
    make_receivers();
    if (run.want_session)
        atomic_store(&session, run.want_session);

    et_counters before, after;
    et_counters_read(&before, run.ifname);
    uint64_t start = cb_now_ns();
    for (int t = 0; t < run.threads; t++)
        if (pthread_create(&run.rx[t].th, NULL, receiver_main, &run.rx[t]) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "cannot start receiver thread %d", t);
    if (run.ready_file)
        write_ready_file();
    if (!run.quiet)
        fprintf(stderr, "eth-test-receive: listening; waiting up to %g s for eth-test-send -H %s\n",
                run.timeout_s, run.addr.text);
    enum outcome how = watch(start);
    atomic_store(&stop, 1);
    for (int t = 0; t < run.threads; t++)
        pthread_join(run.rx[t].th, NULL);
    et_counters_read(&after, run.ifname);

    for (int t = 0; t < run.threads; t++)
        if (run.rx[t].error[0])
            cb_die(CB_EXIT_CANNOT_RUN, "%s", run.rx[t].error);
    totals T;
    sum_up(&T);
    if (how == NO_SENDER)
        cb_die(CB_EXIT_CANNOT_RUN, "no data from a sender in %g s on %s ports %u-%u (%llu other datagrams "
               "ignored): is eth-test-send -H %s running, and can it reach this machine?",
               run.timeout_s, run.addr.text, run.port, run.port + run.streams - 1,
               (unsigned long long)T.datagrams, run.addr.text);

    print_report(&T, how);
    diagnose(&T, &before, &after);
    int rc = T.passed ? CB_EXIT_OK : CB_EXIT_NOT_COMPLIANT;
    if (run.json_path && write_json(&T, started) != 0)
        rc = CB_EXIT_CANNOT_RUN;
    cb_results_begin(stdout, ET_TEST_VERSION);
    cb_results_line(stdout, "Total speed", "%.2f Gbit/s", T.total_speed);
    cb_results_line(stdout, "Average loss", "%.3f%%%s", T.loss_pct, T.exact ? "" : " (at least; incomplete)");
    fflush(stdout);
    return rc;
}
