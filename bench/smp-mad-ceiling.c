/* smp-mad-ceiling: the least a client can do per SMP, to measure the fabric (in practice
 * the ibsim simulator) alone. Part of bench/smp-mad-stress, which compiles and runs it.
 *
 *   smp-mad-ceiling [-C CA] [-P PORT] [-n DEST_DEPTH] [-N LOCAL_DEPTH] [-d SECONDS]
 *                   [-T TIMEOUT_MS] -L LID,LID,... ATTR
 *
 * Opens the port with libibumad, registers for the LID-routed SMP class (0x01), and
 * keeps at most DEST_DEPTH SubnGet(ATTR, modifier 0) on the wire to each LID and at most
 * LOCAL_DEPTH in all, sending the next one as each answer comes, for SECONDS. Answers are
 * matched by transaction id and nothing else; no retries; a MAD unanswered after
 * TIMEOUT_MS is forgotten (counted as lost) so that the window never stalls. Prints one
 * line: mads_per_s=N answered=N sent=N lost=N stale=N unanswered=N seconds=S (the MADs
 * answered within SECONDS, per second). Exit 0, or 1 with a
 * message on stderr. */
#include <errno.h>
#include <infiniband/umad.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { MAD_BYTES = 256, MAX_DESTS = 4096, MAX_SLOTS = 65536 };

struct slot {
    int busy, dest;
    uint32_t tid;
    double sent_at;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put_be16(uint8_t *p, unsigned v) { p[0] = v >> 8; p[1] = v; }
static void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, v >> 16);
    put_be16(p + 2, v & 0xffff);
}

static void die(const char *what, int err)
{
    fprintf(stderr, "smp-mad-ceiling: %s%s%s\n", what, err ? ": " : "", err ? strerror(err) : "");
    exit(1);
}

static void usage(void)
{
    fprintf(stderr, "usage: smp-mad-ceiling [-C CA] [-P PORT] [-n DEST_DEPTH] [-N LOCAL_DEPTH] "
                    "[-d SECONDS] [-T TIMEOUT_MS] -L LID,LID,... ATTR\n");
    exit(2);
}

