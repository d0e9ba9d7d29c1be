/* share_ahead: a thread on the last node reads two blocks of PAGES pages
 * homed on node 0, a page of one then the same page of the other (no
 * stride for the fetches to follow: each brings a page group).  A home
 * asked for pages shares the pages after them too (hlrc.c, SHARE_AHEAD):
 * where the transport reads in place, the reader then reads those
 * without asking (fetches_unasked).  Round 0 reads the first half of each
 * block, rounds 1 and 2 all of them; node 0 rewrites both blocks before
 * each round (barriers order them), so a page shared ahead, read or not,
 * must have its home's later writes noticed: every value must be the
 * round's.  Usage: share_ahead [PAGES] (256).
 * RESULT ok=1 bad=B round0_fetches=F round0_asked=A unasked=U */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 3

struct shared {
    cables_barrier_t bar;
    uint64_t *blk[2];
    long pages, bad;
    uint64_t round0_fetches, round0_asked, unasked;
};

static uint64_t value(int r, int b, long k) { return (uint64_t)r << 40 | (uint64_t)b << 32 | (uint64_t)k; }

static void *reader(void *arg)
{
    struct shared *s = arg;
    const long words = 4096 / 8;
    long bad = 0;
    cables_stats_t st0, st1;
    cables_stats_get(&st0);
    for (int r = 0; r < ROUNDS; r++) {
        cables_barrier_wait(&s->bar); /* round r written */
        cables_stats_t f0, f1;
        cables_stats_get(&f0);
        for (long pg = 0; pg < (r == 0 ? s->pages / 2 : s->pages); pg++)
            for (int b = 0; b < 2; b++)
                for (long k = pg * words; k < (pg + 1) * words; k++)
                    bad += s->blk[b][k] != value(r, b, k);
        cables_stats_get(&f1);
        if (r == 0) {
            s->round0_fetches = f1.fetches - f0.fetches;
            s->round0_asked = s->round0_fetches - (f1.fetches_unasked - f0.fetches_unasked);
        }
        cables_barrier_wait(&s->bar); /* read */
    }
    cables_stats_get(&st1);
    s->unasked = st1.fetches_unasked - st0.fetches_unasked;
    s->bad = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 256;
    if (pages < 2) {
        fprintf(stderr, "usage: share_ahead [PAGES (2 or more)]\n");
        return 2;
    }
    int last = cables_node_count() - 1;
    struct shared *s = cables_alloc_placed(sizeof *s, CABLES_POLICY_FIXED, last);
    for (int b = 0; b < 2; b++)
        s->blk[b] = cables_alloc_placed(pages * 4096, CABLES_POLICY_FIXED, 0);
    s->pages = pages;
    cables_barrier_init(&s->bar, 2);
    cables_thread_t t;
    if (cables_thread_create(&t, last, reader, s)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    for (int r = 0; r < ROUNDS; r++) {
        for (int b = 0; b < 2; b++)
            for (long k = 0; k < pages * 4096 / 8; k++)
                s->blk[b][k] = value(r, b, k);
        cables_barrier_wait(&s->bar);
        cables_barrier_wait(&s->bar);
    }
    cables_thread_join(t, NULL);
    printf("RESULT ok=%d bad=%ld round0_fetches=%llu round0_asked=%llu unasked=%llu\n", s->bad == 0,
           s->bad, (unsigned long long)s->round0_fetches, (unsigned long long)s->round0_asked,
           (unsigned long long)s->unasked);
    return s->bad != 0;
}
