/* Shared code of the cobalt-bench kernels, one section per file of src/common:
 * messages, numbers, interruption, clock, results block, JSON document and its
 * envelope, the machine, and the hwloc topology. The option table is in cb_options.h,
 * the hash in cb_hash.h. Exit codes are the kernel contract's
 * (docs/kernel-contract.md). */
#ifndef CB_COMMON_H
#define CB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#define CB_EXIT_OK 0          /* ran and compliant */
#define CB_EXIT_NOT_COMPLIANT 1
#define CB_EXIT_USAGE 2
#define CB_EXIT_CANNOT_RUN 3

#ifndef CB_VERSION
#define CB_VERSION "0.0.0"
#endif

/* ---- messages (cb_msg.c) ------------------------------------------------ */
extern const char *cb_prog; /* set by each kernel's main */
void cb_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* called by cb_usage_error just before it exits (NULL: nothing) */
extern void (*cb_before_usage_exit)(void);
void cb_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
void cb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cb_print_version(const char *test_version);

/* ---- numbers: the one strict parser of every kernel (cb_number.c) ------ */
/* Each takes the whole string or nothing: 0, or -1 (no exit) when s is empty, has a
 * space, a sign where none belongs, trailing characters, or a value that does not fit.
 * Nothing wraps: "-1" is not an unsigned number and 18446744073709551616 does not fit in
 * 64 bits. The caller checks the range and names the option in its message. */
int cb_parse_u64(const char *s, int base, uint64_t *out); /* digits; base 0: also 0x hex */
int cb_parse_i64(const char *s, int64_t *out);            /* decimal, optional '-' */
int cb_parse_f64(const char *s, double *out);             /* finite decimal; no nan, inf, hex */
/* The items of a list like "a,b,c" (any char of seps separates), one per call: copies the
 * next item to item[len] and returns 1; 0 after the last; -1 for an empty item
 * ("", "a,", ",a", "a,,b") or one longer than len - 1. Start with *cursor = the list. */
int cb_list_next(const char **cursor, const char *seps, char *item, size_t len);
/* Sizes and durations, as the option table and kernels read them (no exit): 0, or -1
 * when s is not a valid value. Sizes: a non-negative integer with an optional binary
 * multiple K, M, G, T (either case; KiB and KB alike mean 1024) and an optional B; no
 * fractions. Durations: a non-negative number with an optional unit us, ms, s, m
 * (minutes), h, d; a bare number is seconds. */
int cb_parse_size(const char *s, uint64_t *out);
int cb_parse_duration(const char *s, double *seconds);

/* ---- option values (cb_number.c): on bad input they exit 2 naming the option */
double cb_opt_double(const char *opt, const char *arg, double min, double max);
long cb_opt_long(const char *opt, const char *arg, long min, long max);
uint64_t cb_opt_u64(const char *opt, const char *arg, uint64_t min, uint64_t max); /* base 0 */
/* A list like "0-3,8,10-11" of non-negative integers into out[] (sorted, unique);
 * returns the count; exits 2 on syntax errors or more than max entries. */
int cb_opt_intlist(const char *opt, const char *arg, int *out, int max);
/* Parse an int list without exiting: returns count, or -1 on error. */
int cb_parse_intlist(const char *s, int *out, int max);

/* ---- interruption (cb_signal.c) ----------------------------------------- */
/* SIGINT, SIGTERM or SIGHUP received (the signal's number), 0 otherwise. After
 * cb_signals_install() the first such signal only sets it: the kernel stops measuring,
 * prints its results block with "Interrupted: <signal>", writes its JSON document with
 * "interrupted": true and exits with cb_exit_interrupted() (128 + the signal's number,
 * as a shell reports a death by that signal). A second signal ends the process at once. */
extern volatile sig_atomic_t cb_interrupted;
void cb_signals_install(void);
const char *cb_interrupted_name(void); /* "SIGINT", ...; NULL when not interrupted */
int cb_exit_interrupted(void);
#define CB_EXIT_INTERRUPTED_MIN 129    /* exit codes above 128: interrupted */

/* ---- human output (cb_msg.c) ---------------------------------------------- */
/* Where progress and the results block go: stdout, or stderr when the JSON document
 * goes to stdout (--json -), so that stdout then holds the document alone.
 * cb_human_output_for_json(json_path) after the options are parsed. */
