/* eth-test-receive's command line: the option table (receive_options.c) and the
 * configuration it fills. */
#ifndef ET_RECEIVE_OPTIONS_H
#define ET_RECEIVE_OPTIONS_H

#include "../common/cb_options.h"

#include <stddef.h>
#include <stdint.h>

typedef struct recv_cfg {
    const char *host, *iface, *json_path, *ready_file;
    int port, streams, batch, threads, busy_poll_us, rt_priority, quiet, gro, reuseport;
    size_t rcvbuf;
    double timeout_s, idle_s, threshold, max_loss;
    uint64_t want_session;
    cb_intlist cpus;
} recv_cfg;

/* cb_opts_parse() on the table, then the rules between options (exit 2 naming them):
 * one of -H and -I, the ports within 65535; more threads than sockets are cut to one a
 * socket. */
void recv_options_parse(recv_cfg *cfg, int argc, char **argv);

/* The document's metrics, each unit written once (cb_metric_def). */
extern const cb_metric_def recv_metrics[];
/* The command line: options, help, metrics (src/describe/ describes it). */
extern const cb_cmd recv_cmd;

#endif
