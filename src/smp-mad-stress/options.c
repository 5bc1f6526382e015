/* smp-mad-stress's options, declared once (cb_options.h); see src/smp-mad-stress/README.md. */
#include "options.h"
#include "smp_mad.h"

#include <math.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

static void parse_method(const char *opt, const char *arg, void *dest)
{
    if (strcasecmp(arg, "get") == 0 || strcmp(arg, "1") == 0)
        *(int *)dest = SMP_METHOD_GET;
    else if (strcasecmp(arg, "set") == 0 || strcmp(arg, "2") == 0)
        *(int *)dest = SMP_METHOD_SET;
    else
        cb_usage_error("invalid method '%s' for %s: expected get, set, 1 or 2", arg, opt);
}

/* --timeout: a duration whose bare number is in milliseconds (as it always was):
 * 200, 200ms, 1.5s; whole milliseconds from 1 ms to 1 h. */
static void parse_timeout(const char *opt, const char *arg, void *dest)
{
    double ms = -1, s, v;
    if (cb_parse_f64(arg, &v) == 0 && *arg >= '0' && *arg <= '9')
        ms = v;
    else if (cb_parse_duration(arg, &s) == 0)
        ms = s * 1e3;
    if (!(ms >= 1 && ms <= 3600000) || fabs(ms - round(ms)) > 1e-6)
        cb_usage_error("invalid value '%s' for %s: expected whole milliseconds from 1 to 3600000 "
                       "(a bare number is ms; 1.5s, 500ms)", arg, opt);
    *(int *)dest = (int)round(ms);
}

