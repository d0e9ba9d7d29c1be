/* gas.c: the global address space.  One memfd store holds this node's
 * pages (homes and copies) at their GAS offsets; it is mapped twice: the
 * protocol view (contiguous, read-write, registered with UCX once) and the
 * application view at CB_GAS_BASE, whose per-page protection is the
 * coherence state.  Contiguous offsets let equally protected neighbours
 * share one kernel mapping. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

cb_ctx_t cb;
static cb_ranges_t ranges; /* the master's allocations (below); its comm thread only */

void *cb_reserve(size_t len)
{
    void *p = cb_mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        cb_die("cannot reserve %zu bytes of address space for page tables: %s",
               len, strerror(errno));
    return p;
}

void cb_gas_init(void)
{
    cb.ps = cb.cfg.page_size;
    cb.npages = cb.cfg.gas_size / cb.ps;
    cb.memfd = memfd_create("cables-store", MFD_CLOEXEC);
    if (cb.memfd < 0 || ftruncate(cb.memfd, (off_t)cb.cfg.gas_size))
        cb_die("cannot create the %zu-byte page store (CABLES_GAS_SIZE): %s",
               cb.cfg.gas_size, strerror(errno));
    cb.proto = cb_mmap(NULL, cb.cfg.gas_size, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_NORESERVE, cb.memfd, 0);
    if (cb.proto == MAP_FAILED)
        cb_die("cannot map the protocol view (CABLES_GAS_SIZE=%zu): %s",
               cb.cfg.gas_size, strerror(errno));
    cb.app = cb_mmap((void *)CB_GAS_BASE, cb.cfg.gas_size, PROT_NONE,
                  MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, cb.memfd, 0);
    if (cb.app != (void *)CB_GAS_BASE)
        cb_die("cannot reserve the global address space at %#llx (+%zu bytes): %s; "
               "lower CABLES_GAS_SIZE", CB_GAS_BASE, cb.cfg.gas_size,
               cb.app == MAP_FAILED ? strerror(errno) : "address taken");
    cb.twins = cb_reserve(cb.cfg.gas_size);
    cb.twin_slot = cb_reserve(cb.npages * sizeof *cb.twin_slot);
    cb.twin_block = cb_reserve(cb.npages / CB_TWIN_BLOCK + 1);
    cb.twin_free = cb_reserve(cb.npages * sizeof *cb.twin_free);
    cb.pst = cb_reserve(cb.npages * sizeof *cb.pst);
    cb.home = cb_reserve(cb.npages * sizeof *cb.home);
    cb.served = cb_reserve(cb.npages * sizeof *cb.served);
    cb.hot = cb_reserve(cb.npages * sizeof *cb.hot);
    cb.moves = cb_reserve(cb.ps); /* a page of its own: registered for remote reads */
    cb.sums = cb_reserve(cb.npages * sizeof *cb.sums);
    cb.expect = cb_reserve(cb.npages * sizeof *cb.expect);
    cb.sum_seeds[cb.self] = cb_now_ns() ^ (uint64_t)cb_pid() << 32;
    cb.sum_stale = cb_reserve(cb.npages / 8 + 8);
    cb.quiet = cb_reserve(cb.npages / 8 + 8);
    cb.pulled = cb_reserve(cb.npages / 8 + 8);
    cb.read_marks = cb_reserve(cb.npages); /* registered for remote writes (rma.c) */
    cb.idle = cb_reserve(cb.npages);
    cb.claim_ok = cb_reserve(cb.npages / 8 + 8);
    cb.claim_astart = cb_reserve(cb.npages / 8 + 8);
    cb.claim_gstart = cb_reserve(cb.npages / 8 + 8);
    cb.claim_no = cb_reserve(cb.npages / 8 + 8);
    cb.claim_pending = cb_reserve(cb.npages / 8 + 8);
    for (int i = 0; i < 2; i++) {
        cb.dirty.list[i] = cb_reserve(cb.npages * sizeof(uint32_t));
        cb.homed.list[i] = cb_reserve(cb.npages * sizeof(uint32_t));
    }
    /* the upper half: one heap arena per possible node (the shim's malloc) */
    cb.heap_pages = cb.npages / 2 / CB_MAX_NODES;
    cb.heap_first = cb.npages - cb.heap_pages * CB_MAX_NODES;
    ranges.limit = cb.heap_first; /* the master's allocations stay below */
}

