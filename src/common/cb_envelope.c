/* The contract's document around each kernel's own parts (docs/kernel-contract.md):
 * the keys every kernel writes, in the same order. */
#include "cb_common.h"

void cbj_doc_begin(cb_json *j, const char *test, const char *test_version, const char *started)
{
    char host[256];
    cb_hostname(host, sizeof host);
    cbj_obj_begin(j, NULL);
    cbj_str(j, "test", test);
    cbj_str(j, "version", CB_VERSION);
    cbj_str(j, "test_version", test_version);
    cbj_str(j, "host", host);
    cbj_str(j, "started", started);
}

int cb_doc_write(const char *path, const cb_envelope *env, const cb_doc_parts *parts,
                 const void *ctx)
{
    cb_json j;
    cbj_init(&j);
    cbj_doc_begin(&j, env->test, env->test_version, env->started);
    cbj_num(&j, "duration_s", env->duration_s);
    cbj_bool(&j, "interrupted", env->interrupted);
    cbj_obj_begin(&j, "config");
    if (parts->config)
        parts->config(&j, ctx);
    cbj_obj_end(&j);
    cbj_obj_begin(&j, "metrics");
    if (parts->metrics)
        parts->metrics(&j, ctx);
    cbj_obj_end(&j);
    if (parts->extra)
        parts->extra(&j, ctx);
    cbj_obj_begin(&j, "compliance");
    cbj_num(&j, "threshold", env->threshold);
    if (parts->compliance)
        parts->compliance(&j, ctx);
    cbj_bool(&j, "passed", env->passed);
    cbj_obj_end(&j);
    cbj_obj_end(&j);
    int rc = cb_json_write(&j, path);
    cbj_free(&j);
    return rc;
}
