/* The simulated fabric, a transport without InfiniBand: see sim_transport.h. */
#include "sim_state.h"
#include "../common/cb_common.h"
#include "../common/cb_hash.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim_event {
    uint64_t due;
    int dest;                 /* -1: a destination the fabric does not have */
    smt_reply rep;
} sim_event;

typedef struct sim_port {
    smt_sim *f;
    sim_event **heap;             /* min-heap on due */
    size_t n, cap;
    sim_event **pool;             /* free events */
    size_t npool, cappool;
    uint64_t rng;
    uint32_t agent_tid;           /* the high half of every TID this port sends */
} sim_port;

void smt_sim_params_default(smt_sim_params *p)
{
    memset(p, 0, sizeof *p);
    p->rtt_ns = 50000;
    p->seed = 1;
}

/* ---- parameters --------------------------------------------------------------- */
static int parse_share(const char *v, double *out)
{
    double x;
    if (cb_parse_f64(v, &x) != 0 || !(x >= 0 && x <= 1))
        return -1;
    *out = x;
    return 0;
}

const char *smt_sim_parse(const char *spec, smt_sim_params *p)
{
    char tok[1024];
    const char *cursor = spec;
    int more;
    while ((more = cb_list_next(&cursor, ",", tok, sizeof tok)) != 0) {
        if (more < 0)
            return "an empty item (two commas in a row, or one at the end) or one too long";
        char *eq = strchr(tok, '=');
        if (!eq)
            return "expected KEY=VALUE items: rtt, service, jitter, loss, error, queue, dead, seed";
        *eq = '\0';
        const char *k = tok, *v = eq + 1;
        if (strcmp(k, "rtt") == 0 || strcmp(k, "service") == 0 || strcmp(k, "jitter") == 0) {
            uint64_t ns;
            if (smp_parse_duration(v, 1e3, &ns) != 0 || ns > 60000000000ULL)
                return "rtt, service and jitter are durations like 200us, 1.5ms (a bare number: us)";
            *(strcmp(k, "rtt") == 0 ? &p->rtt_ns : strcmp(k, "service") == 0 ? &p->service_ns : &p->jitter_ns) = ns;
        } else if (strcmp(k, "loss") == 0) {
            if (parse_share(v, &p->loss) != 0)
                return "loss is a share between 0 and 1";
        } else if (strcmp(k, "error") == 0) {
            if (parse_share(v, &p->error) != 0)
                return "error is a share between 0 and 1";
        } else if (strcmp(k, "queue") == 0) {
            uint64_t q;
            if (cb_parse_u64(v, 10, &q) != 0 || q > 1000000)
                return "queue is a number of MADs from 0 (no limit) to 1000000";
            p->queue = (int)q;
        } else if (strcmp(k, "seed") == 0) {
            /* 18446744073709551616 or -1 must not wrap to 2^64 - 1 */
            uint64_t s;
            if (cb_parse_u64(v, 0, &s) != 0)
                return "seed is a number from 0 to 18446744073709551615 (or 0x hexadecimal)";
            p->seed = s;
        } else if (strcmp(k, "dead") == 0) {
            char l[64];
            const char *lc = v;
            int r;
            while ((r = cb_list_next(&lc, ":", l, sizeof l)) == 1) {
                smp_dest d;
                if (smp_dest_parse(l, 0, &d) != NULL || p->ndead == 64)
                    return "dead is a list of up to 64 LIDs separated by ':'";
                p->dead[p->ndead++] = d.lid;
            }
            if (r < 0)
                return "dead is a list of up to 64 LIDs separated by ':' (an empty item)";
        } else {
            return "unknown item; known: rtt, service, jitter, loss, error, queue, dead, seed";
        }
    }
    return NULL;
}

