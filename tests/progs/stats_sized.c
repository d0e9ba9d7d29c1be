/* stats_sized: cables_stats_get_sized fills only the bytes asked for (a
 * program built against an older cables.h, whose struct was shorter), and
 * those equal the full struct's.  The fields compared change only with
 * this thread's faults, and it takes none between the two calls.
 * RESULT ok=1 faults=F canary_ok=1 same=1 */
#include <cables.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    size_t ps = cables_page_size();
    char *m = cables_alloc(4 * ps);
    for (int i = 0; i < 4; i++)
        m[i * ps] = (char)i; /* faults to count */
    /* an older struct: up to, not including, misplaced_pages */
    const size_t old = offsetof(cables_stats_t, misplaced_pages);
    unsigned char buf[sizeof(cables_stats_t) + 64];
    memset(buf, 0xA5, sizeof buf);
    cables_stats_get_sized((cables_stats_t *)buf, old);
    cables_stats_t full;
    cables_stats_get(&full);
    int canary_ok = 1;
    for (size_t i = old; i < sizeof buf; i++)
        canary_ok &= buf[i] == 0xA5;
    cables_stats_t part;
    memcpy(&part, buf, old);
    int same = part.read_faults == full.read_faults && part.write_faults == full.write_faults &&
               part.home_faults == full.home_faults;
    unsigned long long faults = full.read_faults + full.write_faults;
    int ok = canary_ok && same && faults >= 1;
    printf("RESULT ok=%d faults=%llu canary_ok=%d same=%d\n", ok, faults, canary_ok, same);
    return !ok;
}