#define SMT_OFF(field) offsetof(smt_opts, field)
static const cb_opt opts[] = {
    {.name = "lids", .letter = 'L', .type = CB_OPT_STRING, .off = SMT_OFF(lids_arg), .arg = "LIST",
     .help = "destination LIDs, comma-separated (instead of DEST)", .section = "Destinations:"},
    {.name = "direct", .letter = 'D', .type = CB_OPT_FLAG, .off = SMT_OFF(direct),
     .help = "directed-route SMPs (class 0x81); without it\nLID-routed SMPs (0x01)"},
    {.name = "paths", .type = CB_OPT_STRING, .off = SMT_OFF(paths_arg), .arg = "LIST",
     .help = "directed routes separated by ';' (instead of DEST),\n"
             "e.g. '0,1;0,1,3' (implies --direct)"},
    {.name = "method", .letter = 'm', .type = CB_OPT_CUSTOM, .off = SMT_OFF(c.req.method),
     .parse = parse_method, .def = "get", .arg = "METHOD", .section = "MAD:",
     .help = "get or set, or the IBA method number 1 (Get)\n"
             "or 2 (Set); default get. A SET first reads each\n"
             "destination's value with a GET and then sets\n"
             "that same value."},
    {.name = "mkey", .type = CB_OPT_U64, .off = SMT_OFF(c.req.mkey), .def = "0", .arg = "KEY",
     .help = "M_Key to send"},
    {.name = "dest-depth", .letter = 'n', .type = CB_OPT_INT, .doc_key = "dest_depth", .off = SMT_OFF(c.dest_depth),
     .min = 1, .max = 65535, .def = "2", .arg = "N", .help = "MADs on the wire per destination",
     .section = "Window:"},
    {.name = "local-depth", .letter = 'N', .type = CB_OPT_INT, .doc_key = "local_depth", .off = SMT_OFF(c.local_depth),
     .min = 1, .max = 65535, .def = "128", .arg = "N",
     .help = "MADs on the wire from the local port (the\ndriver's send queue for QP0)"},
    {.name = "workers", .letter = 'p', .type = CB_OPT_INT, .doc_key = "workers", .off = SMT_OFF(c.workers), .min = 1,
     .max = 256, .def = "1", .arg = "N", .help = "worker threads"},
    {.name = "timeout", .type = CB_OPT_CUSTOM, .off = SMT_OFF(c.timeout_ms), .parse = parse_timeout,
     .def = "200", .arg = "MS",
     .help = "time for a response, per attempt: a bare number is\n"
             "milliseconds, or 500ms, 1.5s (default 200 ms)"},
    {.name = "retries", .letter = 'r', .type = CB_OPT_INT, .doc_key = "retries", .off = SMT_OFF(c.retries), .min = 0,
     .max = 1000, .def = "3", .arg = "N", .help = "re-sends after a timeout"},
    {.name = "duration", .letter = 'd', .type = CB_OPT_DURATION, .doc_key = "requested_duration_s", .off = SMT_OFF(c.duration_s),
     .min = 0.001, .max = 7 * 86400.0, .def = "10", .arg = "SECONDS",
     .help = "length of the run (seconds; or 500ms, 5m)"},
    {.name = "device", .letter = 'C', .type = CB_OPT_STRING, .off = SMT_OFF(device), .arg = "CA",
     .help = "local InfiniBand device (default: the first one)", .section = "Device:"},
    {.name = "port", .letter = 'P', .type = CB_OPT_INT, .off = SMT_OFF(port), .min = 1, .max = 254,
     .arg = "N", .help = "its port (default: the first active one)"},
    {.name = "simulate", .type = CB_OPT_STRING, .off = SMT_OFF(simulate), .arg = "SPEC",
     .help = "the simulation transport instead of a device (no\n"
             "InfiniBand needed): every destination answers like a\n"
             "switch's management agent with these properties, any\n"
             "subset of\n"
             "  rtt=DURATION     round trip without the agent\n"
             "                   (50us)\n"
             "  service=DURATION the agent's time per MAD, one at\n"
             "                   a time (0)\n"
             "  jitter=DURATION  extra delay per response,\n"
             "                   0..jitter (0)\n"
             "  loss=SHARE       MADs lost on the way (0)\n"
             "  error=SHARE      responses with a MAD status\n"
             "                   error (0)\n"
             "  queue=N          MADs an agent holds waiting; more\n"
             "                   are dropped (0: no limit)\n"
             "  dead=LID:LID...  destinations that never answer\n"
             "  seed=N           of the random choices (1)\n"
             "e.g. --simulate=rtt=45us,service=175us,queue=20\n"
             "behaves like the Quantum switch of the tool's\n"
             "measurements.\n"
             "The output and the JSON document say so (transport\n"
             "\"test-fabric\")."},
    {.name = "min-rate", .type = CB_OPT_DOUBLE, .unit = "MAD/s", .off = SMT_OFF(min_rate), .min = 0, .max = 1e12,
     .def = "0", .arg = "MADS", .help = "compliant only with at least MADS MAD/s in\ntotal",
     .section = "Compliance (a response that fails its checks -- transaction id, attribute,\n"
                "modifier, GetResp; for SET the value set -- or carries a MAD status error\n"
                "is never compliant):"},
    {.name = "max-drops", .type = CB_OPT_LONG, .off = SMT_OFF(max_drops), .min = 0,
     .max = (double)(1L << 62), .def = "0", .arg = "N",
     .help = "compliant only with at most N dropped MADs"},
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = SMT_OFF(json_path), .arg = "FILE",
     .help = "write the JSON result document to FILE ('-' = stdout)", .section = "Output:"},
    CB_OPT_QUIET_ROW(smt_opts, quiet),
    /* deprecated spellings: the contract's -t is the threshold, -T the threads */
    {.letter = 't', .replaced_by = "duration"},
    {.name = "time", .replaced_by = "duration"},
    {.letter = 'T', .replaced_by = "timeout"},
    {.name = "test-fabric", .replaced_by = "simulate"},
    {0}};

