/* SMPs through libibumad: each worker opens the port and registers an agent
 * for the subnet-management class; the kernel matches responses to requests by
 * transaction id and reports a request without a response in its timeout back
 * with status ETIMEDOUT. Retries are the window's (the kernel is asked for
 * none), so that each one is counted. */
#include "umad_transport.h"

#include <errno.h>
#include <infiniband/umad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct uport {
    umad_target *t;
    int portid, agent;
    void *send_buf, *recv_buf;
} uport;

int umad_probe(umad_target *t, char *err, size_t errlen)
{
    if (umad_init() < 0) {
        snprintf(err, errlen, "no InfiniBand stack: umad_init failed (is the ib_umad kernel module loaded?)");
        return -ENODEV;
    }
    umad_ca_t ca;
    /* umad_get_ca, not umad_get_cas_names: the list can name a device whose
     * sysfs entries do not exist */
    int rc = umad_get_ca(t->ca[0] ? t->ca : NULL, &ca);
    if (rc < 0) {
        snprintf(err, errlen,
                 "no InfiniBand device: umad_get_ca(%s) failed: %s (errno %d); this tool needs an "
                 "InfiniBand HCA port and the ib_umad kernel module (/sys/class/infiniband_mad)",
                 t->ca[0] ? t->ca : "default", strerror(-rc), -rc);
        return rc;
    }
    snprintf(t->ca_found, sizeof t->ca_found, "%s", ca.ca_name);
    t->port_found = t->port;
    if (t->port > 0) {
        if (t->port > ca.numports || !ca.ports[t->port]) {
            snprintf(err, errlen, "InfiniBand device %s has no port %d", ca.ca_name, t->port);
            umad_release_ca(&ca);
            return -ENODEV;
        }
        t->base_lid = ca.ports[t->port]->base_lid;
    } else {
        for (int p = 1; p <= ca.numports && p < UMAD_CA_MAX_PORTS; p++)
            if (ca.ports[p] && ca.ports[p]->state == 4 /* active */) {
                t->port_found = p;
                t->base_lid = ca.ports[p]->base_lid;
                break;
            }
    }
    umad_release_ca(&ca);
    return 0;
}

static int port_open(void *ctx, int worker, void **out, char *err, size_t errlen)
{
    umad_target *t = ctx;
    uport *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    p->t = t;
    p->portid = umad_open_port(t->ca_found, t->port_found);
    if (p->portid < 0) {
        int e = p->portid;
        snprintf(err, errlen, "cannot open InfiniBand port %s:%d for worker %d: %s%s",
                 t->ca_found, t->port_found, worker, strerror(-e),
                 e == -EACCES || e == -EPERM ? " (needs root, or read-write access to /dev/infiniband/umad*)" : "");
        free(p);
        return e;
    }
    p->agent = umad_register(p->portid, t->mgmt_class, 1, 0, NULL);
    if (p->agent < 0) {
        int e = p->agent;
        snprintf(err, errlen, "cannot register a subnet-management agent (class 0x%02x) on %s:%d: %s",
                 t->mgmt_class, t->ca_found, t->port_found, strerror(-e));
        umad_close_port(p->portid);
        free(p);
        return e;
    }
    p->send_buf = umad_alloc(1, umad_size() + SMP_MAD_SIZE);
    p->recv_buf = umad_alloc(1, umad_size() + SMP_MAD_SIZE);
    if (!p->send_buf || !p->recv_buf) {
        umad_unregister(p->portid, p->agent);
        umad_close_port(p->portid);
        free(p->send_buf);
        free(p->recv_buf);
        free(p);
        return -ENOMEM;
    }
    *out = p;
    return 0;
}

static int port_send(void *port, const smp_dest *d, const uint8_t *mad, int timeout_ms)
{
    uport *p = port;
    memcpy(umad_get_mad(p->send_buf), mad, SMP_MAD_SIZE);
    /* SMPs go to QP0; a directed route leaves on the permissive LID */
    umad_set_addr(p->send_buf, d->direct ? 0xffff : d->lid, 0, 0, 0);
    int rc = umad_send(p->portid, p->agent, p->send_buf, SMP_MAD_SIZE, timeout_ms, 0);
    if (rc == -EWOULDBLOCK || rc == -ENOBUFS)
        return -EAGAIN;
    return rc;
}

static int port_poll(void *port, uint64_t wait_us, smt_reply *out, int max)
{
    uport *p = port;
    int n = 0;
    int ms = (int)((wait_us + 999) / 1000);
    int rc = umad_poll(p->portid, ms);
    if (rc == -ETIMEDOUT)
        return 0;
    if (rc < 0)
        return rc;
    while (n < max) {
        int len = SMP_MAD_SIZE;
        rc = umad_recv(p->portid, p->recv_buf, &len, 0);
        if (rc == -EWOULDBLOCK || rc == -EAGAIN || rc == -ETIMEDOUT)
            break;
        if (rc < 0)
            return n ? n : rc;
        if (rc != p->agent)
            continue; /* not ours */
        int status = umad_status(p->recv_buf);
        out[n].kind = status == 0 ? SMT_REPLY_OK : status == ETIMEDOUT ? SMT_REPLY_TIMEOUT : SMT_REPLY_FAILED;
        memcpy(out[n].mad, umad_get_mad(p->recv_buf), SMP_MAD_SIZE);
        n++;
    }
    return n;
}

static void port_close(void *port)
{
    uport *p = port;
    umad_unregister(p->portid, p->agent);
    umad_close_port(p->portid);
    umad_free(p->send_buf);
    umad_free(p->recv_buf);
    free(p);
}

smt_transport umad_transport(umad_target *t)
{
    smt_transport tp = {
        .name = "umad",
        .ctx = t,
        .open = port_open,
        .send = port_send,
        .poll = port_poll,
        .close = port_close,
    };
    return tp;
}
