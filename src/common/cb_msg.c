/* Messages on stderr, each starting with the program's name (docs/kernel-contract.md), and
 * where the human output goes: stdout, or stderr when the JSON document is written to
 * stdout (--json -), so that stdout holds only the document. */
#include "cb_common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *cb_prog = "cobalt-bench";

/* Every message: the program's name, what kind it is ("" or "warning: "), the text. */
static void say(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: %s", cb_prog, kind);
    vfprintf(stderr, fmt, ap);
}

void (*cb_before_usage_exit)(void);

void cb_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("", fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry '%s --help' for more information.\n", cb_prog);
    if (cb_before_usage_exit)
        cb_before_usage_exit();
    exit(CB_EXIT_USAGE);
}

void cb_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("", fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

void cb_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("warning: ", fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cb_print_version(const char *test_version)
{
    printf("%s (cobalt-bench) %s\nTest version %s\n", cb_prog, CB_VERSION, test_version);
}

/* ---- where the human output goes ----------------------------------------------- */
static int human_to_stderr;

void cb_human_output_for_json(const char *json_path)
{
    human_to_stderr = json_path && strcmp(json_path, "-") == 0;
}

FILE *cb_human(void)
{
    return human_to_stderr ? stderr : stdout;
}