void cb_human_output_for_json(const char *json_path);
FILE *cb_human(void);

/* ---- clock (cb_time.c) ------------------------------------------------- */
uint64_t cb_now_ns(void);                  /* CLOCK_MONOTONIC */
void cb_sleep_until_ns(uint64_t t_ns);     /* absolute, on CLOCK_MONOTONIC */
void cb_iso8601_now(char *buf, size_t len); /* wall clock, UTC, for "started" */

/* ---- human results block, ending the output (cb_results.c) ------------- */
void cb_results_begin(FILE *f, const char *test_version);
void cb_results_line(FILE *f, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After cb_results_begin() of a run that a signal stopped (cb_interrupted): the line
 * "Interrupted:     SIGINT" (the signal's name), then " -- " and `what` when given
 * ("after 2.31 s of 10.00 s; the figures cover that time"). Prints nothing when not
 * interrupted. */
void cb_results_interrupted(FILE *f, const char *what);

/* ---- JSON document (cb_json.c) ------------------------------------------ */
typedef struct cb_json {
    char *buf;
    size_t len, cap;
    int depth;
    unsigned char need_comma[32];
    int failed; /* allocation failure or nesting too deep */
} cb_json;

void cbj_init(cb_json *j);
void cbj_free(cb_json *j);
void cbj_obj_begin(cb_json *j, const char *key); /* key NULL inside arrays/top */
void cbj_obj_end(cb_json *j);
void cbj_arr_begin(cb_json *j, const char *key);
void cbj_arr_end(cb_json *j);
void cbj_str(cb_json *j, const char *key, const char *val);
void cbj_num(cb_json *j, const char *key, double val); /* non-finite -> null */
void cbj_int(cb_json *j, const char *key, long long val);
void cbj_bool(cb_json *j, const char *key, int val);
/* What a metric of a kernel's document is: one row per metric in the kernel's table
 * (cb_cmd.metrics), the one place its unit is written; the document's metrics and
 * `--describe` are made from it. A table ends with a row whose name is NULL. */
typedef enum cb_better { CB_NEITHER, CB_HIGHER, CB_LOWER } cb_better;
typedef struct cb_metric_def {
    const char *name;    /* as in the document's "metrics" */
    const char *unit;    /* the contract's unit (docs/kernel-contract.md) */
    cb_better better;    /* which way is better, where either is */
    const char *meaning; /* one line, for --describe and the docs */
} cb_metric_def;

/* "name": {"value": v, "unit": u} inside the metrics object, the unit from the table's
 * row of that name (a name the table lacks is an internal error: exit 3, named). */
void cbj_metric(cb_json *j, const cb_metric_def *table, const char *name, double value);
/* The row of `name`, or NULL. */
const cb_metric_def *cb_metric_find(const cb_metric_def *table, const char *name);

/* Writes the document to path ("-" = stdout) atomically: a temporary file in
 * the same directory, fsync, rename. Returns 0, or -1 with a message printed;
 * an existing file is left untouched on failure. */
int cb_json_write(const cb_json *j, const char *path);
/* Checks before a long run that the JSON path can be written (directory exists). */
int cb_json_path_ok(const char *path);

/* ---- the contract's document around a kernel's parts (cb_envelope.c) ------- */
/* Starts the contract's document: test, version, test_version, host, started. */
void cbj_doc_begin(cb_json *j, const char *test, const char *test_version,
                   const char *started);

/* What every kernel's document carries around its own parts (docs/kernel-contract.md):
 * test, version, test_version, host, started, duration_s, interrupted, config{}, metrics{},
 * [the kernel's own top-level keys], compliance{threshold, [...], passed}. */
typedef struct cb_envelope {
    const char *test;
    const char *test_version;
    const char *started;  /* cb_iso8601_now() at the start of the run */
    double duration_s;
    double threshold;     /* NAN when the kernel has no single threshold */
    int passed;
    int interrupted;      /* stopped early by a signal (cb_interrupted): "interrupted": true */
} cb_envelope;

typedef void (*cb_doc_part)(cb_json *j, const void *ctx);
typedef struct cb_doc_parts {
    cb_doc_part config;     /* inside "config" */
    cb_doc_part metrics;    /* inside "metrics" (cbj_metric rows) */
    cb_doc_part extra;      /* top-level keys of the kernel's own; may be NULL */
    cb_doc_part compliance; /* further keys beside threshold and passed; may be NULL */
} cb_doc_parts;

/* Builds the document and writes it to path ("-" = stdout) atomically (cb_json_write).
 * Returns 0, or -1 with a message printed. */
int cb_doc_write(const char *path, const cb_envelope *env, const cb_doc_parts *parts,
                 const void *ctx);

/* ---- topology (hwloc; cb_topo.c) ------------------------------------------ */
#define CB_MAX_CPUS 4096
typedef struct cb_numa {
    int os_index;      /* NUMA node number as the OS names it */
    int ncores;        /* cores with at least one PU in this node */
    int *core_pu;      /* first PU (OS index) of each core */
    int npus;
    int *pus;          /* all PUs (OS indices) */
    uint64_t memory;   /* local memory in bytes */
} cb_numa;

typedef struct cb_topo {
    void *hw;          /* hwloc_topology_t */
    int nnodes;
    cb_numa *nodes;
    uint64_t l3_bytes; /* largest L3 (or last-level) cache, 0 if unknown */
} cb_topo;

int cb_topo_load(cb_topo *t);              /* 0, or -1 with a message */
void cb_topo_free(cb_topo *t);
const cb_numa *cb_topo_node(const cb_topo *t, int os_index); /* NULL if absent */
int cb_bind_thread_to_pu(const cb_topo *t, int pu);          /* 0 or -1 */
/* Memory bound to one NUMA node, on transparent huge pages where the kernel offers them
 * (madvise; THP "madvise" or "always"): 2 MiB aligned and whole 2 MiB pages, so that
 * they cover all of it. NULL on failure; free it with cb_free_on_node and the same size. */
void *cb_alloc_on_node(const cb_topo *t, int os_index, size_t size);
void cb_free_on_node(const cb_topo *t, void *p, size_t size);

/* PCI devices (a GPU, a NIC): the topology with its PCI devices, from this machine or
 * from the hwloc XML file `xml` (another machine: lookups only, no binding). 0, or -1
 * without a message (the caller says what it means). Free with cb_topo_free. */
int cb_topo_load_pci(cb_topo *t, const char *xml);
int cb_topo_pci_devices(const cb_topo *t); /* PCI devices hwloc found (0: no PCI plugin) */
int cb_topo_this_system(const cb_topo *t); /* binding and allocation act on this machine */
typedef struct cb_pci_place {
    int numa_node;     /* OS index of the device's NUMA node; -1: several or unknown */
    char nodes[64];    /* its NUMA nodes, e.g. "1" or "0-1" */
    char cpus[256];    /* the CPUs near it, e.g. "20-39,60-79" */
} cb_pci_place;
/* The NUMA node(s) and CPUs nearest the PCI device `busid` ("0000:3b:00.0", any case):
 * 0, or -1 if hwloc does not know the device. */
int cb_topo_pci_locality(const cb_topo *t, const char *busid, cb_pci_place *out);
/* Binds the calling thread to the CPUs of a list like "0-19,40-59". 0, or -1. */
int cb_bind_thread_to_cpulist(const cb_topo *t, const char *cpulist);
/* Memory (page aligned) bound to the NUMA nodes of a list like "1"; *bound says whether
 * binding worked (else it is ordinary memory, placed by first touch). NULL if none. */
void *cb_alloc_on_nodelist(const cb_topo *t, const char *nodelist, size_t bytes, int *bound);
void cb_free_on_nodelist(const cb_topo *t, void *p, size_t bytes, int bound);

/* ---- units ---------------------------------------------------------------- */
/* The contract's bandwidth unit: Gbit/s, decimal (10^9 bit/s); 0 for no time. */
static inline double cb_gbits(double bytes, double seconds)
{
    return seconds > 0 ? bytes * 8 / seconds / 1e9 : 0;
}

/* ---- the machine (cb_system.c) -------------------------------------------- */
void cb_hostname(char *buf, size_t len);
/* The first line of a (sysfs or procfs) file into buf, without its newline; an empty
 * file gives "". 0, or -1 when the file cannot be opened. */
int cb_read_first_line(const char *path, char *buf, size_t len);

#endif
