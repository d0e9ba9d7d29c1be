/* numa.c: on a NUMA machine, node processes sharing it are spread over
 * its NUMA nodes, and each one's page store is bound to its NUMA node. */
#include <numa.h>
#include <numaif.h>

#include "internal.h"

void cb_numa_place(int local_rank)
{
    if (numa_available() < 0 || numa_num_configured_nodes() < 2)
        return;
    int nn = numa_num_configured_nodes(), n = local_rank % nn;
    if (numa_run_on_node(n) == 0) {
        unsigned long mask = 1ul << n;
        mbind(cb.proto, cb.cfg.gas_size, MPOL_PREFERRED, &mask, sizeof mask * 8, 0);
    }
}
