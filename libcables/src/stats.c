/* stats.c: per-node counters, printed at exit with CABLES_STATS=1. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uthash.h>

#include "internal.h"

cables_stats_t cb_stats;

/* ---- misplaced pages: pages whose home is not their main writer ----
 * At its home, each page counts the intervals in which each node wrote it:
 * the home's own (the page in the written list of a release here) and
 * every other node's (a diff record applied here).  A page still homed
 * here is misplaced if some other node's count exceeds the home's.  A
 * private home page (no other node has fetched it) is written with no
 * notice: its writes before the first fetch count once (the fetch lists
 * it for the next release), later ones once per interval.
 * The home's own counts are a dense array, one word per GAS page (reserved,
 * backed only where written), bumped with no lock at release; the other
 * writers of a page (only the communication thread applies diffs) are in a
 * hash by page under writes_mu, which reading the statistics also takes. */
typedef struct { int32_t node; uint32_t n; } writer_t;
typedef struct {
    uint64_t page;
    uint32_t nw, cap;  /* other writers: w[0, nw) */
    writer_t *w;
    UT_hash_handle hh;
} page_writes_t;

static _Atomic(_Atomic uint32_t *) own_writes; /* per page: intervals written by this (home) node */
static page_writes_t *others;                  /* pages written by other nodes, by page */
static cb_mutex_t writes_mu = CB_MUTEX_INIT;

static _Atomic uint32_t *own_array(void)
{
    _Atomic uint32_t *a = atomic_load_explicit(&own_writes, memory_order_acquire);
    if (a || cb.npages == 0)
        return a;
    void *m = cb_mmap(NULL, cb.npages * sizeof *a, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL; /* no statistic rather than no run */
    _Atomic uint32_t *none = NULL;
    if (!atomic_compare_exchange_strong(&own_writes, &none, (_Atomic uint32_t *)m)) {
        cb_munmap(m, cb.npages * sizeof *a);
        return none;
    }
    return m;
}

void cb_stat_page_written(uint64_t page, int node)
{
    if (page >= cb.npages)
        return;
    if (node == cb.self) {
        _Atomic uint32_t *a = own_array();
        if (a)
            atomic_fetch_add_explicit(&a[page], 1, memory_order_relaxed);
        return;
    }
    cb_mutex_lock(&writes_mu);
    page_writes_t *e;
    HASH_FIND(hh, others, &page, sizeof page, e);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (!e)
            goto out;
        e->page = page;
        HASH_ADD(hh, others, page, sizeof e->page, e);
    }
    uint32_t i = 0;
    while (i < e->nw && e->w[i].node != node)
        i++;
    if (i == e->nw) {
        if (e->nw == e->cap) {
            uint32_t cap = e->cap ? e->cap * 2 : 2;
            writer_t *w = realloc(e->w, cap * sizeof *w);
            if (!w)
                goto out;
            e->w = w;
            e->cap = cap;
        }
        e->w[e->nw++] = (writer_t){ node, 0 };
    }
    e->w[i].n++;
out:
    cb_mutex_unlock(&writes_mu);
}

static uint64_t misplaced_pages(void)
{
    _Atomic uint32_t *own = atomic_load_explicit(&own_writes, memory_order_acquire);
    uint64_t n = 0;
    cb_mutex_lock(&writes_mu);
    for (page_writes_t *e = others; e; e = e->hh.next) {
        if (cb_home_cached(e->page) != cb.self)
            continue; /* its home moved away since */
        uint32_t mine = own ? atomic_load_explicit(&own[e->page], memory_order_relaxed) : 0;
        for (uint32_t i = 0; i < e->nw; i++)
            if (e->w[i].n > mine) {
                n++;
                break;
            }
    }
    cb_mutex_unlock(&writes_mu);
    return n;
}

void cables_stats_get_sized(cables_stats_t *s, size_t size)
{
    cables_stats_t all;
    memcpy(&all, &cb_stats, sizeof all);
    all.misplaced_pages = cb.home ? misplaced_pages() : 0;
    all.notices_kept = cb_notices_kept(&all.notices_kept_peak);
    all.twin_pool = atomic_load(&cb.twin_next);
    memcpy(s, &all, size < sizeof all ? size : sizeof all);
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
        "pages fetched=%llu in %llu fetches (avg %.1f us, %llu by remote read, %llu unasked) | written ahead=%llu | store ahead=%llu | twins=%llu (pool %llu) diffs sent=%llu bytes=%llu applied=%llu | "
        "write notices made=%llu received=%llu kept=%llu (peak %llu) invalidations=%llu refreshed=%llu confirmed=%llu | "
        "locks=%llu remote=%llu wait=%.3f ms | barriers=%llu wait=%.3f ms | "
        "homes owned=%llu moved=%llu misplaced=%llu dir lookups=%llu claimed=%llu lost=%llu | "
        "msgs=%llu bytes=%llu | remote calls=%llu (avg %.1f us) | pulls=%llu (asking %llu) released=%llu | "
        "memory=%zu KiB%s\n",
        cb.self, (unsigned long long)s.read_faults, (unsigned long long)s.write_faults,
        (unsigned long long)s.home_faults, (unsigned long long)s.pages_fetched,
        (unsigned long long)s.fetches, s.fetches ? s.fetch_ns / 1e3 / (double)s.fetches : 0.0,
        (unsigned long long)s.fetches_read, (unsigned long long)s.fetches_unasked,
        (unsigned long long)s.written_ahead, (unsigned long long)s.store_ahead,
        (unsigned long long)s.twins, (unsigned long long)s.twin_pool, (unsigned long long)s.diffs_sent,
        (unsigned long long)s.diff_bytes_sent, (unsigned long long)s.diffs_applied,
        (unsigned long long)s.write_notices_made, (unsigned long long)s.write_notices_received,
        (unsigned long long)s.notices_kept, (unsigned long long)s.notices_kept_peak, (unsigned long long)s.invalidations, (unsigned long long)s.pages_refreshed,
        (unsigned long long)s.copies_confirmed,
        (unsigned long long)s.lock_acquires,
        (unsigned long long)s.lock_remote_acquires, s.lock_wait_ns / 1e6,
        (unsigned long long)s.barriers, s.barrier_wait_ns / 1e6,
        (unsigned long long)s.homes_owned, (unsigned long long)s.homes_moved,
        (unsigned long long)s.misplaced_pages,
        (unsigned long long)s.dir_lookups, (unsigned long long)s.homes_claimed,
        (unsigned long long)s.claims_lost, (unsigned long long)s.msgs_sent,
        (unsigned long long)s.bytes_sent, (unsigned long long)s.remote_calls,
        s.remote_calls ? s.remote_call_ns / 1e3 / (double)s.remote_calls : 0.0,
        (unsigned long long)s.pulls, (unsigned long long)s.pulls_asking,
        (unsigned long long)s.pull_releases,
        cables_memory_used() / 1024, nodes);
    if (syscall(SYS_write, 2, b, (size_t)n) < 0) {}
}

int cables_node_id(void) { return cb.self; }
int cables_node_count(void) { return atomic_load(&cb.nnodes); }
int cables_cpu_count(void)
{
    int nodes = cb.cfg.max_nodes > cb.launched ? cb.cfg.max_nodes : cb.launched;
    return (nodes > 0 ? nodes : 1) * cb.cfg.threads_per_node;
}
