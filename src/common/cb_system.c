/* What the kernels read of the machine they run on: its host name, and the one-value
 * files of sysfs and procfs (PCIe link attributes, sysctls). */
#include "cb_common.h"

#include <string.h>
#include <unistd.h>

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

void cb_hostname(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0)
        snprintf(buf, len, "unknown");
    buf[len - 1] = '\0';
}
