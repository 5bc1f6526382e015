/* Options from one table: defaults, parsing, range checks and --help (cb_options.h). */
#include "cb_options.h"

#include <limits.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ROWS 128
#define HELP_COLUMN 28
enum { VAL_HELP = 1000, VAL_VERSION, VAL_DESCRIBE, VAL_ROW = 2000 };

static unsigned char given[MAX_ROWS];

static int row_count(const cb_opt *o)
{
    int n = 0;
    while (o[n].name || o[n].letter || o[n].replaced_by)
        n++;
    if (n > MAX_ROWS)
        cb_die(CB_EXIT_CANNOT_RUN, "internal error: more than %d option rows", MAX_ROWS);
    return n;
}

static const cb_opt *find_long(const cb_opt *o, const char *name)
{
    for (; o->name || o->letter || o->replaced_by; o++)
        if (o->name && !o->replaced_by && strcmp(o->name, name) == 0)
            return o;
    return NULL;
}

/* ---- one value into its field ---------------------------------------------- */
static int has_range(const cb_opt *o)
{
    return o->min != 0 || o->max != 0;
}

static void fmt_size(char *buf, size_t len, double bytes)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && bytes >= 1024 && fmod(bytes, 1024) == 0) {
        bytes /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, len, "%.0f", bytes);
    else
        snprintf(buf, len, "%.0f%c", bytes, units[u]);
}

static void check_range(const cb_opt *o, const char *opt, const char *arg, double v)
{
    if (!has_range(o) || (v >= o->min && v <= o->max))
        return;
    if (o->type == CB_OPT_SIZE) {
        char lo[32], hi[32];
        fmt_size(lo, sizeof lo, o->min);
        fmt_size(hi, sizeof hi, o->max);
        cb_usage_error("invalid value '%s' for %s: must be between %s and %s bytes", arg, opt, lo, hi);
    }
    if (o->type == CB_OPT_DURATION)
        cb_usage_error("invalid value '%s' for %s: must be between %g s and %g s", arg, opt,
                       o->min, o->max);
    cb_usage_error("invalid value '%s' for %s: must be between %.17g and %.17g", arg, opt,
                   o->min, o->max);
}

static void set_value(const cb_opt *o, const char *opt, const char *arg, void *cfg)
{
    void *dest = (char *)cfg + o->off;
    switch (o->type) {
    case CB_OPT_FLAG:
        *(int *)dest = 1;
        return;
    case CB_OPT_STRING:
        if (!arg || !*arg)
            cb_usage_error("option %s needs a non-empty value", opt);
        *(const char **)dest = arg;
        return;
    case CB_OPT_CUSTOM:
        o->parse(opt, arg, dest);
        return;
    case CB_OPT_INTLIST: {
        cb_intlist *l = dest;
        l->n = cb_opt_intlist(opt, arg, l->v, CB_INTLIST_MAX);
        for (int i = 0; i < l->n; i++)
            check_range(o, opt, arg, l->v[i]);
        return;
    }
    case CB_OPT_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (strcmp(arg, o->choices[i]) == 0) {
                *(int *)dest = i;
                return;
            }
        {
            char names[512] = "";
            for (int i = 0; o->choices[i]; i++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         i ? ", " : "", o->choices[i]);
            cb_usage_error("invalid value '%s' for %s: expected one of %s", arg, opt, names);
        }
    case CB_OPT_SIZE: {
        uint64_t v;
        if (cb_parse_size(arg, &v) != 0)
            cb_usage_error("invalid value '%s' for %s: expected a size in bytes like 4096, "
                           "64K, 256M or 1G", arg, opt);
        check_range(o, opt, arg, (double)v);
        *(size_t *)dest = (size_t)v;
        return;
    }
    case CB_OPT_DURATION: {
        double v;
        if (cb_parse_duration(arg, &v) != 0)
            cb_usage_error("invalid value '%s' for %s: expected a duration like 10, 2.5s, "
                           "500ms, 5m or 1h", arg, opt);
        check_range(o, opt, arg, v);
        *(double *)dest = v;
        return;
    }
    case CB_OPT_DOUBLE: {
        double lo = has_range(o) ? o->min : -HUGE_VAL, hi = has_range(o) ? o->max : HUGE_VAL;
        *(double *)dest = cb_opt_double(opt, arg, lo, hi);
        return;
    }
    case CB_OPT_INT:
    case CB_OPT_LONG: {
        long lo = has_range(o) ? (long)o->min : (o->type == CB_OPT_INT ? -2147483647L - 1 : LONG_MIN);
        long hi = has_range(o) ? (long)o->max : (o->type == CB_OPT_INT ? 2147483647L : LONG_MAX);
        long v = cb_opt_long(opt, arg, lo, hi);
        if (o->type == CB_OPT_INT)
            *(int *)dest = (int)v;
        else
            *(long *)dest = v;
        return;
    }
    case CB_OPT_U64: {
        /* the range in integers: a double near 2^63 or 2^64 would let a value slip past */
        uint64_t lo = 0, hi = UINT64_MAX;
        if (has_range(o)) {
            lo = o->min > 0 ? (uint64_t)o->min : 0;
            hi = o->max >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)o->max;
        }
        *(uint64_t *)dest = cb_opt_u64(opt, arg, lo, hi);
        return;
    }
    }
}

