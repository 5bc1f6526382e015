/* cb-linktest's report (report.c), beside its entry points (run.h): times and speeds as
 * the report writes them, the options as the documents have them. */
#ifndef CB_LINKTEST_REPORT_H
#define CB_LINKTEST_REPORT_H

#include "options.h"

#include <stddef.h>

/* report.c */
const char *lt_fmt_time(double s, char *buf, size_t len);
double lt_gbits(const lt_config *cfg, double seconds);
void lt_json_options(cb_json *j, const lt_config *cfg);

#endif
