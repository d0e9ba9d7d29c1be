/* ahead: the store's pages allocated ahead of a sweep (store.c).  A thread
 * on the last node writes one word on each of pages [0, SWEEP) of an
 * allocation, in order; its node's store may allocate pages past them, at
 * most as many as it wrote, up to 256 (CB_STORE_AHEAD).  Then a thread on
 * node 0 writes pages [SWEEP, 2 SWEEP), which the last node never touched
 * (so homed on node 0 when there are two nodes or more, while the last
 * node's store may hold them allocated, zero), and a thread on the last
 * node reads pages [0, 3 SWEEP): each page's word, or zero on the pages
 * nobody wrote.  The last node's cables_memory_used() grows by the pages
 * it wrote and at most 256 + 16 more (a page group).
 * RESULT ok=1 ahead=A mem_delta=M lo=L hi=H bad=B */
#include <cables.h>
#include <stdio.h>
#include <time.h>

#define SWEEP 1024

struct shared { volatile long *big; long ahead, mem_delta, bad; };

static long word(size_t p) { return p < SWEEP ? (long)p + 1 : p < 2 * SWEEP ? -(long)p : 0; }

static uint64_t store_ahead(void)
{
    cables_stats_t st;
    cables_stats_get(&st);
    return st.store_ahead;
}

static void *sweep(void *arg)
{
    struct shared *s = arg;
    size_t w = cables_page_size() / sizeof(long);
    uint64_t a0 = store_ahead();
    long m0 = (long)cables_memory_used();
    for (size_t p = 0; p < SWEEP; p++)
        s->big[p * w + 1] = word(p);
    /* the store's thread works on after the sweep: until its count has
     * stood still for 50 ms (at most 5 s) */
    uint64_t a = store_ahead(), b;
    struct timespec ms = { 0, 1000000 };
    for (int still = 0, i = 0; still < 50 && i < 5000; i++, still = a == b ? still + 1 : 0) {
        nanosleep(&ms, NULL);
        b = a;
        a = store_ahead();
    }
    s->ahead = (long)(a - a0);
    s->mem_delta = (long)cables_memory_used() - m0;
    return NULL;
}

static void *second(void *arg)
{
    struct shared *s = arg;
    size_t w = cables_page_size() / sizeof(long);
    for (size_t p = SWEEP; p < 2 * SWEEP; p++)
        s->big[p * w + 1] = word(p);
    return NULL;
}

static void *check(void *arg)
{
    struct shared *s = arg;
    size_t w = cables_page_size() / sizeof(long);
    for (size_t p = 0; p < 3 * SWEEP; p++)
        s->bad += s->big[p * w + 1] != word(p);
    return NULL;
}

static void on(int node, void *(*fn)(void *), struct shared *s)
{
    cables_thread_t t;
    cables_thread_create(&t, node, fn, s);
    cables_thread_join(t, NULL);
}

int main(void)
{
    int last = cables_node_count() - 1;
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    s->big = cables_alloc(4 * SWEEP * ps);
    if (!s->big) {
        printf("RESULT ok=0 error=alloc_failed\n");
        return 1;
    }
    on(last, sweep, s);
    on(0, second, s);
    on(last, check, s);
    long lo = SWEEP * (long)ps, hi = (SWEEP + 256 + 16) * (long)ps;
    int ok = s->bad == 0 && s->mem_delta >= lo && s->mem_delta <= hi;
    printf("RESULT ok=%d ahead=%ld mem_delta=%ld lo=%ld hi=%ld bad=%ld\n", ok, s->ahead,
           s->mem_delta, lo, hi, s->bad);
    return ok ? 0 : 1;
}