int main(int argc, char **argv)
{
    char *ca = NULL, *lids = NULL;
    int port = 0, dest_depth = 1, local_depth = 128, timeout_ms = 200, opt;
    double seconds = 2;
    while ((opt = getopt(argc, argv, "C:P:n:N:d:T:L:")) != -1) {
        switch (opt) {
        case 'C': ca = optarg; break;
        case 'P': port = atoi(optarg); break;
        case 'n': dest_depth = atoi(optarg); break;
        case 'N': local_depth = atoi(optarg); break;
        case 'd': seconds = atof(optarg); break;
        case 'T': timeout_ms = atoi(optarg); break;
        case 'L': lids = optarg; break;
        default: usage();
        }
    }
    if (!lids || optind != argc - 1 || dest_depth < 1 || local_depth < 1 || seconds <= 0 ||
        timeout_ms < 1)
        usage();
    unsigned attr = (unsigned)strtoul(argv[optind], NULL, 0);

    static int dest_lid[MAX_DESTS], in_flight[MAX_DESTS];
    int ndests = 0;
    for (char *tok = strtok(lids, ","); tok; tok = strtok(NULL, ",")) {
        if (ndests == MAX_DESTS)
            die("too many LIDs", 0);
        dest_lid[ndests++] = (int)strtol(tok, NULL, 0);
    }
    if (!ndests)
        usage();
    int nslots = local_depth < MAX_SLOTS ? local_depth : MAX_SLOTS;
    if ((long)dest_depth * ndests < nslots)
        nslots = dest_depth * ndests;
    struct slot *slots = calloc((size_t)nslots, sizeof *slots);
    int *free_slots = malloc((size_t)nslots * sizeof *free_slots), nfree = 0;
    if (!slots || !free_slots)
        die("out of memory", 0);
    for (int i = nslots - 1; i >= 0; i--)
        free_slots[nfree++] = i;

    if (umad_init() < 0)
        die("umad_init failed", 0);
    int portid = umad_open_port(ca, port);
    if (portid < 0)
        die("umad_open_port", -portid);
    int agent = umad_register(portid, 0x01 /* LID-routed SMP */, 1, 0, NULL);
    if (agent < 0)
        die("umad_register", -agent);
    uint8_t *sbuf = calloc(1, umad_size() + MAD_BYTES);
    uint8_t *rbuf = calloc(1, umad_size() + MAD_BYTES);
    if (!sbuf || !rbuf)
        die("out of memory", 0);

    /* the request, all but its transaction id (bytes 8..15): SubnGet(attr), modifier 0 */
    uint8_t *mad = umad_get_mad(sbuf);
    memset(mad, 0, MAD_BYTES);
    mad[0] = 1;     /* base version */
    mad[1] = 0x01;  /* management class: LID-routed SMP */
    mad[2] = 1;     /* class version */
    mad[3] = 0x01;  /* method: Get */
    put_be16(mad + 16, attr);

    unsigned long long sent = 0, answered = 0, lost = 0, stale = 0;
    uint16_t gen = 0;
    int next = 0, busy = 0;
    double start = now_s(), end = start + seconds, sweep_at = start + 0.05;
    /* after the timed period, the MADs still on the wire are waited for (uncounted, at
     * most one timeout): the simulator's preload can hang at exit with answers unread */
    double drain_end = end + timeout_ms / 1000.0;
    for (;;) {
        double t = now_s();
        if (t >= drain_end || (t >= end && !busy))
            break;
        /* fill: round-robin over the LIDs with room, while a slot is free */
        for (int idle = 0; t < end && nfree && idle < ndests;) {
            int d = next;
            next = (next + 1) % ndests;
            if (in_flight[d] >= dest_depth) {
                idle++;
                continue;
            }
            int i = free_slots[--nfree];
            uint32_t tid = (uint32_t)++gen << 16 | (uint32_t)i;
            put_be32(mad + 8, 0);
            put_be32(mad + 12, tid);
            umad_set_addr(sbuf, dest_lid[d], 0, 0, 0);
            int rc = umad_send(portid, agent, sbuf, MAD_BYTES, timeout_ms, 0);
            if (rc < 0) {
                free_slots[nfree++] = i;
                if (rc == -EWOULDBLOCK || rc == -ENOBUFS)
                    break;
                die("umad_send", -rc);
            }
            slots[i] = (struct slot){1, d, tid, now_s()};
            in_flight[d]++;
            busy++;
            sent++;
            idle = 0;
        }
        /* a wait of up to 50 ms for an answer, then every answer there is (the port's
         * reads do not block) */
        for (int ready = umad_poll(portid, 50) == 0; ready;) {
            int len = MAD_BYTES;
            int rc = umad_recv(portid, rbuf, &len, 0);
            if (rc == -EWOULDBLOCK || rc == -ETIMEDOUT || rc == -EINTR)
                break;
            if (rc < 0)
                die("umad_recv", -rc);
            if (rc != agent)
                continue;
            const uint8_t *r = umad_get_mad(rbuf);
            uint32_t tid = (uint32_t)r[12] << 24 | (uint32_t)r[13] << 16 |
                           (uint32_t)r[14] << 8 | r[15];
            int i = (int)(tid & 0xffff);
            if (i >= nslots || !slots[i].busy || slots[i].tid != tid) {
                stale++;
                continue;
            }
            if (umad_status(rbuf) != 0)
                lost++;     /* the port reported it timed out or unsent */
            else if (now_s() <= end)
                answered++;
            slots[i].busy = 0;
            in_flight[slots[i].dest]--;
            busy--;
            free_slots[nfree++] = i;
        }
        /* a few times a second: forget what outlived its timeout */
        t = now_s();
        if (t >= sweep_at) {
            sweep_at = t + 0.05;
            for (int i = 0; i < nslots; i++)
                if (slots[i].busy && t - slots[i].sent_at > timeout_ms / 1000.0) {
                    slots[i].busy = 0;
                    in_flight[slots[i].dest]--;
                    busy--;
                    free_slots[nfree++] = i;
                    lost++;
                }
        }
    }
    printf("mads_per_s=%.0f answered=%llu sent=%llu lost=%llu stale=%llu unanswered=%d "
           "seconds=%g\n", answered / seconds, answered, sent, lost, stale, busy, seconds);
    fflush(stdout);
    umad_unregister(portid, agent);
    umad_close_port(portid);
    return 0;
}
