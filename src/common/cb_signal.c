/* Interrupting a measurement: SIGINT, SIGTERM and SIGHUP ask the kernel to stop, so
 * that it can print its results block marked interrupted and write its JSON document
 * with "interrupted": true (docs/kernel-contract.md); a second signal ends it at once. */
#include "cb_common.h"

#include <signal.h>
#include <string.h>

volatile sig_atomic_t cb_interrupted;

static void on_signal(int sig)
{
    if (cb_interrupted) {
        /* asked twice: stop now, as the default action would */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    cb_interrupted = sig;
}

void cb_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* no SA_RESTART: a blocking call returns EINTR, so that a loop sees the request */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

const char *cb_interrupted_name(void)
{
    switch (cb_interrupted) {
    case 0: return NULL;
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

int cb_exit_interrupted(void)
{
    return 128 + (cb_interrupted ? cb_interrupted : SIGINT);
}
