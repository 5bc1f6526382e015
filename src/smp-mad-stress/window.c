/* The MAD window: see window.h.
 *
 * Each worker owns a port and a table of the MADs it has on the wire (one slot
 * per MAD, at most local_depth). Window space is shared by all workers: the
 * local count and each destination's count are atomics that a worker reserves
 * with compare-and-swap before it sends and releases when the MAD is answered
 * or given up. A timed-out MAD that has retries left keeps its reservation and
 * is re-sent with a new transaction id, so a late response to the old attempt
 * is recognised (and counted as stale) instead of answering the new one. */
#include "window.h"
#include "../common/cb_common.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_BATCH 64
/* A MAD the transport never reports back is given up this long after its
 * timeout (the kernel's umad agent always reports; this is a safety net). */
#define LOST_GRACE_NS 200000000ULL

typedef struct slot {
    int in_use;
    int dest;
    int attempt;            /* 0 = first send */
    uint32_t tid;           /* low 32 bits: generation << 16 | slot index */
    uint64_t first_ns, sent_ns;
    uint8_t mad[SMP_MAD_SIZE];
} slot;

typedef struct shared {
    const smt_config *c;
    _Atomic int local;      /* places taken in the local window (some only tried) */
    _Atomic int outstanding; /* MADs holding both places: what max_local records */
    _Atomic int max_local;
    _Atomic int *dest;      /* per destination in flight */
    _Atomic int *max_dest;
    uint8_t (*set_data)[SMP_DATA_SIZE]; /* SET: each destination's value */
    uint64_t start_ns, end_ns;
    _Atomic int go;         /* 0 wait, 1 run, -1 give up */
    _Atomic int finished;   /* workers done */
    _Atomic int failed;
    uint64_t last_round_ns; /* MPI mode: when the last round ended */
    _Atomic uint64_t stop_ns; /* when a signal stopped the run; 0: not stopped */
    _Atomic uint64_t progress_answered;
} shared;

typedef struct worker {
    shared *sh;
    int id;
    void *port;
    slot *slots;
    int nslots, in_flight;
    int *free_list, nfree;  /* unused slots, a stack */
    uint64_t next_sweep_ns;
    uint16_t *gen;
    int next_dest;
    smt_dest_stats *stats;  /* per destination */
    uint64_t stale, rounds, abandoned;
    char error[256];
    pthread_t th;
} worker;

const char *smt_config_check(const smt_config *c)
{
    if (c->ndests < 1)
        return "no destination";
    if (c->dest_depth < 1 || c->local_depth < 1)
        return "queue depths must be at least 1";
    if (c->local_depth > 65535)
        return "the local queue depth is at most 65535";
    if (c->workers < 1)
        return "at least one worker";
    if (c->timeout_ms < 1)
        return "the timeout must be at least 1 ms";
    if (c->retries < 0)
        return "retries cannot be negative";
    if (c->duration_s <= 0)
        return "the duration must be positive";
    if (c->req.method != SMP_METHOD_GET && c->req.method != SMP_METHOD_SET)
        return "the method must be GET or SET";
    if (c->round_sync && (c->workers != 1 || c->ndests != 1))
        return "send rounds (MPI mode) need a single destination and a single worker";
    return NULL;
}

/* ---- interruption -------------------------------------------------------------- */
/* The first thread that sees the signal's flag stamps the time; the run is timed to it. */
static int stop_requested(shared *sh)
{
    if (!cb_interrupted)
        return 0;
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&sh->stop_ns, &zero, cb_now_ns());
    return 1;
}

/* ---- window reservations ---------------------------------------------------- */
static void atomic_max(_Atomic int *m, int v)
{
    int cur = atomic_load_explicit(m, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak(m, &cur, v))
        ;
}

static int reserve(_Atomic int *count, int limit)
{
    int cur = atomic_load_explicit(count, memory_order_relaxed);
    while (cur < limit)
        if (atomic_compare_exchange_weak(count, &cur, cur + 1))
            return cur + 1;
    return 0;
}

/* Takes a place in the local window and in destination d's; 1 if both. */
static int reserve_both(shared *sh, int d)
{
    int l = reserve(&sh->local, sh->c->local_depth);
    if (!l)
        return 0;
    int n = reserve(&sh->dest[d], sh->c->dest_depth);
    if (!n) {
        atomic_fetch_sub(&sh->local, 1);
        return 0;
    }
    /* Not l: a place another worker took only to find its destination full counts in
     * `local` for a moment (CI: 4 recorded with 3 destinations of depth 1). */
    atomic_max(&sh->max_local, atomic_fetch_add(&sh->outstanding, 1) + 1);
    atomic_max(&sh->max_dest[d], n);
    return 1;
}

