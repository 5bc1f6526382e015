/* Addresses, interfaces, socket buffers, preflight and drop counters (eth_net.h). */
#define _GNU_SOURCE /* sendmmsg, recvmmsg, CPU_SET, pthread_setaffinity_np */
#include "eth_net.h"
#include "../common/cb_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void addr_text(et_addr *a)
{
    char host[INET6_ADDRSTRLEN] = "?";
    getnameinfo((struct sockaddr *)&a->ss, a->len, host, sizeof host, NULL, 0, NI_NUMERICHOST);
    snprintf(a->text, sizeof a->text, "%s", host);
}

int et_resolve(const char *host, uint16_t port, et_addr *a, char *err, size_t errlen)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, rc ? gai_strerror(rc) : "no address");
        return -1;
    }
    /* Prefer IPv4: it is what the compliance setups use. */
    struct addrinfo *pick = res;
    for (struct addrinfo *r = res; r; r = r->ai_next)
        if (r->ai_family == AF_INET) {
            pick = r;
            break;
        }
    memset(a, 0, sizeof *a);
    memcpy(&a->ss, pick->ai_addr, pick->ai_addrlen);
    a->len = pick->ai_addrlen;
    freeaddrinfo(res);
    et_addr_set_port(a, port);
    addr_text(a);
    return 0;
}

void et_addr_set_port(et_addr *a, uint16_t port)
{
    if (a->ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&a->ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)&a->ss)->sin6_port = htons(port);
}

int et_ip_udp_overhead(const et_addr *a)
{
    return a->ss.ss_family == AF_INET6 ? 40 + 8 : 20 + 8;
}

static int same_host(const struct sockaddr *x, const struct sockaddr_storage *y)
{
    if (x->sa_family != y->ss_family)
        return 0;
    if (x->sa_family == AF_INET)
        return ((const struct sockaddr_in *)x)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)y)->sin_addr.s_addr;
    if (x->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)x)->sin6_addr,
                      &((const struct sockaddr_in6 *)y)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return 0;
}

int et_iface_of_addr(const et_addr *a, char *ifname)
{
    struct ifaddrs *ifs = NULL;
    int found = -1;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && same_host(i->ifa_addr, &a->ss)) {
            snprintf(ifname, IFNAMSIZ, "%s", i->ifa_name);
            found = 0;
            break;
        }
    freeifaddrs(ifs);
    return found;
}

int et_addr_of_iface(const char *ifname, et_addr *a)
{
    struct ifaddrs *ifs = NULL;
    int found = -1;
    if (getifaddrs(&ifs) != 0)
        return -1;
    for (int want = AF_INET; found != 0 && want; want = want == AF_INET ? AF_INET6 : 0)
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != want || strcmp(i->ifa_name, ifname) != 0)
                continue;
            if (want == AF_INET6 &&
                IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr))
                continue;
            memset(a, 0, sizeof *a);
            a->len = want == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
            memcpy(&a->ss, i->ifa_addr, a->len);
            addr_text(a);
            found = 0;
            break;
        }
    freeifaddrs(ifs);
    return found;
}

int et_route_iface(const et_addr *dst, char *ifname, et_addr *local)
{
    int fd = socket(dst->ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    int rc = -1;
    if (connect(fd, (const struct sockaddr *)&dst->ss, dst->len) == 0) {
        memset(local, 0, sizeof *local);
        local->len = sizeof local->ss;
        if (getsockname(fd, (struct sockaddr *)&local->ss, &local->len) == 0) {
            addr_text(local);
            rc = et_iface_of_addr(local, ifname);
        }
    }
    close(fd);
    return rc;
}

int et_iface_mtu(const char *ifname)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", ifname);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    int rc = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rc == 0 ? ifr.ifr_mtu : -1;
}

long et_set_sockbuf(int fd, int rcv, long asked, int *forced)
{
    int v = asked > 0x3fffffff ? 0x3fffffff : (int)asked;
    *forced = setsockopt(fd, SOL_SOCKET, rcv ? SO_RCVBUFFORCE : SO_SNDBUFFORCE, &v, sizeof v) == 0;
    if (!*forced)
        setsockopt(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF, &v, sizeof v);
    int got = 0;
    socklen_t len = sizeof got;
    getsockopt(fd, SOL_SOCKET, rcv ? SO_RCVBUF : SO_SNDBUF, &got, &len);
    return got / 2; /* the kernel doubles the request for its bookkeeping */
}