uint32_t cb_page_own(uint64_t p)
{
    _Atomic uint32_t *w = &cb.pst[p];
    for (;;) {
        uint32_t s = atomic_load(w);
        if (s & PG_BUSY) {
            if (!(s & PG_WAITERS) &&
                !atomic_compare_exchange_weak(w, &s, s | PG_WAITERS))
                continue;
            cb_futex_wait(w, s | PG_WAITERS);
            continue;
        }
        if (atomic_compare_exchange_weak(w, &s, s | PG_BUSY))
            return s;
    }
}

/* For the communication thread, which must never wait for a page. */
bool cb_page_try_own(uint64_t p, uint32_t *state)
{
    uint32_t s = atomic_load(&cb.pst[p]);
    if (s & PG_BUSY || !atomic_compare_exchange_strong(&cb.pst[p], &s, s | PG_BUSY))
        return false;
    *state = s;
    return true;
}

void cb_page_unown(uint64_t p, uint32_t state)
{
    uint32_t old = atomic_exchange(&cb.pst[p], state & ~(uint32_t)(PG_BUSY | PG_WAITERS));
    if (old & PG_WAITERS)
        cb_futex_wake(&cb.pst[p]);
}

/* Of pages [p, p + n), how many from p lie one after the other in the
 * application view: the program's static data is two windows at its own
 * addresses (statics.c), whose page numbers follow each other but whose
 * addresses do not, and the GAS after them is elsewhere again. */
static uint64_t app_run(uint64_t p, uint64_t n)
{
    if (p >= cb.nstatic)
        return n;
    for (int i = 0; i < cb.nalias; i++) {
        uint64_t len = (cb.alias[i].hi - cb.alias[i].lo) / cb.ps;
        if (p - cb.alias[i].first < len)
            return n < cb.alias[i].first + len - p ? n : cb.alias[i].first + len - p;
    }
    return n;
}

static void protect_run(uint64_t p, uint64_t n, int prot);

/* one mprotect per run of pages adjacent in the application view (callers
 * join pages by number: a run of a strided fetch across the end of .data
 * made the private pages between .data and .bss readable, and left .bss
 * pages it had landed inaccessible, their state readable: faults forever) */
void cb_page_protect(uint64_t p, uint64_t n, int prot)
{
    while (n) {
        uint64_t k = app_run(p, n);
        protect_run(p, k, prot);
        p += k;
        n -= k;
    }
}

static void protect_run(uint64_t p, uint64_t n, int prot)
{
    if (cb_mprotect(cb_app_page(p), n * cb.ps, prot) == 0)
        return;
    if (errno == ENOMEM) { /* may be on the fault path: no stdio, no malloc */
        unsigned long max = 0;
        char buf[32] = { 0 };
        /* raw calls: on another node's application thread the shim makes
         * open, read and close at the master */
        int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/sys/vm/max_map_count",
                              O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (syscall(SYS_read, fd, buf, sizeof buf - 1) > 0)
                max = strtoul(buf, NULL, 10);
            syscall(SYS_close, fd);
        }
        cb_die("node %d: the kernel's limit on memory mappings is reached "
               "(vm.max_map_count=%lu): too many shared pages with different "
               "access rights; raise it (sysctl -w vm.max_map_count=%lu) or use a "
               "larger CABLES_PAGE_SIZE", cb.self, max, max * 4);
    }
    cb_die("node %d: mprotect of shared page %llu failed: %s", cb.self,
           (unsigned long long)p, strerror(errno));
}

