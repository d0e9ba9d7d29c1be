/* read_confirmed: a copy read in place while its home keeps the page
 * writable, and not changed since, stays valid across the home's release
 * (its mark notice carries the page's checksum, which the copy matches).
 * Page Q, homed on node 0, holds v.  Each round: H (node 0) writes
 * v = k + 1, then barrier 1 (R's copy of Q goes); R (node 1) holds lock m
 * and reads v in place (a fault, or a refresh at the barrier), then gives
 * m up; H takes m (R has read Q) and gives it up: a release that finds Q
 * unchanged, but read in place.  After barrier 2, R reads v again: the
 * same value, with no fault (its copy kept).
 * usage: read_confirmed [ROUNDS]
 * RESULT ok=1 bad=B late_faults=F confirmed=C rounds=N
 *   bad: values other than the round's; late_faults: R's read faults
 *   after barrier 2; confirmed: node 1's copies kept by their checksums */
#include "two_nodes.h"

struct page { long v, pad[511]; };

struct shared {
    cables_barrier_t b;
    cables_lock_t m;
    long rounds, bad, late_faults, confirmed;
    struct page *q;
};

static void *h_body(void *a)
{
    struct shared *s = a;
    for (long k = 0; k < s->rounds; k++) {
        s->q->v = k + 1;
        cables_barrier_wait(&s->b); /* 1 */
        cables_barrier_wait(&s->b); /* 2: R holds m */
        cables_lock(&s->m);         /* R has read Q */
        cables_unlock(&s->m);
        cables_barrier_wait(&s->b); /* 3 */
        cables_barrier_wait(&s->b); /* 4: R read Q again */
    }
    return NULL;
}

static void *r_body(void *a)
{
    struct shared *s = a;
    volatile struct page *q = s->q;
    long bad = 0, late = 0;
    cables_stats_t c0 = { 0 }, c1 = { 0 }, f0, f1;
    cables_stats_get(&c0);
    for (long k = 0; k < s->rounds; k++) {
        cables_barrier_wait(&s->b); /* 1 */
        cables_lock(&s->m);
        cables_barrier_wait(&s->b); /* 2 */
        bad += q->v != k + 1;
        cables_unlock(&s->m);
        cables_barrier_wait(&s->b); /* 3: H released Q unchanged */
        cables_stats_get(&f0);
        bad += q->v != k + 1;
        cables_stats_get(&f1);
        late += (long)(f1.read_faults - f0.read_faults);
        cables_barrier_wait(&s->b); /* 4 */
    }
    cables_stats_get(&c1);
    s->bad = bad;
    s->late_faults = late;
    s->confirmed = (long)(c1.copies_confirmed - c0.copies_confirmed);
    return NULL;
}

int main(int argc, char **argv)
{
    long rounds = two_node_rounds(argc, argv, 10);
    struct shared *s = cables_alloc(sizeof *s);
    s->q = cables_alloc(sizeof(struct page)); /* page aligned */
    s->q->v = 0; /* main's first touch homes Q on node 0 */
    s->rounds = rounds;
    cables_barrier_init(&s->b, 2);
    two_node_run(h_body, r_body, s);
    int ok = s->bad == 0 && s->late_faults == 0;
    printf("RESULT ok=%d bad=%ld late_faults=%ld confirmed=%ld rounds=%ld\n", ok, s->bad,
           s->late_faults, s->confirmed, rounds);
    return ok ? 0 : 1;
}
