/* SMP encoding, response checks, destinations, attribute names, histogram. */
#include "smp_mad.h"
#include "../common/cb_common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- big-endian fields --------------------------------------------------- */
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p[i];
    return v;
}

/* Common MAD header offsets */
enum {
    OFF_BASE_VERSION = 0, OFF_CLASS = 1, OFF_CLASS_VERSION = 2, OFF_METHOD = 3,
    OFF_STATUS = 4, OFF_HOP_PTR = 6, OFF_HOP_CNT = 7, OFF_TID = 8, OFF_ATTR = 16,
    OFF_MOD = 20, OFF_MKEY = 24, OFF_DR_SLID = 32, OFF_DR_DLID = 34,
    OFF_INITIAL_PATH = 128, OFF_RETURN_PATH = 192,
};

void smp_encode(uint8_t *mad, const smp_dest *d, const smp_request *r, uint64_t tid,
                const uint8_t *data)
{
    memset(mad, 0, SMP_MAD_SIZE);
    mad[OFF_BASE_VERSION] = 1;
    mad[OFF_CLASS] = d->direct ? SMP_CLASS_DIRECT : SMP_CLASS_LID;
    mad[OFF_CLASS_VERSION] = 1;
    mad[OFF_METHOD] = (uint8_t)r->method;
    put64(mad + OFF_TID, tid);
    put16(mad + OFF_ATTR, r->attr);
    put32(mad + OFF_MOD, r->mod);
    put64(mad + OFF_MKEY, r->mkey);
    if (d->direct) {
        /* A pure directed route: both ends permissive, the out-ports in the
         * initial path; the switches fill the return path. */
        mad[OFF_HOP_PTR] = 0;
        mad[OFF_HOP_CNT] = (uint8_t)d->hops;
        put16(mad + OFF_DR_SLID, 0xffff);
        put16(mad + OFF_DR_DLID, 0xffff);
        memcpy(mad + OFF_INITIAL_PATH, d->path, (size_t)d->hops + 1);
    }
    if (data && r->method == SMP_METHOD_SET)
        memcpy(mad + SMP_DATA_OFF, data, SMP_DATA_SIZE);
}

uint64_t smp_tid(const uint8_t *mad) { return get64(mad + OFF_TID); }

uint16_t smp_status(const uint8_t *mad)
{
    uint16_t s = get16(mad + OFF_STATUS);
    return mad[OFF_CLASS] == SMP_CLASS_DIRECT ? (uint16_t)(s & ~SMP_DR_DIRECTION) : s;
}

const char *smp_check_response(const uint8_t *resp, const uint8_t *req)
{
    if (resp[OFF_BASE_VERSION] != 1)
        return "base version is not 1";
    if (resp[OFF_CLASS] != req[OFF_CLASS])
        return "management class differs from the request's";
    if (resp[OFF_METHOD] != SMP_METHOD_GET_RESP)
        return "method is not GetResp";
    /* Only the low half is the tool's: the kernel's umad write path (and
     * libumad2sim, which stands in for it) puts the agent's own value in the
     * high half of every request, and the response carries that value back. */
    if (get32(resp + OFF_TID + 4) != get32(req + OFF_TID + 4))
        return "transaction id differs from the request's";
    if (get16(resp + OFF_ATTR) != get16(req + OFF_ATTR))
        return "attribute differs from the request's";
    if (get32(resp + OFF_MOD) != get32(req + OFF_MOD))
        return "attribute modifier differs from the request's";
    if (req[OFF_CLASS] == SMP_CLASS_DIRECT && !(get16(resp + OFF_STATUS) & SMP_DR_DIRECTION))
        return "directed-route response without the direction bit";
    return NULL;
}

