/* cpus: the CPUs each node's threads may run on (CABLES_BIND).  A thread
 * on every node reads its affinity and that of its node's communication
 * thread (named cables-comm; -1 if not found); main reads its own before
 * and after those threads ran.
 * RESULT ok=1 nodes=N counts=c0,c1,... masks=m0,m1,... (m: hex, CPUs 0-63)
 *        comm=k0,k1,... main_alone=a main_after=b */
#define _GNU_SOURCE
#include <cables.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 64

struct shared { int count[MAXN], comm[MAXN]; unsigned long long mask[MAXN]; };

/* CPUs the thread named cables-comm of this process may run on; -1: none */
static int comm_cpus(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = -1;
    for (struct dirent *e; d && (e = readdir(d));) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (!fgets(name, sizeof name, f))
            name[0] = 0;
        fclose(f);
        cpu_set_t set;
        if (!strcmp(name, "cables-comm\n") &&
            !sched_getaffinity((pid_t)atoi(e->d_name), sizeof set, &set))
            n = CPU_COUNT(&set);
    }
    if (d)
        closedir(d);
    return n;
}
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
    a->s->comm[a->node] = comm_cpus();
    return NULL;
}

static int my_cpus(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) ? -1 : CPU_COUNT(&set);
}

int main(void)
{
    int main_alone = my_cpus();
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
    printf(" comm=");
    for (int i = 0; i < nn; i++)
        printf("%s%d", i ? "," : "", s->comm[i]);
    printf(" main_alone=%d main_after=%d\n", main_alone, my_cpus());
    return bad != 0;
}