void smt_sim_describe(const smt_sim_params *p, char *buf, size_t len)
{
    int n = snprintf(buf, len, "rtt=%.0fus,service=%.0fus,jitter=%.0fus,loss=%g,error=%g,queue=%d,seed=%llu",
                     p->rtt_ns / 1e3, p->service_ns / 1e3, p->jitter_ns / 1e3, p->loss, p->error,
                     p->queue, (unsigned long long)p->seed);
    for (int i = 0; i < p->ndead && n > 0 && (size_t)n < len; i++)
        n += snprintf(buf + n, len - (size_t)n, "%s%u", i ? ":" : ",dead=", p->dead[i]);
}

/* ---- destinations --------------------------------------------------------------- */
static uint64_t dest_key(const smp_dest *d)
{
    uint64_t h = d->direct ? 0x5bd1e995ULL : 0;
    h = cb_mix64(h ^ d->lid);
    if (d->direct)
        for (int i = 1; i <= d->hops; i++)
            h = cb_mix64(h ^ ((uint64_t)d->path[i] << 8 | (uint64_t)i));
    return h;
}

static int same_dest(const smp_dest *a, const smp_dest *b)
{
    if (a->direct != b->direct)
        return 0;
    if (!a->direct)
        return a->lid == b->lid;
    return a->hops == b->hops && memcmp(a->path, b->path, (size_t)a->hops + 1) == 0;
}

static int find_dest(const smt_sim *f, const smp_dest *d)
{
    size_t mask = f->table_size - 1;
    for (size_t i = dest_key(d) & mask;; i = (i + 1) & mask) {
        int k = f->table[i];
        if (k == 0)
            return -1;
        if (same_dest(&f->dests[k - 1].d, d))
            return k - 1;
    }
}

smt_sim *smt_sim_create(const smt_sim_params *p, const smp_dest *dests, int ndests)
{
    smt_sim *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->p = *p;
    f->ndests = ndests;
    f->dests = calloc((size_t)ndests, sizeof *f->dests);
    f->table_size = 16;
    while (f->table_size < 2 * (size_t)ndests)
        f->table_size *= 2;
    f->table = calloc(f->table_size, sizeof *f->table);
    if (!f->dests || !f->table) {
        smt_sim_destroy(f);
        return NULL;
    }
    for (int i = 0; i < ndests; i++) {
        sim_dest *t = &f->dests[i];
        t->d = dests[i];
        pthread_mutex_init(&t->lock, NULL);
        for (int k = 0; k < p->ndead; k++)
            if (!t->d.direct && t->d.lid == p->dead[k])
                t->dead = 1;
        if (find_dest(f, &t->d) >= 0)
            continue; /* listed twice: one agent */
        size_t mask = f->table_size - 1, j = dest_key(&t->d) & mask;
        while (f->table[j])
            j = (j + 1) & mask;
        f->table[j] = i + 1;
    }
    return f;
}

void smt_sim_destroy(smt_sim *f)
{
    if (!f)
        return;
    for (int i = 0; f->dests && i < f->ndests; i++) {
        pthread_mutex_destroy(&f->dests[i].lock);
        free(f->dests[i].starts);
    }
    free(f->dests);
    free(f->table);
    free(f);
}

/* ---- ports ------------------------------------------------------------------------ */
static uint64_t rnd(sim_port *pt)
{
    pt->rng = cb_mix64(pt->rng);
    return pt->rng;
}
static double rnd01(sim_port *pt) { return (double)(rnd(pt) >> 11) / 9007199254740992.0; }

static int port_open(void *ctx, int worker, void **port, char *err, size_t errlen)
{
    sim_port *pt = calloc(1, sizeof *pt);
    if (!pt) {
        snprintf(err, errlen, "simulated fabric: out of memory");
        return -ENOMEM;
    }
    pt->f = ctx;
    pt->rng = pt->f->p.seed * 0x9e3779b97f4a7c15ULL + (uint64_t)worker + 1;
    /* Like the kernel's umad agents (and libumad2sim): a non-zero id of the
     * port's own, which replaces the high half of every request's TID. */
    pt->agent_tid = atomic_fetch_add(&pt->f->agents, 1) + 1;
    *port = pt;
    return 0;
}

