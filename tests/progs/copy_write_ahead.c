/* copy_write_ahead: a write fault on a page this node has no copy of
 * fetches the pages after it with it and opens them for writing too,
 * twinned (fault.c): a run written in order takes one fault a fetch, not
 * one a page, and only the words written reach the home.
 * PAGES pages are homed on node 0, which fills them with -1.  Round 1: a
 * thread on the last node writes word 0 of pages 0..WRITTEN-1, in order
 * (its write faults counted); pages WRITTEN.. of the last fetched run are
 * opened and not written.  Round 2: in the same interval node 0 writes
 * word 1 of every page and the writer word 2.  After each round main, on
 * node 0, checks every word of every page.
 * At 1 node the pages are the writer's own: nothing to measure.
 * RESULT ok=1 nodes=N faults=F bad=B */
#include <cables.h>
#include <stdio.h>

#define PAGES 48
#define WRITTEN 40

struct shared {
    cables_barrier_t b;
    long *data;
    long faults;
};

static void *writer(void *p)
{
    struct shared *s = p;
    size_t words = cables_page_size() / sizeof(long);
    cables_barrier_wait(&s->b); /* the pages are filled */
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    for (int k = 0; k < WRITTEN; k++)
        s->data[k * words] = 1000 + k;
    cables_stats_get(&s1);
    s->faults = (long)(s1.write_faults - s0.write_faults);
    cables_barrier_wait(&s->b); /* round 1 checked after it */
    cables_barrier_wait(&s->b);
    for (int k = 0; k < PAGES; k++)
        s->data[k * words + 2] = 3000 + k;
    cables_barrier_wait(&s->b); /* round 2 checked after it */
    return NULL;
}

/* every word of every page: what was written in the rounds so far, -1 elsewhere */
static long check(const long *d, size_t words, int round)
{
    long bad = 0;
    for (int k = 0; k < PAGES; k++)
        for (size_t w = 0; w < words; w++) {
            long want = -1;
            if (w == 0 && k < WRITTEN)
                want = 1000 + k;
            else if (w == 1 && round >= 2)
                want = 2000 + k;
            else if (w == 2 && round >= 2)
                want = 3000 + k;
            bad += d[k * words + w] != want;
        }
    return bad;
}

int main(void)
{
    int nn = cables_node_count();
    size_t words = cables_page_size() / sizeof(long);
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    s->data = cables_alloc_placed(PAGES * cables_page_size(), CABLES_POLICY_FIXED, 0);
    if (!s->data)
        return 2;
    for (size_t i = 0; i < PAGES * words; i++)
        s->data[i] = -1;
    cables_thread_t t;
    if (cables_thread_create(&t, nn - 1, writer, s))
        return 2;
    cables_barrier_wait(&s->b);
    cables_barrier_wait(&s->b);
    long bad = check(s->data, words, 1);
    cables_barrier_wait(&s->b);
    for (int k = 0; k < PAGES; k++)
        s->data[k * words + 1] = 2000 + k;
    cables_barrier_wait(&s->b);
    bad += check(s->data, words, 2);
    cables_thread_join(t, NULL);
    int ok = bad == 0;
    if (nn > 1)
        ok = ok && s->faults >= 1 && s->faults <= WRITTEN / 8;
    printf("RESULT ok=%d nodes=%d faults=%ld bad=%ld\n", ok, nn, s->faults, bad);
    return ok ? 0 : 1;
}
