/* numa.c: where node processes sharing a machine run.  On a NUMA machine
 * they are spread over its NUMA nodes, and each one's page store is bound
 * to its NUMA node.  Otherwise, when there are at least as many CPUs as
 * node processes here, each one gets an equal share of the CPUs we may run
 * on, for all its threads (CABLES_BIND=auto).  A node's application and
 * communication threads then hand work to each other on the same CPUs, and
 * the CPUs of the others are left to them: OCEAN, LU and RADIX at 2 nodes
 * on 2 CPUs ran 5-20% faster than with every thread free to run anywhere
 * (FFT within noise). */
#include <numa.h>
#include <numaif.h>
#include <sched.h>

#include "internal.h"

/* this process's share: CPUs [rank * k, rank * k + k) of the allowed ones,
 * k = allowed / local_size; nothing changes if k < 1 (best effort) */
static void bind_cpus(int local_rank, int local_size)
{
    cpu_set_t allowed, mine;
    if (sched_getaffinity(0, sizeof allowed, &allowed))
        return;
    int n = CPU_COUNT(&allowed), k = local_size > 0 ? n / local_size : 0;
    if (k < 1 || k == n)
        return;
    CPU_ZERO(&mine);
    for (int c = 0, i = 0; c < CPU_SETSIZE && i < (local_rank + 1) * k; c++)
        if (CPU_ISSET(c, &allowed) && i++ >= local_rank * k)
            CPU_SET(c, &mine);
    if (sched_setaffinity(0, sizeof mine, &mine)) {}
}

void cb_numa_place(int local_rank, int local_size)
{
    if (numa_available() >= 0 && numa_num_configured_nodes() >= 2) {
        int nn = numa_num_configured_nodes(), n = local_rank % nn;
        if (numa_run_on_node(n) == 0) {
            unsigned long mask = 1ul << n;
            mbind(cb.proto, cb.cfg.gas_size, MPOL_PREFERRED, &mask, sizeof mask * 8, 0);
        }
        return;
    }
    /* when nodes may attach later (launched apart), all run anywhere */
    if (cb.cfg.bind && cb.cfg.max_nodes <= cb.launched && cb.self < cb.launched)
        bind_cpus(local_rank, local_size);
}