static void release_both(shared *sh, int d)
{
    atomic_fetch_sub(&sh->outstanding, 1);
    atomic_fetch_sub(&sh->dest[d], 1);
    atomic_fetch_sub(&sh->local, 1);
}

/* ---- sending ---------------------------------------------------------------- */
static void note_problem(smt_dest_stats *s, const char *what)
{
    if (!s->first_problem[0])
        snprintf(s->first_problem, sizeof s->first_problem, "%s", what);
}

/* Sends (or re-sends) the MAD in slot i with a fresh transaction id.
 * Returns 0, -EAGAIN (port busy: nothing changed), or another negative errno. */
static int transmit(worker *w, int i)
{
    const smt_config *c = w->sh->c;
    slot *s = &w->slots[i];
    uint32_t tid = (uint32_t)(++w->gen[i]) << 16 | (uint32_t)i;
    const uint8_t *data = c->req.method == SMP_METHOD_SET ? w->sh->set_data[s->dest] : NULL;
    smp_encode(s->mad, &c->dests[s->dest], &c->req, tid, data);
    int rc = c->tp->send(w->port, &c->dests[s->dest], s->mad, c->timeout_ms);
    if (rc == 0) {
        s->tid = tid;
        s->sent_ns = cb_now_ns();
        if (s->attempt == 0)
            s->first_ns = s->sent_ns;
    }
    return rc;
}

static int take_slot(worker *w) { return w->free_list[--w->nfree]; }

/* Fills the window: round-robin over the destinations, each while it has room
 * (and the local window has). Returns the number sent, or -1 on a hard error. */
static int fill(worker *w, int max_sends)
{
    shared *sh = w->sh;
    const smt_config *c = sh->c;
    int sent = 0, idle = 0;
    while (sent < max_sends && idle < c->ndests && w->in_flight < w->nslots) {
        int d = w->next_dest;
        w->next_dest = (w->next_dest + 1) % c->ndests;
        if (!reserve_both(sh, d)) {
            idle++;
            if (atomic_load_explicit(&sh->local, memory_order_relaxed) >= c->local_depth)
                break; /* the local window binds: no destination can send */
            continue;
        }
        int i = take_slot(w);
        slot *s = &w->slots[i];
        s->dest = d;
        s->attempt = 0;
        int rc = transmit(w, i);
        if (rc == -EAGAIN) {
            release_both(sh, d);
            w->free_list[w->nfree++] = i;
            break;
        }
        if (rc != 0) {
            release_both(sh, d);
            w->free_list[w->nfree++] = i;
            w->stats[d].send_failures++;
            snprintf(w->error, sizeof w->error, "sending to %s failed: %s",
                     c->dests[d].name, strerror(-rc));
            return -1;
        }
        s->in_use = 1;
        w->in_flight++;
        w->stats[d].sent++;
        sent++;
        idle = 0;
    }
    return sent;
}

/* ---- receiving -------------------------------------------------------------- */
static void finish(worker *w, int i)
{
    release_both(w->sh, w->slots[i].dest);
    w->slots[i].in_use = 0;
    w->free_list[w->nfree++] = i;
    w->in_flight--;
}

/* An attempt got no response: retry while retries are left, else drop. */
static int timed_out(worker *w, int i)
{
    const smt_config *c = w->sh->c;
    slot *s = &w->slots[i];
    smt_dest_stats *st = &w->stats[s->dest];
    st->timeouts++;
    if (s->attempt < c->retries && cb_interrupted) {
        /* stopping: no retry is sent, so this MAD was not dropped either */
        w->abandoned++;
        finish(w, i);
        return 0;
    }
    if (s->attempt < c->retries) {
        s->attempt++;
        int rc, tries = 0;
        /* a busy port frees up as it sends; wait a little, not forever */
        while ((rc = transmit(w, i)) == -EAGAIN && ++tries < 10000)
            cb_sleep_until_ns(cb_now_ns() + 10000);
        if (rc == 0) {
            st->retries++;
            return 0;
        }
        st->send_failures++;
        snprintf(w->error, sizeof w->error, "re-sending to %s failed: %s",
                 c->dests[s->dest].name, strerror(-rc));
        st->drops++;
        finish(w, i);
        return -1;
    }
    st->drops++;
    /* names the destination in the output: unreachable (a link down) or overloaded */
    char msg[64];
    snprintf(msg, sizeof msg, "no response after %d attempt%s", s->attempt + 1, s->attempt ? "s" : "");
    note_problem(st, msg);
    finish(w, i);
    return 0;
}

