#include <cables.h>
#include <stdio.h>
#include <stdlib.h>

struct shared { cables_lock_t lk; long counter; long iters; };

static void *work(void *arg)
{
    struct shared *s = arg;
    for (long i = 0; i < s->iters; i++) {
        cables_lock(&s->lk);
        s->counter++;
        cables_unlock(&s->lk);
    }
    return (void *)(long)cables_node_id();
}

int main(int argc, char **argv)
{
    int nn = cables_node_count();
    struct shared *s = cables_alloc(sizeof *s);
    s->iters = argc > 1 ? atol(argv[1]) : 1000;
    cables_thread_t t[64];
    for (int i = 0; i < nn; i++)
        cables_thread_create(&t[i], i, work, s);
    for (int i = 0; i < nn; i++) {
        void *r;
        cables_thread_join(t[i], &r);
    }
    cables_lock(&s->lk);
    printf("nodes=%d counter=%ld expected=%ld\n", nn, s->counter, s->iters * nn);
    cables_unlock(&s->lk);
    return s->counter == s->iters * nn ? 0 : 1;
}
