/* describe-kernels: every kernel's --describe (cb_describe.c) in one JSON object, keyed by
 * the kernel's program name, for the Python package (python/cobalt_bench/kernels/
 * described.json, made by `make`). It links only the kernels' option and metrics tables,
 * none of what the kernels need to run (hwloc, MPI, CUDA, libibumad): the package knows
 * every kernel's metrics and units on a machine where some kernel cannot be built. */
#include "../common/cb_options.h"

/* Each kernel's command line, as its options file defines it: CB_DESCRIBED_CMDS is
 * X(mt_cmd) X(lt_cmd) ..., made by `make` from every kernel.mk's DESCRIBED_CMDS. */
#ifndef CB_DESCRIBED_CMDS
#error "CB_DESCRIBED_CMDS: build describe-kernels with make (src/describe/kernel.mk)"
#endif
#define X(cmd) extern const cb_cmd cmd;
CB_DESCRIBED_CMDS
#undef X

int main(void)
{
#define X(cmd) &cmd,
    const cb_cmd *const kernels[] = {CB_DESCRIBED_CMDS};
#undef X
    cb_json j;
    cbj_init(&j);
    cbj_obj_begin(&j, NULL);
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++)
        cbj_describe(&j, kernels[k]->name, kernels[k]);
    cbj_obj_end(&j);
    int rc = cb_json_write(&j, "-");
    cbj_free(&j);
    return rc == 0 ? CB_EXIT_OK : CB_EXIT_CANNOT_RUN;
}