/* ---- preflight ------------------------------------------------------------------ */
/* The compliance document's "Tips to increase performance" for eth-test: generated by
 * kernel.mk from their one list, python/cobalt_bench/data/net-sysctls.tsv, which
 * `cobalt-bench preflight` reads too. */
typedef struct et_sysctl {
    const char *name;      /* net.core.rmem_max */
    const char *tip;       /* the document's value */
    char value[64];        /* what this namespace says; "" when not visible */
} et_sysctl;

#define ET_NET_SYSCTL(name, tip) {name, tip},
static const struct {
    const char *name, *tip;
} tips[] = {
#include "net_sysctls.h"
};
#undef ET_NET_SYSCTL
#define ET_NSYSCTL ((int)(sizeof tips / sizeof tips[0]))

static int read_sysctl(const char *name, char *buf, size_t len)
{
    char path[128] = "/proc/sys/";
    size_t n = strlen(path);
    for (const char *p = name; *p && n + 1 < sizeof path; p++)
        path[n++] = *p == '.' ? '/' : *p;
    path[n] = '\0';
    if (cb_read_first_line(path, buf, len) != 0)
        return -1;
    for (char *p = buf; *p; p++) /* udp_mem is tab-separated */
        if (*p == '\t')
            *p = ' ';
    return 0;
}

static void sysctls_read(et_sysctl s[ET_NSYSCTL])
{
    for (int i = 0; i < ET_NSYSCTL; i++) {
        s[i].name = tips[i].name;
        s[i].tip = tips[i].tip;
        if (read_sysctl(s[i].name, s[i].value, sizeof s[i].value) != 0)
            s[i].value[0] = '\0';
    }
}

long et_sysctl_long(const char *name)
{
    char buf[64];
    if (read_sysctl(name, buf, sizeof buf) != 0)
        return -1;
    char *end;
    long v = strtol(buf, &end, 10);
    return end == buf ? -1 : v;
}

/* 1 if the value is below the tip (numbers compared field by field), 0 if not,
 * -1 if unknown. */
static int sysctl_below_tip(const et_sysctl *s)
{
    if (!s->value[0])
        return -1;
    const char *v = s->value, *t = s->tip;
    int below = 0;
    while (*t) {
        char *ve, *te;
        long long vv = strtoll(v, &ve, 10), tv = strtoll(t, &te, 10);
        if (ve == v || te == t)
            return -1;
        if (vv < tv)
            below = 1;
        v = ve;
        t = te;
        while (*t == ' ')
            t++;
    }
    return below;
}

void et_preflight_print(FILE *f, const char *ifname, const et_addr *addr, uint32_t datagram)
{
    int mtu = ifname ? et_iface_mtu(ifname) : -1;
    int frame = (int)datagram + et_ip_udp_overhead(addr);
    fprintf(f, "Preflight:\n");
    if (mtu > 0) {
        fprintf(f, "  interface %s (%s): MTU %d, jumbo frames %s\n", ifname, addr->text, mtu,
                mtu >= 9000 ? "on" : "off");
        if (datagram == 0) /* the receiver: it learns the size from the sender */
            fprintf(f, "  datagrams up to %d B fit one frame (eth-test-send's default of 8900 B %s)\n",
                    mtu - et_ip_udp_overhead(addr),
                    8900 + et_ip_udp_overhead(addr) <= mtu ? "does" : "does NOT: LIMIT: enable jumbo frames");
        else if (frame <= mtu)
            fprintf(f, "  datagram %u B + %d B IP/UDP headers = %d B: fits one frame\n", datagram,
                    frame - (int)datagram, frame);
        else
            fprintf(f, "  datagram %u B + %d B IP/UDP headers = %d B > MTU %d: LIMIT: every "
                       "datagram is fragmented (a lost fragment loses the datagram); enable jumbo "
                       "frames: ip link set %s mtu 9000\n",
                    datagram, frame - (int)datagram, frame, mtu, ifname);
    } else {
        fprintf(f, "  interface for %s: unknown (MTU not checked)\n", addr->text);
    }
    et_sysctl s[ET_NSYSCTL];
    sysctls_read(s);
    for (int i = 0; i < ET_NSYSCTL; i++) {
        int below = sysctl_below_tip(&s[i]);
        fprintf(f, "  sysctl %-28s %-22s (tip: %s)%s\n", s[i].name,
                s[i].value[0] ? s[i].value : "-", s[i].tip,
                below < 0 ? " not visible in this network namespace"
                          : below ? " below the tip" : "");
    }
}

