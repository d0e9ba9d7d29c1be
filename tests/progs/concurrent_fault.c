/* concurrent_fault: T threads of the last node fault on the same pages at
 * once (they leave a barrier together): readers of a page homed elsewhere,
 * then writers of disjoint words of another page.  Each page must be
 * fetched once by that node, whatever the interleaving, and every value
 * must be right.  (Twins may be more than one: a thread's release that finds
 * the page idle write-protects it while another thread still writes.)
 * RESULT ok=1 threads=T read_fetches=F write_fetches=G twins=W bad=B */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>

#define T 4
#define WORDS (4096 / 8)

struct shared {
    cables_barrier_t bar;
    uint64_t *rpage, *wpage; /* homed on node 0 */
    uint64_t before_fetch, mid_fetch, after_fetch, before_twins, after_twins;
    long bad;
    cables_lock_t lk;
};
struct arg { struct shared *s; int i; };

static uint64_t fetched(void)
{
    cables_stats_t st;
    cables_stats_get(&st);
    return st.pages_fetched;
}

static uint64_t twinned(void)
{
    cables_stats_t st;
    cables_stats_get(&st);
    return st.twins;
}

/* counts are kept in locals: thread 0's own writes to shared pages would
 * fault and be counted */
static void *worker(void *p)
{
    struct arg *a = p;
    struct shared *s = a->s;
    long bad = 0;
    volatile uint32_t touch = s->bar.count; /* fault on this page before counting */
    (void)touch;
    uint64_t f0 = fetched();
    cables_barrier_wait(&s->bar); /* all T leave together: the reads race */
    for (int k = 0; k < WORDS; k++)
        bad += s->rpage[k] != (uint64_t)k * 3 + 1;
    cables_barrier_wait(&s->bar);
    uint64_t f1 = fetched(), t1 = twinned();
    cables_barrier_wait(&s->bar); /* the writes race: one fetch, one twin */
    for (int k = a->i; k < WORDS; k += T)
        s->wpage[k] = 1000 + k;
    cables_barrier_wait(&s->bar);
    uint64_t f2 = fetched(), t2 = twinned();
    cables_lock(&s->lk);
    s->bad += bad;
    if (a->i == 0) {
        s->before_fetch = f0;
        s->mid_fetch = f1;
        s->after_fetch = f2;
        s->before_twins = t1;
        s->after_twins = t2;
    }
    cables_unlock(&s->lk);
    return NULL;
}

int main(void)
{
    int last = cables_node_count() - 1;
    /* the bookkeeping is homed on the node measured: only the two test
     * pages are ever fetched there */
    struct shared *s = cables_alloc_placed(sizeof *s, CABLES_POLICY_FIXED, last);
    s->rpage = cables_alloc_placed(4096, CABLES_POLICY_FIXED, 0);
    /* a page homed elsewhere between them: the read fault's prefetch (the
     * pages after it from the same home) must not bring the write page */
    (void)cables_alloc_placed(4096, CABLES_POLICY_FIXED, last);
    s->wpage = cables_alloc_placed(4096, CABLES_POLICY_FIXED, 0);
    for (int k = 0; k < WORDS; k++)
        s->rpage[k] = (uint64_t)k * 3 + 1;
    s->wpage[0] = 0; /* homed and valid at node 0 */
    cables_barrier_init(&s->bar, T);
    struct arg *args = cables_alloc_placed(T * sizeof *args, CABLES_POLICY_FIXED, last);
    cables_thread_t t[T];
    for (int i = 0; i < T; i++) /* all written before the first create */
        args[i] = (struct arg){ s, i };
    for (int i = 0; i < T; i++)
        if (cables_thread_create(&t[i], last, worker, &args[i]))
            return 2;
    for (int i = 0; i < T; i++)
        cables_thread_join(t[i], NULL);
    long bad = s->bad;
    for (int k = 0; k < WORDS; k++) /* node 0 sees every writer's word */
        bad += s->wpage[k] != (uint64_t)(1000 + k);
    /* on node 0 itself the pages are home: nothing to fetch */
    long rf = (long)(s->mid_fetch - s->before_fetch), wf = (long)(s->after_fetch - s->mid_fetch);
    long tw = (long)(s->after_twins - s->before_twins);
    long want = last == 0 ? 0 : 1;
    /* a page may be twinned again when another thread's release found it
     * idle and write-protected it: between one and one twin per writer */
    int ok = bad == 0 && rf == want && wf == want && tw >= want && tw <= T * want;
    printf("RESULT ok=%d threads=%d read_fetches=%ld write_fetches=%ld twins=%ld bad=%ld\n",
           ok, T, rf, wf, tw, bad);
    return ok ? 0 : 1;
}
