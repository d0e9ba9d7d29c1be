/* idle_grace: a written copy stays writable through a few releases that
 * find it unwritten (its idle grace, hlrc.c: 8 releases, doubled each time
 * it is written again after it was protected), and its writes after them,
 * which take no fault, still reach the home.
 * A thread on the last node writes PAGES pages homed on node 0, one word
 * a page, in the rounds of SCHEDULE (value 0: not written).  A round ends
 * with two barriers, so two releases of the writer's node; between them
 * main, on node 0, checks that the home holds the last value written.
 * The write faults of three rounds:
 *   kept       after 7 idle releases (within the grace of 8): none
 *   protected  after 9 (beyond it): the pages were protected
 *   regraced   after 9 (within the doubled grace of 16): none
 * At 1 node the pages are the writer's own: nothing to measure.
 * RESULT ok=1 nodes=N kept_faults=K protected_faults=P regraced_faults=G bad=B */
#include <cables.h>
#include <stdio.h>

#define PAGES 8
static const int SCHEDULE[] = { 1, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4 };
#define ROUNDS (int)(sizeof SCHEDULE / sizeof *SCHEDULE)
enum { KEPT = 4, PROTECTED = 9, REGRACED = 14 }; /* rounds measured */

struct shared {
    cables_barrier_t b;
    long *data;
    long faults[ROUNDS];
};

static void *writer(void *p)
{
    struct shared *s = p;
    size_t words = cables_page_size() / sizeof(long);
    for (int r = 0; r < ROUNDS; r++) {
        if (SCHEDULE[r]) {
            cables_stats_t s0, s1;
            cables_stats_get(&s0);
            for (int k = 0; k < PAGES; k++)
                s->data[k * words] = SCHEDULE[r];
            cables_stats_get(&s1);
            s->faults[r] = (long)(s1.write_faults - s0.write_faults);
        }
        cables_barrier_wait(&s->b);
        cables_barrier_wait(&s->b); /* main checks in between */
    }
    return NULL;
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
    cables_thread_t t;
    if (cables_thread_create(&t, nn - 1, writer, s))
        return 2;
    long bad = 0, want = 0;
    for (int r = 0; r < ROUNDS; r++) {
        cables_barrier_wait(&s->b);
        if (SCHEDULE[r])
            want = SCHEDULE[r];
        for (int k = 0; k < PAGES; k++)
            bad += s->data[k * words] != want;
        cables_barrier_wait(&s->b);
    }
    cables_thread_join(t, NULL);
    int ok = bad == 0;
    if (nn > 1)
        ok = ok && s->faults[KEPT] == 0 && s->faults[PROTECTED] > 0 && s->faults[REGRACED] == 0;
    printf("RESULT ok=%d nodes=%d kept_faults=%ld protected_faults=%ld regraced_faults=%ld "
           "bad=%ld\n", ok, nn, s->faults[KEPT], s->faults[PROTECTED], s->faults[REGRACED], bad);
    return ok ? 0 : 1;
}
