/* eth-test-send's options, declared once (cb_options.h), and the rules between them. */
#include "send_options.h"
#include "eth_net.h"
#include "eth_proto.h"

#include <stddef.h>

#define O(field) offsetof(send_cfg, field)
static const cb_opt opts[] = {
    {.name = "host", .letter = 'H', .type = CB_OPT_STRING, .doc_key = "host", .off = O(host), .arg = "HOST",
     .help = "receiver's address or name (required)"},
    {.name = "port", .letter = 'p', .type = CB_OPT_INT, .doc_key = "port", .off = O(port), .min = 1, .max = 65535,
     .def = ET_STR(ET_DEFAULT_PORT), .arg = "PORT", .help = "first UDP port"},
    {.name = "rate", .letter = 'r', .type = CB_OPT_DOUBLE, .doc_key = "rate_gbits", .unit = "Gbit/s", .off = O(rate_gbits), .min = 1e-6,
     .max = 10000, .def = "9", .arg = "GBITS", .help = "total rate of UDP payload in Gbit/s"},
    {.name = "size", .letter = 's', .type = CB_OPT_SIZE, .doc_key = "datagram_bytes", .off = O(size), .min = ET_MIN_DATA_BYTES,
     .max = ET_MAX_DATAGRAM, .def = "8900", .arg = "BYTES",
     .help = "datagram (UDP payload) size; 8900: a jumbo frame\nwith its IP/UDP headers fits an MTU of 9000"},
    {.name = "streams", .letter = 'n', .type = CB_OPT_INT, .doc_key = "streams", .off = O(streams), .min = 1,
     .max = ET_MAX_STREAMS, .def = "12", .arg = "N",
     .help = "streams, one UDP port each; 12: 3 antenna fields\nx 4 streams per 10GbE port"},
    {.name = "duration", .letter = 'd', .type = CB_OPT_DURATION, .doc_key = "requested_duration_s", .off = O(duration_s), .min = 0.001,
     .max = 86400, .def = "10", .arg = "SECONDS", .help = "sending time: seconds, or with a unit (500ms, 5m)"},
    {.name = "batch", .letter = 'b', .type = CB_OPT_INT, .doc_key = "batch", .off = O(batch), .min = 1, .max = 1024,
     .def = "128", .arg = "N", .help = "datagrams per sendmmsg call"},
    {.name = "threads", .letter = 'T', .type = CB_OPT_INT, .doc_key = "threads", .off = O(threads), .min = 1, .max = 256,
     .def = "1", .arg = "N", .help = "sender threads; streams are dealt out round-robin"},
    {.name = "gso", .type = CB_OPT_INT, .doc_key = "gso_segments", .off = O(gso), .min = 0, .max = ET_MAX_GSO, .def = "0",
     .arg = "N", .help = "hand the kernel N datagrams per send as one (UDP GSO,\n"
                         "UDP_SEGMENT): it cuts them into --size datagrams, or\n"
                         "the NIC does; N x --size at most 65507 B; 0: off"},
    {.name = "cpu", .letter = 'c', .type = CB_OPT_INTLIST, .off = O(cpus), .arg = "LIST",
     .help = "pin sender thread i to the i-th CPU of LIST (e.g. 0,2)"},
    {.name = "sndbuf", .type = CB_OPT_SIZE, .off = O(sndbuf), .min = 4096, .max = 1 << 30,
     .def = "4M", .arg = "BYTES", .help = "socket send buffer (as root beyond\nnet.core.wmem_max)"},
    {.name = "session", .type = CB_OPT_CUSTOM, .off = O(session), .parse = et_opt_session,
     .arg = "ID", .help = "session id (default random; 1..2^64-1)"},
    /* at least 2: the receiver takes a record only when a second copy confirms it */
    {.name = "end-copies", .type = CB_OPT_INT, .off = O(end_copies), .min = 2, .max = 1000,
     .def = "8", .arg = "N", .help = "start and end-of-stream records per stream (the\n"
                                     "receiver needs two copies of each)"},
    {.name = "rt-priority", .type = CB_OPT_INT, .doc_key = "rt_priority", .off = O(rt_priority), .min = 1, .max = 99,
     .arg = "N", .help = "run the sender threads SCHED_FIFO at priority N (the\n"
                         "compliance document's tip: chrt -f 1); needs root"},
    CB_OPT_JSON_ROW(send_cfg, json_path),
    CB_OPT_QUIET_ROW(send_cfg, quiet),
    /* -t was --threads; the contract gives -t to --threshold (docs/kernel-contract.md). */
    {.letter = 't', .replaced_by = "threads"},
    {0}};