static void answered(worker *w, int i, const uint8_t *resp, uint64_t now)
{
    shared *sh = w->sh;
    slot *s = &w->slots[i];
    smt_dest_stats *st = &w->stats[s->dest];
    st->answered++;
    uint64_t stop = atomic_load_explicit(&sh->stop_ns, memory_order_relaxed);
    if (now <= sh->end_ns && (!stop || now <= stop))
        st->answered_in_time++;
    smp_hist_add(&st->latency, now - s->first_ns);
    const char *why = smp_check_response(resp, s->mad);
    uint16_t status = smp_status(resp);
    if (why) {
        st->bad++;
        note_problem(st, why);
    } else if (status) {
        st->status_errors++;
        st->last_status = status;
        char msg[64];
        snprintf(msg, sizeof msg, "MAD status 0x%04x", status);
        note_problem(st, msg);
    } else if (sh->c->req.method == SMP_METHOD_SET &&
               memcmp(smp_data(resp), sh->set_data[s->dest], SMP_DATA_SIZE) != 0) {
        /* a SET answers with the attribute's new value: the one we set */
        st->bad++;
        note_problem(st, "SET response holds a value other than the one set");
    } else {
        st->ok++;
    }
    finish(w, i);
}

static int take_replies(worker *w, uint64_t wait_us)
{
    smt_reply rep[REPLY_BATCH];
    int n = w->sh->c->tp->poll(w->port, wait_us, rep, REPLY_BATCH);
    if (n < 0) {
        snprintf(w->error, sizeof w->error, "receiving failed: %s", strerror(-n));
        return -1;
    }
    uint64_t now = cb_now_ns();
    for (int k = 0; k < n; k++) {
        uint32_t tid = (uint32_t)smp_tid(rep[k].mad); /* the kernel owns the high half */
        int i = (int)(tid & 0xffff);
        if (i >= w->nslots || !w->slots[i].in_use || w->slots[i].tid != tid) {
            w->stale++;
            continue;
        }
        if (rep[k].kind == SMT_REPLY_OK) {
            answered(w, i, rep[k].mad, now);
            atomic_fetch_add_explicit(&w->sh->progress_answered, 1, memory_order_relaxed);
        } else if (rep[k].kind == SMT_REPLY_TIMEOUT) {
            if (timed_out(w, i) != 0)
                return -1;
        } else {
            smt_dest_stats *st = &w->stats[w->slots[i].dest];
            st->send_failures++;
            st->drops++;
            note_problem(st, "the port could not send the MAD");
            finish(w, i);
        }
    }
    /* safety net, a few times a second: attempts the transport never reported back */
    if (now < w->next_sweep_ns)
        return 0;
    w->next_sweep_ns = now + 50000000ULL;
    uint64_t limit = (uint64_t)w->sh->c->timeout_ms * 1000000ULL + LOST_GRACE_NS;
    for (int i = 0; i < w->nslots; i++)
        if (w->slots[i].in_use && w->slots[i].sent_ns + limit < now)
            if (timed_out(w, i) != 0)
                return -1;
    return 0;
}

/* ---- the worker -------------------------------------------------------------- */
static uint64_t until(uint64_t t, uint64_t now, uint64_t cap_us)
{
    uint64_t us = t > now ? (t - now + 999) / 1000 : 0;
    return us < cap_us ? us : cap_us;
}

static int drain(worker *w, uint64_t deadline)
{
    while (w->in_flight > 0) {
        uint64_t now = cb_now_ns();
        if (now >= deadline)
            break;
        if (take_replies(w, until(deadline, now, 100000)) != 0)
            return -1;
    }
    return 0;
}

static void run_continuous(worker *w)
{
    shared *sh = w->sh;
    for (;;) {
        uint64_t now = cb_now_ns();
        if (now >= sh->end_ns || atomic_load(&sh->failed) || stop_requested(sh))
            break;
        if (fill(w, w->nslots) < 0)
            return;
        if (take_replies(w, until(sh->end_ns, cb_now_ns(), 100000)) != 0)
            return;
    }
}

