/* barrier_churn: node 0 releases intervals (lock, write, unlock) without
 * pause while its main thread and a thread on the last node go through
 * thousands of barriers.  The barrier's write notices must stay a prefix:
 * a root that recorded a newer clock than it sent made the next barrier
 * fail with "protocol error".  The churned counter must also be exact.
 * RESULT ok=1 barriers=B churn=C counter=X */
#include <cables.h>
#include <stdio.h>

#define BARRIERS 3000

struct shared {
    cables_barrier_t b;
    cables_lock_t l;
    long stop, x;
    long seen[2]; /* what each barrier thread read of x after the last barrier */
};

static void *barriers(void *a)
{
    struct shared *s = a;
    for (int i = 0; i < BARRIERS; i++)
        cables_barrier_wait(&s->b);
    return NULL;
}

static void *churn(void *a)
{
    struct shared *s = a;
    long n = 0, stop = 0;
    while (!stop) {
        cables_lock(&s->l);
        s->x++;
        stop = s->stop;
        cables_unlock(&s->l);
        n++;
    }
    return (void *)n;
}

int main(void)
{
    int last = cables_node_count() - 1;
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, 2);
    cables_thread_t tc, tb;
    if (cables_thread_create(&tc, 0, churn, s) || cables_thread_create(&tb, last, barriers, s))
        return 2;
    for (int i = 0; i < BARRIERS; i++)
        cables_barrier_wait(&s->b);
    cables_thread_join(tb, NULL);
    cables_lock(&s->l);
    s->stop = 1;
    cables_unlock(&s->l);
    void *r;
    cables_thread_join(tc, &r);
    cables_lock(&s->l);
    long x = s->x;
    cables_unlock(&s->l);
    int ok = x == (long)r && x > 0;
    printf("RESULT ok=%d barriers=%d churn=%ld counter=%ld\n", ok, BARRIERS, (long)r, x);
    return ok ? 0 : 1;
}