/* Protection changes of many pages: one mprotect per run of pages adjacent
 * in the application view that get the same protection (a call costs
 * about as much for one page as for many, TLB shootdown included). */
void cb_prot_run(cb_prot_run_t *r, uint64_t p, int prot)
{
    if (r->n && prot == r->prot && cb_app_page(p) == cb_app_page(r->first) + r->n * cb.ps) {
        r->n++;
        return;
    }
    cb_prot_run_end(r);
    *r = (cb_prot_run_t){ p, 1, prot };
}

void cb_prot_run_end(cb_prot_run_t *r)
{
    if (r->n)
        cb_page_protect(r->first, r->n, r->prot);
    r->n = 0;
}

/* Map len bytes at addr now, one system call instead of a page fault per
 * page (a minor fault costs 14 us on a VM like ours, 0.7 us populated).
 * Best effort: without MADV_POPULATE_* (Linux < 5.14) the pages fault in. */
void cb_populate(void *addr, size_t len, bool write)
{
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
    int saved = errno; /* may be on the fault path */
    if (cb_madvise(addr, len, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ)) {}
    errno = saved;
}

/* Writes len bytes into the store's file at page p's offset: pages not in
 * it yet are allocated without being mapped in either view (a first
 * fetch's data: rma.c, comm.c).  The raw call: libc's pwrite is a
 * cancellation point, and this runs on application threads too. */
void cb_store_write(uint64_t p, const void *src, size_t len)
{
    if (syscall(SYS_pwrite64, cb.memfd, src, len, (off_t)(p * cb.ps)) != (ssize_t)len)
        cb_die("node %d: cannot write %zu bytes of page %llu into the page store: %s", cb.self,
               len, (unsigned long long)p, strerror(errno));
}

/* Twins live in a pool: page p's twin is slot twin_slot[p] - 1, slots
 * handed out in order and mapped CB_TWIN_BLOCK at a time.  A page fault
 * costs 10-15 us on the VMs we measured, populating a range about 1 us a
 * page, and a new page table far more: twins at their pages' own offsets
 * cost a fault each, or a call and page tables of their own per run
 * (a home serving LU 16 runs of 2 pages 128 pages apart spent ~1 ms).
 * A copy that is no longer writable (write-protected when idle,
 * invalidated, or become a home) gives its slot back, and the next twin
 * takes it: the pool grows with the copies written at once, not with all
 * pages ever written.  Its memory stays mapped.  Callers own p
 * (cb_page_own). */
uint8_t *cb_twin(uint64_t p)
{
    uint32_t slot = atomic_load_explicit(&cb.twin_slot[p], memory_order_acquire);
    if (!slot) {
        cb_mutex_lock(&cb.twin_mu);
        slot = cb.twin_nfree ? cb.twin_free[--cb.twin_nfree] : atomic_fetch_add(&cb.twin_next, 1) + 1;
        cb_mutex_unlock(&cb.twin_mu);
        if (slot > cb.npages)
            cb_die("node %d: out of twin slots", cb.self); /* one per page: cannot happen */
        atomic_store_explicit(&cb.twin_slot[p], slot, memory_order_release);
    }
    uint64_t k = slot - 1, b = k / CB_TWIN_BLOCK;
    if (!atomic_load_explicit(&cb.twin_block[b], memory_order_acquire)) {
        cb_populate(cb.twins + b * CB_TWIN_BLOCK * cb.ps, CB_TWIN_BLOCK * cb.ps, true);
        atomic_store_explicit(&cb.twin_block[b], 1, memory_order_release);
    }
    return cb.twins + k * cb.ps;
}

void cb_twin_drop(uint64_t p)
{
    uint32_t slot = atomic_exchange_explicit(&cb.twin_slot[p], 0, memory_order_acq_rel);
    if (!slot)
        return;
    cb_mutex_lock(&cb.twin_mu);
    cb.twin_free[cb.twin_nfree++] = slot;
    cb_mutex_unlock(&cb.twin_mu);
}

