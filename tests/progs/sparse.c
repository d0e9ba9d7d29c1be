/* sparse: a 1 GiB allocation of which every 100th page is written, by a
 * thread on the last node; that node's cables_memory_used() and VmRSS must
 * grow by about 1% of 1 GiB (between 0.9% and 3%).
 * RESULT ok=1 pages=P mem_delta=M rss_delta=R lo=L hi=H main_mem_delta=D */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#include "rss.h"

#define SIZE (1ull << 30)

struct shared { volatile char *big; long mem_delta, rss_delta, pages, bad; };

static void *touch(void *arg)
{
    struct shared *s = arg;
    size_t ps = cables_page_size(), npages = SIZE / ps;
    long m0 = (long)cables_memory_used(), r0 = rss_bytes(), n = 0, bad = 0;
    for (size_t p = 0; p < npages; p += 100, n++)
        s->big[p * ps + 8] = (char)(p / 100 % 127 + 1);
    for (size_t p = 0; p < npages; p += 100)
        if (s->big[p * ps + 8] != (char)(p / 100 % 127 + 1))
            bad++;
    s->mem_delta = (long)cables_memory_used() - m0;
    s->rss_delta = rss_bytes() - r0;
    s->pages = n;
    s->bad = bad;
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    long m0 = (long)cables_memory_used();
    struct shared *s = cables_alloc(sizeof *s);
    s->big = cables_alloc(SIZE);
    if (!s->big) {
        printf("RESULT ok=0 error=alloc_failed\n");
        return 1;
    }
    cables_thread_t t;
    cables_thread_create(&t, nn - 1, touch, s);
    cables_thread_join(t, NULL);
    long lo = (long)(SIZE * 9 / 1000), hi = (long)(SIZE * 3 / 100);
    long md = (long)cables_memory_used() - m0;
    int ok = s->bad == 0 && s->mem_delta >= lo && s->mem_delta <= hi && s->rss_delta >= lo &&
             s->rss_delta <= hi && md <= hi;
    printf("RESULT ok=%d pages=%ld mem_delta=%ld rss_delta=%ld lo=%ld hi=%ld main_mem_delta=%ld "
           "bad=%ld\n", ok, s->pages, s->mem_delta, s->rss_delta, lo, hi, md, s->bad);
    return ok ? 0 : 1;
}