void smp_make_response(uint8_t *resp, const uint8_t *req, uint16_t status, const uint8_t *data)
{
    memcpy(resp, req, SMP_MAD_SIZE);
    resp[OFF_METHOD] = SMP_METHOD_GET_RESP;
    if (req[OFF_CLASS] == SMP_CLASS_DIRECT) {
        status |= SMP_DR_DIRECTION;
        resp[OFF_HOP_PTR] = req[OFF_HOP_CNT]; /* as the last hop leaves it */
    }
    put16(resp + OFF_STATUS, status);
    memcpy(resp + SMP_DATA_OFF, data, SMP_DATA_SIZE);
}

/* ---- destinations ------------------------------------------------------- */
/* Decimal or 0x hexadecimal (a leading 0 is not octal: "010" is ten), through the one
 * strict parser of src/common: no sign, no wrap-around. */
static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    uint64_t v;
    if (cb_parse_u64(s, 0, &v) != 0 || v > max)
        return -1;
    *out = (unsigned long)v;
    return 0;
}

const char *smp_dest_parse(const char *s, int direct, smp_dest *out)
{
    memset(out, 0, sizeof *out);
    out->direct = direct;
    if (!*s)
        return "empty (two separators in a row, or one at the end?)";
    if (!direct) {
        unsigned long v;
        if (parse_uint(s, 0xffff, &v) != 0)
            return "not a LID (a number like 9 or 0x1a)";
        if (v == 0 || v >= 0xc000)
            return "not a unicast LID (1 to 0xbfff)";
        out->lid = (uint16_t)v;
        snprintf(out->name, sizeof out->name, "lid %lu", v);
        return NULL;
    }
    /* "0,1,3" or "1,3": out-ports, each 1..254; a leading 0 is the local port */
    char buf[512];
    if (strlen(s) >= sizeof buf || !*s)
        return "not a directed route (out-ports like 0,1,3)";
    strcpy(buf, s);
    int first = 1;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        unsigned long v;
        if (parse_uint(tok, 255, &v) != 0)
            return "not a directed route (out-ports like 0,1,3)";
        if (first && v == 0) {
            first = 0;
            continue;
        }
        first = 0;
        if (v == 0 || v == 255)
            return "a directed route's out-ports are 1 to 254 (only the first may be 0)";
        if (out->hops == SMP_MAX_HOPS)
            return "a directed route has at most 63 hops";
        out->path[++out->hops] = (uint8_t)v;
    }
    if (s[strlen(s) - 1] == ',' || strstr(s, ",,"))
        return "not a directed route (out-ports like 0,1,3)";
    int n = snprintf(out->name, sizeof out->name, "dr 0");
    for (int i = 1; i <= out->hops && n < (int)sizeof out->name; i++)
        n += snprintf(out->name + n, sizeof out->name - (size_t)n, ",%u", out->path[i]);
    return NULL;
}

/* ---- attributes (IBA vol. 1, table 145, and the vendor range) -------------- */
static const struct {
    uint16_t id;
    const char *name;
} attrs[] = {
    {0x0002, "Notice"},
    {0x0010, "NodeDescription"},
    {0x0011, "NodeInfo"},
    {0x0012, "SwitchInfo"},
    {0x0014, "GUIDInfo"},
    {0x0015, "PortInfo"},
    {0x0016, "P_KeyTable"},
    {0x0017, "SLtoVLMappingTable"},
    {0x0018, "VLArbitrationTable"},
    {0x0019, "LinearForwardingTable"},
    {0x001A, "RandomForwardingTable"},
    {0x001B, "MulticastForwardingTable"},
    {0x001D, "VendorSpecificMadsTable"},
    {0x001E, "HierarchyInfo"},
    {0x0020, "SMInfo"},
    {0x0030, "VendorDiag"},
    {0x0031, "LedInfo"},
    {0x0032, "CableInfo"},
    {0x0033, "PortInfoExtended"},
};

const char *smp_attr_name(uint16_t attr)
{
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (attrs[i].id == attr)
            return attrs[i].name;
    return attr >= 0xff00 ? "VendorSpecific" : "Unknown";
}

