/* Unit tests of smp-mad-stress's window logic, driven through the in-process
 * simulated fabric of the --simulate transport (there is no InfiniBand here):
 * the window limits hold (checked by the fabric, independently of the window's
 * own bookkeeping: smp_sim_counts.h), every MAD is
 * answered or timed out, timeouts/retries/drops add up, responses are
 * verified, and throughput rises with the queue depth until the destination
 * or the local window binds, as the tool's document measured on a switch.
 *
 * Timing-based checks use generous margins: this runs on a shared machine. */
#include "cb_test.h"
#include "smp_sim_counts.h"
#include "smp-mad-stress/window.h"
#include "common/cb_common.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trial {
    const char *fabric;     /* simulated fabric description */
    int ndests;             /* LIDs 1..ndests */
    int direct;             /* directed routes 0,1 .. 0,ndests instead */
    int n, N, workers, timeout_ms, retries, method;
    double seconds;
    /* out */
    smt_result r;
    sim_counts dest[16], total;
    double rate;
    int rc;
} trial;

/* A transport that corrupts every 7th response's attribute: the window must
 * catch it. */
static smt_transport inner;
static int corrupt_seen;
static int corrupting_poll(void *port, uint64_t wait_us, smt_reply *out, int max)
{
    int n = inner.poll(port, wait_us, out, max);
    for (int i = 0; i < n; i++)
        if (out[i].kind == SMT_REPLY_OK && ++corrupt_seen % 7 == 0)
            out[i].mad[17] ^= 0x01;
    return n;
}

static void run(trial *t, int corrupt)
{
    smt_sim_params p;
    smt_sim_params_default(&p);
    const char *why = smt_sim_parse(t->fabric, &p);
    if (why) {
        fprintf(stderr, "bad fabric %s: %s\n", t->fabric, why);
        exit(2);
    }
    smp_dest dests[16];
    for (int i = 0; i < t->ndests; i++) {
        char s[32];
        if (t->direct)
            snprintf(s, sizeof s, "0,%d", i + 1);
        else
            snprintf(s, sizeof s, "%d", i + 1);
        smp_dest_parse(s, t->direct, &dests[i]);
    }
    smt_sim *f = smt_sim_create(&p, dests, t->ndests);
    smt_transport tp = smt_sim_transport(f);
    if (corrupt) {
        inner = tp;
        tp.poll = corrupting_poll;
        corrupt_seen = 0;
    }
    smt_config c = {
        .req = {.method = t->method ? t->method : SMP_METHOD_GET, .attr = 0x11},
        .dests = dests,
        .ndests = t->ndests,
        .dest_depth = t->n,
        .local_depth = t->N,
        .workers = t->workers ? t->workers : 1,
        .timeout_ms = t->timeout_ms ? t->timeout_ms : 100,
        .retries = t->retries,
        .duration_s = t->seconds,
        .tp = &tp,
    };
    t->rc = smt_run(&c, &t->r);
    for (int i = 0; i < t->ndests; i++)
        sim_dest_counts(f, i, &t->dest[i]);
    sim_total_counts(f, &t->total);
    t->rate = t->r.elapsed_s > 0 ? t->r.total.answered_in_time / t->r.elapsed_s : 0;
    smt_sim_destroy(f);
}

/* Every MAD sent is accounted for, in total and per destination. */
static void check_accounting(const trial *t)
{
    const smt_dest_stats *s = &t->r.total;
    CHECK(t->rc == 0);
    CHECK(s->sent > 0);
    CHECK(s->sent == s->answered + s->drops);            /* answered or given up */
    CHECK(s->timeouts == s->retries + s->drops);         /* each timeout retried or dropped */
    CHECK(s->answered == s->ok + s->status_errors + s->bad);
    CHECK(s->latency.count == s->answered);
    for (int d = 0; d < t->ndests; d++) {
        const smt_dest_stats *x = &t->r.dest[d];
        CHECK(x->sent == x->answered + x->drops);
        CHECK(x->timeouts == x->retries + x->drops);
        /* the fabric saw every attempt: first sends and retries (and for a
         * SET the GET that read the value first) */
        CHECK(t->dest[d].sent == x->sent + x->retries + (t->method == SMP_METHOD_SET));
    }
}

