/* scatter: a thread on the last node writes one word on each of pages
 * 0..PAGES-1 of STREAMS runs far apart, in turn (page 0 of every run, then
 * page 1, ...), as RADIX writes its buckets.  Each first write opens a page
 * group (16 pages), but pages mapped ahead for that many runs at once would
 * leave the cache before their writes (fault.c: sweeping), so the scatter
 * may map only what it writes: VmRSS grows by at most 1.25 times the pages
 * written.  PAGES is one more than a group: the write that opens each run's
 * second group is where a sweep would map 15 pages more.
 * RESULT ok=1 written=W rss_delta=R hi=H bad=B */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#include "rss.h"

#define STREAMS 64
#define PAGES 17
#define GAP 64 /* pages from one run to the next: untouched groups between */

struct shared { volatile char *big; long rss_delta, written, bad; };

static void *scatter(void *arg)
{
    struct shared *s = arg;
    size_t ps = cables_page_size();
    long r0 = rss_bytes(), n = 0, bad = 0;
    for (size_t j = 0; j < PAGES; j++)
        for (size_t r = 0; r < STREAMS; r++, n++)
            s->big[(r * GAP + j) * ps + 8] = (char)(r + j + 1);
    s->rss_delta = rss_bytes() - r0;
    for (size_t j = 0; j < PAGES; j++)
        for (size_t r = 0; r < STREAMS; r++)
            if (s->big[(r * GAP + j) * ps + 8] != (char)(r + j + 1))
                bad++;
    s->written = n;
    s->bad = bad;
    return NULL;
}

int main(void)
{
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    s->big = cables_alloc(STREAMS * GAP * ps);
    if (!s->big) {
        printf("RESULT ok=0 error=alloc_failed\n");
        return 1;
    }
    cables_thread_t t;
    cables_thread_create(&t, cables_node_count() - 1, scatter, s);
    cables_thread_join(t, NULL);
    long hi = s->written * (long)ps * 5 / 4;
    int ok = s->bad == 0 && s->written == STREAMS * PAGES && s->rss_delta <= hi;
    printf("RESULT ok=%d written=%ld rss_delta=%ld hi=%ld bad=%ld\n", ok, s->written,
           s->rss_delta, hi, s->bad);
    return ok ? 0 : 1;
}