#undef O

/* The document's metrics, each unit written once (cb_metric_def). */
const cb_metric_def send_metrics[] = {
    {"desired_speed", "Gbit/s", CB_NEITHER, "the rate the sender was asked to send at"},
    {"sent_speed", "Gbit/s", CB_HIGHER, "the rate the sender sent at"},
    {"sent_speed_bytes", "B/s", CB_HIGHER, "sent_speed in bytes per second"},
    {"percent_of_desired", "%", CB_HIGHER, "sent_speed as a share of desired_speed"},
    {"sent_packets", "packets", CB_NEITHER, "datagrams sent"},
    {"late_batches", "batches", CB_LOWER, "batches sent after their time"},
    {"max_lag", "us", CB_LOWER, "the longest a batch went out after its time"},
    {"refused_sends", "sends", CB_LOWER, "sends the socket refused (buffer full)"},
    {0},
};

const cb_cmd send_cmd = {
    .metrics = send_metrics,
    .name = "eth-test-send",
    .test_version = ET_TEST_VERSION,
    .usage = "-H HOST [OPTION]...",
    .about = "Stream rate-paced UDP data to eth-test-receive on HOST (the address of the\n"
             "interface under test), like the compliance tool's sender: --streams streams to\n"
             "ports --port, --port+1, ..., --rate Gbit/s in all, in batches of --batch\n"
             "datagrams (sendmmsg). Start eth-test-receive first.\n\n",
    .more = "Sent speed = bytes sent / sending time: from the start to the end of the\n"
            "schedule, or to the end of the last batch if that came later (a sender never\n"
            "runs ahead of its schedule, so it cannot exceed the rate). The end-of-stream\n"
            "records carry the sending time. Compliant (exit 0) when it reaches the rate\n"
            "within 0.05% (what prints as the rate: 8.9955 is 9.00).\n"
            "\n"
            "Exit status: 0 sent at the rate, 1 could not keep the rate, 2 usage error,\n"
            "3 could not run, 128+N stopped by signal N (SIGINT, SIGTERM, SIGHUP; the end\n"
            "records still go out, with the packets sent).\n",
    .opts = opts,
};

/* The rules between options, after the table has checked each. */
static void check_options(send_cfg *cfg)
{
    if (!cfg->host)
        cb_usage_error("-H HOST is required: the receiver's address");
    if ((long)cfg->port + cfg->streams - 1 > 65535)
        cb_usage_error("--port %d with %d streams runs past port 65535", cfg->port, cfg->streams);
    if (cfg->threads > cfg->streams)
        cfg->threads = cfg->streams;
    if ((size_t)cfg->gso * cfg->size > ET_MAX_DATAGRAM)
        cb_usage_error("--gso %d with --size %zu: %zu B in one send, more than a UDP datagram's %d B "
                       "(at most --gso %zu)", cfg->gso, cfg->size, (size_t)cfg->gso * cfg->size,
                       ET_MAX_DATAGRAM, ET_MAX_DATAGRAM / cfg->size);
}

void send_options_parse(send_cfg *cfg, int argc, char **argv)
{
    cb_opts_parse(&send_cmd, cfg, argc, argv);
    check_options(cfg);
}
