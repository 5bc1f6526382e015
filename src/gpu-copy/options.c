/* gpu-copy's options, declared once (cb_options.h), and the rules between them. */
#include "options.h"
#include "plan.h"

#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

static void parse_phases(const char *opt, const char *arg, void *dest)
{
    unsigned mask = gc_parse_phases(arg);
    if (!mask)
        cb_usage_error("invalid list '%s' for %s: expected write, read and/or bidir, e.g. write,read", arg, opt);
    *(unsigned *)dest = mask;
}

#define SIZE_MAX_OPT ((double)(1ull << 50))

static const cb_opt opts[] = {
    {.name = "gpus", .letter = 'g', .type = CB_OPT_INTLIST, .off = offsetof(gc_cfg, gpus), .arg = "LIST",
     .help = "CUDA devices to use, e.g. 0,1 or 0-3 (default all)", .section = "Workload:"},
    {.name = "iterations", .letter = 'i', .type = CB_OPT_U64, .doc_key = "iterations", .off = offsetof(gc_cfg, iterations),
     .min = 1, .max = 100000, .def = "10", .arg = "N", .help = "timed copies of the device buffer per phase"},
    {.name = "alone-iterations", .type = CB_OPT_U64, .off = offsetof(gc_cfg, alone_iterations),
     .min = 0, .max = 100000, .def = "3", .arg = "N", .help = "the same for each GPU alone (0: skip)"},
    {.name = "phases", .type = CB_OPT_CUSTOM, .off = offsetof(gc_cfg, phases), .def = "write,read,bidir",
     .arg = "LIST", .parse = parse_phases, .help = "all-at-once phases: write,read,bidir (default all)"},
    {.name = "device-fraction", .letter = 'f', .type = CB_OPT_DOUBLE, .off = offsetof(gc_cfg, fraction),
     .min = 0.001, .max = 0.99, .def = "0.90", .arg = "F",
     .help = "device buffer as a fraction of device memory"},
    {.name = "device-buffer", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, dev_request), .min = 1,
     .max = SIZE_MAX_OPT, .arg = "SIZE", .help = "device buffer size instead, e.g. 8G"},
    {.name = "host-buffer", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, host_request), .min = 1,
     .max = SIZE_MAX_OPT, .arg = "SIZE",
     .help = "pinned host buffer per GPU (default the smaller of the\ndevice buffer and 4G)"},
    {.name = "chunk", .type = CB_OPT_SIZE, .off = offsetof(gc_cfg, chunk), .min = 1, .max = SIZE_MAX_OPT,
     .arg = "SIZE", .help = "bytes per cudaMemcpyAsync, a multiple of 4K (default 64M,\nsmaller for small buffers)"},
    {.name = "streams", .letter = 's', .type = CB_OPT_INT, .doc_key = "streams_per_direction", .off = offsetof(gc_cfg, streams), .min = 1,
     .max = 16, .def = "2", .arg = "N", .help = "streams per direction"},
    {.name = "threshold", .letter = 't', .type = CB_OPT_DOUBLE, .unit = "Gbit/s", .off = offsetof(gc_cfg, threshold),
     .min = 0, .max = 1e6, .def = "180", .arg = "GBITS", .section = "Judgement:",
     .help = "compliant when the total write and the total read speed\nare both >= GBITS Gbit/s (the "
             "compliance document's figure\nfor two GPUs on PCIe 3.0 x16)"},
    {.name = "threshold-per-gpu", .type = CB_OPT_DOUBLE, .unit = "Gbit/s", .off = offsetof(gc_cfg, threshold_per_gpu),
     .min = 1e-9, .max = 1e6, .arg = "GBITS", .help = "instead: >= GBITS x the number of GPUs"},
    {.name = "explain-links", .type = CB_OPT_FLAG, .off = offsetof(gc_cfg, explain_only), .section = "Diagnosis:",
     .help = "only explain each NVIDIA GPU's PCIe links from sysfs: no\nCUDA, no copies (exit 1 if a link is degraded)"},
    {.name = "sysfs-root", .type = CB_OPT_STRING, .doc_key = "sysfs_root", .off = offsetof(gc_cfg, sysfs_root), .def = "/sys", .arg = "DIR",
     .help = "read PCI devices from DIR instead of /sys (a recorded tree\nwith bus/pci/devices/ and devices/)"},
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = offsetof(gc_cfg, json_path), .arg = "FILE",
     .section = "Output:", .help = "write the JSON result document to FILE ('-' = stdout)"},
    CB_OPT_QUIET_ROW(gc_cfg, quiet),
    {0},
};

/* Per direction ("write": host to GPU, "read": GPU to host): all GPUs at once. */
#define DIRECTION(d)                                                                               \
    {"total_" d "_speed", "Gbit/s", CB_HIGHER, "every GPU's " d " speed, all at once, summed"},    \
    {"total_" d "_speed_bytes", "B/s", CB_HIGHER, "total_" d "_speed in bytes per second"},        \
    {"aggregate_" d "_speed", "Gbit/s", CB_HIGHER, "bytes " d " by all GPUs over the whole time"}, \
    {d "_percent_of_link", "%", CB_HIGHER, "total_" d "_speed as a share of the links' speed"}
