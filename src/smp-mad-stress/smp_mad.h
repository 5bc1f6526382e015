/* Subnet Management Packets (SMPs): the 256-byte MADs smp-mad-stress sends,
 * their encoding and checks, destinations (LID or directed route), attribute
 * names, and the latency histogram. No libibumad here: the window logic and
 * its tests use this without an InfiniBand stack.
 *
 * Layout (InfiniBand Architecture Specification vol. 1, 13.4 and 14.2.1): a
 * 24-byte common MAD header, M_Key, then for directed-route SMPs DrSLID/DrDLID,
 * 64 bytes of SMP data at offset 64 (both kinds), and the initial and return
 * paths of a directed route at offsets 128 and 192. All fields big-endian. */
#ifndef SMP_MAD_H
#define SMP_MAD_H

#include <stddef.h>
#include <stdint.h>

#define SMP_MAD_SIZE 256
#define SMP_DATA_OFF 64
#define SMP_DATA_SIZE 64
#define SMP_MAX_HOPS 63

#define SMP_CLASS_LID 0x01    /* Subnet Management, LID routed */
#define SMP_CLASS_DIRECT 0x81 /* Subnet Management, directed route */

#define SMP_METHOD_GET 0x01
#define SMP_METHOD_SET 0x02
#define SMP_METHOD_GET_RESP 0x81

#define SMP_DR_DIRECTION 0x8000 /* the D bit of a directed-route SMP's status */

/* A destination: a LID, or a directed route of out-ports from the local port. */
typedef struct smp_dest {
    int direct;                 /* 1: directed route (path), 0: LID routed */
    uint16_t lid;
    int hops;                   /* number of hops of the directed route */
    uint8_t path[SMP_MAX_HOPS + 1]; /* path[0] = 0, path[1..hops] = out ports */
    char name[200];             /* "lid 9" or "dr 0,1,3", for output */
} smp_dest;

/* Parses "9", "0x1a" (LID, 1..0xbfff unicast) or, with direct, "0,1,3"
 * (a directed route; the leading 0 is the local port and may be omitted: "1,3").
 * Returns NULL, or why the text is not a destination. */
const char *smp_dest_parse(const char *s, int direct, smp_dest *out);

/* An attribute given as a number ("0x19", "25") or a name ("NodeInfo",
 * "LinearForwardingTable", case-insensitive). Returns 0 and sets *attr, or -1. */
int smp_attr_parse(const char *s, uint16_t *attr);
const char *smp_attr_name(uint16_t attr); /* "Unknown" if not known */

/* One request: what every MAD of a run asks. */
typedef struct smp_request {
    int method;        /* SMP_METHOD_GET or SMP_METHOD_SET */
    uint16_t attr;
    uint32_t mod;
    uint64_t mkey;
} smp_request;

/* Fills mad[SMP_MAD_SIZE] with a request to d with transaction id tid;
 * data (SMP_DATA_SIZE bytes) is the payload of a SET (NULL: zeros). */
void smp_encode(uint8_t *mad, const smp_dest *d, const smp_request *r, uint64_t tid,
                const uint8_t *data);

/* Field access, big-endian. */
uint64_t smp_tid(const uint8_t *mad);
uint16_t smp_status(const uint8_t *mad); /* without the D bit of directed routes */
static inline const uint8_t *smp_data(const uint8_t *mad) { return mad + SMP_DATA_OFF; }

/* Checks a response against its request: a GetResp of the same class, low 32
 * bits of the TID (the tool's part: the kernel writes its agent's id into the
 * high 32 of every request on its way out), attribute and modifier, with the
 * D bit set on directed routes. Returns NULL, or what is wrong. A non-zero
 * MAD status is not checked here (smp_status). */
const char *smp_check_response(const uint8_t *resp, const uint8_t *req);

/* Writes the response a device would give to req into resp: GetResp, the
 * request's header, status, and data (SMP_DATA_SIZE bytes). Used by the
 * simulated fabric (sim_transport.c), which stands in for absent InfiniBand
 * hardware. */
void smp_make_response(uint8_t *resp, const uint8_t *req, uint16_t status, const uint8_t *data);

/* ---- latency histogram: log-linear buckets, relative error below 1.6% ------ */
#define SMP_HIST_SUB_BITS 5
#define SMP_HIST_SUB (1 << SMP_HIST_SUB_BITS)
#define SMP_HIST_BUCKETS (SMP_HIST_SUB * 38) /* up to 2^42 ns (73 min) */

typedef struct smp_hist {
    uint64_t count, sum_ns, min_ns, max_ns;
    uint32_t bucket[SMP_HIST_BUCKETS];
} smp_hist;

void smp_hist_add(smp_hist *h, uint64_t ns);
void smp_hist_merge(smp_hist *into, const smp_hist *from);
/* Value (ns) at quantile q in [0, 1]: the middle of the bucket holding it,
 * clamped to the observed min and max; 0 for an empty histogram. */
double smp_hist_quantile(const smp_hist *h, double q);
double smp_hist_mean(const smp_hist *h);
/* Bucket index of a value, and the lowest value of a bucket. */
int smp_hist_index(uint64_t ns);
uint64_t smp_hist_low(int index);

/* Durations like "200us", "1.5ms", "2s", "500ns" (a bare number is in unit_ns
 * units). Returns 0 and sets *ns, or -1. */
int smp_parse_duration(const char *s, double unit_ns, uint64_t *ns);

#endif