static void opt_label(const cb_opt *o, char *buf, size_t len)
{
    if (o->name)
        snprintf(buf, len, "--%s", o->name);
    else
        snprintf(buf, len, "-%c", o->letter);
}

void cb_opts_defaults(const cb_cmd *cmd, void *cfg)
{
    for (const cb_opt *o = cmd->opts; o->name || o->letter || o->replaced_by; o++) {
        if (o->replaced_by || !o->def)
            continue;
        char label[80];
        opt_label(o, label, sizeof label);
        set_value(o, label, o->def, cfg);
    }
}

/* ---- parsing ---------------------------------------------------------------- */
static int arg_kind(const cb_opt *o)
{
    if (o->type == CB_OPT_FLAG)
        return no_argument;
    return o->optional_arg ? optional_argument : required_argument;
}

int cb_opts_parse(const cb_cmd *cmd, void *cfg, int argc, char **argv)
{
    const cb_opt *rows = cmd->opts;
    int n = row_count(rows);
    struct option longs[MAX_ROWS + 4];
    char shorts[3 * MAX_ROWS + 8] = ":hV";
    int nl = 0;
    int letter_row[256];
    for (int i = 0; i < 256; i++)
        letter_row[i] = -1;

    memset(given, 0, sizeof given);
    cb_opts_defaults(cmd, cfg);
    for (int i = 0; i < n; i++) {
        const cb_opt *o = &rows[i];
        const cb_opt *target = o->replaced_by ? find_long(rows, o->replaced_by) : o;
        if (!target)
            cb_die(CB_EXIT_CANNOT_RUN, "internal error: option '%s' replaced by unknown '%s'",
                   o->name ? o->name : "?", o->replaced_by);
        if (o->name)
            longs[nl++] = (struct option){o->name, arg_kind(target), NULL, VAL_ROW + i};
        if (o->letter) {
            size_t l = strlen(shorts);
            shorts[l++] = o->letter;
            if (arg_kind(target) == required_argument)
                shorts[l++] = ':';
            else if (arg_kind(target) == optional_argument) {
                shorts[l++] = ':';
                shorts[l++] = ':';
            }
            shorts[l] = '\0';
            letter_row[(unsigned char)o->letter] = i;
        }
    }
    longs[nl++] = (struct option){"help", no_argument, NULL, VAL_HELP};
    longs[nl++] = (struct option){"version", no_argument, NULL, VAL_VERSION};
    longs[nl++] = (struct option){"describe", no_argument, NULL, VAL_DESCRIBE};
    longs[nl] = (struct option){0, 0, 0, 0};

    opterr = 0;
    optind = 1;
    for (;;) {
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1)
            break;
        if (c == 'h' || c == VAL_HELP) {
            cb_opts_help(cmd, stdout);
            exit(CB_EXIT_OK);
        }
        if (c == 'V' || c == VAL_VERSION) {
            cb_print_version(cmd->test_version);
            exit(CB_EXIT_OK);
        }
        if (c == VAL_DESCRIBE)
            exit(cb_opts_describe(cmd) == 0 ? CB_EXIT_OK : CB_EXIT_CANNOT_RUN);
        if (c == ':')
            cb_usage_error("option '%s' needs a value", argv[optind - 1]);
        if (c == '?') {
            if (optopt > 0 && optopt < 256)
                cb_usage_error("unknown option '-%c'", optopt);
            cb_usage_error("unknown option '%s'", argv[optind - 1]);
        }
        int i = c >= VAL_ROW ? c - VAL_ROW : letter_row[(unsigned char)c];
        const cb_opt *o = &rows[i];
        const cb_opt *target = o->replaced_by ? find_long(rows, o->replaced_by) : o;
        char used[80], label[80];
        if (c >= VAL_ROW)
            snprintf(used, sizeof used, "--%s", o->name);
        else
            snprintf(used, sizeof used, "-%c", o->letter);
        if (o->replaced_by) {
            if (target->letter)
                fprintf(stderr, "%s: warning: '%s' is deprecated; use '-%c' or '--%s'\n",
                        cb_prog, used, target->letter, target->name);
            else
                fprintf(stderr, "%s: warning: '%s' is deprecated; use '--%s'\n", cb_prog,
                        used, target->name);
        }
        opt_label(target, label, sizeof label);
        set_value(target, c >= VAL_ROW && !o->replaced_by ? used : label, optarg, cfg);
        given[target - rows] = 1;
    }
    if (argc - optind > cmd->operands)
        cb_usage_error("unexpected argument '%s'", argv[optind + cmd->operands]);
    /* --json -: the document alone on stdout, the human output on stderr */
    const cb_opt *json = find_long(rows, "json");
    if (json && json->type == CB_OPT_STRING)
        cb_human_output_for_json(*(const char **)((char *)cfg + json->off));
    return optind;
}

