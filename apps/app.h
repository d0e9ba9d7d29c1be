/* What every program of apps/ shares: failing on a pthread error, and
 * reading a whole-number argument.  The program defines `prog` (its name)
 * and usage() before including this. */
#ifndef APPS_APP_H
#define APPS_APP_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pt_fail(const char *what, int rc)
{
    fprintf(stderr, "%s: %s failed: %s\n", prog, what, strerror(rc));
    exit(1);
}

#define PT(call) do { int rc_ = (call); if (rc_ != 0) pt_fail(#call, rc_); } while (0)

static long parse_arg(const char *s, const char *name, long min, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: invalid %s '%s': expected an integer in %ld..%ld\n",
                prog, name, s, min, max);
        usage();
        exit(2);
    }
    return v;
}

#endif
