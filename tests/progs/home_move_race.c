/* home_move_race: homes moving while the protocol runs.
 * Phase 1: a page's home moves back and forth between node 0 and the last
 * node every round while node 0 writes it and the last node reads it
 * between barriers: every read sees the round's value (a node that is told
 * "moved to you" must not serve itself its old copy).
 * Phase 2 (3+ nodes): nodes 1 and 2 ask at the same moment to move the same
 * page to themselves, then write their own word under a lock: one home
 * wins, and every write survives (two moves of a page never run at once).
 * Phase 0: a page no node has touched moves twice (the first move only
 * changes the directory; the second must find its home all the same).
 * Phase 3: moving a page of a running thread's stack is refused (-1): its
 * frames must never fault; the thread goes on with its data intact.
 * RESULT ok=1 reads=R bad_reads=B pages=P bad_pages=Q fresh=F stack_refused=S */
#include <cables.h>
#include <stdio.h>

#define ROUNDS 300
#define PAGES 100

struct shared {
    cables_barrier_t b2, b3;
    cables_lock_t l;
    long bad_reads, stack_rc;
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

static void *stack_owner(void *a)
{
    struct shared *s = a;
    long mine[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    cables_lock(&s->l);
    s->stack_rc = cables_home_move(mine, sizeof mine, 0); /* from this node's stack */
    cables_unlock(&s->l);
    long sum = 0;
    for (int i = 0; i < 8; i++)
        sum += mine[i];
    return (void *)sum;
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
    long *fresh = cables_alloc(ps);
    int fresh_ok = cables_home_move(fresh, ps, last) == 0 && cables_home_move(fresh, ps, 0) == 0 &&
                   cables_home_of(fresh) == 0;
    fresh[0] = 5;
    fresh_ok = fresh_ok && fresh[0] == 5;
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
    void *sum;
    int stack_refused = 1;
    if (last > 0) {
        if (cables_thread_create(&t, last, stack_owner, s))
            return 2;
        cables_thread_join(t, &sum);
        stack_refused = s->stack_rc == -1 && (long)sum == 36;
    }
    int ok = s->bad_reads == 0 && bad_pages == 0 && bad_moves == 0 && fresh_ok && stack_refused;
    printf("RESULT ok=%d reads=%d bad_reads=%ld pages=%ld bad_pages=%ld bad_moves=%ld fresh=%d "
           "stack_refused=%d\n", ok, ROUNDS, s->bad_reads, pages, bad_pages, bad_moves, fresh_ok,
           stack_refused);
    return ok ? 0 : 1;
}