int cb_opts_given(const cb_cmd *cmd, const char *name)
{
    const cb_opt *o = find_long(cmd->opts, name);
    return o ? given[o - cmd->opts] : 0;
}

/* ---- --help ------------------------------------------------------------------ */
static void print_help_text(FILE *f, const char *text, const char *def, int col)
{
    const char *line = text ? text : "";
    for (int first = 1;; first = 0) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        if (!first)
            fprintf(f, "%*s", HELP_COLUMN, "");
        else if (col >= HELP_COLUMN - 1)
            fprintf(f, "\n%*s", HELP_COLUMN, "");
        else
            fprintf(f, "%*s", HELP_COLUMN - col, "");
        fprintf(f, "%.*s", len, line);
        if (!nl)
            break;
        fputc('\n', f);
        line = nl + 1;
    }
    if (def)
        fprintf(f, " (default %s)", def);
    fputc('\n', f);
}

void cb_opts_help(const cb_cmd *cmd, FILE *f)
{
    fprintf(f, "Usage: %s %s\n", cmd->name, cmd->usage ? cmd->usage : "[OPTION]...");
    if (cmd->about)
        fprintf(f, "%s", cmd->about);
    for (const cb_opt *o = cmd->opts; o->name || o->letter || o->replaced_by; o++) {
        if (o->replaced_by)
            continue;
        if (o->section)
            fprintf(f, "\n%s\n", o->section);
        char left[128];
        int col = o->letter ? snprintf(left, sizeof left, "  -%c, --%s", o->letter, o->name)
                            : snprintf(left, sizeof left, "      --%s", o->name);
        if (o->type != CB_OPT_FLAG && o->arg)
            col += snprintf(left + col, sizeof left - (size_t)col, o->optional_arg ? "[=%s]" : "=%s",
                            o->arg);
        fputs(left, f);
        int show_def = o->def && *o->def && o->type != CB_OPT_FLAG && o->type != CB_OPT_CUSTOM;
        print_help_text(f, o->help, show_def ? o->def : NULL, col);
    }
    fprintf(f, "  -h, --help%*sthis help\n", HELP_COLUMN - 12, "");
    fprintf(f, "  -V, --version%*sversion\n", HELP_COLUMN - 15, "");
    int deprecated = 0;
    for (const cb_opt *o = cmd->opts; o->name || o->letter || o->replaced_by; o++) {
        if (!o->replaced_by)
            continue;
        if (!deprecated++)
            fprintf(f, "\nDeprecated spellings (still accepted, with a note on stderr):\n");
        if (o->name)
            fprintf(f, "  --%s (now --%s)\n", o->name, o->replaced_by);
        else
            fprintf(f, "  -%c (now --%s)\n", o->letter, o->replaced_by);
    }
    if (cmd->more)
        fprintf(f, "\n%s", cmd->more);
}
