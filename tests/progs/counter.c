/* counter: a lock-protected counter incremented TOTAL times in all by
 * PER threads on each node, which race for the lock's first take.  Before
 * them, main (on node 0, the lock manager) takes 64 locks nobody asked for:
 * each made there, none granted by a message (first_remote=0).
 * usage: counter [TOTAL [PER]]
 * RESULT ok=1 counter=C expected=TOTAL threads=T first_remote=R */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>

struct shared { cables_lock_t lk; long counter, iters; };

static void *work(void *arg)
{
    struct shared *s = arg;
    for (long i = 0; i < s->iters; i++) {
        cables_lock(&s->lk);
        s->counter++;
        cables_unlock(&s->lk);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int nn = cables_node_count();
    long total = argc > 1 ? atol(argv[1]) : 20000;
    int per = argc > 2 ? atoi(argv[2]) : 1, T = nn * per;
    if (T > 64 || total % T) {
        printf("RESULT ok=0 error=bad_arguments\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    s->iters = total / T;
    cables_lock_t *fresh = cables_alloc(64 * sizeof *fresh);
    cables_stats_t s0, s1;
    cables_stats_get(&s0);
    for (int i = 0; i < 64; i++) {
        cables_lock(&fresh[i]);
        cables_unlock(&fresh[i]);
    }
    cables_stats_get(&s1);
    long first_remote = (long)(s1.lock_remote_acquires - s0.lock_remote_acquires);
    cables_thread_t t[64];
    for (int i = 0; i < T; i++)
        if (cables_thread_create(&t[i], i % nn, work, s)) {
            printf("RESULT ok=0 error=create\n");
            return 1;
        }
    for (int i = 0; i < T; i++)
        cables_thread_join(t[i], NULL);
    cables_lock(&s->lk);
    long c = s->counter;
    cables_unlock(&s->lk);
    int ok = c == total && first_remote == 0;
    printf("RESULT ok=%d counter=%ld expected=%ld threads=%d first_remote=%ld\n", ok, c, total, T,
           first_remote);
    return ok ? 0 : 1;
}
