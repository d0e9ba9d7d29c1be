/* attach: nodes attached on demand and detached, through the runtime's own
 * API (so that the sanitizer suite runs it too; the relinked pthreads
 * version is tests/posix/churn.c).  Run with CABLES_THREADS_PER_NODE=1 and
 * cables-run -n 1 -m NODES: each of PHASES phases creates NODES-1 threads
 * (node -1: the runtime places them), all alive at once behind a barrier,
 * each summing its slice of shared memory, writing under a lock, and
 * saying which node it ran on; main joins them and pauses PAUSE_MS, in
 * which the nodes whose threads ended leave.
 * Usage: attach NODES PHASES PAUSE_MS [EXIT]  (EXIT: end with exit(EXIT) when ok)
 * RESULT ok=1 threads=T nodes_used=N remote=R */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SLICE 2048

struct shared {
    cables_barrier_t b;
    cables_lock_t l;
    long total;
    long sums[64];
    int node[64];
    long data[64 * SLICE];
};

struct job { struct shared *s; long i; };

static void *work(void *a)
{
    struct shared *s = ((struct job *)a)->s; /* statics are per node here (no cables-cc) */
    long i = ((struct job *)a)->i, sum = 0;
    for (long j = i * SLICE; j < (i + 1) * SLICE; j++)
        sum += s->data[j];
    s->sums[i] = sum;
    s->node[i] = cables_node_id();
    cables_lock(&s->l);
    s->total += sum;
    cables_unlock(&s->l);
    cables_barrier_wait(&s->b);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: attach NODES PHASES PAUSE_MS [EXIT]\n");
        return 2;
    }
    int nt = atoi(argv[1]) - 1, phases = atoi(argv[2]), pause_ms = atoi(argv[3]);
    if (nt < 1 || nt > 63 || phases < 1 || pause_ms < 0)
        return 2;
    struct shared *s = cables_alloc(sizeof *s);
    struct job *jobs = cables_alloc(sizeof *jobs * 64);
    int ok = 1, remote = 0;
    unsigned long long used = 0; /* nodes that ran a thread */
    for (int ph = 0; ph < phases; ph++) {
        long want = 0;
        for (long j = 0; j < nt * SLICE; j++) {
            s->data[j] = (j * 3 + ph) % 101;
            want += s->data[j];
        }
        s->total = 0;
        cables_barrier_init(&s->b, (unsigned)nt);
        cables_thread_t t[64];
        for (long i = 0; i < nt; i++)
            jobs[i] = (struct job){ s, i };
        for (long i = 0; i < nt; i++)
            if (cables_thread_create(&t[i], -1, work, &jobs[i])) {
                printf("RESULT ok=0 error=create phase=%d thread=%ld\n", ph, i);
                return 1;
            }
        for (int i = 0; i < nt; i++)
            cables_thread_join(t[i], NULL);
        long got = 0;
        for (int i = 0; i < nt; i++) {
            got += s->sums[i];
            used |= 1ull << s->node[i];
            remote += s->node[i] != 0;
        }
        cables_lock(&s->l);
        ok &= got == want && s->total == want;
        cables_unlock(&s->l);
        if (ph + 1 < phases)
            usleep((useconds_t)pause_ms * 1000);
    }
    printf("RESULT ok=%d threads=%d nodes_used=%d remote=%d\n", ok, nt * phases,
           __builtin_popcountll(used), remote);
    if (ok && argc == 5)
        exit(atoi(argv[4]));
    return ok ? 0 : 1;
}