void cb_plist_push(cb_plist_t *l, uint64_t p)
{
    cb_mutex_lock(&l->mu);
    if (l->n == cb.npages) /* a page is listed once an interval (homes: once a move) */
        cb_die("node %d: a page list of %llu entries is full (protocol error)", cb.self,
               (unsigned long long)cb.npages);
    l->list[l->cur][l->n++] = (uint32_t)p;
    cb_mutex_unlock(&l->mu);
}

uint32_t cb_plist_take(cb_plist_t *l, uint32_t **list)
{
    cb_mutex_lock(&l->mu);
    uint32_t n = l->n;
    *list = l->list[l->cur];
    l->cur ^= 1;
    l->n = 0;
    cb_mutex_unlock(&l->mu);
    return n;
}

/* ---- allocation: the master hands out page-aligned ranges (ranges.c):
 * freed ones again, with their homes and contents as they were, to
 * cables_alloc (which zeroes them) and cb_alloc_reusable (malloc's big
 * blocks); not inside a release or an acquire (taking one acquires), nor
 * to cables_alloc_placed (its pages would keep their homes) ---- */

enum { ALLOC_REUSE = 1 }; /* M_ALLOC's c, above the node: a range may be reused */

void cb_gas_reserve(uint64_t npages)
{
    bool reused;
    uint64_t first = cb_ranges_take(&ranges, npages, false, &reused);
    cb_dir_add_alloc(first, npages, CABLES_POLICY_FIXED, 0, false);
}

int cb_heap_owner(uintptr_t a)
{
    if (a - CB_GAS_BASE >= cb.cfg.gas_size)
        return -1;
    uint64_t p = (a - CB_GAS_BASE) / cb.ps;
    return p < cb.heap_first ? -1 : (int)((p - cb.heap_first) / cb.heap_pages);
}

/* Freed ranges wait until every node has dropped its rights to claim
 * their pages (directory.c: cb_claims_revoke) before they are handed out
 * again; an allocation that may take one waits for the answers in flight
 * (one round trip: a program that frees a block and allocates another
 * gets its range), not for a node that is gone.  Master, comm thread
 * only. */
typedef struct { uint64_t first, npages, awaited; /* bit k: node k */ } revoke_t;
static revoke_t *revokes;
static size_t nrevokes, caprevokes;

/* revocations whose nodes have all answered, or left, end: their ranges
 * are free */
static void revokes_end(void)
{
    size_t j = 0;
    for (size_t i = 0; i < nrevokes; i++) {
        revoke_t *r = &revokes[i];
        for (int k = 0; k < CB_MAX_NODES; k++)
            if (r->awaited >> k & 1 && !cb_node_up(k))
                r->awaited &= ~(1ull << k);
        if (r->awaited)
            revokes[j++] = *r;
        else
            cb_ranges_put(&ranges, r->first, r->npages);
    }
    nrevokes = j;
}

static void revoke_start(uint64_t first, uint64_t npages)
{
    cb_claims_revoke(first, npages);
    if (nrevokes == caprevokes) {
        caprevokes = caprevokes ? 2 * caprevokes : 16;
        if (!(revokes = realloc(revokes, caprevokes * sizeof *revokes)))
            cb_die("out of memory for the freed ranges");
    }
    revoke_t *r = &revokes[nrevokes++];
    *r = (revoke_t){ first, npages, 0 };
    cb_msg_t m = { .type = M_REVOKE, .a = first, .b = npages };
    for (int k = 1; k < atomic_load(&cb.nnodes); k++)
        if (cb_node_up(k)) {
            r->awaited |= 1ull << k;
            cb_send(k, &m, NULL, 0, false);
        }
    revokes_end();
}

void cb_on_revoke_ack(const cb_msg_t *m)
{
    for (size_t i = 0; i < nrevokes; i++)
        if (revokes[i].first == m->a)
            revokes[i].awaited &= ~(1ull << m->src);
    revokes_end();
}

