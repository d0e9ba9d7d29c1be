/* twin_reuse: a worker on node 1 writes through an array homed on node 0,
 * PHASE pages a phase, each page in one phase only.  In even phases main
 * (node 0) writes other words of the same pages (false sharing: a diff
 * made against a wrong twin would put back main's old words), and the
 * worker's copies are invalidated at the barrier that ends the phase; in
 * odd phases only the worker writes them, and they are write-protected
 * after their idle grace (the worker read every page first, and main's
 * pages, served then, were write-protected long before: diffs landing on
 * them make no notices).  Either way their twins go back to the pool: the
 * worker's pool must stay far smaller than the pages it wrote.  Main
 * checks every word at the end.
 * RESULT ok=1 bad=0 pages=P pool=K twins=T
 *   pool: pages of node 1's twins' pool; twins: twins it took. */
#include <cables.h>
#include <stdio.h>

#define PHASES 64
#define PHASE 64
#define WSTEP 16 /* the worker writes word 0 of every WSTEP, main word WSTEP/2 */
#define SETTLE 40 /* barriers between the worker's first reads and its writes */

struct shared {
    cables_barrier_t b;
    long *a;
    size_t wpp; /* words a page */
    long first_bad; /* the worker's first reads that were wrong */
    unsigned long long pool, twins;
};

static long value(size_t page, size_t w, int f, int writer)
{
    return (long)(page * 100000 + w * 10 + writer) + (long)f * 1000000000L;
}

static void phase_write(struct shared *s, int f, int writer)
{
    for (size_t page = (size_t)f * PHASE; page < (size_t)(f + 1) * PHASE; page++)
        for (size_t w = writer ? 0 : WSTEP / 2; w < s->wpp; w += WSTEP)
            s->a[page * s->wpp + w] = value(page, w, f, writer);
}

static void *worker(void *arg)
{
    struct shared *s = arg;
    for (size_t i = 0; i < (size_t)PHASES * PHASE * s->wpp; i += s->wpp)
        s->first_bad += s->a[i] != -(long)i - 1;
    for (int i = 0; i < SETTLE; i++)
        cables_barrier_wait(&s->b);
    for (int f = 0; f < PHASES; f++) {
        phase_write(s, f, 1);
        cables_barrier_wait(&s->b);
    }
    cables_stats_t st;
    cables_stats_get(&st);
    s->pool = st.twin_pool;
    s->twins = st.twins;
    return NULL;
}

int main(void)
{
    if (cables_node_count() < 2) {
        fprintf(stderr, "twin_reuse: needs 2 nodes or more\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    s->wpp = cables_page_size() / sizeof(long);
    size_t pages = (size_t)PHASES * PHASE;
    s->a = cables_alloc(pages * cables_page_size());
    for (size_t i = 0; i < pages * s->wpp; i++)
        s->a[i] = -(long)i - 1; /* node 0 homes every page, with data of its own */
    cables_barrier_init(&s->b, 2);
    cables_thread_t t;
    if (cables_thread_create(&t, 1, worker, s))
        return 2;
    for (int i = 0; i < SETTLE; i++)
        cables_barrier_wait(&s->b);
    for (int f = 0; f < PHASES; f++) {
        if (f % 2 == 0)
            phase_write(s, f, 0);
        cables_barrier_wait(&s->b);
    }
    cables_thread_join(t, NULL);
    long bad = s->first_bad;
    for (size_t page = 0; page < pages; page++)
        for (size_t w = 0; w < s->wpp; w++) {
            int f = (int)(page / PHASE);
            long want = w % WSTEP == 0 ? value(page, w, f, 1)
                      : w % WSTEP == WSTEP / 2 && f % 2 == 0 ? value(page, w, f, 0)
                      : -(long)(page * s->wpp + w) - 1;
            bad += s->a[page * s->wpp + w] != want;
        }
    printf("RESULT ok=%d bad=%ld pages=%zu pool=%llu twins=%llu\n", bad == 0, bad, pages, s->pool,
           s->twins);
    return bad == 0 ? 0 : 1;
}
