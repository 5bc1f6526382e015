/* eth-test-receive's options, declared once (cb_options.h), and the rules between them. */
#include "receive_options.h"
#include "eth_net.h"
#include "eth_proto.h"

#include <stddef.h>

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
    {.name = "port", .letter = 'p', .type = CB_OPT_INT, .doc_key = "port", .off = O(port), .min = 1, .max = 65535,
     .def = ET_STR(ET_DEFAULT_PORT), .arg = "PORT", .help = "first UDP port"},
    {.name = "streams", .letter = 'n', .type = CB_OPT_INT, .doc_key = "streams", .off = O(streams), .min = 1,
     .max = ET_MAX_STREAMS, .def = "12", .arg = "N", .help = "streams, one UDP port each"},
    {.name = "threads", .letter = 'T', .type = CB_OPT_INT, .doc_key = "threads", .off = O(threads), .min = 1, .max = 256,
     .def = "1", .arg = "N", .help = "receiver threads; sockets dealt out round-robin"},
    {.name = "cpu", .letter = 'c', .type = CB_OPT_INTLIST, .off = O(cpus), .arg = "LIST",
     .help = "pin receiver thread i to the i-th CPU of LIST"},
    {.name = "batch", .letter = 'b', .type = CB_OPT_INT, .doc_key = "batch", .off = O(batch), .min = 1, .max = 1024,
     .def = "128", .arg = "N", .help = "receives per recvmmsg call (a datagram, or with\n"
                                     "UDP GRO several coalesced)"},
    {.name = "gro", .type = CB_OPT_CHOICE, .off = O(gro), .choices = on_off, .def = "on",
     .arg = "on|off", .help = "UDP GRO (UDP_GRO): take datagrams the kernel has\n"
                              "coalesced (GRO, a sender's GSO) in one receive"},
    {.name = "reuseport", .type = CB_OPT_INT, .doc_key = "reuseport", .off = O(reuseport), .min = 1, .max = 64, .def = "1",
     .arg = "N", .help = "N sockets per port (SO_REUSEPORT), datagrams spread\n"
                         "among them at random, so that N threads share a stream"},
    {.name = "rcvbuf", .type = CB_OPT_SIZE, .doc_key = "rcvbuf_asked", .off = O(rcvbuf), .min = 4096, .max = 1 << 30,
     .def = "32M", .arg = "BYTES", .help = "receive buffer per socket (as root beyond\n"
                                           "net.core.rmem_max, through SO_RCVBUFFORCE)"},
    {.name = "busy-poll", .type = CB_OPT_CUSTOM, .off = O(busy_poll_us), .parse = parse_busy_poll,
     .optional_arg = 1, .arg = "USEC",
     .help = "spin instead of sleeping in poll(), and ask the kernel\n"
             "to busy-poll the device for USEC (default 50) per read\n"
             "(0: spin only); takes a whole CPU per thread"},
    {.name = "rt-priority", .type = CB_OPT_INT, .doc_key = "rt_priority", .off = O(rt_priority), .min = 1, .max = 99,
     .arg = "N", .help = "run the receiver threads SCHED_FIFO at priority N (the\n"
                         "compliance document's tip: chrt -f 1); needs root"},
    {.name = "timeout", .type = CB_OPT_DURATION, .off = O(timeout_s), .min = 0.01, .max = 86400,
     .def = "300", .arg = "SECONDS", .help = "wait this long for a sender (then exit 3)"},
    {.name = "idle-timeout", .type = CB_OPT_DURATION, .off = O(idle_s), .min = 0.01, .max = 3600,
     .def = "2", .arg = "SECONDS",
     .help = "end when the sender has been silent this long:\na sender that died mid-run"},
    {.name = "session", .type = CB_OPT_CUSTOM, .off = O(want_session), .parse = et_opt_session,
     .arg = "ID", .help = "accept only this session id (default: the first seen)"},
    {.name = "threshold", .type = CB_OPT_DOUBLE, .unit = "Gbit/s", .off = O(threshold), .min = 0, .max = 100000,
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

/* The document's metrics, each unit written once (cb_metric_def). */
const cb_metric_def recv_metrics[] = {
    {"total_speed", "Gbit/s", CB_HIGHER, "the rate received over all streams"},
    {"total_speed_bytes", "B/s", CB_HIGHER, "total_speed in bytes per second"},
    {"average_loss", "%", CB_LOWER, "datagrams sent and not received, as a share of those sent"},
    {"sender_clock_speed", "Gbit/s", CB_NEITHER, "the rate by the sender's own clock"},
    {"sent_packets", "packets", CB_NEITHER, "datagrams the sender says it sent"},
    {"received_packets", "packets", CB_NEITHER, "datagrams received"},
    {"lost_packets", "packets", CB_LOWER, "datagrams sent and never received"},
    {"duplicate_packets", "packets", CB_LOWER, "datagrams received twice"},
    {"reordered_packets", "packets", CB_LOWER, "datagrams received out of order"},
    {"stale_packets", "packets", CB_LOWER, "datagrams of an earlier round or session"},
    {"malformed_datagrams", "datagrams", CB_LOWER, "datagrams too short or with a bad header"},
    {"foreign_datagrams", "datagrams", CB_LOWER, "datagrams of another sender"},
    {"misdirected_datagrams", "datagrams", CB_LOWER, "datagrams of another stream's port"},
    {"rejected_datagrams", "datagrams", CB_LOWER, "datagrams refused for any of the reasons above"},
    {"verification_errors", "errors", CB_LOWER, "datagrams whose payload was wrong: corruption"},
    {"socket_drops", "datagrams", CB_LOWER, "datagrams the kernel dropped at the socket"},
    {"gro_receives", "receives", CB_NEITHER, "receives that returned coalesced datagrams (GRO)"},
    {"gro_datagrams", "datagrams", CB_NEITHER, "datagrams received coalesced (GRO)"},
    {"sender_time", "s", CB_NEITHER, "the sender's own time for the run"},
    {0},
};

const cb_cmd recv_cmd = {
    .metrics = recv_metrics,
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

void recv_options_parse(recv_cfg *cfg, int argc, char **argv)
{
    cb_opts_parse(&recv_cmd, cfg, argc, argv);
    check_options(cfg);
}