/* M_ALLOC a=bytes b=policy c=node | ALLOC_REUSE << 32 d=guard pages.  Reply
 * a=first page (~0: none) b=bytes free; a reused range comes with the notices
 * that node has not seen (what the range's last owners wrote), d bytes,
 * and the runs of the range's pages that have a home (the others are
 * zero: cb_dir_homed_runs), triples of u64 (first, count, home) */
void cb_on_alloc(const cb_msg_t *m)
{
    uint64_t npages = (m->a + cb.ps - 1) / cb.ps;
    if (npages == 0)
        npages = 1;
    bool reused;
    revokes_end(); /* of nodes gone since */
    if (nrevokes && m->c >> 32 & ALLOC_REUSE) {
        cb_defer(m, NULL, 0);
        return;
    }
    uint64_t first = cb_ranges_take(&ranges, npages, m->c >> 32 & ALLOC_REUSE, &reused),
             guard = m->d; /* guard pages stay unallocated */
    if (first != ~0ull && guard < npages)
        cb_dir_add_alloc(first + guard, npages - guard, (cables_policy_t)m->b, (int)(uint32_t)m->c,
                         reused);
    cb_msg_t r = { .type = M_ALLOC_REPLY, .a = first,
                   .b = (cb.heap_first - ranges.top) * cb.ps };
    size_t len = 0;
    void *n = NULL;
    if (reused) {
        n = cb_notices_for(m->src, &len);
        uint64_t *runs;
        size_t nruns;
        cb_dir_homed_runs(first, npages, &runs, &nruns);
        if (!(n = realloc(n, len + 24 * nruns)))
            cb_die("out of memory handing out a freed range");
        if (nruns)
            memcpy((uint8_t *)n + len, runs, 24 * nruns);
        r.d = len;
        len += 24 * nruns;
        free(runs);
    }
    cb_reply(m, &r, n, len, true);
}

/* M_FREE: blocks freed (cb_send_freed) */
void cb_on_free(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    uint64_t n = cb_freed_decode(p, len, v), first, npages;
    cb_known_update(m->src, v);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t a = cb_freed_addr(p, i);
        if (a - CB_GAS_BASE < cb.cfg.gas_size && (a - CB_GAS_BASE) % cb.ps == 0 &&
            cb_dir_remove_alloc((a - CB_GAS_BASE) / cb.ps, &first, &npages))
            revoke_start(first, npages);
        else
            fprintf(stderr, "cables: node %d freed %#llx, which is not the start of a block of "
                    "shared memory (freed twice?): ignored\n", m->src, (unsigned long long)a);
    }
}

/* A freed range again is zeroed (zero) where it may hold data: its pages
 * that have a home (the others were never accessed), written by this
 * thread as the program would write them (those homed elsewhere fetched,
 * then diffed), after the acquire of what was written there.  Their homes
 * are learnt first, from the master's answer (runs: cb_on_alloc): the
 * writes fetch from them directly, with no directory lookup.  (No node
 * claims a page of a range taken again: the rights to claim end with the
 * free, before the range is handed out.)  So the space is not lost (a
 * program that allocates and frees a big block at every step stays within
 * the GAS), and taking a range again costs a pass over the pages that
 * were used, not over the rest. */
static void zero_used(uint64_t first, size_t size, const uint8_t *runs, size_t nruns)
{
    uint64_t last = first + (size + cb.ps - 1) / cb.ps;
    for (size_t i = 0; i < nruns; i++) {
        uint64_t r[3];
        memcpy(r, runs + 24 * i, 24);
        uint64_t lo = r[0] > first ? r[0] : first, hi = r[0] + r[1] < last ? r[0] + r[1] : last;
        for (uint64_t q = lo; q < hi; q++)
            if (cb_home_cached(q) < 0)
                cb_home_set(q, (int)r[2]);
        if (lo < hi)
            memset(cb_app_page(lo), 0, (hi - lo) * cb.ps);
    }
}