/* The document's metrics, each unit written once (cb_metric_def). */
const cb_metric_def smt_metrics[] = {
    {"mad_rate", "MAD/s", CB_HIGHER, "MADs answered per second"},
    {"latency_avg", "us", CB_LOWER, "mean time from a MAD's send to its answer"},
    {"latency_p50", "us", CB_LOWER, "median time from a MAD's send to its answer"},
    {"latency_p99", "us", CB_LOWER, "99th percentile of the time from a MAD's send to its answer"},
    {"latency_min", "us", CB_LOWER, "shortest time from a MAD's send to its answer"},
    {"latency_max", "us", CB_LOWER, "longest time from a MAD's send to its answer"},
    {"mads_sent", "MADs", CB_NEITHER, "MADs sent"},
    {"mads_answered", "MADs", CB_NEITHER, "MADs answered"},
    {"timeouts", "MADs", CB_LOWER, "MADs not answered in time"},
    {"retries", "MADs", CB_LOWER, "MADs sent again after a timeout"},
    {"drops", "MADs", CB_LOWER, "MADs given up after their retries"},
    {"status_errors", "MADs", CB_LOWER, "answers with an error status"},
    {"verification_errors", "errors", CB_LOWER, "answers whose content was not the one expected"},
    {"late_responses", "MADs", CB_LOWER, "answers that came after their MAD was given up"},
    {"abandoned", "MADs", CB_LOWER, "MADs still unanswered when the run ended"},
    {"max_local_in_flight", "MADs", CB_NEITHER, "most MADs outstanding at once on the port"},
    {"max_dest_in_flight", "MADs", CB_NEITHER, "most MADs outstanding at once to one destination"},
    {0},
};

const cb_cmd smt_cmd = {
    .metrics = smt_metrics,
    .name = SMT_PROG,
    .test_version = SMT_TEST_VERSION,
    .usage = "[OPTION]... DEST ATTR [MOD]\n       " SMT_PROG " [OPTION]... -L LIDS ATTR [MOD]",
    .about =
        "Send Subnet Management Packets (SMPs) to InfiniBand devices as fast as a window\n"
        "of MADs on the wire allows, and report MAD/s, latency (average, median, 99th\n"
        "percentile), timeouts, retries and drops per destination and in total.\n"
        "\n"
        "At most --dest-depth MADs are on the wire to each destination and at most\n"
        "--local-depth from the local port (all workers together); each worker thread\n"
        "sends and receives by polling. A MAD without a response in --timeout is\n"
        "re-sent up to --retries times with a new transaction id, then dropped.\n"
#ifdef SMT_WITH_MPI
        "\n"
        "MPI mode: one worker per rank, a single destination; all ranks meet in a\n"
        "barrier before each send round (one window's worth of MADs, waited for), so\n"
        "that every rank's MADs reach the destination at the same moment.\n"
#endif
        "\n"
        "Operands:\n"
        "  DEST                      a LID (9, 0x1a); with --direct a directed route of\n"
        "                            out-ports from the local port (0,1,3)\n"
        "  ATTR                      attribute: a number (0x19) or a name (NodeInfo,\n"
        "                            PortInfo, SwitchInfo, LinearForwardingTable, ...)\n"
        "  MOD                       attribute modifier (default 0)\n",
    .more = "SIGINT, SIGTERM or SIGHUP stops the run: no MAD is sent or re-sent after it, those\n"
            "on the wire get one timeout to answer, and the table, the results block and the\n"
            "JSON document (\"interrupted\": true) cover the time up to the signal; a second\n"
            "signal ends the program at once.\n"
            "\n"
            "Exit status: 0 compliant, 1 not compliant (drops, errors, rate), 2 usage error,\n"
            "3 could not run (no InfiniBand device, no permission, a destination that does not\n"
            "answer the GET before a SET), 128 + the signal's number when interrupted (130\n"
            "SIGINT, 143 SIGTERM, 129 SIGHUP).\n",
    .opts = opts,
    .operands = 3,
};

int smt_options_parse(smt_opts *o, int argc, char **argv)
{
    int first = cb_opts_parse(&smt_cmd, o, argc, argv);
    if (o->paths_arg)
        o->direct = 1;
    if (o->lids_arg && o->paths_arg)
        cb_usage_error("--lids and --paths both name destinations; give one");
    if (o->lids_arg && o->direct)
        cb_usage_error("--lids names LID-routed destinations; --direct wants directed routes (DEST or --paths)");
    return first;
}
