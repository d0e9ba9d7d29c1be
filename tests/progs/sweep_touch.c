/* sweep_touch: first touch by page groups (directory.c).
 *   sweep  a thread on the last node writes pages 21..63 of a fresh
 *          64-page allocation, in order: a sweep that begins mid-group.
 *          Each page must be homed on that node, pages 0..20 on none, and
 *          after 3 pages one lookup takes the rest of a group: 6 lookups
 *          (page by page until a whole group is the sweeper's: 28).
 *   blocks main (node 0) and the thread take turns first-writing blocks of
 *          B pages of another 64-page allocation (a barrier between turns),
 *          B = 2 and 8 (LU's blocks at -b 32 and -b 64): every page must be
 *          homed on its block's writer, never on its neighbour's.
 * CABLES_PAGE_GROUP must be 16 (the default).
 * RESULT ok=1 lookups=L bad_homes=H */
#include <cables.h>
#include <stdio.h>

#define PAGES 64
#define SWEEP_FROM 21

struct shared {
    cables_barrier_t b;
    char *sweep, *blocks[2];
    long lookups;
};
static const int BLOCK[2] = { 2, 8 };

/* writes the blocks of turn `who` (0: main, 1: the thread) of allocation k */
static void take_turns(struct shared *s, int k, int who)
{
    size_t ps = cables_page_size();
    for (int blk = 0; blk < PAGES / BLOCK[k]; blk++) {
        if (blk % 2 == who)
            for (int j = 0; j < BLOCK[k]; j++)
                s->blocks[k][(size_t)(blk * BLOCK[k] + j) * ps] = 1;
        cables_barrier_wait(&s->b);
    }
}

static void *thread(void *p)
{
    struct shared *s = p;
    size_t ps = cables_page_size();
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    for (int q = SWEEP_FROM; q < PAGES; q++)
        s->sweep[(size_t)q * ps] = 1;
    cables_stats_get(&s1);
    s->lookups = (long)(s1.dir_lookups - s0.dir_lookups);
    for (int k = 0; k < 2; k++)
        take_turns(s, k, 1);
    return NULL;
}

static long bad(const void *addr, int want, long *n)
{
    int h = cables_home_of(addr);
    if (h == want)
        return 0;
    if ((*n)++ < 5)
        printf("page at %p: home %d, not %d\n", addr, h, want);
    return 1;
}

int main(void)
{
    int nn = cables_node_count(), other = nn - 1;
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    s->sweep = cables_alloc(PAGES * ps);
    for (int k = 0; k < 2; k++)
        s->blocks[k] = cables_alloc(PAGES * ps);
    cables_thread_t t;
    if (cables_thread_create(&t, other, thread, s))
        return 2;
    for (int k = 0; k < 2; k++)
        take_turns(s, k, 0);
    cables_thread_join(t, NULL);
    long nbad = 0, shown = 0;
    for (int q = 0; q < PAGES; q++)
        nbad += bad(s->sweep + (size_t)q * ps, q < SWEEP_FROM ? -1 : other, &shown);
    for (int k = 0; k < 2; k++)
        for (int q = 0; q < PAGES; q++)
            nbad += bad(s->blocks[k] + (size_t)q * ps, q / BLOCK[k] % 2 ? other : 0, &shown);
    int ok = nbad == 0 && (nn == 1 || s->lookups <= 8);
    printf("RESULT ok=%d lookups=%ld bad_homes=%ld\n", ok, s->lookups, nbad);
    return ok ? 0 : 1;
}