/* NULL, ENOMEM, and a message naming the setting (free_bytes < 0: not asked) */
static void *gas_exhausted(size_t size, int64_t free_bytes)
{
    char left[48] = "";
    if (free_bytes >= 0)
        snprintf(left, sizeof left, " (%lld bytes free)", (long long)free_bytes);
    fprintf(stderr, "cables: node %d: the global address space is exhausted: an allocation of "
            "%zu bytes does not fit in CABLES_GAS_SIZE=%zu%s; raise CABLES_GAS_SIZE\n", cb.self,
            size, cb.cfg.gas_size, left);
    errno = ENOMEM;
    return NULL;
}

/* quiet: no message when it does not fit (the caller tries a smaller size) */
static void *alloc_range(size_t size, cables_policy_t policy, int node, bool reuse, bool zero,
                         bool quiet)
{
    if (policy == CABLES_POLICY_DEFAULT) {
        policy = cb.cfg.policy;
        node = cb.cfg.policy_node;
    }
    if (policy == CABLES_POLICY_FIXED && (node < 0 || node >= cables_node_count())) {
        fprintf(stderr, "cables: node %d: placement on node %d asked, but the run has %d "
                "node(s)%s\n", cb.self, node, cables_node_count(),
                policy == cb.cfg.policy && node == cb.cfg.policy_node ? " (CABLES_HOME_POLICY)" : "");
        errno = EINVAL;
        return NULL;
    }
    if (size > cb.cfg.gas_size) /* nor rounded up to pages, where that wraps */
        return quiet ? (errno = ENOMEM, NULL) : gas_exhausted(size, (int64_t)-1);
    reuse = reuse && !cb_syncing;
    cb_msg_t m = { .type = M_ALLOC, .a = size, .b = (uint64_t)policy,
                   .c = (uint32_t)node | (uint64_t)(reuse ? ALLOC_REUSE : 0) << 32 };
    cb_waiter_t *w = cb_waiter_new();
    cb_call(0, &m, NULL, 0, w);
    uint64_t first = (uint64_t)w->value;
    int64_t free_bytes = w->value2;
    uint8_t *notices = w->data;
    size_t len = w->len, nlen = (size_t)w->value4;
    cb_waiter_free(w);
    if (notices) { /* a reused range: what its last owners wrote, seen here */
        if (nlen > len || (len - nlen) % 24)
            cb_die("node %d: malformed allocation reply", cb.self);
        cb_vc_t v;
        cb_notices_merge(notices, nlen, v);
        cb_known_update(0, v);
        cb_acquire(v);
        if (zero)
            zero_used(first, size, notices + nlen, (len - nlen) / 24);
        free(notices);
    }
    if (first == ~0ull)
        return quiet ? (errno = ENOMEM, NULL) : gas_exhausted(size, free_bytes);
    return cb_app_page(first);
}

void *cables_alloc_placed(size_t size, cables_policy_t policy, int node)
{
    return alloc_range(size, policy, node, false, false, false);
}

void *cables_alloc(size_t size)
{
    return alloc_range(size, CABLES_POLICY_DEFAULT, 0, true, true, false);
}

void *cb_alloc_reusable(size_t size, bool zero, bool quiet)
{
    return alloc_range(size, CABLES_POLICY_DEFAULT, 0, true, zero, quiet);
}

/* a release first: the block's writes reach their homes before the range
 * can be handed out again (cb_send_freed) */
void cables_free(void *p)
{
    if (!p)
        return;
    cb_send_freed(0, M_FREE, (uintptr_t)p, true);
}

size_t cables_page_size(void) { return cb.ps; }

size_t cables_memory_used(void)
{
    struct stat st;
    if (syscall(SYS_fstat, cb.memfd, &st)) /* raw: the shim's fstat may be the master's */
        return 0;
    return (size_t)st.st_blocks * 512;
}
