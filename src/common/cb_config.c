/* The options in the JSON document's config, from the option table (cb_options.h). */
#include "cb_options.h"

#include <math.h>
#include <stdint.h>

static void write_option(cb_json *j, const cb_opt *o, const void *cfg)
{
    const void *at = (const char *)cfg + o->off;
    switch (o->type) {
    case CB_OPT_FLAG:
        cbj_bool(j, o->doc_key, *(const int *)at);
        break;
    case CB_OPT_INT:
        cbj_int(j, o->doc_key, *(const int *)at);
        break;
    case CB_OPT_CHOICE:
        cbj_str(j, o->doc_key, o->choices[*(const int *)at]);
        break;
    case CB_OPT_LONG:
        cbj_int(j, o->doc_key, *(const long *)at);
        break;
    case CB_OPT_U64:
        cbj_int(j, o->doc_key, (long long)*(const uint64_t *)at);
        break;
    case CB_OPT_SIZE:
        cbj_int(j, o->doc_key, (long long)*(const size_t *)at);
        break;
    case CB_OPT_DOUBLE:
    case CB_OPT_DURATION:
        cbj_num(j, o->doc_key, *(const double *)at);
        break;
    case CB_OPT_STRING: {
        const char *s = *(const char *const *)at;
        if (s)
            cbj_str(j, o->doc_key, s);
        else
            cbj_num(j, o->doc_key, NAN); /* null */
        break;
    }
    case CB_OPT_INTLIST: {
        const cb_intlist *l = at;
        cbj_arr_begin(j, o->doc_key);
        for (int i = 0; i < l->n; i++)
            cbj_int(j, NULL, l->v[i]);
        cbj_arr_end(j);
        break;
    }
    case CB_OPT_CUSTOM:
        cb_die(CB_EXIT_CANNOT_RUN, "internal error: option '%s' is custom: its kernel writes it",
               o->name);
    }
}

void cbj_config_options(cb_json *j, const cb_cmd *cmd, const void *cfg)
{
    for (const cb_opt *o = cmd->opts; o->name || o->letter || o->replaced_by; o++)
        if (o->doc_key && !o->replaced_by)
            write_option(j, o, cfg);
}
