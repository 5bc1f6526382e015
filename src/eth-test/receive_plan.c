/* eth-test-receive's plan: the address under test, the preflight, the sockets (one per
 * stream, or --reuseport of them, spread at random) and the receiver threads' state. */
#define _GNU_SOURCE /* struct mmsghdr */
#include "receive.h"

#include <errno.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void find_address(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    char err[256];
    if (cfg->iface) {
        if (if_nametoindex(cfg->iface) == 0)
            cb_die(CB_EXIT_CANNOT_RUN, "no interface '%s' on this machine", cfg->iface);
        if (et_addr_of_iface(cfg->iface, &run->addr) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "interface '%s' has no IP address", cfg->iface);
        snprintf(run->ifname, sizeof run->ifname, "%s", cfg->iface);
        return;
    }
    if (et_resolve(cfg->host, (uint16_t)cfg->port, &run->addr, err, sizeof err) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s", err);
    if (et_iface_of_addr(&run->addr, run->ifname) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "%s (%s) is not an address of this machine: run eth-test-receive "
               "on the machine under test, with the address of the interface to test",
               cfg->host, run->addr.text);
}

/* Several sockets on one port (--reuseport): the kernel would give all of one flow's
 * datagrams to the same socket (it picks by a hash of the addresses); this classic BPF
 * program, attached to the port's group, picks one at random for each receive. */
static void spread_at_random(int fd, int nsockets)
{
    struct sock_filter code[] = {
        {BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)(SKF_AD_OFF + SKF_AD_RANDOM)},
        {BPF_ALU | BPF_MOD | BPF_K, 0, 0, (uint32_t)nsockets},
        {BPF_RET | BPF_A, 0, 0, 0},
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "--reuseport: cannot attach the program that spreads datagrams "
               "over the sockets (SO_ATTACH_REUSEPORT_CBPF): %s", strerror(errno));
}

/* Socket sk (stream sk / --reuseport), with its options, bound to the stream's port. */
static int open_socket(recv_run *run, int sk)
{
    const recv_cfg *cfg = &run->cfg;
    int j = sk / cfg->reuseport, one = 1;
    et_addr a = run->addr;
    et_addr_set_port(&a, (uint16_t)(cfg->port + j));
    int fd = socket(a.ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        cb_die(CB_EXIT_CANNOT_RUN, "socket: %s", strerror(errno));
    run->granted = et_set_sockbuf(fd, 1, (long)cfg->rcvbuf, &run->forced);
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
    if (cfg->gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "this kernel refuses UDP GRO (UDP_GRO): %s; use --gro off",
               strerror(errno));
    if (cfg->busy_poll_us > 0 &&
        setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &cfg->busy_poll_us, sizeof cfg->busy_poll_us) != 0 &&
        sk == 0)
        cb_warn("SO_BUSY_POLL %d us refused (%s): spinning in user space only; raising it above "
                "net.core.busy_read needs CAP_NET_ADMIN", cfg->busy_poll_us, strerror(errno));
    if (cfg->reuseport > 1) {
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "--reuseport: SO_REUSEPORT refused: %s", strerror(errno));
        if (sk % cfg->reuseport == 0) /* the first of the port's group, before it is bound */
            spread_at_random(fd, cfg->reuseport);
    }
    if (bind(fd, (struct sockaddr *)&a.ss, a.len) != 0)
        cb_die(CB_EXIT_CANNOT_RUN, "cannot listen on %s port %d: %s", a.text, cfg->port + j,
               strerror(errno));
    return fd;
}

