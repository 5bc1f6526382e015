/* What cpu-test says: the plan before measuring, the per-core figures after, the JSON
 * document and the results block (report.c). */
#ifndef CT_REPORT_H
#define CT_REPORT_H

#include "run.h"

void ct_print_plan(const ct_run *run);
/* Per core and per interval, and the verification's outcome. */
void ct_diagnose(const ct_run *run);
/* The JSON document (--json) and the results block; returns the exit status. */
int ct_emit(const ct_run *run);

#endif
