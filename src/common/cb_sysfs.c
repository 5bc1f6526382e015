/* Reading the one-value files of sysfs and procfs (PCIe link attributes, sysctls). */
#include "cb_common.h"

#include <string.h>

int cb_read_first_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(buf, (int)len, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}