static void test_window_limits(void)
{
    /* 4 destinations, 2 workers; the local window (6) binds before 4 x 2 */
    trial t = {.fabric = "rtt=1ms", .ndests = 4, .n = 2, .N = 6, .workers = 2, .seconds = 0.4,
               .timeout_ms = 5000};   /* no timeout frees a slot early (see u below) */
    run(&t, 0);
    check_accounting(&t);
    CHECK(t.r.total.drops == 0 && t.r.total.timeouts == 0 && t.r.total.bad == 0);
    CHECK(t.r.total.ok == t.r.total.answered);
    CHECK(t.r.max_local_in_flight == 6);           /* the window was used ... */
    CHECK(t.total.max_in_flight <= 6);             /* ... and never exceeded (fabric's view) */
    int dest_full = 0;
    for (int d = 0; d < 4; d++) {
        CHECK(t.r.max_dest_in_flight[d] <= 2);
        CHECK(t.dest[d].max_in_flight <= 2);
        CHECK(t.r.dest[d].answered > 0);           /* round-robin reaches everyone */
        dest_full |= t.dest[d].max_in_flight == 2;
    }
    CHECK(dest_full);
    CHECK(t.total.answered == t.r.total.answered);
    smt_result_free(&t.r);

    /* the per-destination depth binds: 3 destinations x 1 < 100. A timeout frees a slot
       while the fabric still holds the MAD (its view then counts one more): the timeout is
       far above any stall of a loaded 2-core machine, so that only the depth is measured. */
    trial u = {.fabric = "rtt=1ms", .ndests = 3, .n = 1, .N = 100, .workers = 3, .seconds = 0.3,
               .timeout_ms = 5000};
    run(&u, 0);
    check_accounting(&u);
    CHECK(u.r.max_local_in_flight <= 3 && u.total.max_in_flight <= 3);
    for (int d = 0; d < 3; d++)
        CHECK(u.dest[d].max_in_flight == 1 && u.r.max_dest_in_flight[d] == 1);
    smt_result_free(&u.r);
}

static void test_loss_and_retries(void)
{
    /* a fifth of the MADs are lost: they time out and are retried */
    trial t = {.fabric = "rtt=200us,loss=0.2,seed=3", .ndests = 4, .n = 2, .N = 8,
               .timeout_ms = 5, .retries = 2, .seconds = 0.4};
    run(&t, 0);
    check_accounting(&t);
    const smt_dest_stats *s = &t.r.total;
    CHECK(s->timeouts > 0 && s->retries > 0);
    CHECK(s->timeouts == t.total.lost);          /* every loss was noticed, nothing else */
    CHECK(s->drops < s->timeouts / 4 + 1);       /* lost three times in a row: rare */
    CHECK(t.r.max_local_in_flight <= 8 && t.total.max_in_flight <= 8);
    /* the share of attempts that timed out is about the loss */
    double share = (double)s->timeouts / (double)(s->sent + s->retries);
    CHECK(share > 0.12 && share < 0.28);
    smt_result_free(&t.r);

    /* without retries every timeout is a drop */
    trial u = {.fabric = "rtt=200us,loss=0.3,seed=5", .ndests = 2, .n = 2, .N = 4,
               .timeout_ms = 5, .retries = 0, .seconds = 0.3};
    run(&u, 0);
    check_accounting(&u);
    CHECK(u.r.total.retries == 0 && u.r.total.drops == u.r.total.timeouts && u.r.total.drops > 0);
    smt_result_free(&u.r);
}

static void test_dead_destination(void)
{
    /* LID 2 never answers: its MADs are all dropped after their retries, the
     * others are not held up beyond the shared window */
    trial t = {.fabric = "rtt=300us,dead=2", .ndests = 3, .n = 2, .N = 6,
               .timeout_ms = 10, .retries = 1, .seconds = 0.3};
    run(&t, 0);
    check_accounting(&t);
    CHECK(t.r.dest[1].answered == 0 && t.r.dest[1].drops == t.r.dest[1].sent && t.r.dest[1].sent > 0);
    CHECK(t.r.dest[1].retries == t.r.dest[1].sent);
    CHECK(t.r.dest[0].drops == 0 && t.r.dest[2].drops == 0);
    CHECK(t.r.dest[0].answered > 10 * t.r.dest[1].sent);
    CHECK(t.dest[1].max_in_flight <= 2);
    smt_result_free(&t.r);
}

