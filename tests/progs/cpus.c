/* cpus: the CPUs each node's threads may run on (CABLES_BIND).  A thread
 * on every node reads its affinity.
 * RESULT ok=1 nodes=N counts=c0,c1,... masks=m0,m1,... (m: hex, CPUs 0-63) */
#define _GNU_SOURCE
#include <cables.h>
#include <sched.h>
#include <stdio.h>

#define MAXN 64

struct shared { int count[MAXN]; unsigned long long mask[MAXN]; };
struct targ { struct shared *s; int node; };

static void *probe(void *arg)
{
    struct targ *a = arg;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set))
        return (void *)1;
    unsigned long long m = 0;
    for (int c = 0; c < 64; c++)
        if (CPU_ISSET(c, &set))
            m |= 1ull << c;
    a->s->count[a->node] = CPU_COUNT(&set);
    a->s->mask[a->node] = m;
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    if (nn > MAXN) {
        printf("RESULT ok=0 error=too_many_nodes\n");
        return 1;
    }
    struct shared *s = cables_alloc(sizeof *s);
    struct targ *a = cables_alloc(sizeof(struct targ) * (size_t)nn);
    cables_thread_t t[MAXN];
    int bad = 0;
    for (int i = 0; i < nn; i++) {
        a[i] = (struct targ){ s, i };
        if (cables_thread_create(&t[i], i, probe, &a[i]))
            bad++;
    }
    for (int i = 0; i < nn; i++) {
        void *r;
        if (cables_thread_join(t[i], &r) || r)
            bad++;
    }
    printf("RESULT ok=%d nodes=%d counts=", !bad, nn);
    for (int i = 0; i < nn; i++)
        printf("%s%d", i ? "," : "", s->count[i]);
    printf(" masks=");
    for (int i = 0; i < nn; i++)
        printf("%s%llx", i ? "," : "", s->mask[i]);
    printf("\n");
    return bad != 0;
}
