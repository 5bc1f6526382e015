/* What eth-test-receive says after the run: the report per stream and in total, the
 * diagnosis from the kernel's counters, the JSON document and the results block. */
#define _GNU_SOURCE /* struct mmsghdr, in the receivers' state */
#include "receive.h"

#include <stdarg.h>
#include <stdio.h>

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
               (unsigned long long)recv_stream_drops(run, j));
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
    cbj_config_options(j, &recv_cmd, cfg); /* the options, as the run used them */
    /* options the table cannot write as the document has them: --gro, a choice, is a
     * boolean here; --busy-poll the microseconds asked (-1: spin only) */
    cbj_bool(j, "gro", cfg->gro);
    cbj_int(j, "busy_poll_us", cfg->busy_poll_us);
    /* derived: what the address resolved to, what the kernel granted, what the sender
     * said */
    char sid[32];
    snprintf(sid, sizeof sid, "%#llx", (unsigned long long)run->T.session);
    cbj_str(j, "address", run->addr.text);
    cbj_str(j, "interface", run->ifname);
    cbj_int(j, "mtu", et_iface_mtu(run->ifname));
    cbj_int(j, "rcvbuf_granted", run->granted);
    cbj_str(j, "session", sid);
    cbj_int(j, "sender_streams", run->T.nstreams);
}

static void doc_metrics(cb_json *j, const void *ctx)
{
    const recv_run *run = ctx;
    const totals *T = &run->T;
    cbj_metric(j, recv_metrics, "total_speed", T->total_speed);
    cbj_metric(j, recv_metrics, "total_speed_bytes", T->total_speed * 1e9 / 8);
    cbj_metric(j, recv_metrics, "average_loss", T->loss_pct);
    cbj_metric(j, recv_metrics, "sender_clock_speed", T->sender_speed);
    cbj_metric(j, recv_metrics, "sent_packets", (double)T->sent);
    cbj_metric(j, recv_metrics, "received_packets", (double)T->received);
    cbj_metric(j, recv_metrics, "lost_packets", (double)T->lost);
    cbj_metric(j, recv_metrics, "duplicate_packets", (double)T->dups);
    cbj_metric(j, recv_metrics, "reordered_packets", (double)T->reord);
    cbj_metric(j, recv_metrics, "stale_packets", (double)T->stale);
    cbj_metric(j, recv_metrics, "malformed_datagrams", (double)T->malformed);
    cbj_metric(j, recv_metrics, "foreign_datagrams", (double)T->foreign);
    cbj_metric(j, recv_metrics, "misdirected_datagrams", (double)T->misdirected);
    cbj_metric(j, recv_metrics, "rejected_datagrams", (double)T->rejected);
    cbj_metric(j, recv_metrics, "verification_errors", (double)T->corrupt);
    cbj_metric(j, recv_metrics, "socket_drops", (double)T->drops);
    cbj_metric(j, recv_metrics, "gro_receives", (double)T->gro_receives);
    cbj_metric(j, recv_metrics, "gro_datagrams", (double)T->gro_datagrams);
    cbj_metric(j, recv_metrics, "sender_time", T->send_s);
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
        cbj_int(j, "socket_drops", (long long)recv_stream_drops(run, s));
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
int recv_emit(const recv_run *run)
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
