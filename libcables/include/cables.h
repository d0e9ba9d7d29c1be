/* libcables: the runtime-level API of a cluster that looks like one
 * shared-memory multiprocessor.  See DESIGN.md for the words used here
 * (node, home, copy, interval, write notice). */
#ifndef CABLES_H
#define CABLES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- nodes ---- */
int cables_node_id(void);    /* this node, 0 = master */
int cables_node_count(void); /* nodes attached now */
/* the threads the cluster runs at once: its most nodes at once (launched or
 * attached on demand) times the threads a node holds (CABLES_THREADS_PER_NODE) */
int cables_cpu_count(void);

/* ---- global address space ---- */
typedef enum {
    CABLES_POLICY_DEFAULT = 0, /* the CABLES_HOME_POLICY setting */
    CABLES_POLICY_FIRST_TOUCH,
    CABLES_POLICY_ROUND_ROBIN, /* page i of an allocation homed on node i % N */
    CABLES_POLICY_BLOCK,       /* allocation cut into N contiguous blocks */
    CABLES_POLICY_FIXED,       /* every page on one given node */
} cables_policy_t;

/* Shared memory, zeroed, page aligned, lazily backed.  NULL (with a message
 * on stderr naming the limit) when the global address space is exhausted.
 * cables_alloc may hand out a range that cables_free gave back (zeroed by
 * the caller then: a pass over its pages); cables_alloc_placed takes new
 * space only, so that its policy places every page.  cables_free releases
 * first (the block's writes reach their homes before its range is taken
 * again). */
void *cables_alloc(size_t size);
void *cables_alloc_placed(size_t size, cables_policy_t policy, int node);
void cables_free(void *p);

size_t cables_page_size(void);
/* Home node of the page holding addr; -1 if no node has touched it yet. */
int cables_home_of(const void *addr);
/* Move the homes of the pages of [addr, addr+len) to node.  0, or -1 (not
 * allocated, no such node, a node that left or is leaving, or a page of a
 * running thread's stack).
 * Readers and writers on any node may run meanwhile. */
int cables_home_move(void *addr, size_t len, int node);
/* Bytes of memory this node holds for shared pages (homes and copies). */
size_t cables_memory_used(void);

/* ---- synchronization: objects live in shared memory; a zeroed object
 * is initialized.  Each is an acquire/release point. ---- */
typedef struct { uint64_t reserved; } cables_lock_t;
typedef struct { uint32_t count; uint32_t reserved; } cables_barrier_t;
typedef struct { uint64_t reserved; } cables_cond_t;

void cables_lock(cables_lock_t *l);
void cables_unlock(cables_lock_t *l);
void cables_barrier_init(cables_barrier_t *b, unsigned count);
void cables_barrier_wait(cables_barrier_t *b);
void cables_cond_wait(cables_cond_t *c, cables_lock_t *l);
/* 0 when signalled, ETIMEDOUT when the relative timeout (ns) passed. */
int cables_cond_timedwait(cables_cond_t *c, cables_lock_t *l, uint64_t timeout_ns);
void cables_cond_signal(cables_cond_t *c);
void cables_cond_broadcast(cables_cond_t *c);

/* ---- threads on any node (thread create = release, start = acquire,
 * exit = release, join = acquire) ---- */
typedef uint64_t cables_thread_t;
/* node: the node to run on, or -1 to let the runtime choose. */
int cables_thread_create(cables_thread_t *t, int node, void *(*fn)(void *), void *arg);
int cables_thread_join(cables_thread_t t, void **ret);

/* ---- statistics (CABLES_STATS=1 prints them per node at exit) ---- */
typedef struct {
    uint64_t read_faults, write_faults, home_faults; /* home_faults: on own home pages */
    uint64_t pages_fetched, fetch_ns; /* pages: prefetched ones included */
    uint64_t fetches, written_ahead;  /* fetch requests; pages opened for writing with a
                                          * neighbour (home pages; copies fetched for a write) */
    uint64_t twins, diffs_sent, diff_bytes_sent, diffs_applied;
    uint64_t write_notices_made, write_notices_received, invalidations;
    uint64_t lock_acquires, lock_remote_acquires, lock_wait_ns;
    uint64_t barriers, barrier_wait_ns;
    uint64_t dir_lookups, homes_owned, homes_moved;
    uint64_t msgs_sent, bytes_sent;
    uint64_t nodes_attached, attach_ns, nodes_detached; /* the master's */
    /* pages homed here that another node wrote in more intervals than this
     * node did (computed when read) */
    uint64_t misplaced_pages;
    uint64_t fetches_read; /* of the fetches: those whose data came by remote read */
    /* copies refreshed in place at an acquire instead of invalidated (hot:
     * read again after each of their last invalidations) */
    uint64_t pages_refreshed;
    /* first touches homed here without asking the directory first, and of
     * those the ones another node had homed already (each then a copy) */
    uint64_t homes_claimed, claims_lost;
    /* write notices in this node's log now (collected: CABLES_LOG_GC), and
     * the most it held at once */
    uint64_t notices_kept, notices_kept_peak;
    /* pages of memory in the twins' pool: the most copies twinned at once */
    uint64_t twin_pool;
    /* copies kept at an acquire because they hash to what their homes held
     * at the release that noticed them (a read in place, not a write) */
    uint64_t copies_confirmed;
    /* pages the store allocated ahead of a sweep on a spare CPU (store.c) */
    uint64_t store_ahead;
    /* calls on descriptors and streams made at the master for this node's
     * application threads (rsys.c), and their time from request to answer */
    uint64_t remote_calls, remote_call_ns;
    /* pulls of other nodes' writes for threads that poll or spin without
     * synchronizing (propagate.c), and releases made for other nodes' pulls */
    uint64_t pulls, pull_releases;
    /* of the fetches by remote read: those that asked the home nothing
     * (pages it served this node before, or shared ahead of its reads) */
    uint64_t fetches_unasked;
    /* of the pulls: those after a fetch that asked the page's home to
     * release (a thread that polls: propagate.c) */
    uint64_t pulls_asking;
} cables_stats_t;
/* Fills the first size bytes of *s: fields are only ever appended, so a
 * program built against an older cables.h gets the ones it knows and no
 * byte past its struct is written.  cables_stats_get passes the size this
 * header's struct has. */
void cables_stats_get_sized(cables_stats_t *s, size_t size);
#define cables_stats_get(s) cables_stats_get_sized((s), sizeof *(s))
void cables_stats_print(void);

#ifdef __cplusplus
}
#endif
#endif
