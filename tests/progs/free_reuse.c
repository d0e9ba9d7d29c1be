/* free_reuse: ranges given back by cables_free and handed out again by
 * cables_alloc, on 2 nodes or more: main on node 0, the thread on the last
 * node.  Both take the right to claim the pages of each fresh allocation
 * they first touch (claim_race.c), and keep it after the free unless the
 * runtime takes it back.
 *   zero   main first-touches page 0 of a 64-page block X, the thread
 *          writes pages 8..39 (homed on its node), main frees X and takes
 *          a block of the same size (X's range again): the thread must read
 *          zeros there (main zeroed X's used pages: pages whose home it did
 *          not know, which a stale right would have let it claim, and a
 *          claim lost is a copy whose zeros are no change).
 *   past   the thread first-touches page 63 of a 64-page block W, main
 *          frees W and takes a 20-page block V (W's range again, its
 *          front); the thread writes V in order, 20 pages: a sweep, whose
 *          claims with a stale right would take the group past V's end,
 *          pages no allocation holds (the master stopped the run).
 *          Main reads the thread's words back.
 * RESULT ok=1 bad_zero=N bad_past=N reused=R (R: blocks that got their
 * range again, 2) */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>

#define PAGES 64
#define FROM 8
#define TO 40
#define SMALL 20

struct shared {
    cables_barrier_t b;
    uint64_t *x, *w; /* X, then its range again; W, then V at its front */
    long bad_zero;
};

static uint64_t word(long q, long i) { return ((uint64_t)q << 20 | (uint64_t)i) + 1; }

static void *thread(void *p)
{
    struct shared *s = p;
    long words = (long)(cables_page_size() / 8);
    cables_barrier_wait(&s->b); /* main touched X */
    for (long q = FROM; q < TO; q++)
        for (long i = 0; i < words; i++)
            s->x[q * words + i] = word(q, i);
    s->w[(PAGES - 1) * words] = 1;
    cables_barrier_wait(&s->b); /* main frees X and W, takes X again and V */
    cables_barrier_wait(&s->b);
    long bad = 0;
    for (long k = 0; k < PAGES * words; k++)
        bad += s->x[k] != 0;
    s->bad_zero = bad;
    for (long q = 0; q < SMALL; q++)
        for (long i = 0; i < words; i++)
            s->w[q * words + i] = word(q, i);
    cables_barrier_wait(&s->b);
    return NULL;
}

int main(void)
{
    size_t ps = cables_page_size();
    long words = (long)(ps / 8);
    if (cables_node_count() < 2) {
        printf("RESULT ok=0 error=needs_2_nodes\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    s->x = cables_alloc(PAGES * ps);
    s->w = cables_alloc(PAGES * ps);
    cables_thread_t t;
    if (cables_thread_create(&t, cables_node_count() - 1, thread, s))
        return 2;
    s->x[0] = 1;
    cables_barrier_wait(&s->b);
    cables_barrier_wait(&s->b); /* the thread wrote X and touched W */
    uint64_t *x = s->x, *w = s->w;
    cables_free(x);
    cables_free(w);
    s->x = cables_alloc(PAGES * ps);
    s->w = cables_alloc(SMALL * ps);
    int reused = (s->x == x) + (s->w == w);
    cables_barrier_wait(&s->b);
    cables_barrier_wait(&s->b); /* the thread read X and wrote V */
    long bad_past = 0;
    for (long q = 0; q < SMALL; q++)
        for (long i = 0; i < words; i++)
            bad_past += s->w[q * words + i] != word(q, i);
    cables_thread_join(t, NULL);
    int ok = s->bad_zero == 0 && bad_past == 0 && reused == 2;
    printf("RESULT ok=%d bad_zero=%ld bad_past=%ld reused=%d\n", ok, s->bad_zero, bad_past,
           reused);
    return ok ? 0 : 1;
}
