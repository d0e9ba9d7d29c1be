/* nprocs: the processors a relinked program counts are the cluster's.  Main
 * and a thread it creates (on another node where there is one) read
 * sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF),
 * get_nprocs() and get_nprocs_conf(); the values pass back through the
 * thread's return value (this program's globals are each node's).
 * RESULT ok=1 main=a,b,c,d worker=a,b,c,d worker_node=k cluster=C
 * (C: cables_cpu_count(); ok: all eight equal C) */
#include <cables.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

struct counts { long v[4]; int node; };

static void count(struct counts *c)
{
    c->v[0] = sysconf(_SC_NPROCESSORS_ONLN);
    c->v[1] = sysconf(_SC_NPROCESSORS_CONF);
    c->v[2] = get_nprocs();
    c->v[3] = get_nprocs_conf();
    c->node = cables_node_id();
}

static void *worker(void *arg)
{
    count(arg);
    return arg;
}

int main(void)
{
    struct counts m, w = { { 0 }, -1 };
    count(&m);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &w) || pthread_join(t, NULL)) {
        printf("RESULT ok=0 error=thread\n");
        return 1;
    }
    long c = cables_cpu_count();
    int ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= m.v[i] == c && w.v[i] == c;
    printf("RESULT ok=%d main=%ld,%ld,%ld,%ld worker=%ld,%ld,%ld,%ld worker_node=%d cluster=%ld\n",
           ok, m.v[0], m.v[1], m.v[2], m.v[3], w.v[0], w.v[1], w.v[2], w.v[3], w.node, c);
    return ok ? 0 : 1;
}
