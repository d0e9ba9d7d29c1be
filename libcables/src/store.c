/* store.c: the store's pages allocated ahead of the application.  A
 * thread that touches its home pages in order pays each new page's
 * allocation in the store (a memfd: about 2.3 us a page populated on this
 * VM, 1.6 for an anonymous page) on its own CPU.  Where the node has a CPU
 * to spare (numa.c), a thread of the runtime, `cables-store`, allocates
 * the pages just ahead instead (fallocate: about 1 us a page), and the
 * application then only maps them (1.1 us).  fault.c asks for them: ahead
 * of a sweep, as many pages as it has covered, up to CB_STORE_AHEAD, as
 * the kernel's readahead does, so a sweep that stops soon wastes at most
 * as much memory as it touched; after a first touch that continues a run,
 * the next page group (a scatter's runs: RADIX's buckets, whose first
 * pass over 256 MB took 321-328 ms in the store, 270-285 with its pages
 * allocated, 277-287 anonymous).  Best effort: a request that finds the
 * queue full, or an allocation that fails, leaves the pages to be
 * allocated as they are touched.  Pages are never taken back from the
 * store, so a page allocated here stays allocated whatever becomes of it
 * (zero until written: a home's first touch, or a fetch's data). */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <sys/prctl.h>

#include "internal.h"

#define QLEN 64
#define BATCH 8 /* requests that may wait: the thread is woken for this many */
static struct { uint64_t first, end; } q[QLEN];
static uint32_t qhead, qtail; /* under mu */
static cb_mutex_t mu = CB_MUTEX_INIT;
static _Atomic uint32_t seq, sleeping;
static _Atomic uint8_t *allocated; /* a byte a page: allocated by this thread */
static bool on;

static bool take(uint64_t *first, uint64_t *end)
{
    cb_mutex_lock(&mu);
    bool any = qhead != qtail;
    if (any) {
        *first = q[qhead % QLEN].first;
        *end = q[qhead % QLEN].end;
        qhead++;
    }
    cb_mutex_unlock(&mu);
    return any;
}

static void allocate(uint64_t first, uint64_t end)
{
    for (uint64_t p = first; p < end;) {
        while (p < end && atomic_load_explicit(&allocated[p], memory_order_relaxed))
            p++;
        uint64_t e = p;
        while (e < end && !atomic_load_explicit(&allocated[e], memory_order_relaxed))
            e++;
        if (p == e)
            break;
        /* KEEP_SIZE: the file's size is the GAS's already */
        if (fallocate(cb.memfd, FALLOC_FL_KEEP_SIZE, (off_t)(p * cb.ps), (off_t)((e - p) * cb.ps)))
            return; /* out of memory, say: the pages come as they are touched */
        for (uint64_t i = p; i < e; i++)
            atomic_store_explicit(&allocated[i], 1, memory_order_relaxed);
        STAT_ADD(store_ahead, e - p);
        p = e;
    }
}

static void *store_main(void *arg)
{
    (void)arg;
    cb_block_process_signals();
    prctl(PR_SET_NAME, "cables-store");
    cb_numa_store_thread();
    for (;;) {
        uint32_t s = atomic_load(&seq);
        uint64_t first, end;
        if (take(&first, &end)) {
            allocate(first, end);
            continue;
        }
        atomic_store(&sleeping, 1);
        if (atomic_load(&seq) == s)
            cb_futex_wait(&seq, s);
        atomic_store(&sleeping, 0);
    }
    return NULL;
}

void cb_store_init(void)
{
    if (!cb.cfg.store_ahead || (cb.cfg.store_ahead == 1 && !cb_numa_spare_cpu()))
        return;
    allocated = cb_reserve(cb.npages);
    pthread_t t;
    if (cb_thread_start(&t, store_main, NULL, true) == 0)
        on = true;
}

bool cb_store_allocated(uint64_t p)
{
    return on && p < cb.npages && atomic_load_explicit(&allocated[p], memory_order_relaxed);
}

void cb_store_ahead(uint64_t first, uint64_t end, bool now)
{
    if (!on || first >= cb.npages)
        return;
    if (end > cb.npages)
        end = cb.npages;
    cb_mutex_lock(&mu);
    uint32_t len = qtail - qhead;
    bool queued = len < QLEN;
    if (queued) {
        q[qtail % QLEN].first = first;
        q[qtail % QLEN].end = end;
        qtail++;
    }
    cb_mutex_unlock(&mu);
    if (!queued || (!now && len + 1 < BATCH))
        return;
    atomic_fetch_add(&seq, 1);
    if (atomic_load(&sleeping))
        cb_futex_wake(&seq);
}