static void port_close(void *port)
{
    sim_port *pt = port;
    for (size_t i = 0; i < pt->n; i++)
        free(pt->heap[i]);
    for (size_t i = 0; i < pt->npool; i++)
        free(pt->pool[i]);
    free(pt->heap);
    free(pt->pool);
    free(pt);
}

static sim_event *new_event(sim_port *pt)
{
    return pt->npool ? pt->pool[--pt->npool] : malloc(sizeof(sim_event));
}

static void free_event(sim_port *pt, sim_event *e)
{
    if (pt->npool == pt->cappool) {
        size_t cap = pt->cappool ? 2 * pt->cappool : 64;
        sim_event **p = realloc(pt->pool, cap * sizeof *p);
        if (!p) {
            free(e);
            return;
        }
        pt->pool = p;
        pt->cappool = cap;
    }
    pt->pool[pt->npool++] = e;
}

static int heap_push(sim_port *pt, sim_event *e)
{
    if (pt->n == pt->cap) {
        size_t cap = pt->cap ? 2 * pt->cap : 64;
        sim_event **h = realloc(pt->heap, cap * sizeof *h);
        if (!h)
            return -ENOMEM;
        pt->heap = h;
        pt->cap = cap;
    }
    size_t i = pt->n++;
    while (i > 0 && pt->heap[(i - 1) / 2]->due > e->due) {
        pt->heap[i] = pt->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    pt->heap[i] = e;
    return 0;
}

static sim_event *heap_pop(sim_port *pt)
{
    sim_event *top = pt->heap[0], *last = pt->heap[--pt->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= pt->n)
            break;
        if (c + 1 < pt->n && pt->heap[c + 1]->due < pt->heap[c]->due)
            c++;
        if (pt->heap[c]->due >= last->due)
            break;
        pt->heap[i] = pt->heap[c];
        i = c;
    }
    if (pt->n)
        pt->heap[i] = last;
    return top;
}

static void track(_Atomic int *count, _Atomic int *max, int delta)
{
    int v = atomic_fetch_add(count, delta) + delta;
    int m = atomic_load(max);
    while (v > m && !atomic_compare_exchange_weak(max, &m, v))
        ;
}

/* The value a destination holds for an attribute before anyone sets it. */
static void initial_value(const sim_dest *t, uint16_t attr, uint32_t mod, uint8_t *out)
{
    uint64_t h = dest_key(&t->d) ^ ((uint64_t)attr << 32 | mod);
    for (int i = 0; i < SMP_DATA_SIZE; i += 8) {
        h = cb_mix64(h);
        memcpy(out + i, &h, 8);
    }
}

