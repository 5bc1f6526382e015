/* Command-line options from one table per kernel (fio's options.c is the model).
 *
 * A kernel declares each option once, as a row of a cb_opt table: long name, short
 * letter, type, where the value goes (offsetof into the kernel's config struct), range,
 * default, argument name and help text. From that table cb_opts_parse() sets the
 * defaults, builds getopt_long's tables, parses and range-checks every value (a bad
 * value exits 2 naming the option) and answers --help and --version; cb_opts_help()
 * prints the help text. The contract (docs/kernel-contract.md) fixes the letters that
 * mean the same thing in every kernel:
 *
 *   -d, --duration   -t, --threshold   -T, --threads...   -j, --json   -q, --quiet
 *   -h, --help       -V, --version        --describe
 *
 * --describe prints, from the option table and the kernel's metrics table, one JSON
 * object (cb_describe.c): the options (name, letter, type, unit, range, default, help,
 * section, choices, deprecated spellings), the metrics (name, unit, better direction,
 * meaning) and the document's test_version; the Python descriptors are held to it.
 *
 * A letter or long name that changed keeps working as a deprecated spelling: a row
 * with .replaced_by naming the new option's long name; using it prints a deprecation
 * note on stderr and sets the new option. Deprecated rows are not shown in --help. */
#ifndef CB_OPTIONS_H
#define CB_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cb_common.h"

typedef enum cb_opt_type {
    CB_OPT_FLAG,     /* int: set to 1; no argument */
    CB_OPT_INT,      /* int in [min, max] */
    CB_OPT_LONG,     /* long in [min, max] */
    CB_OPT_U64,      /* uint64_t in [min, max]; decimal or 0x hexadecimal */
    CB_OPT_DOUBLE,   /* double in [min, max] */
    CB_OPT_SIZE,     /* size_t bytes in [min, max]: 4096, 64K, 256M, 1G, 2T, 16MiB, 4096B */
    CB_OPT_DURATION, /* double seconds in [min, max]: 10, 2.5s, 500ms, 5m, 1h, 1d */
    CB_OPT_STRING,   /* const char *, pointing into argv */
    CB_OPT_INTLIST,  /* cb_intlist: non-negative integers and ranges, "0-3,8" */
    CB_OPT_CHOICE,   /* int: index of the argument in .choices */
    CB_OPT_CUSTOM,   /* .parse(option, argument, destination) */
} cb_opt_type;

#define CB_INTLIST_MAX CB_MAX_CPUS
typedef struct cb_intlist {
    int n;
    int v[CB_INTLIST_MAX];
} cb_intlist;

typedef struct cb_opt {
    const char *name;    /* long name without "--"; may be NULL for a deprecated letter */
    char letter;         /* short option, or 0 */
    cb_opt_type type;
    size_t off;          /* offsetof(the kernel's config struct, field) */
    double min, max;     /* numbers, sizes, durations: inclusive range; both 0 = any */
    const char *def;     /* default, written as a user would; NULL = zero/NULL */
    const char *arg;     /* the argument's name in --help ("N", "GBITS", "FILE") */
    const char *help;    /* help text; '\n' starts a further line */
    const char *section; /* when set, a heading printed in --help before this row */
    const char *const *choices;  /* CB_OPT_CHOICE: NULL-terminated names */
    /* CB_OPT_CUSTOM: parse arg (NULL when an optional argument is absent) into
     * dest; on bad input call cb_usage_error() naming opt. */
    void (*parse)(const char *opt, const char *arg, void *dest);
    int optional_arg;    /* the argument may be left out (--busy-poll[=US]) */
    const char *replaced_by; /* deprecated spelling of the option with this long name */
    const char *unit;    /* the value's unit for --describe ("Gbit/s", "%"); sizes are
                          * bytes and durations seconds without one */
    const char *doc_key; /* its key in the JSON document's config (cbj_config_options),
                          * or NULL: the kernel writes what it did with it itself */
} cb_opt;

/* The rows every kernel has (they need the config struct's field names). */
#define CB_OPT_JSON_ROW(cfg_type, field)                                                   \
    {.name = "json", .letter = 'j', .type = CB_OPT_STRING, .off = offsetof(cfg_type, field), \
     .arg = "FILE", .help = "write the JSON result document to FILE ('-' = stdout)"}
#define CB_OPT_QUIET_ROW(cfg_type, field)                                                  \
    {.name = "quiet", .letter = 'q', .type = CB_OPT_FLAG, .off = offsetof(cfg_type, field), \
     .help = "no progress lines on stderr"}

/* The paragraph of a kernel's help (cb_cmd.more) that says what a signal does to a timed
 * run (docs/kernel-contract.md, "Interrupted"), in one place for the kernels that say it
 * in these words. */
#define CB_HELP_INTERRUPTED                                                                \
    "SIGINT, SIGTERM or SIGHUP stops the run: the results block and the JSON document\n"   \
    "cover the time measured and say so (\"interrupted\": true); a second signal ends\n"  \
    "the program at once.\n"

typedef struct cb_cmd {
    const char *name;         /* the program's name, as in its messages */
    const char *test_version; /* for --version */
    const char *usage;        /* after the name on the Usage line: "[OPTION]..." */
    const char *about;        /* text between the Usage line and the options */
    const char *more;         /* text after the options (verification, exit status) */
    const cb_opt *opts;       /* ends with a row whose name, letter and replaced_by are 0 */
    int operands;             /* non-option arguments allowed (0: none) */
    const cb_metric_def *metrics; /* the document's metrics (cb_common.h), or NULL */
} cb_cmd;

/* Sets every default, then parses argv. --help prints the help on stdout and exits 0,
 * --version the version and exits 0; anything wrong exits 2 with a message naming the
 * option. Returns the index of the first operand (argc when there is none). */
int cb_opts_parse(const cb_cmd *cmd, void *cfg, int argc, char **argv);
/* Sets every default only (unit tests, or a kernel that builds a config itself). */
void cb_opts_defaults(const cb_cmd *cmd, void *cfg);
/* The --help text. */
void cb_opts_help(const cb_cmd *cmd, FILE *f);
/* Every option with a .doc_key into the document's config, in the table's order, its
 * value as the run used it (the config struct's field, after the kernel's own rules):
 * a flag as a boolean, numbers and sizes as numbers, a choice by its name, a list as an
 * array, a string (NULL: null) as a string. One function for every kernel, instead of
 * an echo of each option written by hand (cb_config.c). */
void cbj_config_options(cb_json *j, const cb_cmd *cmd, const void *cfg);
/* The --describe document on stdout (cb_describe.c); 0, or -1 with a message. */
int cb_opts_describe(const cb_cmd *cmd);
/* The same description as one object of j (key: its name in the enclosing object, or
 * NULL): src/describe/ puts every kernel's in one document for the Python package. */
void cbj_describe(cb_json *j, const char *key, const cb_cmd *cmd);
/* Whether the option with this long name (or one of its deprecated spellings) was
 * given on the command line of the last cb_opts_parse(). */
int cb_opts_given(const cb_cmd *cmd, const char *name);

#endif