static void open_sockets(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    run->nsock = cfg->streams * cfg->reuseport;
    run->fd = calloc((size_t)run->nsock, sizeof *run->fd);
    if (!run->fd)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int sk = 0; sk < run->nsock; sk++)
        run->fd[sk] = open_socket(run, sk);
    fprintf(cb_human(), "  socket receive buffer: asked %zu B per socket, granted %ld B%s\n", cfg->rcvbuf,
           run->granted, run->forced ? " (SO_RCVBUFFORCE)" : "");
    /* what of Linux's receive path this run uses */
    fprintf(cb_human(), "  receive path: recvmmsg batches of %d, UDP GRO %s, %d socket%s per port%s, "
            "%d thread%s, busy polling %s\n", cfg->batch, cfg->gro ? "on" : "off", cfg->reuseport,
            cfg->reuseport > 1 ? "s" : "", cfg->reuseport > 1 ? " (SO_REUSEPORT, spread at random)" : "",
            cfg->threads, cfg->threads > 1 ? "s" : "",
            cfg->busy_poll_us > 0 ? "on (SO_BUSY_POLL)" : cfg->busy_poll_us < 0 ? "on (spinning only)" : "off");
    if (run->granted < (long)cfg->rcvbuf)
        cb_warn("the kernel granted a receive buffer of %ld B of the %zu B asked: net.core.rmem_max is %ld "
                "(raise it: sysctl -w net.core.rmem_max=%zu, or run as root to use SO_RCVBUFFORCE)",
                run->granted, cfg->rcvbuf, et_sysctl_long("net.core.rmem_max"), cfg->rcvbuf);
}

/* Per-stream state and the receiver threads' buffers; sockets dealt out round-robin. */
static void make_receivers(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    run->st = calloc((size_t)cfg->streams, sizeof *run->st);
    run->sock_drops = calloc((size_t)run->nsock, sizeof *run->sock_drops);
    run->rx = calloc((size_t)cfg->threads, sizeof *run->rx);
    if (!run->st || !run->sock_drops || !run->rx)
        cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    for (int j = 0; j < cfg->streams; j++)
        if (et_stream_init(&run->st[j], SEQ_WINDOW) != 0)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
    if (cfg->reuseport > 1) {
        run->st_mu = calloc((size_t)cfg->streams, sizeof *run->st_mu);
        if (!run->st_mu)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int j = 0; j < cfg->streams; j++)
            pthread_mutex_init(&run->st_mu[j], NULL);
    }
    for (int t = 0; t < cfg->threads; t++) {
        receiver *r = &run->rx[t];
        r->run = run;
        r->index = t;
        r->cpu = cfg->cpus.n ? cfg->cpus.v[t % cfg->cpus.n] : -1;
        r->sock = calloc((size_t)run->nsock, sizeof *r->sock);
        r->msgs = calloc((size_t)cfg->batch, sizeof *r->msgs);
        r->iov = calloc((size_t)cfg->batch, sizeof *r->iov);
        r->bufs = aligned_alloc(64, (size_t)SLOT_STRIDE * cfg->batch);
        r->ctrl = calloc((size_t)cfg->batch, CTRL_BYTES);
        if (!r->sock || !r->msgs || !r->iov || !r->bufs || !r->ctrl)
            cb_die(CB_EXIT_CANNOT_RUN, "out of memory");
        for (int sk = t; sk < run->nsock; sk += cfg->threads)
            r->sock[r->nsocks++] = sk;
        for (int i = 0; i < cfg->batch; i++) {
            r->iov[i].iov_base = r->bufs + (size_t)i * SLOT_STRIDE;
            r->iov[i].iov_len = SLOT_BYTES;
        }
    }
}

/* The address, the preflight, the sockets and the receivers' state. */
void recv_plan(recv_run *run)
{
    const recv_cfg *cfg = &run->cfg;
    cb_iso8601_now(run->started, sizeof run->started);
    if (cfg->json_path && cb_json_path_ok(cfg->json_path) != 0)
        cb_die(CB_EXIT_USAGE, "cannot write the JSON result to %s: no such writable directory",
               cfg->json_path);
    if (cfg->cpus.n)
        et_check_cpus(cfg->cpus.v, cfg->cpus.n);
    find_address(run);
    fprintf(cb_human(), "eth-test-receive %s: %d streams on %s ports %d-%d (interface %s)\n", CB_VERSION,
           cfg->streams, run->addr.text, cfg->port, cfg->port + cfg->streams - 1, run->ifname);
    et_preflight_print(cb_human(), run->ifname, &run->addr, 0);
    open_sockets(run);
    fflush(cb_human());
    make_receivers(run);
    pthread_mutex_init(&run->lock_mu, NULL);
    et_lock_init(&run->lock, cfg->want_session, SEQ_WINDOW / 2);
}