int smp_attr_parse(const char *s, uint16_t *attr)
{
    unsigned long v;
    if (parse_uint(s, 0xffff, &v) == 0) {
        *attr = (uint16_t)v;
        return 0;
    }
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (strcasecmp(s, attrs[i].name) == 0) {
            *attr = attrs[i].id;
            return 0;
        }
    return -1;
}

/* ---- histogram ------------------------------------------------------------- */
int smp_hist_index(uint64_t ns)
{
    if (ns < SMP_HIST_SUB)
        return (int)ns;
    int msb = 63 - __builtin_clzll(ns);               /* >= SUB_BITS */
    int shift = msb - SMP_HIST_SUB_BITS;              /* keep SUB_BITS+1 bits */
    int idx = (shift + 1) * SMP_HIST_SUB + (int)((ns >> shift) & (SMP_HIST_SUB - 1));
    return idx < SMP_HIST_BUCKETS ? idx : SMP_HIST_BUCKETS - 1;
}

uint64_t smp_hist_low(int index)
{
    if (index < SMP_HIST_SUB)
        return (uint64_t)index;
    int shift = index / SMP_HIST_SUB - 1;
    uint64_t mant = (uint64_t)(SMP_HIST_SUB + index % SMP_HIST_SUB);
    return mant << shift;
}

void smp_hist_add(smp_hist *h, uint64_t ns)
{
    if (h->count == 0 || ns < h->min_ns)
        h->min_ns = ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
    h->count++;
    h->sum_ns += ns;
    h->bucket[smp_hist_index(ns)]++;
}

void smp_hist_merge(smp_hist *into, const smp_hist *from)
{
    if (from->count == 0)
        return;
    if (into->count == 0 || from->min_ns < into->min_ns)
        into->min_ns = from->min_ns;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    into->count += from->count;
    into->sum_ns += from->sum_ns;
    for (int i = 0; i < SMP_HIST_BUCKETS; i++)
        into->bucket[i] += from->bucket[i];
}

double smp_hist_mean(const smp_hist *h)
{
    return h->count ? (double)h->sum_ns / (double)h->count : 0;
}

double smp_hist_quantile(const smp_hist *h, double q)
{
    if (h->count == 0)
        return 0;
    /* the smallest value with at least ceil(q * count) values at or below it */
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i < SMP_HIST_BUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            double lo = (double)smp_hist_low(i);
            double hi = i + 1 < SMP_HIST_BUCKETS ? (double)smp_hist_low(i + 1) : lo;
            double mid = i < SMP_HIST_SUB ? lo : (lo + hi) / 2;
            if (mid < (double)h->min_ns)
                mid = (double)h->min_ns;
            if (mid > (double)h->max_ns)
                mid = (double)h->max_ns;
            return mid;
        }
    }
    return (double)h->max_ns;
}

int smp_parse_duration(const char *s, double unit_ns, uint64_t *ns)
{
    /* the number (the one strict parser: no nan, inf, hex or spaces), then the unit */
    char num[64];
    size_t n = strlen(s);
    while (n > 0 && ((s[n - 1] | 0x20) >= 'a' && (s[n - 1] | 0x20) <= 'z' && (s[n - 1] | 0x20) != 'e'))
        n--;
    const char *end = s + n;
    double v;
    if (n == 0 || n >= sizeof num)
        return -1;
    memcpy(num, s, n);
    num[n] = '\0';
    if (cb_parse_f64(num, &v) != 0 || v < 0)
        return -1;
    double mult = unit_ns;
    if (*end) {
        if (strcmp(end, "ns") == 0)
            mult = 1;
        else if (strcmp(end, "us") == 0)
            mult = 1e3;
        else if (strcmp(end, "ms") == 0)
            mult = 1e6;
        else if (strcmp(end, "s") == 0)
            mult = 1e9;
        else
            return -1;
    }
    double t = v * mult;
    if (t > 1e15)
        return -1;
    *ns = (uint64_t)llround(t);
    return 0;
}