static void test_queue_drops(void)
{
    /* an agent that holds 3 MADs waiting drops the rest (VL15Dropped): with 8
     * on the wire some are dropped; with 2 none */
    trial t = {.fabric = "rtt=100us,service=1ms,queue=3", .ndests = 1, .n = 8, .N = 8,
               .timeout_ms = 20, .retries = 0, .seconds = 0.4};
    run(&t, 0);
    check_accounting(&t);
    CHECK(t.r.total.drops > 0 && t.r.total.drops == t.total.dropped);
    smt_result_free(&t.r);
    trial u = {.fabric = "rtt=100us,service=1ms,queue=3", .ndests = 1, .n = 2, .N = 8,
               .timeout_ms = 20, .retries = 0, .seconds = 0.3};
    run(&u, 0);
    check_accounting(&u);
    CHECK(u.r.total.drops == 0 && u.total.dropped == 0);
    smt_result_free(&u.r);
}

static void test_throughput_vs_depth(void)
{
    /* The document's switch: one at a time 4500 MAD/s, two on the wire
     * 5700 MAD/s, more do not help. The same shape, ten times slower so that
     * timer resolution does not matter: rtt 0.45 ms, service 1.75 ms. */
    const char *sw = "rtt=450us,service=1750us";
    double rate[4];
    int depth[4] = {1, 2, 4, 8};
    for (int i = 0; i < 4; i++) {
        trial t = {.fabric = sw, .ndests = 1, .n = depth[i], .N = 128, .seconds = 0.5};
        run(&t, 0);
        check_accounting(&t);
        rate[i] = t.rate;
        smt_result_free(&t.r);
    }
    printf("one destination, service 1.75 ms: depth 1: %.0f, 2: %.0f, 4: %.0f, 8: %.0f MAD/s\n",
           rate[0], rate[1], rate[2], rate[3]);
    CHECK(rate[0] < 1 / 2.2e-3 * 1.02 && rate[0] > 1 / 2.2e-3 * 0.75); /* one round trip each */
    CHECK(rate[1] > rate[0] * 1.12);                /* the second MAD hides the round trip */
    CHECK(rate[1] < 1 / 1.75e-3 * 1.02);            /* never faster than the agent */
    CHECK(rate[2] < rate[1] * 1.08 && rate[2] > rate[1] * 0.92); /* the destination binds */
    CHECK(rate[3] < rate[1] * 1.08 && rate[3] > rate[1] * 0.92);

    /* Four quick destinations: throughput doubles with the depth until the
     * local window (4) binds. */
    double r1, r2, r2w;
    trial a = {.fabric = "rtt=2ms", .ndests = 4, .n = 1, .N = 8, .seconds = 0.4};
    run(&a, 0);
    r1 = a.rate;
    smt_result_free(&a.r);
    trial b = {.fabric = "rtt=2ms", .ndests = 4, .n = 2, .N = 8, .seconds = 0.4};
    run(&b, 0);
    r2 = b.rate;
    smt_result_free(&b.r);
    trial c = {.fabric = "rtt=2ms", .ndests = 4, .n = 2, .N = 4, .seconds = 0.4};
    run(&c, 0);
    r2w = c.rate;
    CHECK(c.r.max_local_in_flight == 4 && c.total.max_in_flight <= 4);
    smt_result_free(&c.r);
    printf("four destinations, rtt 2 ms: depth 1: %.0f, depth 2: %.0f, depth 2 in a window of 4: %.0f MAD/s\n",
           r1, r2, r2w);
    CHECK(r2 > r1 * 1.7 && r2 < r1 * 2.3);
    CHECK(r2w > r1 * 0.85 && r2w < r1 * 1.15);
}

