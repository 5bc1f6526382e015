/* eth-test's view of the host's network: addresses and interfaces, socket buffers,
 * the preflight of MTU and sysctls (the compliance document's tips), and the kernel's
 * drop counters that say which limit a lossy run hit. All of it reads the network
 * namespace the process runs in. */
#ifndef ETH_NET_H
#define ETH_NET_H

#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define ET_DEFAULT_PORT 47000
#define ET_STR_(x) #x
#define ET_STR(x) ET_STR_(x) /* ET_STR(ET_DEFAULT_PORT): "47000" */

typedef struct et_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    char text[64];      /* numeric form, for messages */
} et_addr;

/* host (name or numeric) to an address with the given port; 0, or -1 with err set. */
int et_resolve(const char *host, uint16_t port, et_addr *a, char *err, size_t errlen);
void et_addr_set_port(et_addr *a, uint16_t port);
/* IPv4 + UDP or IPv6 + UDP header bytes for this address family. */
int et_ip_udp_overhead(const et_addr *a);

/* The interface that holds address a (ifname IFNAMSIZ bytes); 0 or -1 if none. */
int et_iface_of_addr(const et_addr *a, char *ifname);
/* The first IPv4 (else IPv6, not link-local) address of interface ifname; 0 or -1. */
int et_addr_of_iface(const char *ifname, et_addr *a);
/* The interface a datagram to dst would leave by (asks the routing table through a
 * connected UDP socket); 0 or -1. */
int et_route_iface(const et_addr *dst, char *ifname, et_addr *local);
/* MTU of ifname, or -1. */
int et_iface_mtu(const char *ifname);
/* Pins the calling thread to cpu (if >= 0) and gives it SCHED_FIFO rt_priority (if > 0);
 * when that is not allowed it runs on at normal priority, with a warning if warn. */
void et_place_thread(int cpu, int rt_priority, int warn);
/* Exits 3 naming the first of cpus[] this process may not run on (--cpu). */
void et_check_cpus(const int *cpus, int n);
/* --session (a cb_opt CB_OPT_CUSTOM parser): a number from 1 to 2^64-1 (decimal, 0x
 * hex) into the uint64_t at dest; exits 2 otherwise. */
void et_opt_session(const char *opt, const char *arg, void *dest);

/* Socket buffer of size `asked` (SO_RCVBUF or SO_SNDBUF); as root the *FORCE variant,
 * which is not capped by net.core.[rw]mem_max. Returns the bytes granted (what the
 * kernel will hold, i.e. getsockopt's value halved), *forced says whether FORCE worked. */
long et_set_sockbuf(int fd, int rcv, long asked, int *forced);

/* ---- preflight: the compliance document's tips ------------------------------- */
long et_sysctl_long(const char *name); /* -1 if unreadable */

/* Prints the preflight: interface and MTU (jumbo frames on or off), whether a datagram
 * of `datagram` bytes plus headers fits one frame (0: the receiver, which learns the size
 * from the sender: the largest that fits), and the sysctls against the tips. */
void et_preflight_print(FILE *f, const char *ifname, const et_addr *addr, uint32_t datagram);

/* ---- drop counters ------------------------------------------------------------ */
typedef struct et_counters {
    int have_snmp, have_softnet, have_dev;
    uint64_t udp_in_errors, udp_rcvbuf_errors, udp_mem_errors, udp_sndbuf_errors;
    uint64_t ip_reasm_fails;
    uint64_t softnet_dropped;   /* backlog drops (netdev_max_backlog), all CPUs */
    uint64_t dev_rx_dropped, dev_rx_errors, dev_tx_dropped;
} et_counters;
void et_counters_read(et_counters *c, const char *ifname);

#endif
