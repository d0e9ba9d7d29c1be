/* rss.h: this process's resident memory, for the test programs that
 * measure what touching shared memory costs a node */
#ifndef TESTS_PROGS_RSS_H
#define TESTS_PROGS_RSS_H

#include <stdio.h>
#include <string.h>

/* VmRSS in bytes, -1 if /proc cannot say */
static inline long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            sscanf(line + 6, "%ld", &kb);
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

#endif
