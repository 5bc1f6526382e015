/* PCIe links: the theoretical bandwidth of a link, the chain of links from a device (an
 * NVIDIA GPU for gpu-copy, any PCIe function for cb-pcie-links) up to its root port as
 * Linux sysfs describes it, and the diagnosis of a link that trained below what its ends
 * support. This is the one PCIe link rule of cobalt-bench: gpu-copy judges its GPUs with
 * it and `cobalt-bench preflight` reports what cb-pcie-links (pcie-links.c) says with it.
 * Plain C, no CUDA, no hwloc: the unit tests run it on recorded sysfs trees
 * (tests/data/gpu-copy/, tests/data/sysfs/). */
#ifndef GC_PCIE_H
#define GC_PCIE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GC_NVIDIA_VENDOR 0x10de
#define GC_MAX_LINKS 8          /* links between a GPU and its root port */
#define GC_BDF_LEN 24           /* "0000:3b:00.0" (domains may have 8 digits) */

/* ---- arithmetic ------------------------------------------------------------ */
/* GT/s from sysfs' current_link_speed/max_link_speed: "8.0 GT/s PCIe" (Linux >= 5.x),
 * "8 GT/s" or "2.5 GT/s" (older kernels); 0 for "Unknown" or anything else. */
double gc_parse_link_speed(const char *s);
/* The PCIe generation a transfer rate belongs to (2.5 -> 1 ... 64 -> 6); 0 if none. */
int gc_pcie_gen(double gts);
/* Line-code efficiency of a generation: 8b/10b for Gen1-2, 128b/130b for Gen3-5,
 * 1 for Gen6 (PAM4 with FLIT mode has no line code; its CRC/FEC bytes are in the
 * 256-byte flit, framing like TLP/DLLP headers, which no generation counts here). */
double gc_encoding_efficiency(int gen);
/* Theoretical unidirectional bandwidth of a link in Gbit/s (10^9 bit/s):
 * transfer rate x lanes x line-code efficiency. 0 if speed or width is unknown. */
double gc_link_gbits(double gts, int width);

/* ---- a GPU's links, as sysfs shows them ---------------------------------- */
typedef struct gc_link {
    char down[GC_BDF_LEN];  /* the device below the link: the GPU or a switch's upstream port */
    char up[GC_BDF_LEN];    /* the port above it (root port or switch downstream port); "" if unknown */
    double cur_gts;         /* negotiated, from the device below (0 unknown) */
    int cur_width;
    double dev_max_gts;     /* what the device below supports */
    int dev_max_width;
    double port_max_gts;    /* what the port above (the slot) supports; 0 unknown */
    int port_max_width;
} gc_link;

typedef struct gc_gpu_topo {
    char bdf[GC_BDF_LEN];
    unsigned vendor, device, pci_class;
    int numa_node;          /* sysfs numa_node; -1 unknown or no NUMA */
    char cpulist[256];      /* sysfs local_cpulist ("" unknown) */
    int nlinks;             /* links[0] is the GPU's own link, then upward to the root port */
    gc_link links[GC_MAX_LINKS];
} gc_gpu_topo;

/* Reads one GPU (or any PCI device) at `bdf` from the sysfs tree under `root` ("/sys"
 * on a live system): <root>/bus/pci/devices/<bdf>, whose real path (under
 * <root>/devices/pciDDDD:BB/...) gives the chain of bridges above it. Links are the
 * pairs (port, device below) along that chain: a root port or switch downstream port
 * sits at an even depth below the host bridge, the device below its link at an odd
 * one. Returns 0, or -1 when the device does not exist there. */
int gc_sysfs_read_gpu(const char *root, const char *bdf, gc_gpu_topo *out);
/* Every NVIDIA display/3D controller (vendor 0x10de, class 0x03xxxx) under `root`,
 * sorted by PCI address. Returns how many (at most max), or -1 if `root` has no PCI
 * device directory. */
int gc_sysfs_find_gpus(const char *root, gc_gpu_topo *out, int max);
/* Every PCI function under `root` that is not a bridge (class 0x06xxxx: host bridges,
 * root ports and switch ports appear as the upper links of the devices below them),
 * sorted by PCI address. Returns how many (at most max), or -1 as above. */
int gc_sysfs_find_endpoints(const char *root, gc_gpu_topo *out, int max);
/* Lower-case a CUDA bus id ("0000:3B:00.0") into sysfs' spelling. */
void gc_bdf_normalise(char *dst, const char *src);

/* ---- diagnosis ---------------------------------------------------------------- */
/* The verdict on a link, and on a device's chain of links:
 *   OK        negotiated at what the device below supports (width and rate)
 *   IDLE_LOW  only the rate is low, on a GPU's own link read while idle: GPUs lower the
 *             rate to save power, so this is not a fault yet (look again under load)
 *   DEGRADED  fewer lanes or a lower rate than the device below supports, whether the
 *             port above limits it (slot, riser, bifurcation) or the link trained low
 *   UNKNOWN   the negotiated or supported width or rate is not readable (a virtual or
 *             legacy PCI device, a VM) and nothing else shows it degraded */
