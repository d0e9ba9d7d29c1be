/* undone_write: a home's write undone within one interval must not stay in
 * a copy read in place meanwhile.  Page P, homed on node 0, holds x (under
 * lock l) and z.  Each round: H (node 0) writes z and releases (P stays
 * writable at its home, with a checksum); R (node 1) acquires (its copy of
 * P is invalidated) and takes lock m.  H takes l, sets x = 1 and waits for
 * m; R reads P (a fault: read in place from the home, no message) and
 * sees x = 1, then gives m up; H sets x = 0 back and releases: P's
 * checksum is what it was.  R then takes l: it must read x = 0.
 * Run with CABLES_REFRESH=0 (copies invalidated, not refreshed).
 * With "stack", P is a page of H's thread stack, which its home hashes at
 * every release; fetched by message (always over tcp, and the first fetch
 * from a home over shm), it was not marked, and R kept x = 1 (stale=19 of
 * 20 over tcp).
 * usage: undone_write [ROUNDS [stack]]
 * RESULT ok=1 stale=0 seen=S rounds=N */
#include <string.h>
#include <unistd.h>

#include "two_nodes.h"

struct page { long x, z, pad[510]; };

struct shared {
    cables_barrier_t b;
    cables_lock_t l, m;
    long rounds, stale, seen;
    int on_stack;
    struct page *volatile pg;
};

static void *h_body(void *a)
{
    struct shared *s = a;
    struct page mine __attribute__((aligned(4096))) = { 0 };
    if (s->on_stack) { /* R starts once it knows P */
        cables_lock(&s->l);
        s->pg = &mine;
        cables_unlock(&s->l);
    }
    cables_barrier_wait(&s->b); /* 0 */
    for (long k = 0; k < s->rounds; k++) {
        cables_lock(&s->l);
        s->pg->z = k + 1;
        cables_unlock(&s->l);
        cables_barrier_wait(&s->b); /* 1: R's copy invalidated */
        cables_barrier_wait(&s->b); /* 2: R holds m */
        cables_lock(&s->l);
        s->pg->x = 1;
        cables_lock(&s->m); /* R has read P */
        s->pg->x = 0;
        cables_unlock(&s->m);
        cables_unlock(&s->l);
        cables_barrier_wait(&s->b); /* 3 */
    }
    cables_barrier_wait(&s->b); /* 4: R is done with P (on our stack) */
    return NULL;
}

static void *r_body(void *a)
{
    struct shared *s = a;
    cables_barrier_wait(&s->b); /* 0 */
    volatile struct page *pg = s->pg;
    long stale = 0, seen = 0;
    for (long k = 0; k < s->rounds; k++) {
        cables_barrier_wait(&s->b); /* 1 */
        cables_lock(&s->m);
        cables_barrier_wait(&s->b); /* 2 */
        usleep(20000); /* H sets x = 1 meanwhile */
        long mid = pg->x; /* a data race, on purpose: what the copy holds */
        cables_unlock(&s->m);
        cables_lock(&s->l);
        long after = pg->x;
        cables_unlock(&s->l);
        seen += mid == 1;
        stale += after != 0;
        cables_barrier_wait(&s->b); /* 3 */
    }
    s->stale = stale;
    s->seen = seen;
    cables_barrier_wait(&s->b); /* 4 */
    return NULL;
}

int main(int argc, char **argv)
{
    long rounds = two_node_rounds(argc, argv, 20);
    struct shared *s = cables_alloc(sizeof *s);
    s->on_stack = argc > 2 && !strcmp(argv[2], "stack");
    if (!s->on_stack) {
        s->pg = cables_alloc(sizeof(struct page)); /* page aligned */
        s->pg->x = 0; /* main's first touch homes P on node 0 */
        s->pg->z = 0;
    }
    s->rounds = rounds;
    cables_barrier_init(&s->b, 2);
    two_node_run(h_body, r_body, s);
    printf("RESULT ok=%d stale=%ld seen=%ld rounds=%ld\n", s->stale == 0, s->stale, s->seen,
           rounds);
    return s->stale == 0 ? 0 : 1;
}