static void run_rounds(worker *w)
{
    shared *sh = w->sh;
    const smt_config *c = sh->c;
    /* every round: all ranks meet, send a window's worth, wait for all of it */
    uint64_t round_deadline = (uint64_t)(c->retries + 1) * (c->timeout_ms * 1000000ULL + LOST_GRACE_NS);
    /* a signal on any rank stops every rank after the same round (round_sync agrees) */
    while (c->round_sync(c->round_arg, cb_now_ns() < sh->end_ns && !stop_requested(sh))) {
        w->rounds++;
        if (fill(w, w->nslots) < 0)
            return;
        if (drain(w, cb_now_ns() + round_deadline) != 0)
            return;
        sh->last_round_ns = cb_now_ns();
    }
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    int go;
    while ((go = atomic_load(&sh->go)) == 0)
        cb_sleep_until_ns(cb_now_ns() + 100000);
    if (go > 0) {
        if (sh->c->round_sync)
            run_rounds(w);
        else
            run_continuous(w);
        /* the MADs still on the wire: each gets its answer or its timeouts; stopped by a
         * signal, one timeout's time and no retries (timed_out), so the stop is prompt */
        if (!w->error[0]) {
            const smt_config *c = sh->c;
            uint64_t deadline = cb_now_ns() + (uint64_t)(c->retries + 1) *
                (c->timeout_ms * 1000000ULL + LOST_GRACE_NS) + 1000000000ULL;
            if (cb_interrupted)
                deadline = cb_now_ns() + c->timeout_ms * 1000000ULL + LOST_GRACE_NS;
            drain(w, deadline);
        }
        /* whatever is left never came back (or, stopped by a signal, was not waited for) */
        for (int i = 0; i < w->nslots; i++)
            if (w->slots[i].in_use && cb_interrupted) {
                w->abandoned++;
                finish(w, i);
            } else if (w->slots[i].in_use) {
                w->stats[w->slots[i].dest].drops++;
                note_problem(&w->stats[w->slots[i].dest], "no response and no timeout from the port");
                finish(w, i);
            }
    }
    if (w->error[0])
        atomic_store(&sh->failed, 1);
    atomic_fetch_add(&sh->finished, 1);
    return NULL;
}

