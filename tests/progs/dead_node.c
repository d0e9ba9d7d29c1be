/* dead_node: threads on every node run a lock-and-barrier loop for about
 * 30 s.  Each prints "node K pid P" from its own node, then main prints
 * "ready"; the test kills a node and expects the run to end with a message
 * naming the dead node.  Each thread also writes a page of its own node
 * (first touch: its node is home) and reads its neighbour's, so that the
 * others go on reading the dead node's page (in place where they can).
 * RESULT ok=1 counter=C (only if nothing was killed) */
#include <cables.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ITERS 3000 /* x 10 ms = 30 s */

#define PAGE_LONGS 1024 /* 8 KiB: a page of its own at 4 and 8 KiB pages */
struct shared {
    cables_lock_t lk;
    cables_barrier_t start, loop;
    long counter;
    long own[64][PAGE_LONGS] __attribute__((aligned(8192)));
};

static void *work(void *arg)
{
    struct shared *s = arg;
    int me = cables_node_id(), next = (me + 1) % cables_node_count();
    long sum = 0;
    s->own[me][0] = 1; /* first touch */
    /* the node process's pid (getpid gives every node the program's one) */
    printf("node %d pid %d\n", cables_node_id(), (int)syscall(SYS_getpid));
    fflush(stdout);
    cables_barrier_wait(&s->start);
    for (int i = 0; i < ITERS; i++) {
        cables_lock(&s->lk);
        s->counter++;
        s->own[me][0]++;
        sum += s->own[next][0];
        cables_unlock(&s->lk);
        usleep(10 * 1000);
        if (i % 10 == 9)
            cables_barrier_wait(&s->loop);
    }
    return (void *)sum;
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