static void test_verification(void)
{
    /* corrupted responses are caught, counted and not taken as answers */
    trial t = {.fabric = "rtt=300us", .ndests = 2, .n = 2, .N = 4, .seconds = 0.2};
    run(&t, 1);
    check_accounting(&t);
    CHECK(t.r.total.bad > 0);
    CHECK(t.r.total.bad * 7 <= t.r.total.answered + 7 && t.r.total.bad * 7 + 7 >= t.r.total.answered);
    CHECK(strstr(t.r.total.first_problem, "attribute") != NULL);
    smt_result_free(&t.r);

    /* MAD status errors are counted apart */
    trial u = {.fabric = "rtt=300us,error=0.1,seed=9", .ndests = 2, .n = 2, .N = 4, .seconds = 0.3};
    run(&u, 0);
    check_accounting(&u);
    CHECK(u.r.total.status_errors > 0 && u.r.total.status_errors == u.total.errors);
    CHECK(u.r.total.bad == 0 && u.r.total.last_status == 0x000c);
    smt_result_free(&u.r);
}

static void test_set_and_direct(void)
{
    /* SET reads each value and writes it back; responses echo it */
    trial t = {.fabric = "rtt=300us", .ndests = 3, .n = 2, .N = 6, .seconds = 0.2, .method = SMP_METHOD_SET};
    run(&t, 0);
    check_accounting(&t);
    CHECK(t.r.total.ok == t.r.total.answered && t.r.total.bad == 0);
    smt_result_free(&t.r);

    /* directed routes: the responses carry the direction bit */
    trial u = {.fabric = "rtt=300us", .ndests = 3, .direct = 1, .n = 2, .N = 6, .seconds = 0.2};
    run(&u, 0);
    check_accounting(&u);
    CHECK(u.r.total.ok == u.r.total.answered && u.r.total.bad == 0);
    smt_result_free(&u.r);

    /* a SET to a destination that does not answer its GET cannot run */
    trial v = {.fabric = "rtt=300us,dead=2", .ndests = 2, .n = 1, .N = 2, .timeout_ms = 5,
               .seconds = 0.1, .method = SMP_METHOD_SET};
    run(&v, 0);
    CHECK(v.rc != 0 && strstr(v.r.error, "lid 2") != NULL);
    smt_result_free(&v.r);
}

/* The kernel's umad write path (and so the simulated fabric) puts its agent's id
 * in the high half of every request's TID; the responses carry it back. The
 * window must take them as answers: GET, SET (and the GET before it), two workers
 * (two agents), LID routed and directed. */
static int high_half_seen, high_half_missing;
static int high_half_poll(void *port, uint64_t wait_us, smt_reply *out, int max)
{
    int n = inner.poll(port, wait_us, out, max);
    for (int i = 0; i < n; i++)
        if (out[i].kind == SMT_REPLY_OK) {
            if (smp_tid(out[i].mad) >> 32)
                high_half_seen++;
            else
                high_half_missing++;
        }
    return n;
}

static void test_kernel_tid(void)
{
    for (int k = 0; k < 3; k++) {
        smp_dest dests[2];
        smp_dest_parse(k == 2 ? "0,1" : "1", k == 2, &dests[0]);
        smp_dest_parse(k == 2 ? "0,2" : "2", k == 2, &dests[1]);
        smt_sim_params p;
        smt_sim_params_default(&p);
        smt_sim_parse("rtt=300us", &p);
        smt_sim *f = smt_sim_create(&p, dests, 2);
        inner = smt_sim_transport(f);
        smt_transport tp = inner;
        tp.poll = high_half_poll;
        high_half_seen = high_half_missing = 0;
        smt_config c = {.req = {.method = k == 1 ? SMP_METHOD_SET : SMP_METHOD_GET, .attr = 0x19},
                        .dests = dests, .ndests = 2, .dest_depth = 2, .local_depth = 4, .workers = 2,
                        .timeout_ms = 100, .duration_s = 0.1, .tp = &tp};
        smt_result r;
        CHECK(smt_run(&c, &r) == 0);
        CHECK(high_half_seen > 0 && high_half_missing == 0);
        CHECK(r.total.answered > 0 && r.total.ok == r.total.answered && r.total.bad == 0);
        CHECK(r.stale == 0);
        smt_result_free(&r);
        smt_sim_destroy(f);
    }
}

