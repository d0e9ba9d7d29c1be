/* home_move_race: homes moving while the protocol runs.
 * Phase 1: a page's home moves back and forth between node 0 and the last
 * node every round while node 0 writes it and the last node reads it
 * between barriers: every read sees the round's value (a node that is told
 * "moved to you" must not serve itself its old copy).
 * Phase 2 (3+ nodes): nodes 1 and 2 ask at the same moment to move the same
 * page to themselves, then write their own word under a lock: one home
 * wins, and every write survives (two moves of a page never run at once).
 * RESULT ok=1 reads=R bad_reads=B pages=P bad_pages=Q */
#include <cables.h>
#include <stdio.h>

#define ROUNDS 300
#define PAGES 100

struct shared {
    cables_barrier_t b2, b3;
    cables_lock_t l;
    long bad_reads;
    volatile long *p;
    long *pages[PAGES];
};

static void *reader(void *a)
{
    struct shared *s = a;
    long bad = 0;
    for (long k = 1; k <= ROUNDS; k++) {
        cables_barrier_wait(&s->b2); /* the master wrote k */
        bad += s->p[0] != k;
        cables_barrier_wait(&s->b2);
    }
    s->bad_reads = bad;
    return NULL;
}

static void *mover(void *a)
{
    struct shared *s = a;
    int me = cables_node_id();
    size_t ps = cables_page_size();
    for (int k = 0; k < PAGES; k++) {
        cables_barrier_wait(&s->b3);
        cables_home_move(s->pages[k], ps, me);
        cables_barrier_wait(&s->b3);
        cables_lock(&s->l);
        s->pages[k][me] = 100 + me;
        cables_unlock(&s->l);
        cables_barrier_wait(&s->b3);
    }
    return NULL;
}

int main(void)
{
    int nn = cables_node_count(), last = nn - 1;
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    s->p = cables_alloc(ps);
    s->p[0] = 0;
    long bad_pages = 0, pages = 0, bad_moves = 0;
    cables_barrier_init(&s->b2, 2);
    cables_barrier_init(&s->b3, 3);
    for (int k = 0; k < PAGES; k++) {
        s->pages[k] = cables_alloc(ps);
        s->pages[k][0] = 7;
    }
    cables_thread_t t, m[2];
    if (cables_thread_create(&t, last, reader, s))
        return 2;
    for (long k = 1; k <= ROUNDS; k++) {
        bad_moves += cables_home_move((void *)s->p, ps, 0) != 0;
        s->p[0] = k;
        cables_barrier_wait(&s->b2);
        bad_moves += cables_home_move((void *)s->p, ps, last) != 0;
        cables_barrier_wait(&s->b2);
    }
    cables_thread_join(t, NULL);
    if (nn >= 3) {
        for (int i = 0; i < 2; i++)
            if (cables_thread_create(&m[i], i + 1, mover, s))
                return 2;
        for (int k = 0; k < PAGES; k++) {
            cables_barrier_wait(&s->b3);
            cables_barrier_wait(&s->b3);
            cables_barrier_wait(&s->b3);
            cables_lock(&s->l);
            long *p = s->pages[k];
            bad_pages += p[0] != 7 || p[1] != 101 || p[2] != 102;
            cables_unlock(&s->l);
            pages++;
        }
        for (int i = 0; i < 2; i++)
            cables_thread_join(m[i], NULL);
    }
    int ok = s->bad_reads == 0 && bad_pages == 0 && bad_moves == 0;
    printf("RESULT ok=%d reads=%d bad_reads=%ld pages=%ld bad_pages=%ld bad_moves=%ld\n", ok,
           ROUNDS, s->bad_reads, pages, bad_pages, bad_moves);
    return ok ? 0 : 1;
}