static int port_send(void *port, const smp_dest *d, const uint8_t *caller_mad, int timeout_ms)
{
    sim_port *pt = port;
    /* the MAD as it leaves the port: the agent's id in the TID's high half */
    uint8_t mad[SMP_MAD_SIZE];
    memcpy(mad, caller_mad, SMP_MAD_SIZE);
    for (int i = 0; i < 4; i++)
        mad[8 + i] = (uint8_t)(pt->agent_tid >> (24 - 8 * i));
    smt_sim *f = pt->f;
    sim_event *e = new_event(pt);
    if (!e)
        return -ENOMEM;
    uint64_t now = cb_now_ns();
    uint64_t timeout_at = now + (uint64_t)timeout_ms * 1000000ULL;
    int di = find_dest(f, d);
    e->dest = di;
    sim_dest *t = di >= 0 ? &f->dests[di] : NULL;
    int lost = !t || t->dead || (f->p.loss > 0 && rnd01(pt) < f->p.loss);
    int failing = f->p.error > 0 && rnd01(pt) < f->p.error;
    uint64_t jitter = f->p.jitter_ns ? rnd(pt) % (f->p.jitter_ns + 1) : 0;
    if (t) {
        atomic_fetch_add(&t->sent, 1);
        track(&t->in_flight, &t->max_in_flight, 1);
    }
    track(&f->in_flight, &f->max_in_flight, 1);
    if (lost) {
        if (t)
            atomic_fetch_add(&t->lost, 1);
        e->due = timeout_at;
        e->rep.kind = SMT_REPLY_TIMEOUT;
        memcpy(e->rep.mad, mad, SMP_MAD_SIZE);
        return heap_push(pt, e);
    }
    uint64_t arrival = now + f->p.rtt_ns / 2;
    pthread_mutex_lock(&t->lock);
    /* MADs already started leave the queue */
    while (t->count && t->starts[t->head] <= arrival) {
        t->head = (t->head + 1) % t->cap;
        t->count--;
    }
    if (f->p.queue > 0 && t->count >= (size_t)f->p.queue) {
        pthread_mutex_unlock(&t->lock);
        atomic_fetch_add(&t->dropped, 1);
        e->due = timeout_at;
        e->rep.kind = SMT_REPLY_TIMEOUT;
        memcpy(e->rep.mad, mad, SMP_MAD_SIZE);
        return heap_push(pt, e);
    }
    uint64_t start = t->busy_until > arrival ? t->busy_until : arrival;
    t->busy_until = start + f->p.service_ns;
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        uint64_t *s = malloc(cap * sizeof *s);
        if (!s) {
            pthread_mutex_unlock(&t->lock);
            free_event(pt, e);
            return -ENOMEM;
        }
        for (size_t i = 0; i < t->count; i++)
            s[i] = t->starts[(t->head + i) % t->cap];
        free(t->starts);
        t->starts = s;
        t->head = 0;
        t->cap = cap;
    }
    t->starts[(t->head + t->count++) % t->cap] = start;
    /* the agent's value of this attribute: a SET changes it, a GET reads it */
    uint16_t attr = (uint16_t)(mad[16] << 8 | mad[17]);
    uint32_t mod = (uint32_t)mad[20] << 24 | (uint32_t)mad[21] << 16 | (uint32_t)mad[22] << 8 | mad[23];
    if (!t->have_value || t->attr != attr || t->mod != mod) {
        initial_value(t, attr, mod, t->value);
        t->attr = attr;
        t->mod = mod;
        t->have_value = 1;
    }
    if (!failing && mad[3] == SMP_METHOD_SET)
        memcpy(t->value, smp_data(mad), SMP_DATA_SIZE);
    smp_make_response(e->rep.mad, mad, failing ? 0x000c : 0, t->value); /* 0x0c: unsupported */
    pthread_mutex_unlock(&t->lock);
    e->rep.kind = SMT_REPLY_OK;
    e->due = start + f->p.service_ns + f->p.rtt_ns / 2 + jitter;
    if (e->due > timeout_at) { /* too late: the port reports a timeout instead */
        e->due = timeout_at;
        e->rep.kind = SMT_REPLY_TIMEOUT;
        memcpy(e->rep.mad, mad, SMP_MAD_SIZE);
    } else {
        atomic_fetch_add(&t->answered, 1);
        if (failing)
            atomic_fetch_add(&t->errors, 1);
    }
    return heap_push(pt, e);
}

static int port_poll(void *port, uint64_t wait_us, smt_reply *out, int max)
{
    sim_port *pt = port;
    smt_sim *f = pt->f;
    uint64_t deadline = cb_now_ns() + wait_us * 1000;
    for (;;) {
        uint64_t now = cb_now_ns();
        int n = 0;
        while (n < max && pt->n && pt->heap[0]->due <= now) {
            sim_event *e = heap_pop(pt);
            out[n++] = e->rep;
            if (e->dest >= 0)
                atomic_fetch_sub(&f->dests[e->dest].in_flight, 1);
            atomic_fetch_sub(&f->in_flight, 1);
            free_event(pt, e);
        }
        if (n || now >= deadline)
            return n;
        uint64_t wake = pt->n && pt->heap[0]->due < deadline ? pt->heap[0]->due : deadline;
        cb_sleep_until_ns(wake);
    }
}

smt_transport smt_sim_transport(smt_sim *f)
{
    smt_transport t = {
        .name = "simulated fabric",
        .ctx = f,
        .open = port_open,
        .send = port_send,
        .poll = port_poll,
        .close = port_close,
    };
    return t;
}