/* The document's metrics, each unit written once (cb_metric_def). */
const cb_metric_def gc_metrics[] = {
    DIRECTION("write"),
    DIRECTION("read"),
    {"bidir_write_speed", "Gbit/s", CB_HIGHER, "host to GPU speed while copying both ways"},
    {"bidir_read_speed", "Gbit/s", CB_HIGHER, "GPU to host speed while copying both ways"},
    {"theoretical_link_speed", "Gbit/s", CB_NEITHER,
     "what the GPUs' links carry at their trained width and rate"},
    {"max_link_speed", "Gbit/s", CB_NEITHER,
     "what the GPUs' links carry at their maximum width and rate"},
    {"gpus", "GPUs", CB_NEITHER, "GPUs measured"},
    {"degraded_links", "links", CB_LOWER, "links below their maximum width or rate"},
    {"verified_phases", "phases", CB_NEITHER, "copy phases whose data were checked"},
    {"verification_errors", "errors", CB_LOWER, "copies whose data were wrong: corruption"},
    {0},
};

#undef DIRECTION

const cb_cmd gc_cmd = {
    .metrics = gc_metrics,
    .name = "gpu-copy",
    .test_version = GC_TEST_VERSION,
    .opts = opts,
    .about =
"Measure the PCIe bandwidth between host memory and every NVIDIA GPU, and explain a\n"
"bad result by the topology: each GPU's NUMA node and the links between it and its\n"
"root port, as negotiated versus what both ends support.\n"
"\n"
"For each GPU one host thread, bound to the CPUs of the GPU's NUMA node (hwloc, from the\n"
"GPU's PCI bus id), copies between a pinned host buffer on that node and a device\n"
"buffer of most of the GPU's memory, in chunks on several streams per direction.\n"
"Phases, all GPUs at once: write (host to device), read (device to host), bidir (both\n"
"at once); then each GPU alone (write and read), so that a shared bottleneck shows as\n"
"the difference. Per-GPU speeds are summed into the totals, as the compliance\n"
"document does. After the copies every byte they left is checked.\n",
    .more =
"SIZE: bytes, or with K, M, G, T (binary: 64M = 64 MiB). Speeds in Gbit/s (10^9 bit/s).\n"
"Theoretical link bandwidth per direction = rate x lanes x line code: Gen1 2.5 GT/s,\n"
"Gen2 5 GT/s (8b/10b), Gen3 8, Gen4 16, Gen5 32 GT/s (128b/130b), Gen6 64 GT/s (PAM4,\n"
"FLIT mode, no line code); packet headers are not deducted. Gen3 x16 = 126.03 Gbit/s,\n"
"so two GPUs on dedicated PCIe 3.0 x16 links can reach 252 Gbit/s per direction.\n"
"A link that trained below what the GPU supports (fewer lanes, a lower generation) is\n"
"named as the likely cause. An idle NVIDIA GPU lowers its link rate to save power: the\n"
"links are read again while the copies run. The same link rule judges every PCIe\n"
"device in cb-pcie-links (and so in cobalt-bench preflight).\n"
"\n"
"SIGINT, SIGTERM or SIGHUP stops the copies after the phase under way (its copies are\n"
"queued on the GPUs): the report, the results block and the JSON document\n"
"(\"interrupted\": true) cover the phases that ran; a second signal ends it at once.\n"
"\n"
"Exit status: 0 compliant, 1 not compliant or verification failed (--explain-links:\n"
"a degraded link), 2 usage error, 3 could not run (no NVIDIA GPU or driver), 128 + the\n"
"signal's number when interrupted (130 SIGINT, 143 SIGTERM, 129 SIGHUP).\n",
};

/* Cross-option rules, after the table's own checks. */
static void check_cfg(gc_cfg *c)
{
    if (c->gpus.n > GC_MAX_GPUS)
        cb_usage_error("invalid list for --gpus: at most %d GPUs", GC_MAX_GPUS);
    if (cb_opts_given(&gc_cmd, "threshold") && c->threshold_per_gpu > 0)
        cb_usage_error("--threshold and --threshold-per-gpu both set the threshold; give one");
    if (cb_opts_given(&gc_cmd, "device-fraction") && c->dev_request)
        cb_usage_error("--device-fraction and --device-buffer both size the device buffer; give one");
    if (c->chunk && (c->chunk < GC_MIN_CHUNK || c->chunk % GC_MIN_CHUNK))
        cb_usage_error("invalid value for --chunk: must be a multiple of 4K");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/bus/pci/devices", c->sysfs_root);
    if (access(dir, R_OK | X_OK) != 0)
        cb_usage_error("--sysfs-root %s: no PCI devices there (%s is missing)", c->sysfs_root, dir);
    if (c->json_path && cb_json_path_ok(c->json_path) != 0)
        cb_usage_error("cannot write --json %s: its directory does not exist or is not writable", c->json_path);
}

void gc_options_parse(gc_cfg *cfg, int argc, char **argv)
{
    cb_opts_parse(&gc_cmd, cfg, argc, argv);
    check_cfg(cfg);
}
