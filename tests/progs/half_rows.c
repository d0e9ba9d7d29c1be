/* half_rows: a thread on the last node reads the first half of each row of
 * a matrix homed on node 0 (ROWS rows of ROW_PAGES pages, every page
 * written), as a transpose does: the pages of the other halves are invalid
 * there and homed with them, so a fetch brings them along unless
 * CABLES_FETCH_PAGES keeps it to the half.  Every value read must be
 * node 0's.
 * RESULT ok=1 bad=B needed=N fetches=F pages=P */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>

#define ROWS 64
#define ROW_PAGES 8

struct shared {
    cables_barrier_t bar;
    uint64_t *m;
    long words; /* a page's */
    long bad;
    uint64_t fetches, pages;
};

static uint64_t value(long i) { return (uint64_t)i * 0x9E3779B97F4A7C15ull ^ 1; }

static void *reader(void *p)
{
    struct shared *s = p;
    long row = ROW_PAGES * s->words, bad = 0;
    cables_stats_t st0, st1;
    cables_barrier_wait(&s->bar); /* the matrix is written */
    cables_stats_get(&st0);
    for (long r = 0; r < ROWS; r++)
        for (long k = 0; k < row / 2; k++)
            bad += s->m[r * row + k] != value(r * row + k);
    cables_stats_get(&st1);
    s->bad = bad;
    s->fetches = st1.fetches - st0.fetches;
    s->pages = st1.pages_fetched - st0.pages_fetched;
    return NULL;
}

int main(void)
{
    int last = cables_node_count() - 1;
    struct shared *s = cables_alloc_placed(sizeof *s, CABLES_POLICY_FIXED, last);
    s->words = (long)(cables_page_size() / 8);
    long n = ROWS * ROW_PAGES * s->words;
    s->m = cables_alloc_placed((size_t)n * 8, CABLES_POLICY_FIXED, 0);
    cables_barrier_init(&s->bar, 2);
    for (long i = 0; i < n; i++)
        s->m[i] = value(i);
    cables_thread_t t;
    if (cables_thread_create(&t, last, reader, s)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    cables_barrier_wait(&s->bar);
    cables_thread_join(t, NULL);
    printf("RESULT ok=%d bad=%ld needed=%d fetches=%llu pages=%llu\n", s->bad == 0, s->bad,
           ROWS * ROW_PAGES / 2, (unsigned long long)s->fetches, (unsigned long long)s->pages);
    return s->bad != 0;
}
