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
 * Phase 4 (4+ nodes): two moves crossing.  Page a moves between nodes 0
 * and 1 while node 3 writes it, page b between nodes 2 and 3 while node 1
 * writes it, CROSS times each, every write followed by an unlock (its diff
 * on its way to the home it knows): each new home may hold a diff of its
 * own for the other's page.  Every move must end and every write survive
 * (before, each diff went round between an old and a new home while each
 * new home waited for its own diff: a hang).
 * RESULT ok=1 reads=R bad_reads=B pages=P bad_pages=Q fresh=F stack_refused=S
 *        crossed=C bad_cross=X */
#include <cables.h>
#include <stdbool.h>
#include <stdio.h>

#define ROUNDS 300
#define PAGES 100
#define CROSS 200

struct shared {
    cables_barrier_t b2, b3;
    cables_lock_t l;
    long bad_reads, stack_rc;
    volatile long *p;
    long *pages[PAGES];
    long *cross[2];               /* pages a and b of phase 4 */
    cables_lock_t wl[2];          /* the writers' own locks */
    volatile long writing;        /* (wl[0]) writers go on while movers move */
    long written[2], bad_moves4;
};

/* phase 4: node 3 writes page a (i = 0), node 1 page b (i = 1), word i,
 * until the movers are done */
static void *cross_writer(void *a)
{
    struct shared *s = a;
    int i = cables_node_id() == 3 ? 0 : 1;
    long n = 0;
    for (bool go = true; go;) {
        cables_lock(&s->wl[i]);
        s->cross[i][i] = ++n;
        go = s->writing;
        cables_unlock(&s->wl[i]);
    }
    s->written[i] = n;
    return NULL;
}

/* phase 4: page a between nodes 0 and 1 (from node 0), b between 2 and 3
 * (from node 2) */
static void *cross_mover(void *a)
{
    struct shared *s = a;
    int i = cables_node_id() == 0 ? 0 : 1, from = 2 * i;
    long bad = 0;
    for (int k = 0; k < CROSS; k++)
        bad += cables_home_move(s->cross[i], cables_page_size(), from + (k % 2 == 0)) != 0;
    cables_home_move(s->cross[i], cables_page_size(), from);
    cables_lock(&s->wl[0]);
    s->bad_moves4 += bad;
    cables_unlock(&s->wl[0]);
    return NULL;
}

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
    long crossed = 0, bad_cross = 0;
    if (nn >= 4) {
        for (int i = 0; i < 2; i++) {
            s->cross[i] = cables_alloc_placed(ps, CABLES_POLICY_FIXED, 2 * i);
            s->cross[i][0] = s->cross[i][1] = 0;
        }
        s->writing = 1;
        cables_thread_t w[2], mv;
        if (cables_thread_create(&w[0], 3, cross_writer, s) ||
            cables_thread_create(&w[1], 1, cross_writer, s) ||
            cables_thread_create(&mv, 2, cross_mover, s))
            return 2;
        cross_mover(s);
        cables_thread_join(mv, NULL);
        cables_lock(&s->wl[0]);
        s->writing = 0;
        cables_unlock(&s->wl[0]);
        for (int i = 0; i < 2; i++)
            cables_thread_join(w[i], NULL);
        for (int i = 0; i < 2; i++) {
            cables_lock(&s->wl[i]);
            bad_cross += s->cross[i][i] != s->written[i] || s->written[i] < 1;
            cables_unlock(&s->wl[i]);
        }
        bad_cross += s->bad_moves4 != 0;
        crossed = 2 * CROSS;
    }
    void *sum;
    int stack_refused = 1;
    if (last > 0) {
        if (cables_thread_create(&t, last, stack_owner, s))
            return 2;
        cables_thread_join(t, &sum);
        stack_refused = s->stack_rc == -1 && (long)sum == 36;
    }
    int ok = s->bad_reads == 0 && bad_pages == 0 && bad_moves == 0 && fresh_ok && stack_refused &&
             bad_cross == 0;
    printf("RESULT ok=%d reads=%d bad_reads=%ld pages=%ld bad_pages=%ld bad_moves=%ld fresh=%d "
           "stack_refused=%d crossed=%ld bad_cross=%ld\n", ok, ROUNDS, s->bad_reads, pages,
           bad_pages, bad_moves, fresh_ok, stack_refused, crossed, bad_cross);
    return ok ? 0 : 1;
}
