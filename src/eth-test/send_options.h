/* eth-test-send's command line: the option table (send_options.c) and the configuration
 * it fills. */
#ifndef ET_SEND_OPTIONS_H
#define ET_SEND_OPTIONS_H

#include "../common/cb_options.h"

#include <stddef.h>
#include <stdint.h>

typedef struct send_cfg {
    const char *host, *json_path;
    int port, streams, batch, threads, end_copies, rt_priority, quiet, gso;
    double rate_gbits, duration_s;
    size_t size, sndbuf;
    uint64_t session;
    cb_intlist cpus;
} send_cfg;

/* cb_opts_parse() on the table, then the rules between options (exit 2 naming them):
 * -H is required, the ports within 65535, --gso x --size within a datagram; more threads
 * than streams are cut to one a stream. */
void send_options_parse(send_cfg *cfg, int argc, char **argv);

/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def send_metrics[];
/* The command line: options, help, metrics (src/describe/ describes it). */
extern const cb_cmd send_cmd;

#endif
