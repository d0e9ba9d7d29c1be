/* machines: a thread on every node names the network namespace its node
 * process runs in (tests/multinode/machines.sh gives each launched node
 * its own, standing in for a machine), then all add to one counter under
 * a lock, in turns around barriers, and each checks the others' last
 * additions after the barrier.
 * Usage: machines ROUNDS
 * RESULT ok=1 nodes=N netns=D total=T (D: distinct namespaces of the nodes) */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAXN 64

struct shared {
    cables_lock_t l;
    cables_barrier_t b;
    long total;
    long last[MAXN];
    unsigned long long netns[MAXN];
    int bad;
};

struct targ { struct shared *s; int node, nodes, rounds; };

static void *work(void *arg)
{
    struct targ *a = arg;
    struct shared *s = a->s;
    struct stat st;
    s->netns[a->node] = stat("/proc/self/ns/net", &st) ? 0 : (unsigned long long)st.st_ino;
    for (int r = 1; r <= a->rounds; r++) {
        cables_lock(&s->l);
        s->total += a->node + 1;
        s->last[a->node] = r;
        cables_unlock(&s->l);
        cables_barrier_wait(&s->b);
        for (int k = 0; k < a->nodes; k++)
            if (s->last[k] != r) {
                cables_lock(&s->l);
                s->bad++;
                cables_unlock(&s->l);
            }
        cables_barrier_wait(&s->b);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 0, n = cables_node_count();
    if (rounds < 1 || n > MAXN) {
        fprintf(stderr, "usage: machines ROUNDS (at most %d nodes)\n", MAXN);
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    cables_barrier_init(&s->b, (unsigned)n);
    cables_thread_t t[MAXN];
    struct targ a[MAXN];
    for (int k = 0; k < n; k++) {
        a[k] = (struct targ){ s, k, n, rounds };
        if (k && cables_thread_create(&t[k], k, work, &a[k])) {
            fprintf(stderr, "machines: cannot create a thread on node %d\n", k);
            return 1;
        }
    }
    work(&a[0]);
    for (int k = 1; k < n; k++)
        cables_thread_join(t[k], NULL);
    int distinct = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int j = 0; j < k; j++)
            seen |= s->netns[j] == s->netns[k];
        distinct += !seen && s->netns[k];
    }
    long want = (long)rounds * n * (n + 1) / 2;
    int ok = s->total == want && !s->bad;
    printf("RESULT ok=%d nodes=%d netns=%d total=%ld want=%ld bad=%d\n", ok, n, distinct, s->total,
           want, s->bad);
    return ok ? 0 : 1;
}
