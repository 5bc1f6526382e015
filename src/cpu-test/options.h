/* cpu-test's command line: the option table (the one source of every default) and the
 * configuration it fills (src/cpu-test/README.md). */
#ifndef CT_OPTIONS_H
#define CT_OPTIONS_H

#include "../common/cb_options.h"

#define CT_TEST_VERSION "1.0"

/* --isa's names, in the option table's order: index 0 is "auto" (the widest this CPU
 * runs), the others name an instruction set (isa.h's ct_isa_from_name). */
extern const char *const ct_isa_choices[];

typedef struct ct_config {
    double duration_s;      /* --duration; --burn sets it too */
    double burn_min;        /* --burn MINUTES; 0: not a burn-in */
    double interval_s;      /* --interval */
    int isa_choice;         /* index into ct_isa_choices */
    int threads;            /* --threads; 0: every usable core */
    cb_intlist cpus;        /* --cpus; n == 0: every usable core */
    double desired_gflops;  /* --desired-gflops per core; 0: no rate judged */
    int quiet;
    const char *json_path;
} ct_config;

extern const cb_cmd ct_cmd;
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def ct_metrics[];

/* The most intervals a run keeps (each core's figure per interval): --duration over
 * --interval beyond this is a usage error. */
#define CT_MAX_INTERVALS 100000

/* cb_opts_parse() on ct_cmd, then the rules between options (exit 2 naming them):
 * --burn and --duration exclude each other, as do --threads and --cpus; the intervals
 * must fit CT_MAX_INTERVALS; --json's directory must be writable. */
void ct_config_parse(ct_config *cfg, int argc, char **argv);

#endif
