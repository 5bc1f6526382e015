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
 * records, confirmed by a second copy), never guessed.
 *
 * The stages: options (receive_options.c), plan (receive_plan.c), run (this file, the
 * threads in receive_thread.c), collect (this file), emit (receive_report.c). */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "receive.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- run ------------------------------------------------------------------------------- */
/* --ready-file: "ADDRESS PORT STREAMS", written whole (a rename) once the threads listen. */
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
        if (pthread_create(&run->rx[t].th, NULL, recv_thread_main, &run->rx[t]) != 0)
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
/* The per-stream accounting, summed. */
static void sum_streams(recv_run *run, totals *T)
{
    for (int j = 0; j < run->cfg.streams; j++) {
        T->drops += recv_stream_drops(run, j);
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

int main(int argc, char **argv)
{
    static recv_run run;
    cb_prog = "eth-test-receive";
    recv_options_parse(&run.cfg, argc, argv);
    /* from here a signal stops the run, which still reports what it counted */
    cb_signals_install();
    recv_plan(&run);
    run_receivers(&run);
    collect(&run);
    return recv_emit(&run);
}