enum gc_link_status { GC_LINK_OK, GC_LINK_IDLE_LOW, GC_LINK_DEGRADED, GC_LINK_UNKNOWN };
/* "ok", "idle-low", "degraded", "unknown" (cb-pcie-links' JSON spelling). */
extern const char *const gc_link_status_names[4];

typedef struct gc_link_verdict {
    int status;             /* enum gc_link_status */
    int degraded;           /* negotiated below what the device below supports */
    int width_below;        /* negotiated width < the device's maximum */
    int speed_below;        /* negotiated rate < the device's maximum */
    int port_limits_width;  /* the port (slot, riser) supports fewer lanes than the device */
    int port_limits_speed;  /* the port supports a lower generation than the device */
    int maybe_power_saving; /* only the rate is low, on the GPU's own link, measured idle */
    double cur_gbits;       /* theoretical bandwidth of the negotiated link */
    double max_gbits;       /* ... of the best link both ends support (or the device's) */
    char text[512];         /* one sentence: what is wrong and the likely reason */
} gc_link_verdict;

/* Judges one link. `idle`: the state was read while the GPU was not copying (an idle
 * NVIDIA GPU lowers its link rate to save power, so a low rate alone is not a fault
 * then). `own_link`: the link is the GPU's own (links[0]). */
void gc_judge_link(const gc_link *l, int own_link, int idle, gc_link_verdict *v);
/* The same for any device: `gpu` says whether the device below is a GPU (only a GPU's
 * own link is excused a low rate while idle; the text names "the GPU" or "the device").
 * gc_judge_link(l, own, idle, v) is gc_judge_link_of(l, own, 1, idle, v). */
void gc_judge_link_of(const gc_link *l, int own_link, int gpu, int idle, gc_link_verdict *v);
/* Whether a PCI class is a GPU's (display and 3D controllers, 0x03xxxx). */
int gc_class_is_gpu(unsigned pci_class);

/* Judges a device's whole chain (its own link and the uplinks above it): DEGRADED if any
 * link is, else IDLE_LOW or UNKNOWN from its own link, else OK (an uplink whose state is
 * unknown does not make the device unknown). `idle`: the state was read while the
 * device was not busy (it excuses a low rate only on a GPU's own link; the device is a
 * GPU by its PCI class). *v and *link (may be NULL) receive the deciding link's verdict
 * and index (-1: no link information). Returns v->status. */
int gc_judge_device(const gc_gpu_topo *g, int idle, gc_link_verdict *v, int *link);

/* The theoretical bandwidth a GPU can reach through its chain: the slowest negotiated
 * link (Gbit/s per direction; 0 unknown). */
double gc_gpu_path_gbits(const gc_gpu_topo *g);
/* What the GPU's own link could carry at the GPU's maximum width and rate (Gbit/s). */
double gc_gpu_max_gbits(const gc_gpu_topo *g);

/* What the GPUs can move together per direction through their negotiated links, with
 * every shared uplink limiting the sum of the GPUs below it (Gbit/s). */
double gc_reachable_gbits(const gc_gpu_topo *gpus, int n);

/* One link as a JSON object (cb_json, src/common): down, up, current_gen,
 * current_speed_gts, current_width, device_max_speed_gts, device_max_width,
 * port_max_speed_gts, port_max_width (0: unknown), theoretical_gbits, max_gbits,
 * degraded, status, diagnosis, judged by gc_judge_link_of. The same in gpu-copy's and
 * cb-pcie-links' documents. */
struct cb_json;
void gc_json_link(struct cb_json *j, const gc_link *l, int own_link, int gpu, int idle);

/* "Gen3 x16 (8.0 GT/s)" or "unknown" */
void gc_link_name(char *buf, size_t len, double gts, int width);

/* The port above a link, or what sysfs shows instead: a device on a root bus with no port
 * above it (a virtual machine's passed-through GPU, such as a Firecracker guest's H200). */
const char *gc_link_upstream(const gc_link *l);

/* Links (other than each GPU's own) that carry more than one of the given GPUs: an
 * uplink shared by GPUs behind one PCIe switch. For the i-th shared link, *link is
 * the link and members[] (a bitmask over the gpus array) the GPUs below it. Returns
 * the number found (at most max). */
typedef struct gc_shared_link {
    gc_link link;
    unsigned long long members;
    int count;
    double sum_gbits;       /* what the GPUs below could move together through their own links */
} gc_shared_link;
int gc_find_shared_links(const gc_gpu_topo *gpus, int n, gc_shared_link *out, int max);

#ifdef __cplusplus
}
#endif
#endif
