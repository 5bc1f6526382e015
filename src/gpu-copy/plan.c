/* gpu-copy's plan: layout, copies, preparation and verification of a phase. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

const char *const gc_kind_names[GC_NKINDS] = {"write", "read", "bidir"};

static uint64_t mix(uint64_t seed, uint64_t k) { return gc_pattern(seed, k); }

const char *gc_layout_make(gc_layout *l, size_t dev_request, size_t host_request, size_t chunk_request)
{
    memset(l, 0, sizeof *l);
    size_t chunk = chunk_request;
    if (chunk == 0) {
        /* 64 MiB copies keep per-call overhead negligible; small buffers get smaller
         * chunks so that they still hold enough of them to rotate (down to 1 MiB). */
        chunk = GC_DEFAULT_CHUNK;
        while (chunk > (1u << 20) && dev_request / chunk < 16)
            chunk /= 2;
    }
    if (chunk < GC_MIN_CHUNK || chunk % GC_MIN_CHUNK)
        return "the chunk size must be a multiple of 4 KiB";
    uint64_t dev_chunks = (dev_request / chunk) & ~1ull;
    if (dev_chunks < 4)
        return "the device buffer must hold at least 4 chunks";
    size_t host = host_request;
    if (host == 0)
        host = dev_chunks * chunk < GC_DEFAULT_HOST_MAX ? dev_chunks * chunk : GC_DEFAULT_HOST_MAX;
    uint64_t host_chunks = (host / chunk) & ~1ull;
    if (host_chunks > dev_chunks)
        host_chunks = dev_chunks; /* a host buffer larger than the device's adds nothing */
    if (host_chunks < 4)
        return "the host buffer must hold at least 4 chunks";
    l->chunk = chunk;
    l->streams = 1;
    l->dev_chunks = dev_chunks;
    l->host_chunks = host_chunks;
    l->dev_bytes = dev_chunks * chunk;
    l->host_bytes = host_chunks * chunk;
    return NULL;
}

size_t gc_device_request(size_t total, size_t free_bytes, double fraction, size_t reserve)
{
    size_t want = (size_t)((double)total * fraction);
    if (want + reserve > free_bytes)
        want = free_bytes > reserve ? free_bytes - reserve : 0;
    return want;
}

uint64_t gc_phase_copies(const gc_layout *l, int kind)
{
    (void)kind; /* every phase moves the whole device buffer once per iteration */
    return l->dev_chunks;
}

void gc_phase_copy(const gc_layout *l, int kind, uint64_t k, uint64_t i, gc_copy *out)
{
    uint64_t hc = l->host_chunks, half_dev = l->dev_chunks / 2, half_host = hc / 2;
    uint64_t S = l->streams > 0 ? (uint64_t)l->streams : 1, dest;
    out->bytes = l->chunk;
    if (kind == GC_BIDIR) {
        uint64_t j = i / 2;
        if (i % 2 == 0) { /* host half A -> device half A */
            out->dir = GC_H2D;
            out->dev_off = j * l->chunk;
            out->host_off = ((j + k) % half_host) * l->chunk;
            dest = j;
        } else {          /* device half B -> host half B */
            out->dir = GC_D2H;
            out->dev_off = (half_dev + j) * l->chunk;
            dest = (j + k) % half_host;
            out->host_off = (half_host + dest) * l->chunk;
        }
    } else {
        out->dir = kind == GC_WRITE ? GC_H2D : GC_D2H;
        out->dev_off = i * l->chunk;
        out->host_off = ((i + k) % hc) * l->chunk;
        dest = kind == GC_WRITE ? i : (i + k) % hc;
    }
    out->stream = (int)(dest % S);
}

void gc_phase_bytes(const gc_layout *l, int kind, size_t *h2d, size_t *d2h)
{
    *h2d = kind == GC_WRITE ? l->dev_bytes : kind == GC_BIDIR ? l->dev_bytes / 2 : 0;
    *d2h = kind == GC_READ ? l->dev_bytes : kind == GC_BIDIR ? l->dev_bytes / 2 : 0;
}