/* MPI mode's rounds, without MPI: a sync that stops after 5 rounds */
static int rounds_seen;
static int five_rounds(void *arg, int want_more)
{
    (void)arg;
    return want_more && rounds_seen++ < 5;
}

static void test_rounds(void)
{
    smt_sim_params p;
    smt_sim_params_default(&p);
    smt_sim_parse("rtt=1ms", &p);
    smp_dest d;
    smp_dest_parse("7", 0, &d);
    smt_sim *f = smt_sim_create(&p, &d, 1);
    smt_transport tp = smt_sim_transport(f);
    smt_config c = {.req = {.method = SMP_METHOD_GET, .attr = 0x11}, .dests = &d, .ndests = 1,
                    .dest_depth = 3, .local_depth = 8, .workers = 1, .timeout_ms = 100,
                    .duration_s = 5, .tp = &tp, .round_sync = five_rounds};
    smt_result r;
    rounds_seen = 0;
    CHECK(smt_run(&c, &r) == 0);
    CHECK(r.rounds == 5 && r.total.sent == 15 && r.total.answered == 15);
    CHECK(r.elapsed_s > 0.004 && r.elapsed_s < 1); /* five round trips, not the 5 s */
    smt_result_free(&r);
    /* rounds need one destination and one worker */
    c.workers = 2;
    CHECK(smt_config_check(&c) != NULL);
    smt_sim_destroy(f);
}

static void test_config_check(void)
{
    smp_dest d;
    smp_dest_parse("7", 0, &d);
    smt_config c = {.req = {.method = SMP_METHOD_GET}, .dests = &d, .ndests = 1, .dest_depth = 1,
                    .local_depth = 1, .workers = 1, .timeout_ms = 1, .duration_s = 1};
    CHECK(smt_config_check(&c) == NULL);
    c.dest_depth = 0;
    CHECK(smt_config_check(&c) != NULL);
    c.dest_depth = 1;
    c.ndests = 0;
    CHECK(smt_config_check(&c) != NULL);
    c.ndests = 1;
    c.req.method = 3;
    CHECK(smt_config_check(&c) != NULL);
    c.req.method = SMP_METHOD_GET;
    c.duration_s = 0;
    CHECK(smt_config_check(&c) != NULL);
}

/* A signal (cb_interrupted) stops a 30 s run at once: nothing more is sent or re-sent,
 * the MADs on the wire get one timeout, those still out are abandoned (not dropped), and
 * the rate is over the time up to the signal. (Issue 14: the kernel died instead.) */
static void *raise_later(void *arg)
{
    (void)arg;
    cb_sleep_until_ns(cb_now_ns() + 200000000ULL);
    cb_interrupted = SIGINT;
    return NULL;
}

static void test_interrupted(void)
{
    trial t = {.fabric = "rtt=300us,dead=2", .ndests = 2, .n = 2, .N = 4,
               .timeout_ms = 50, .retries = 10, .seconds = 30};
    pthread_t th;
    uint64_t t0 = cb_now_ns();
    CHECK(pthread_create(&th, NULL, raise_later, NULL) == 0);
    run(&t, 0);
    double took = (cb_now_ns() - t0) / 1e9;
    pthread_join(th, NULL);
    cb_interrupted = 0;
    const smt_dest_stats *s = &t.r.total;
    CHECK(t.rc == 0 && t.r.interrupted);
    CHECK(took < 3);
    CHECK(t.r.elapsed_s > 0.1 && t.r.elapsed_s < 2);
    CHECK(t.r.dest[0].answered > 0 && t.r.dest[0].drops == 0);
    /* every MAD answered, dropped after all its retries, or abandoned at the stop */
    CHECK(s->sent == s->answered + s->drops + t.r.abandoned);
    CHECK(t.r.abandoned > 0 && t.r.abandoned <= 2);
    CHECK(s->answered_in_time <= s->answered);
    smt_result_free(&t.r);
}

int main(void)
{
    test_config_check();
    test_interrupted();
    test_window_limits();
    test_loss_and_retries();
    test_dead_destination();
    test_queue_drops();
    CBT_TIMED(test_throughput_vs_depth, 3);
    test_verification();
    test_set_and_direct();
    test_kernel_tid();
    test_rounds();
    CBT_DONE();
}