/* ---- SET: read each destination's value first ----------------------------------- */
static int read_values(worker *w)
{
    shared *sh = w->sh;
    const smt_config *c = sh->c;
    smp_request get = c->req;
    get.method = SMP_METHOD_GET;
    for (int d = 0; d < c->ndests; d++) {
        int done = 0;
        for (int attempt = 0; attempt <= c->retries && !done; attempt++) {
            uint8_t req[SMP_MAD_SIZE];
            uint32_t tid = 0xffff0000u | (uint32_t)attempt << 8 | (uint32_t)(d & 0xff);
            smp_encode(req, &c->dests[d], &get, tid, NULL);
            int rc;
            while ((rc = c->tp->send(w->port, &c->dests[d], req, c->timeout_ms)) == -EAGAIN)
                cb_sleep_until_ns(cb_now_ns() + 100000);
            if (rc != 0) {
                snprintf(w->error, sizeof w->error, "reading the value to SET from %s: send failed: %s",
                         c->dests[d].name, strerror(-rc));
                return -1;
            }
            uint64_t deadline = cb_now_ns() + c->timeout_ms * 1000000ULL + LOST_GRACE_NS;
            while (!done && cb_now_ns() < deadline) {
                smt_reply rep[4];
                int n = c->tp->poll(w->port, until(deadline, cb_now_ns(), 100000), rep, 4);
                if (n < 0) {
                    snprintf(w->error, sizeof w->error, "receiving failed: %s", strerror(-n));
                    return -1;
                }
                for (int k = 0; k < n; k++) {
                    if ((uint32_t)smp_tid(rep[k].mad) != tid)
                        continue;
                    if (rep[k].kind != SMT_REPLY_OK) {
                        deadline = 0; /* timed out: next attempt */
                        break;
                    }
                    const char *why = smp_check_response(rep[k].mad, req);
                    if (why) {
                        snprintf(w->error, sizeof w->error, "reading the value to SET from %s: %s",
                                 c->dests[d].name, why);
                        return -1;
                    }
                    if (smp_status(rep[k].mad)) {
                        snprintf(w->error, sizeof w->error,
                                 "reading the value to SET from %s: MAD status 0x%04x",
                                 c->dests[d].name, smp_status(rep[k].mad));
                        return -1;
                    }
                    memcpy(sh->set_data[d], smp_data(rep[k].mad), SMP_DATA_SIZE);
                    done = 1;
                }
            }
        }
        if (!done) {
            snprintf(w->error, sizeof w->error,
                     "%s did not answer the GET that reads the value to SET back", c->dests[d].name);
            return -1;
        }
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------- */
/* One run's state, through its stages: plan (allocate), open the ports, read the
 * values to SET, run the workers, collect their counts, free. */
typedef struct run_state {
    const smt_config *c;
    smt_result *r;
    shared sh;
    worker *ws;
    int opened;             /* workers whose port is open */
} run_state;

static int fail(run_state *st, const char *what)
{
    if (!st->r->error[0])
        snprintf(st->r->error, sizeof st->r->error, "%s", what);
    return -1;
}

static int plan(run_state *st)
{
    const smt_config *c = st->c;
    smt_result *r = st->r;
    st->sh.c = c;
    st->sh.dest = calloc((size_t)c->ndests, sizeof *st->sh.dest);
    st->sh.max_dest = calloc((size_t)c->ndests, sizeof *st->sh.max_dest);
    st->sh.set_data = calloc((size_t)c->ndests, sizeof *st->sh.set_data);
    st->ws = calloc((size_t)c->workers, sizeof *st->ws);
    r->dest = calloc((size_t)c->ndests, sizeof *r->dest);
    r->max_dest_in_flight = calloc((size_t)c->ndests, sizeof *r->max_dest_in_flight);
    if (!st->sh.dest || !st->sh.max_dest || !st->sh.set_data || !st->ws || !r->dest ||
        !r->max_dest_in_flight)
        return fail(st, "out of memory");
    return 0;
}

/* Each worker's slots and statistics, and its port. */
static int open_workers(run_state *st)
{
    const smt_config *c = st->c;
    smt_result *r = st->r;
    /* a worker can hold at most the whole local window */
    for (int k = 0; k < c->workers; k++) {
        worker *w = &st->ws[k];
        w->sh = &st->sh;
        w->id = k;
        w->nslots = c->local_depth;
        w->slots = calloc((size_t)w->nslots, sizeof *w->slots);
        w->gen = calloc((size_t)w->nslots, sizeof *w->gen);
        w->free_list = calloc((size_t)w->nslots, sizeof *w->free_list);
        for (int i = w->nslots - 1; w->free_list && i >= 0; i--)
            w->free_list[w->nfree++] = i;
        w->stats = calloc((size_t)c->ndests, sizeof *w->stats);
        w->next_dest = (int)((long)k * c->ndests / c->workers); /* spread the starts */
        if (!w->slots || !w->gen || !w->free_list || !w->stats)
            return fail(st, "out of memory");
        int e = c->tp->open(c->tp->ctx, k, &w->port, r->error, sizeof r->error);
        if (e != 0) {
            if (!r->error[0])
                snprintf(r->error, sizeof r->error, "cannot open port for worker %d: %s", k, strerror(-e));
            return -1;
        }
        st->opened++;
    }
    return 0;
}

/* Progress lines on stderr, once a second, until the workers are done. */
static void watch(run_state *st, int started)
{
    const smt_config *c = st->c;
    shared *sh = &st->sh;
    uint64_t next = sh->start_ns + 1000000000ULL;
    while (atomic_load(&sh->finished) < started) {
        uint64_t now = cb_now_ns();
        if (c->progress && now >= next && now < sh->end_ns && !stop_requested(sh)) {
            fprintf(stderr, "[%6.1f s / %.1f s] %llu MADs answered\n",
                    (now - sh->start_ns) / 1e9, c->duration_s,
                    (unsigned long long)atomic_load(&sh->progress_answered));
            next += 1000000000ULL;
        }
        cb_sleep_until_ns(now + 20000000ULL);
    }
}

/* Starts the workers on the same tick, waits for them, and times the run. */
static int run_workers(run_state *st)
{
    const smt_config *c = st->c;
    smt_result *r = st->r;
    shared *sh = &st->sh;
    int rc = 0, started = 0;
    for (int k = 0; k < c->workers; k++, started++)
        if (pthread_create(&st->ws[k].th, NULL, worker_main, &st->ws[k]) != 0) {
            snprintf(r->error, sizeof r->error, "cannot start worker thread %d", k);
            rc = -1;
            break;
        }
    sh->start_ns = cb_now_ns() + 2000000ULL;
    sh->end_ns = sh->start_ns + (uint64_t)(c->duration_s * 1e9);
    sh->last_round_ns = sh->start_ns;
    if (rc == 0)
        cb_sleep_until_ns(sh->start_ns);
    atomic_store(&sh->go, rc == 0 ? 1 : -1);
    if (rc == 0)
        watch(st, started);
    for (int k = 0; k < started; k++)
        pthread_join(st->ws[k].th, NULL);
    if (rc != 0)
        return rc;
    uint64_t last = cb_now_ns();
    r->elapsed_s = c->duration_s;
    uint64_t stop = atomic_load(&sh->stop_ns);
    /* a signal at any time cut the run short: the timed period, or the wait for the MADs
     * still on the wire (whose retries it did not send) */
    r->interrupted = stop != 0 || cb_interrupted != 0;
    if (stop && stop < sh->end_ns)
        r->elapsed_s = stop > sh->start_ns ? (stop - sh->start_ns) / 1e9 : 0;
    if (c->round_sync) /* rounds run to completion: the period is theirs */
        r->elapsed_s = (sh->last_round_ns - sh->start_ns) / 1e9;
    r->drain_s = last > sh->end_ns ? (last - sh->end_ns) / 1e9 : 0;
    for (int k = 0; k < c->workers; k++)
        if (st->ws[k].error[0])
            return fail(st, st->ws[k].error);
    return 0;
}

/* The workers' counts into the result, per destination and in total. */
static void collect(run_state *st)
{
    const smt_config *c = st->c;
    smt_result *r = st->r;
    for (int k = 0; st->ws && k < c->workers; k++) {
        worker *w = &st->ws[k];
        for (int d = 0; w->stats && d < c->ndests; d++) {
            smt_dest_stats *a = &r->dest[d], *b = &w->stats[d];
            smt_dest_stats_add(a, b);
            if (!a->first_problem[0] && b->first_problem[0])
                memcpy(a->first_problem, b->first_problem, sizeof a->first_problem);
        }
        r->stale += w->stale;
        r->rounds += w->rounds;
        r->abandoned += w->abandoned;
    }
    smt_dest_stats *t = &r->total;
    for (int d = 0; d < c->ndests; d++) {
        smt_dest_stats *a = &r->dest[d];
        if (c->round_sync) /* rounds run to completion: all of it is timed */
            a->answered_in_time = a->answered;
        smt_dest_stats_add(t, a);
        if (!t->first_problem[0] && a->first_problem[0])
            snprintf(t->first_problem, sizeof t->first_problem, "%.60s: %.90s", c->dests[d].name, a->first_problem);
        r->max_dest_in_flight[d] = atomic_load(&st->sh.max_dest[d]);
    }
    r->max_local_in_flight = atomic_load(&st->sh.max_local);
}

static void release(run_state *st)
{
    for (int k = 0; st->ws && k < st->c->workers; k++) {
        worker *w = &st->ws[k];
        if (k < st->opened)
            st->c->tp->close(w->port);
        free(w->slots);
        free(w->gen);
        free(w->free_list);
        free(w->stats);
    }
    free(st->sh.dest);
    free(st->sh.max_dest);
    free(st->sh.set_data);
    free(st->ws);
}

int smt_run(const smt_config *c, smt_result *r)
{
    memset(r, 0, sizeof *r);
    const char *why = smt_config_check(c);
    if (why) {
        snprintf(r->error, sizeof r->error, "%s", why);
        return -1;
    }
    run_state st;
    memset(&st, 0, sizeof st);
    st.c = c;
    st.r = r;
    if (plan(&st) != 0) {
        release(&st);
        smt_result_free(r);
        return -1;
    }
    int rc = open_workers(&st);
    if (rc == 0 && c->req.method == SMP_METHOD_SET && read_values(&st.ws[0]) != 0)
        rc = fail(&st, st.ws[0].error);
    if (rc == 0)
        rc = run_workers(&st);
    collect(&st);
    release(&st);
    return rc;
}

void smt_result_free(smt_result *r)
{
    free(r->dest);
    free(r->max_dest_in_flight);
    r->dest = NULL;
    r->max_dest_in_flight = NULL;
}

void smt_dest_stats_add(smt_dest_stats *a, const smt_dest_stats *b)
{
    a->sent += b->sent;
    a->answered += b->answered;
    a->answered_in_time += b->answered_in_time;
    a->ok += b->ok;
    a->status_errors += b->status_errors;
    a->bad += b->bad;
    a->timeouts += b->timeouts;
    a->retries += b->retries;
    a->drops += b->drops;
    a->send_failures += b->send_failures;
    if (b->last_status)
        a->last_status = b->last_status;
    smp_hist_merge(&a->latency, &b->latency);
}