static gc_region region(size_t off, size_t bytes, uint64_t cw, uint64_t period, uint64_t rot,
                        uint64_t seed)
{
    gc_region r = {.off = off, .bytes = bytes, .seed = seed};
    r.map.chunk_words = cw;
    r.map.period = period;
    r.map.rot = rot % period;
    return r;
}

/* A host region that receives read copies from dev_chunks device chunks. */
static gc_region host_region(size_t off, size_t bytes, uint64_t cw, uint64_t dev_chunks, uint64_t rot,
                             uint64_t seed)
{
    gc_region r = region(off, bytes, cw, dev_chunks, 0, seed);
    r.map.host_chunks = bytes / 8 / cw;
    r.map.dev_chunks = dev_chunks;
    r.map.rot = rot % r.map.host_chunks;
    return r;
}

void gc_phase_plan_make(const gc_layout *l, int kind, uint64_t iterations, uint64_t seed,
                        gc_phase_plan *p)
{
    memset(p, 0, sizeof *p);
    uint64_t cw = l->chunk / 8, hc = l->host_chunks, dc = l->dev_chunks;
    uint64_t last = iterations ? iterations - 1 : 0;
    uint64_t s_data = mix(seed, 1), s_poison = mix(seed, 2), s_back = mix(seed, 3);
    switch (kind) {
    case GC_WRITE:
        /* canonical host data (made on the device, which is fast, and staged), then a
         * poisoned device: after the copies it holds the host data of the last iteration */
        p->fill[0] = region(0, l->host_bytes, cw, hc, 0, s_data);
        p->stage_bytes = l->host_bytes;
        p->fill[1] = region(0, l->dev_bytes, cw, dc, 0, s_poison);
        p->dev_check = region(0, l->dev_bytes, cw, hc, last, s_data);
        break;
    case GC_READ:
        /* device data, different in every chunk, that the host does not hold */
        p->fill[0] = region(0, l->dev_bytes, cw, dc, 0, s_data);
        p->host_check = host_region(0, l->host_bytes, cw, dc, last, s_data);
        break;
    case GC_BIDIR: {
        size_t half_dev = l->dev_bytes / 2, half_host = l->host_bytes / 2;
        p->fill[0] = region(0, half_host, cw, hc / 2, 0, s_data);
        p->stage_bytes = half_host;
        p->fill[1] = region(0, half_dev, cw, dc / 2, 0, s_poison);
        p->fill[2] = region(half_dev, half_dev, cw, dc / 2, 0, s_back);
        p->dev_check = region(0, half_dev, cw, hc / 2, last, s_data);
        p->host_check = host_region(half_host, half_host, cw, dc / 2, last, s_back);
        break;
    }
    }
}

uint64_t gc_region_check_host(const uint64_t *base, const gc_region *r, uint64_t *first)
{
    const gc_map *m = &r->map;
    uint64_t bad = 0, chunks = r->bytes / 8 / m->chunk_words;
    *first = UINT64_MAX;
    for (uint64_t h = 0; h < chunks; h++) {
        const uint64_t *p = base + h * m->chunk_words;
        uint64_t src = gc_host_src_chunk(m, h) * m->chunk_words;
        for (uint64_t x = 0; x < m->chunk_words; x++)
            if (p[x] != gc_pattern(r->seed, src + x)) {
                if (!bad)
                    *first = (h * m->chunk_words + x) * 8;
                bad++;
            }
    }
    return bad;
}

unsigned gc_parse_phases(const char *s)
{
    unsigned mask = 0;
    const char *p = s;
    while (*p) {
        size_t n = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < GC_NKINDS; k++)
            if (strlen(gc_kind_names[k]) == n && strncmp(p, gc_kind_names[k], n) == 0)
                found = k;
        if (found < 0)
            return 0;
        mask |= 1u << found;
        p += n;
        if (*p == ',' && *++p == '\0')
            return 0;
    }
    return mask;
}
