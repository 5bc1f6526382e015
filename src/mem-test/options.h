/* mem-test's command line: the option table (the one source of every default, also of
 * the workload model's: tests take their defaults from it) and the configuration it
 * fills. */
#ifndef MT_OPTIONS_H
#define MT_OPTIONS_H

#include "../common/cb_options.h"
#include "workload.h"

#define MT_TEST_VERSION "1.0"

typedef struct mt_config {
    mt_params p;             /* the workload model's parameters */
    double desired_gbits;    /* --desired-rate; 0 = derived from --input-rate */
    double duration_s;       /* --duration, before rounding to whole periods */
    double threshold;        /* percent of the desired speed */
    int max_mode;            /* --max: unpaced */
    int quiet;
    const char *json_path;
    cb_intlist nodes;        /* --numa-nodes; n == 0: every node */
    int threads_per_domain;  /* 0: one per core */
} mt_config;

extern const cb_cmd mt_cmd;
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def mt_metrics[];

/* cb_opts_parse() on mt_cmd, then the rules between options (exit 2 naming them):
 * --desired-rate and --input-rate exclude each other, the workload must be consistent
 * (mt_params_check), --json's directory must be writable. */
void mt_config_parse(mt_config *cfg, int argc, char **argv);

#endif
