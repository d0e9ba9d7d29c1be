/* numa.c: where node processes sharing a machine run.  On a NUMA machine
 * they are spread over its NUMA nodes, and each one's page store is bound
 * to its NUMA node.  Otherwise, when there are at least as many CPUs as
 * node processes here, each one gets an equal share of the CPUs we may run
 * on, for all its threads (CABLES_BIND=auto).  A node's application and
 * communication threads then hand work to each other on the same CPUs, and
 * the CPUs of the others are left to them: OCEAN, LU and RADIX at 2 nodes
 * on 2 CPUs ran 5-20% faster than with every thread free to run anywhere
 * (FFT within noise).  Where a node process has more than one CPU (alone
 * on the machine, or a share of several), its communication thread runs on
 * the CPU its main thread was on at the start, and so does main until a
 * second application thread starts there; then they all may run on all of
 * the node's CPUs.  Waking a thread on an idle CPU of this VM slows the
 * whole process: OCEAN -p 1 at 1 node, its communication thread woken on
 * the other CPU at each of its 899 barriers, took 1.7-2.0 s where native
 * takes 1.17-1.25; with the communication thread pinned and main free, 2
 * runs of 6 still took 1.75-1.9 s (main had moved); with both pinned,
 * 1.18-1.22.  Main kept there with a second thread computing made LU -p 2
 * 8% slower, hence it is let go then. */
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <unistd.h>

#include <string.h>

#include "internal.h"

static cpu_set_t node_cpus; /* the node process's CPUs, when comm_cpu >= 0 */
static int comm_cpu = -1;   /* the communication thread's CPU, or -1: free */
static pid_t main_tid;      /* kept on comm_cpu until another application thread starts */
static _Atomic bool main_free;
static int share;           /* CPUs of the node process's own (or its share of them) */
static cpu_set_t proc_cpus; /* the CPUs the node process may run on, once placed */
static int nproc_cpus;

static void note_cpus(void)
{
    if (!sched_getaffinity(0, sizeof proc_cpus, &proc_cpus))
        nproc_cpus = CPU_COUNT(&proc_cpus);
}

/* this process's share: CPUs [rank * k, rank * k + k) of the allowed ones,
 * k = allowed / local_size; nothing changes if k < 1 (best effort).  True
 * if it has CPUs of its own (a share, or all of them when alone). */
static bool bind_cpus(int local_rank, int local_size)
{
    cpu_set_t allowed, mine;
    if (sched_getaffinity(0, sizeof allowed, &allowed))
        return false;
    int n = CPU_COUNT(&allowed), k = local_size > 0 ? n / local_size : 0;
    if (k < 1 || k == n)
        return k == n;
    CPU_ZERO(&mine);
    for (int c = 0, i = 0; c < CPU_SETSIZE && i < (local_rank + 1) * k; c++)
        if (CPU_ISSET(c, &allowed) && i++ >= local_rank * k)
            CPU_SET(c, &mine);
    return cb_setaffinity(0, sizeof mine, &mine) == 0;
}

void cb_numa_place(int local_rank, int local_size)
{
    if (numa_available() >= 0 && numa_num_configured_nodes() >= 2) {
        int nn = numa_num_configured_nodes(), n = local_rank % nn;
        struct bitmask *cpus = numa_allocate_cpumask();
        if (cpus && numa_node_to_cpus(n, cpus) == 0) /* nodes sharing the NUMA node share its CPUs */
            share = (int)numa_bitmask_weight(cpus) / ((local_size + nn - 1 - n) / nn);
        if (cpus)
            numa_free_cpumask(cpus);
        if (numa_run_on_node(n) == 0) {
            unsigned long mask = 1ul << n;
            mbind(cb.proto, cb.cfg.gas_size, MPOL_PREFERRED, &mask, sizeof mask * 8, 0);
        }
        note_cpus();
        return;
    }
    /* its share of the CPUs, whether it is bound to them below or not */
    cpu_set_t allowed;
    if (!sched_getaffinity(0, sizeof allowed, &allowed))
        share = local_size > 0 ? CPU_COUNT(&allowed) / local_size : 0;
    /* when nodes may attach later (launched apart), all run anywhere */
    if (!cb.cfg.bind || cb.cfg.max_nodes > cb.launched || cb.self >= cb.launched) {
        note_cpus();
        return;
    }
    int cpu = bind_cpus(local_rank, local_size) ? sched_getcpu() : -1;
    note_cpus();
    if (cpu >= 0 && !sched_getaffinity(0, sizeof node_cpus, &node_cpus) &&
        CPU_COUNT(&node_cpus) > 1 && CPU_ISSET(cpu, &node_cpus)) {
        comm_cpu = cpu;
        main_tid = gettid();
        cb_numa_comm_thread(); /* main, with it until a second thread starts here */
    }
}

void cb_numa_comm_thread(void)
{
    if (comm_cpu < 0)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(comm_cpu, &one);
    if (cb_setaffinity(0, sizeof one, &one)) {}
}

/* an application thread starts here (by the communication thread, whose
 * CPU it would keep): it and main may run on all the node's CPUs */
void cb_numa_app_thread(void)
{
    if (comm_cpu < 0)
        return;
    if (cb_setaffinity(0, sizeof node_cpus, &node_cpus)) {}
    if (!atomic_exchange(&main_free, true) &&
        cb_setaffinity(main_tid, sizeof node_cpus, &node_cpus)) {}
}

bool cb_numa_spare_cpu(void) { return share >= 2; }

/* A CPU set an application thread made for the cluster's CPUs (it counts
 * them: pthread_shim/src/threads.c), as this node's: CPU c becomes the
 * (c mod n)th of the n CPUs the node process may run on (the first n map
 * to themselves where those are CPUs 0..n-1), so that pinning thread i to
 * CPU i % sysconf(_SC_NPROCESSORS_ONLN) is a valid request on any node. */
void cb_cpus_fold(void *set, size_t size)
{
    if (nproc_cpus <= 0 || size > CPU_ALLOC_SIZE(4096))
        return;
    int idx[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < nproc_cpus; c++)
        if (CPU_ISSET(c, &proc_cpus))
            idx[n++] = c;
    if (n == 0)
        return;
    uint8_t out[CPU_ALLOC_SIZE(4096)];
    memset(out, 0, size);
    for (size_t c = 0; c < size * 8; c++)
        if (CPU_ISSET_S(c, size, (cpu_set_t *)set))
            CPU_SET_S((size_t)idx[c % (size_t)n], size, (cpu_set_t *)out);
    memcpy(set, out, size);
}

void cb_numa_store_thread(void)
{
    if (comm_cpu < 0)
        return;
    cpu_set_t others = node_cpus;
    CPU_CLR(comm_cpu, &others);
    if (CPU_COUNT(&others) && cb_setaffinity(0, sizeof others, &others)) {}
}
