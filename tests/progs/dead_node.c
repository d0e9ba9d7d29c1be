/* dead_node: threads on every node run a lock-and-barrier loop for about
 * 30 s.  Each prints "node K pid P" from its own node, then main prints
 * "ready"; the test kills a node and expects the run to end with a message
 * naming the dead node.
 * RESULT ok=1 counter=C (only if nothing was killed) */
#include <cables.h>
#include <stdio.h>
#include <unistd.h>

#define ITERS 3000 /* x 10 ms = 30 s */

struct shared { cables_lock_t lk; cables_barrier_t start, loop; long counter; };

static void *work(void *arg)
{
    struct shared *s = arg;
    printf("node %d pid %d\n", cables_node_id(), (int)getpid());
    fflush(stdout);
    cables_barrier_wait(&s->start);
    for (int i = 0; i < ITERS; i++) {
        cables_lock(&s->lk);
        s->counter++;
        cables_unlock(&s->lk);
        usleep(10 * 1000);
        if (i % 10 == 9)
            cables_barrier_wait(&s->loop);
    }
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->start, (unsigned)nn + 1); /* the threads and main */
    cables_barrier_init(&s->loop, (unsigned)nn);
    cables_thread_t t[64];
    for (int i = 0; i < nn; i++)
        cables_thread_create(&t[i], i, work, s);
    cables_barrier_wait(&s->start);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < nn; i++)
        cables_thread_join(t[i], NULL);
    long c = s->counter, expected = (long)nn * ITERS;
    printf("RESULT ok=%d counter=%ld expected=%ld\n", c == expected, c, expected);
    return c == expected ? 0 : 1;
}
