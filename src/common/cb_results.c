/* The human results block that ends every kernel's output (docs/kernel-contract.md). */
#include "cb_common.h"

#include <stdarg.h>

void cb_results_begin(FILE *f, const char *test_version)
{
    fprintf(f, "----- Test results -----\n");
    cb_results_line(f, "Test version", "%s", test_version);
}

void cb_results_line(FILE *f, const char *label, const char *fmt, ...)
{
    /* Values start in column 18, as in the compliance document's examples. */
    char key[64];
    snprintf(key, sizeof key, "%s:", label);
    fprintf(f, "%-16s ", key);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
}

void cb_results_interrupted(FILE *f, const char *what)
{
    const char *sig = cb_interrupted_name();
    if (!sig)
        return;
    if (what && *what)
        cb_results_line(f, "Interrupted", "%s -- %s", sig, what);
    else
        cb_results_line(f, "Interrupted", "%s", sig);
}