/* ---- drop counters ---------------------------------------------------------------- */
/* Value of column `field` in /proc/net/snmp's `proto` lines; 0 if absent. */
static int snmp_field(const char *text, const char *proto, const char *field, uint64_t *out)
{
    size_t plen = strlen(proto);
    const char *hdr = NULL, *val = NULL;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, proto, plen) == 0 && line[plen] == ':') {
            if (!hdr)
                hdr = line + plen + 1;
            else {
                val = line + plen + 1;
                break;
            }
        }
    }
    if (!hdr || !val)
        return -1;
    size_t flen = strlen(field);
    for (;;) {
        while (*hdr == ' ')
            hdr++;
        while (*val == ' ')
            val++;
        if (*hdr == '\n' || *hdr == '\0' || *val == '\n' || *val == '\0')
            return -1;
        size_t n = strcspn(hdr, " \n");
        if (n == flen && strncmp(hdr, field, n) == 0) {
            *out = strtoull(val, NULL, 10);
            return 0;
        }
        hdr += n;
        val += strcspn(val, " \n");
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
        if (len + 1 >= cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

void et_counters_read(et_counters *c, const char *ifname)
{
    memset(c, 0, sizeof *c);
    char *snmp = slurp("/proc/net/snmp");
    if (snmp) {
        c->have_snmp = snmp_field(snmp, "Udp", "InErrors", &c->udp_in_errors) == 0;
        snmp_field(snmp, "Udp", "RcvbufErrors", &c->udp_rcvbuf_errors);
        snmp_field(snmp, "Udp", "SndbufErrors", &c->udp_sndbuf_errors);
        snmp_field(snmp, "Udp", "MemErrors", &c->udp_mem_errors);
        snmp_field(snmp, "Ip", "ReasmFails", &c->ip_reasm_fails);
        free(snmp);
    }
    char *softnet = slurp("/proc/net/softnet_stat");
    if (softnet) {
        c->have_softnet = 1;
        for (char *line = softnet; *line;) {
            unsigned long long processed, dropped;
            if (sscanf(line, "%llx %llx", &processed, &dropped) == 2)
                c->softnet_dropped += dropped;
            char *nl = strchr(line, '\n');
            if (!nl)
                break;
            line = nl + 1;
        }
        free(softnet);
    }
    char *dev = ifname ? slurp("/proc/net/dev") : NULL;
    if (dev) {
        for (char *line = dev; *line;) {
            char name[64];
            unsigned long long v[16];
            char *colon = strchr(line, ':');
            char *nl = strchr(line, '\n');
            if (colon && (!nl || colon < nl)) {
                size_t n = (size_t)(colon - line);
                while (n && *line == ' ') {
                    line++;
                    n--;
                }
                if (n < sizeof name) {
                    memcpy(name, line, n);
                    name[n] = '\0';
                    if (strcmp(name, ifname) == 0 &&
                        sscanf(colon + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
                               &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                               &v[10], &v[11]) == 12) {
                        c->have_dev = 1;
                        c->dev_rx_errors = v[2];
                        c->dev_rx_dropped = v[3] + v[4]; /* drop + fifo (overruns) */
                        c->dev_tx_dropped = v[11];
                    }
                }
            }
            if (!nl)
                break;
            line = nl + 1;
        }
        free(dev);
    }
}

void et_place_thread(int cpu, int rt_priority, int warn)
{
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    if (rt_priority) {
        struct sched_param sp = {.sched_priority = rt_priority};
        int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
        if (e && warn)
            cb_warn("--rt-priority %d: %s (needs root or CAP_SYS_NICE); running at normal priority",
                    rt_priority, strerror(e));
    }
}

void et_check_cpus(const int *cpus, int n)
{
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    for (int i = 0; i < n; i++)
        if (cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cpus[i], &allowed))
            cb_die(CB_EXIT_CANNOT_RUN, "CPU %d is not available to this process (--cpu)", cpus[i]);
}

void et_opt_session(const char *opt, const char *arg, void *dest)
{
    /* the strict parser: " -1" or "+1" must not wrap or slip through strtoull */
    uint64_t v;
    if (cb_parse_u64(arg, 0, &v) != 0 || v == 0)
        cb_usage_error("invalid value '%s' for %s: a number from 1 to 2^64-1", arg, opt);
    *(uint64_t *)dest = v;
}
