/* --describe: a kernel's command line and document described from its tables
 * (cb_options.h), as one JSON object on stdout:
 *
 *   {"kernel": NAME, "test_version": V,
 *    "options": [{"name", "letter", "type", "unit", "document_key", "min", "max", "default",
 *                 "argument", "argument_optional", "help", "section", "choices",
 *                 "deprecated_spellings"}, ...],
 *    "metrics": [{"name", "unit", "better", "meaning"}, ...]}
 *
 * A field that does not apply is null ("letter" of a long-only option, "min" and "max"
 * without a range). Deprecated rows are not options of their own: each is listed under
 * the option it now spells. */
#include "cb_options.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const type_names[] = {
    [CB_OPT_FLAG] = "flag",         [CB_OPT_INT] = "int",       [CB_OPT_LONG] = "long",
    [CB_OPT_U64] = "u64",           [CB_OPT_DOUBLE] = "double", [CB_OPT_SIZE] = "size",
    [CB_OPT_DURATION] = "duration", [CB_OPT_STRING] = "string", [CB_OPT_INTLIST] = "intlist",
    [CB_OPT_CHOICE] = "choice",     [CB_OPT_CUSTOM] = "custom",
};

static const char *const better_names[] = {
    [CB_NEITHER] = "neither", [CB_HIGHER] = "higher", [CB_LOWER] = "lower",
};

static int is_end(const cb_opt *o)
{
    return !o->name && !o->letter && !o->replaced_by;
}

static void str_or_null(cb_json *j, const char *key, const char *val)
{
    if (val)
        cbj_str(j, key, val);
    else
        cbj_num(j, key, NAN); /* null */
}

static const char *unit_of(const cb_opt *o)
{
    if (o->unit)
        return o->unit;
    if (o->type == CB_OPT_SIZE)
        return "B";
    if (o->type == CB_OPT_DURATION)
        return "s";
    return NULL;
}

static void describe_option(cb_json *j, const cb_opt *rows, const cb_opt *o)
{
    char letter[2] = {o->letter, '\0'};
    cbj_obj_begin(j, NULL);
    cbj_str(j, "name", o->name);
    str_or_null(j, "letter", o->letter ? letter : NULL);
    cbj_str(j, "type", type_names[o->type]);
    str_or_null(j, "unit", unit_of(o));
    str_or_null(j, "document_key", o->doc_key);
    int ranged = o->min != 0 || o->max != 0;
    cbj_num(j, "min", ranged ? o->min : NAN);
    cbj_num(j, "max", ranged ? o->max : NAN);
    str_or_null(j, "default", o->def && *o->def ? o->def : NULL);
    str_or_null(j, "argument", o->type == CB_OPT_FLAG ? NULL : o->arg);
    cbj_bool(j, "argument_optional", o->optional_arg);
    cbj_str(j, "help", o->help ? o->help : "");
    str_or_null(j, "section", o->section);
    cbj_arr_begin(j, "choices");
    for (const char *const *c = o->choices; c && *c; c++)
        cbj_str(j, NULL, *c);
    cbj_arr_end(j);
    cbj_arr_begin(j, "deprecated_spellings");
    for (const cb_opt *d = rows; !is_end(d); d++) {
        if (!d->replaced_by || strcmp(d->replaced_by, o->name) != 0)
            continue;
        char spelling[80];
        if (d->name)
            snprintf(spelling, sizeof spelling, "--%s", d->name);
        else
            snprintf(spelling, sizeof spelling, "-%c", d->letter);
        cbj_str(j, NULL, spelling);
    }
    cbj_arr_end(j);
    cbj_obj_end(j);
}

void cbj_describe(cb_json *j, const char *key, const cb_cmd *cmd)
{
    cbj_obj_begin(j, key);
    cbj_str(j, "kernel", cmd->name);
    cbj_str(j, "test_version", cmd->test_version);
    cbj_arr_begin(j, "options");
    for (const cb_opt *o = cmd->opts; !is_end(o); o++)
        if (!o->replaced_by && o->name)
            describe_option(j, cmd->opts, o);
    cbj_arr_end(j);
    cbj_arr_begin(j, "metrics");
    for (const cb_metric_def *m = cmd->metrics; m && m->name; m++) {
        cbj_obj_begin(j, NULL);
        cbj_str(j, "name", m->name);
        cbj_str(j, "unit", m->unit);
        cbj_str(j, "better", better_names[m->better]);
        cbj_str(j, "meaning", m->meaning ? m->meaning : "");
        cbj_obj_end(j);
    }
    cbj_arr_end(j);
    cbj_obj_end(j);
}

int cb_opts_describe(const cb_cmd *cmd)
{
    cb_json j;
    cbj_init(&j);
    cbj_describe(&j, NULL, cmd);
    int rc = cb_json_write(&j, "-");
    cbj_free(&j);
    return rc;
}
