/* The MAD window of smp-mad-stress: keeps at most dest_depth MADs on the wire
 * to each destination and at most local_depth from the local port (all
 * workers together), sends and receives from each worker thread by polling,
 * times out, retries and counts. It talks to the fabric only through a
 * transport (below): libibumad on a real port (umad_transport.c), or the
 * in-process simulated fabric (sim_transport.c) that --simulate and the unit
 * tests use where there is no InfiniBand. */
#ifndef SMP_WINDOW_H
#define SMP_WINDOW_H

#include "smp_mad.h"

#include <stdatomic.h>

/* ---- transport ------------------------------------------------------------ */
enum { SMT_REPLY_OK = 0, SMT_REPLY_TIMEOUT = 1, SMT_REPLY_FAILED = 2 };

/* What a port hands back for one MAD sent: the response (OK), or the request
 * itself with TIMEOUT (no response within its timeout, as the kernel's umad
 * agent reports it) or FAILED (the send did not complete). */
typedef struct smt_reply {
    int kind;
    uint8_t mad[SMP_MAD_SIZE];
} smt_reply;

typedef struct smt_transport {
    const char *name;
    void *ctx;
    /* One port per worker. Returns 0, or a negative errno with err filled. */
    int (*open)(void *ctx, int worker, void **port, char *err, size_t errlen);
    /* Sends mad (SMP_MAD_SIZE bytes) to d; a reply comes from poll within
     * about timeout_ms. Returns 0, -EAGAIN when the port is busy (try after a
     * poll), or another negative errno. */
    int (*send)(void *port, const smp_dest *d, const uint8_t *mad, int timeout_ms);
    /* Waits up to wait_us for replies; returns how many it wrote (0..max), or
     * a negative errno. */
    int (*poll)(void *port, uint64_t wait_us, smt_reply *out, int max);
    void (*close)(void *port);
} smt_transport;

/* ---- the run -------------------------------------------------------------- */
typedef struct smt_config {
    smp_request req;
    smp_dest *dests;
    int ndests;
    int dest_depth;     /* -n: MADs on the wire per destination */
    int local_depth;    /* -N: MADs on the wire from the local port */
    int workers;        /* -p */
    int timeout_ms;     /* --timeout: per attempt */
    int retries;        /* -r: re-sends after a timeout */
    double duration_s;  /* -d */
    const smt_transport *tp;
    /* MPI mode: called by the (single) worker before each send round with
     * whether it wants another round; returns whether all ranks go on. NULL:
     * the window is refilled continuously. */
    int (*round_sync)(void *arg, int want_more);
    void *round_arg;
    /* progress lines on stderr every second (NULL: none) */
    int progress;
} smt_config;

/* Per destination (summed over workers). */
typedef struct smt_dest_stats {
    uint64_t sent;         /* MADs sent (first attempts) */
    uint64_t answered;     /* responses (any MAD status) */
    uint64_t answered_in_time; /* responses within the timed period (for MAD/s) */
    uint64_t ok;           /* responses with status 0 that passed the checks */
    uint64_t status_errors;/* responses with a non-zero MAD status */
    uint64_t bad;          /* responses that failed the checks (wrong TID, data...) */
    uint64_t timeouts;     /* attempts without a response in time */
    uint64_t retries;      /* re-sends after a timeout */
    uint64_t drops;        /* MADs without any response after all retries */
    uint64_t send_failures;/* sends the port refused or could not complete */
    smp_hist latency;      /* first send to response, answered MADs */
    uint16_t last_status;
    char first_problem[160];
} smt_dest_stats;

/* a += b: the counters, the latency histogram and the last status (not first_problem,
 * whose wording each caller chooses). */
void smt_dest_stats_add(smt_dest_stats *a, const smt_dest_stats *b);

typedef struct smt_result {
    smt_dest_stats *dest;  /* ndests entries */
    smt_dest_stats total;
    double elapsed_s;      /* the timed period */
    double drain_s;        /* waiting for the MADs still on the wire after it */
    int max_local_in_flight;
    int *max_dest_in_flight; /* ndests entries */
    uint64_t stale;        /* replies to no MAD on the wire (late after a timeout) */
    uint64_t rounds;       /* MPI mode: send rounds */
    int interrupted;       /* a signal (cb_interrupted) stopped the run before its end */
    uint64_t abandoned;    /* interrupted: MADs still on the wire, neither answered nor
                              dropped (their retries were not sent) */
    char error[256];       /* a fatal error, if smt_run returned non-zero */
} smt_result;

/* Checks a configuration; returns NULL or why it cannot run. */
const char *smt_config_check(const smt_config *c);

/* Runs the workload. SIGINT, SIGTERM or SIGHUP (cb_interrupted, after cb_signals_install)
 * stops the sending at once; the MADs on the wire get one timeout's time to answer, without
 * retries; r->elapsed_s is then the time up to the signal. For SET it first reads each destination's current value
 * (one GET each) and then sets that value, so the fabric's state does not
 * change. Returns 0, or -1 with r->error set (a port could not be opened, a
 * send failed hard, a destination did not answer the GET before a SET). */
int smt_run(const smt_config *c, smt_result *r);
void smt_result_free(smt_result *r);

#endif
