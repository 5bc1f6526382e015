/* smp-mad-stress's command line: the option table (options.c) and what it sets. Built
 * twice, as smp-mad-stress and with SMT_WITH_MPI as smp-mad-stress-mpi, whose name and
 * help differ. */
#ifndef SMT_OPTIONS_H
#define SMT_OPTIONS_H

#include "../common/cb_options.h"
#include "window.h"

#ifdef SMT_WITH_MPI
#define SMT_PROG "smp-mad-stress-mpi"
#else
#define SMT_PROG "smp-mad-stress"
#endif

#define SMT_TEST_VERSION "1.0"

/* What the command line sets (the option table's fields). */
typedef struct smt_opts {
    smt_config c;           /* method, mkey, depths, workers, timeout, retries, duration */
    int direct;
    const char *lids_arg, *paths_arg;
    const char *device;
    int port;
    const char *simulate;   /* --simulate=SPEC: the simulated fabric instead of a device */
    double min_rate;
    long max_drops;
    const char *json_path;
    int quiet;
} smt_opts;

extern const cb_cmd smt_cmd;
/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def smt_metrics[];


/* cb_opts_parse() on smt_cmd, then the rules between the options alone (exit 2 naming
 * them): --paths implies --direct; --lids excludes --paths and --direct. Returns the
 * index of the first operand; the operands, and the rules that need them, are the
 * program's (smp-mad-stress.c). */
int smt_options_parse(smt_opts *o, int argc, char **argv);

#endif
