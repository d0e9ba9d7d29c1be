/* nprocs: the processors a relinked program counts are the cluster's.  Main
 * and a thread it creates (on another node where there is one) read
 * sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF),
 * get_nprocs() and get_nprocs_conf(); the values pass back through the
 * thread's arguments (this program's globals are each node's).  The thread
 * then pins itself to the last of those CPUs (pthread_setaffinity_np), then
 * to the one before (sched_setaffinity), as a program pinning thread i to
 * CPU i % count does: both must succeed, on one CPU of its node.
 * RESULT ok=1 main=a,b,c,d worker=a,b,c,d worker_node=k cluster=C pin=p,s,n
 * (C: cables_cpu_count(); p, s: the two calls' results; n: the CPUs the
 * thread may run on after them; ok: all eight counts equal C, p = s = 0,
 * n = 1) */
#define _GNU_SOURCE
#include <cables.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

struct counts { long v[4]; int node, pin[3]; };

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
    struct counts *c = arg;
    count(c);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(c->v[0] - 1) % CPU_SETSIZE, &set);
    c->pin[0] = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    CPU_ZERO(&set);
    CPU_SET((int)(c->v[0] > 1 ? c->v[0] - 2 : 0) % CPU_SETSIZE, &set);
    c->pin[1] = sched_setaffinity(0, sizeof set, &set) ? errno : 0;
    c->pin[2] = sched_getaffinity(0, sizeof set, &set) ? -1 : CPU_COUNT(&set);
    return arg;
}

int main(void)
{
    struct counts m, w = { { 0 }, -1, { -1, -1, -1 } };
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
    ok &= w.pin[0] == 0 && w.pin[1] == 0 && w.pin[2] == 1;
    printf("RESULT ok=%d main=%ld,%ld,%ld,%ld worker=%ld,%ld,%ld,%ld worker_node=%d cluster=%ld "
           "pin=%d,%d,%d\n",
           ok, m.v[0], m.v[1], m.v[2], m.v[3], w.v[0], w.v[1], w.v[2], w.v[3], w.node, c,
           w.pin[0], w.pin[1], w.pin[2]);
    return ok ? 0 : 1;
}
