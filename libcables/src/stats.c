/* stats.c: per-node counters, printed at exit with CABLES_STATS=1. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

cables_stats_t cb_stats;

void cables_stats_get(cables_stats_t *s)
{
    memcpy(s, &cb_stats, sizeof *s);
}

void cables_stats_print(void)
{
    cables_stats_t s;
    cables_stats_get(&s);
    char b[2048], nodes[128] = "";
    if (cb.self == 0 && cb.cfg.max_nodes > cb.launched)
        snprintf(nodes, sizeof nodes, " | nodes attached=%llu (avg %.1f ms) detached=%llu",
                 (unsigned long long)s.nodes_attached,
                 s.nodes_attached ? s.attach_ns / 1e6 / (double)s.nodes_attached : 0.0,
                 (unsigned long long)s.nodes_detached);
    int n = snprintf(b, sizeof b,
        "cables: node %d stats: faults read=%llu write=%llu (on own homes %llu) | "
        "pages fetched=%llu in %llu fetches (avg %.1f us) | written ahead=%llu | twins=%llu diffs sent=%llu bytes=%llu applied=%llu | "
        "write notices made=%llu received=%llu invalidations=%llu | "
        "locks=%llu remote=%llu wait=%.3f ms | barriers=%llu wait=%.3f ms | "
        "homes owned=%llu moved=%llu dir lookups=%llu | msgs=%llu bytes=%llu | "
        "memory=%zu KiB%s\n",
        cb.self, (unsigned long long)s.read_faults, (unsigned long long)s.write_faults,
        (unsigned long long)s.home_faults, (unsigned long long)s.pages_fetched,
        (unsigned long long)s.fetches, s.fetches ? s.fetch_ns / 1e3 / (double)s.fetches : 0.0,
        (unsigned long long)s.written_ahead,
        (unsigned long long)s.twins, (unsigned long long)s.diffs_sent,
        (unsigned long long)s.diff_bytes_sent, (unsigned long long)s.diffs_applied,
        (unsigned long long)s.write_notices_made, (unsigned long long)s.write_notices_received,
        (unsigned long long)s.invalidations, (unsigned long long)s.lock_acquires,
        (unsigned long long)s.lock_remote_acquires, s.lock_wait_ns / 1e6,
        (unsigned long long)s.barriers, s.barrier_wait_ns / 1e6,
        (unsigned long long)s.homes_owned, (unsigned long long)s.homes_moved,
        (unsigned long long)s.dir_lookups, (unsigned long long)s.msgs_sent,
        (unsigned long long)s.bytes_sent, cables_memory_used() / 1024, nodes);
    if (write(2, b, (size_t)n) < 0) {}
}

int cables_node_id(void) { return cb.self; }
int cables_node_count(void) { return atomic_load(&cb.nnodes); }
