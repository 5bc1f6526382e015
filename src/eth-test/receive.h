/* eth-test-receive's run state, shared by its stages: receive_plan.c plans (address,
 * sockets, receivers), receive_thread.c is one receiver thread, eth-test-receive.c runs
 * them and collects the totals, receive_report.c reports, diagnoses and emits. The files
 * that include it define _GNU_SOURCE first (recvmmsg's struct mmsghdr). */
#ifndef ET_RECEIVE_H
#define ET_RECEIVE_H

#include "../common/cb_common.h"
#include "eth_net.h"
#include "eth_proto.h"
#include "receive_options.h"

#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#define SLOT_BYTES 65536 /* any UDP datagram fits; larger ones show as truncated */
/* Slots a power of two apart would all fall into the same cache sets: offset them. */
#define SLOT_STRIDE (SLOT_BYTES + 5 * 64)
#define CTRL_BYTES 128   /* room for the SO_RXQ_OVFL drop counter, a timestamp, UDP_GRO */
#define SEQ_WINDOW (1u << 20)
#define LINGER_S 0.2     /* after the last end record, wait this long for stragglers */

typedef struct recv_run recv_run;

typedef struct receiver {
    recv_run *run;               /* the run it belongs to */
    int index, cpu;
    int nsocks, *sock;           /* socket numbers this thread owns (stream: / --reuseport) */
    pthread_t th;
    struct mmsghdr *msgs;
    struct iovec *iov;
    unsigned char *bufs, *ctrl;
    /* classification counts (this thread's) */
    uint64_t datagrams, malformed[ET_NPARSE], truncated, foreign, misdirected;
    uint64_t rejected[ET_NREJECT]; /* those found before a stream's accounting */
    uint64_t gro_receives, gro_datagrams; /* receives that held several datagrams (UDP GRO) */
    int alive;                   /* the batch had a datagram of the session */
    uint64_t first_ns, last_ns, bytes;  /* this machine's monotonic clock, at recvmmsg */
    /* The kernel's receive timestamps (CLOCK_REALTIME, ns) of the first and the last
     * packet counted, and the first one's size: the speed's time base. */
    int64_t first_ts, last_ts;
    uint64_t first_len;
    _Atomic uint64_t progress_bytes;
    char error[256];
} receiver;

enum outcome { RUNNING, DONE, IDLE, NO_SENDER, FAILED, INTERRUPTED };

typedef struct totals {
    uint64_t session;
    int nstreams, counted, missing_streams, exact, passed;
    uint64_t sent, received, lost, dups, reord, stale, corrupt, beyond, bytes, send_ns, drops;
    uint64_t datagrams, malformed, by_reason[ET_NPARSE], truncated, foreign, misdirected;
    uint64_t rejected, rejected_by[ET_NREJECT], gro_receives, gro_datagrams;
    double rx_s, arrival_s, send_s, total_speed, sender_speed, loss_pct;
} totals;

/* Everything one run of eth-test-receive knows, stage by stage: plan (options, address,
 * sockets, receivers), run (the receiver threads, watched), collect (totals), diagnose
 * (the kernel's counters), emit (report and document). */
struct recv_run {
    recv_cfg cfg;
    char started[32];
    et_addr addr;
    char ifname[IFNAMSIZ];
    int nsock, *fd;              /* --reuseport sockets per stream: stream j's are j*N.. */
    long granted;                /* the receive buffer the kernel gave */
    int forced;                  /* through SO_RCVBUFFORCE */
    et_stream *st;               /* per stream, touched only by its sockets' owner threads */
    pthread_mutex_t *st_mu;      /* per stream, when several threads share it (--reuseport) */
    _Atomic uint32_t *sock_drops;/* per socket: the kernel's drop count (SO_RXQ_OVFL) */
    receiver *rx;
    /* Shared between the receiver threads and the main thread. */
    _Atomic uint64_t session;    /* 0 until locked (published after session_nstreams) */
    _Atomic uint32_t session_nstreams;
    /* Until the session is locked, the threads offer datagrams to one et_lock. */
    pthread_mutex_t lock_mu;
    et_lock lock;
    _Atomic int ended_streams, complete_streams, stop;
    _Atomic uint64_t last_packet_ns;
    /* The kernel's drop counters around the run, and how it ended. */
    et_counters before, after;
    enum outcome how;
    totals T;
};

/* receive_plan.c: the address, the preflight, the sockets and the receivers' state */
void recv_plan(recv_run *run);
/* receive_thread.c: one receiver thread (a receiver *), and the kernel's drops at stream
 * j's sockets as the receivers recorded them */
void *recv_thread_main(void *arg);
uint64_t recv_stream_drops(const recv_run *run, int j);
/* receive_report.c: the report, the diagnosis, the JSON document and the results block;
 * returns the exit status */
int recv_emit(const recv_run *run);

#endif
