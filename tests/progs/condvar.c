/* condvar: condition variables across nodes.
 * 1. A bounded buffer (4 slots, lock + not_full/not_empty): a producer on
 *    the last node, one consumer per node; every item consumed once, in a
 *    sum that must match.
 * 2. A gate: one waiter per node waits on a condition until main sets a
 *    flag and broadcasts; every waiter passes.
 * 3. A timed wait nobody signals returns ETIMEDOUT, holding the lock again.
 * RESULT ok=1 items=I consumed=C sum=S expected=E gate=G timedout=T */
#include <cables.h>
#include <errno.h>
#include <stdio.h>

#define ITEMS 2000
#define SLOTS 4

struct shared {
    cables_lock_t l;
    cables_cond_t not_full, not_empty, gate;
    long buf[SLOTS];
    int head, count, done, open, passed;
    long consumed, sum;
};

static void *producer(void *a)
{
    struct shared *s = a;
    for (long i = 1; i <= ITEMS; i++) {
        cables_lock(&s->l);
        while (s->count == SLOTS)
            cables_cond_wait(&s->not_full, &s->l);
        s->buf[(s->head + s->count) % SLOTS] = i;
        s->count++;
        cables_cond_signal(&s->not_empty);
        cables_unlock(&s->l);
    }
    cables_lock(&s->l);
    s->done = 1;
    cables_cond_broadcast(&s->not_empty);
    cables_unlock(&s->l);
    return NULL;
}

static void *consumer(void *a)
{
    struct shared *s = a;
    for (;;) {
        cables_lock(&s->l);
        while (s->count == 0 && !s->done)
            cables_cond_wait(&s->not_empty, &s->l);
        if (s->count == 0) {
            cables_unlock(&s->l);
            return NULL;
        }
        long v = s->buf[s->head];
        s->head = (s->head + 1) % SLOTS;
        s->count--;
        s->consumed++;
        s->sum += v;
        cables_cond_signal(&s->not_full);
        cables_unlock(&s->l);
    }
}

static void *gate_waiter(void *a)
{
    struct shared *s = a;
    cables_lock(&s->l);
    while (!s->open)
        cables_cond_wait(&s->gate, &s->l);
    s->passed++;
    cables_unlock(&s->l);
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    struct shared *s = cables_alloc(sizeof *s);
    cables_thread_t p, c[64], g[64];
    if (cables_thread_create(&p, nn - 1, producer, s))
        return 2;
    for (int i = 0; i < nn; i++)
        if (cables_thread_create(&c[i], i, consumer, s))
            return 2;
    cables_thread_join(p, NULL);
    for (int i = 0; i < nn; i++)
        cables_thread_join(c[i], NULL);

    for (int i = 0; i < nn; i++)
        if (cables_thread_create(&g[i], i, gate_waiter, s))
            return 2;
    cables_cond_t *never = cables_alloc(sizeof *never);
    cables_lock(&s->l);
    int rc = cables_cond_timedwait(never, &s->l, 50 * 1000 * 1000ull); /* 50 ms */
    s->open = 1; /* still holding the lock after the timeout */
    cables_cond_broadcast(&s->gate);
    cables_unlock(&s->l);
    for (int i = 0; i < nn; i++)
        cables_thread_join(g[i], NULL);

    long expected = (long)ITEMS * (ITEMS + 1) / 2;
    cables_lock(&s->l);
    int ok = s->consumed == ITEMS && s->sum == expected && s->passed == nn && rc == ETIMEDOUT;
    printf("RESULT ok=%d items=%d consumed=%ld sum=%ld expected=%ld gate=%d timedout=%d\n", ok,
           ITEMS, s->consumed, s->sum, expected, s->passed, rc == ETIMEDOUT);
    cables_unlock(&s->l);
    return ok ? 0 : 1;
}
