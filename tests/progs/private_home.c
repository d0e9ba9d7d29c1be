/* private_home: pages a node homes and no other node has fetched need no
 * write notices and no write-protection.  One thread per node reads its
 * own block first (first touch: homed there; at most one read fault per
 * page, one per page group), then writes it through 20 barriers: no write
 * fault (a private home page is opened for writing at its first fault,
 * read or write), no notice after the first release (which notices the
 * pages homed in its interval, once).  Then main reads every block (now shared), the
 * threads write once more, and main must see that round after the joins.
 * RESULT ok=1 pages=P max_read_faults=R max_write_faults=F max_notices=W bad=B */
#include <cables.h>
#include <stdio.h>

#define PAGES 8
#define ROUNDS 20

struct shared {
    cables_barrier_t b;
    long *blocks[64];
    long rfaults[64], faults[64], notices[64], sums[64];
};
struct arg { struct shared *s; int i; };

static void *writer(void *p)
{
    struct arg *a = p;
    struct shared *s = a->s;
    long *blk = s->blocks[a->i];
    size_t words = cables_page_size() / sizeof(long);
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    long sum = 0;
    for (size_t k = 0; k < PAGES * words; k += 64)
        sum += blk[k];
    cables_stats_t s_homed;
    for (long r = 1; r <= ROUNDS; r++) {
        for (size_t k = 0; k < PAGES * words; k += 64)
            blk[k] = r;
        cables_barrier_wait(&s->b);
        if (r == 1)
            cables_stats_get(&s_homed);
    }
    cables_stats_get(&s1);
    s->sums[a->i] = sum; /* s is node 0's: written after the count */
    s->rfaults[a->i] = (long)(s1.read_faults - s0.read_faults);
    s->faults[a->i] = (long)(s1.write_faults - s0.write_faults);
    /* from round 2: the first release notices the pages homed here
     * (directory.c: no other node may claim them after) */
    s->notices[a->i] = (long)(s1.write_notices_made - s_homed.write_notices_made);
    cables_barrier_wait(&s->b); /* main reads every block: now shared */
    cables_barrier_wait(&s->b);
    for (size_t k = 0; k < PAGES * words; k += 64)
        blk[k] = ROUNDS + 1;
    return NULL;
}

static long check(struct shared *s, int nn, long want)
{
    size_t words = cables_page_size() / sizeof(long);
    long bad = 0;
    for (int i = 0; i < nn; i++)
        for (size_t k = 0; k < PAGES * words; k += 64)
            bad += s->blocks[i][k] != want;
    return bad;
}

int main(void)
{
    int nn = cables_node_count();
    struct shared *s = cables_alloc(sizeof *s);
    struct arg *args = cables_alloc(nn * sizeof *args);
    cables_barrier_init(&s->b, (unsigned)nn + 1);
    for (int i = 0; i < nn; i++) {
        s->blocks[i] = cables_alloc(PAGES * cables_page_size()); /* first touch decides */
        args[i] = (struct arg){ s, i };
    }
    cables_thread_t t[64];
    for (int i = 0; i < nn; i++)
        if (cables_thread_create(&t[i], i, writer, &args[i]))
            return 2;
    for (int r = 1; r <= ROUNDS; r++)
        cables_barrier_wait(&s->b);
    cables_barrier_wait(&s->b);
    long bad = check(s, nn, ROUNDS);
    cables_barrier_wait(&s->b);
    for (int i = 0; i < nn; i++)
        cables_thread_join(t[i], NULL);
    bad += check(s, nn, ROUNDS + 1);
    /* notices are counted per node: on node 0 (with other nodes) main's own
     * pages, written before the other nodes first fetched them, rightly get
     * notices; the writers' blocks are measured where the writer runs alone */
    long maxr = 0, maxf = 0, maxn = 0;
    for (int i = 0; i < nn; i++) {
        bad += s->sums[i] != 0; /* fresh memory reads as zeros */
        maxr = s->rfaults[i] > maxr ? s->rfaults[i] : maxr;
        maxf = s->faults[i] > maxf ? s->faults[i] : maxf;
        if (i > 0 || nn == 1)
            maxn = s->notices[i] > maxn ? s->notices[i] : maxn;
    }
    /* one read fault per page at most (first touch maps a page group with
     * one fault), then no write fault: never one per round */
    int ok = bad == 0 && maxr >= 1 && maxr <= PAGES && maxf == 0 && maxn == 0;
    printf("RESULT ok=%d pages=%d max_read_faults=%ld max_write_faults=%ld max_notices=%ld bad=%ld\n",
           ok, PAGES, maxr, maxf, maxn, bad);
    return ok ? 0 : 1;
}
