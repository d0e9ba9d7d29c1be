/* heap.c: malloc and friends.  An application thread's allocation comes
 * from the shared heap: each node has an arena in the GAS (a memkind
 * "fixed" kind: jemalloc over a range we give it, chosen so that no
 * allocator is written here), homed on that node.  A block freed on another
 * node goes back to its owner after that node's next release, with its
 * write notices (cb_send_freed); an application thread of the owner
 * acquires them and frees it at its next allocation (the communication
 * thread never runs allocator code, which may fault): whoever gets the
 * block next sees what was written before the free, and no diff of those
 * writes comes after its own.  Blocks of big_min bytes or more are GAS
 * allocations of their own, with their size in a header page, their pages
 * homed by first touch (a big array allocated by main and initialized by
 * the threads that use it is homed on their nodes, as the kernel places
 * it on NUMA nodes: glibc serves such blocks with mmap); their free is a
 * release, and the master hands their range out again to another big
 * block (cb_alloc_reusable).  big_min follows glibc's mmap threshold: 128
 * KiB, raised to the size of a big block freed, up to 32 MiB, so that a
 * program allocating and freeing buffers of one size again and again gets
 * them from the arena after the first.  Everything
 * else (the runtime's, UCX's, Open MPI's, libc before the node starts)
 * comes from libc's allocator, and goes back to it by address. */
#define CB_DEFINES_MALLOC
#include <errno.h>
#include <malloc.h>
#include <memkind.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#define BIG_MIN_START (128ul << 10)
#define BIG_MIN_MAX (32ul << 20)
static _Atomic size_t big_min = BIG_MIN_START; /* this node's */

static memkind_t arena;
static cb_mutex_t arena_mu = CB_MUTEX_INIT;
static cb_mutex_t pend_mu = CB_MUTEX_INIT;
static void **pend;             /* blocks of our arena freed elsewhere */
static size_t npend, cappend;
static cb_vc_t pend_vc;         /* what their nodes had released when they freed them */
static _Atomic size_t pending;

static bool ours(void) { return cb_app_thread; }

static memkind_t my_arena(void)
{
    if (arena)
        return arena;
    cb_mutex_lock(&arena_mu);
    if (!arena) {
        /* home pages no other node has fetched: writable without faults, so
         * that system calls (read into a fresh buffer) find them present */
        uint64_t first = cb.heap_first + (uint64_t)cb.self * cb.heap_pages;
        for (uint64_t p = first; p < first + cb.heap_pages; p++) {
            cb_home_set(p, cb.self);
            atomic_store(&cb.pst[p], PG_RW);
        }
        cb_page_protect(first, cb.heap_pages, PROT_READ | PROT_WRITE);
        memkind_t k;
        int rc;
        AS_RUNTIME(rc = memkind_create_fixed(cb_app_page(first), cb.heap_pages * cb.ps, &k));
        if (rc)
            cb_die("node %d: cannot create the shared heap arena (memkind error %d)", cb.self, rc);
        arena = k;
    }
    cb_mutex_unlock(&arena_mu);
    return arena;
}

static void drain(void)
{
    if (!atomic_load_explicit(&pending, memory_order_relaxed) || cb_syncing)
        return;
    cb_mutex_lock(&pend_mu);
    void **list = pend;
    size_t n = npend;
    cb_vc_t v;
    memcpy(v, pend_vc, sizeof v);
    pend = NULL;
    npend = cappend = 0;
    atomic_store(&pending, 0);
    cb_mutex_unlock(&pend_mu);
    /* a free and the allocation that hands the block out again are ordered:
     * what its node wrote before is seen here, as after a lock */
    AS_RUNTIME(cb_acquire(v));
    memkind_t k = my_arena();
    AS_RUNTIME(for (size_t i = 0; i < n; i++) memkind_free(k, list[i]));
    cb_free(list);
}

/* comm thread: M_HEAP_FREE, blocks of our arena freed elsewhere (cb_send_freed) */
void cb_on_heap_free(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    uint64_t n = cb_freed_decode(p, len, v);
    cb_known_update(m->src, v);
    cb_mutex_lock(&pend_mu);
    cb_vc_max(pend_vc, v);
    if (npend + n > cappend) {
        cappend = (npend + n) * 2;
        pend = cb_realloc(pend, cappend * sizeof *pend);
        if (!pend)
            cb_die("node %d: out of memory for the heap's free list", cb.self);
    }
    for (uint64_t i = 0; i < n; i++)
        pend[npend++] = (void *)(uintptr_t)cb_freed_addr(p, i);
    atomic_store(&pending, npend);
    cb_mutex_unlock(&pend_mu);
}

/* ---- big blocks: [header page: size, allocation, capacity][data...] ---- */
/* zero: the block must read as zeros (a freed range's pages that were used
 * are zeroed, gas.c; new pages are zero until written).  cap (>= n): the
 * bytes realloc may grow it to in place (address space only: pages never
 * touched cost nothing).  The data starts a page group after the range
 * does: the header's first touch homes its group (on the allocating node),
 * not pages of the data (for an alignment above a page, the data's first
 * pages may share the header's group). */
void *shim_big_alloc(size_t n, size_t cap, size_t align, bool zero)
{
    size_t ps = cb.ps, group = (size_t)cb.cfg.page_group * ps, a = align > ps ? align : ps;
    if (cap < n)
        cap = n;
    if (cap > SIZE_MAX - group - a)
        cap = n;
    if (n > SIZE_MAX - group - a)
        return NULL;
    /* inside a release or an acquire (a libc call of the runtime's), new
     * space (gas.c); a capacity above n that does not fit, n alone (a
     * realloc that doubles must not fail where the size asked fits) */
    uint8_t *b = cap > n ? cb_alloc_reusable(cap + group + a, zero, true) : NULL;
    if (!b)
        b = cb_alloc_reusable((cap = n) + group + a, zero, false);
    if (!b)
        return NULL;
    uint8_t *p = (uint8_t *)(((uintptr_t)b + group + a - 1) / a * a);
    size_t *h = (size_t *)(p - ps);
    h[0] = n;
    ((uint8_t **)h)[1] = b; /* what cables_free takes back */
    h[2] = cap;
    return p;
}

void shim_big_free(void *p)
{
    uint8_t *b = ((uint8_t **)((uint8_t *)p - cb.ps))[1];
    if (cb_syncing) /* inside a release or an acquire: with the next one */
        cb_send_freed(0, M_FREE, (uintptr_t)b, false);
    else
        cables_free(b); /* a release */
}

/* the threshold rises to a big block's size freed (a maximum: concurrent
 * frees may race) */
static void big_min_raise(size_t n)
{
    size_t cur = atomic_load_explicit(&big_min, memory_order_relaxed);
    while (n >= cur && n < BIG_MIN_MAX &&
           !atomic_compare_exchange_weak_explicit(&big_min, &cur, n + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

static size_t block_size(void *p)
{
    int o = cb_heap_owner((uintptr_t)p);
    if (o < 0)
        return ((size_t *)((uint8_t *)p - cb.ps))[0];
    if (o == cb.self) {
        size_t n;
        AS_RUNTIME(n = memkind_malloc_usable_size(my_arena(), p));
        return n;
    }
    return 0; /* another node's arena: its metadata is not here */
}

/* *zero (if not NULL): asks for a block of zeros, and says whether the block
 * is (a big one: its zeroed pages are only those used before) */
static void *heap_alloc(size_t n, size_t align, bool *zero)
{
    drain();
    void *p = NULL;
    bool big = false;
    if (n < atomic_load_explicit(&big_min, memory_order_relaxed)) {
        memkind_t k = my_arena();
        if (align)
            AS_RUNTIME(if (memkind_posix_memalign(k, &p, align, n)) p = NULL);
        else
            AS_RUNTIME(p = memkind_malloc(k, n ? n : 1));
    }
    if (!p) /* big, or the arena is full */
        big = (p = shim_big_alloc(n, n, align, zero != NULL)) != NULL;
    if (!p)
        errno = ENOMEM;
    if (zero)
        *zero = big;
    return p;
}

static void heap_free(void *p)
{
    int o = cb_heap_owner((uintptr_t)p);
    if (o < 0) {
        big_min_raise(((size_t *)((uint8_t *)p - cb.ps))[0]);
        shim_big_free(p);
    } else if (o == cb.self) {
        drain();
        memkind_t k = my_arena();
        AS_RUNTIME(memkind_free(k, p));
    } else if (cb_node_up(o)) {
        cb_send_freed(o, M_HEAP_FREE, (uintptr_t)p, false);
    } /* else its node was detached with its arena's bookkeeping: the block stays */
}

void *malloc(size_t n)
{
    return ours() ? heap_alloc(n, 0, NULL) : cb_malloc(n);
}

void free(void *p)
{
    if (!p)
        return;
    if (cb_in_gas((uintptr_t)p)) {
        if (!cb.forked) /* a child of fork: its copy of the heap is left as it is */
            heap_free(p);
    } else
        cb_free(p);
}

void *calloc(size_t n, size_t size)
{
    if (!ours())
        return cb_calloc(n, size);
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    /* a big block is zeroed where it was used before, if it was: a calloc
     * of gigabytes touches only what the program touches, as glibc's
     * (mmap) does */
    bool zero = true;
    void *p = heap_alloc(n * size, 0, &zero);
    if (p && !zero)
        memset(p, 0, n * size);
    return p;
}

void *realloc(void *p, size_t n)
{
    if (!p)
        return malloc(n);
    if (cb.forked && cb_in_gas((uintptr_t)p)) { /* a child of fork: a private copy */
        void *q = cb_malloc(n);
        size_t old = malloc_usable_size(p);
        if (q)
            memcpy(q, p, old < n ? old : n);
        return q;
    }
    if (!cb_in_gas((uintptr_t)p)) {
        if (!ours())
            return cb_realloc(p, n);
        void *q = heap_alloc(n, 0, NULL); /* a private block becomes shared */
        if (q) {
            size_t old = REAL(malloc_usable_size)(p);
            memcpy(q, p, old < n ? old : n);
            cb_free(p);
        }
        return q;
    }
    if (n == 0) {
        free(p);
        return NULL;
    }
    int o = cb_heap_owner((uintptr_t)p);
    if (o < 0) { /* a big block: in place within its capacity, else to one twice as big */
        size_t *h = (size_t *)((uint8_t *)p - cb.ps);
        if (n <= h[2]) {
            h[0] = n;
            return p;
        }
        void *q = shim_big_alloc(n, h[2] > SIZE_MAX / 2 ? n : 2 * h[2], 0, false);
        if (!q) {
            errno = ENOMEM;
            return NULL;
        }
        memcpy(q, p, h[0]);
        free(p);
        return q;
    }
    if (o == cb.self && n < atomic_load_explicit(&big_min, memory_order_relaxed)) {
        void *q;
        memkind_t k = my_arena();
        AS_RUNTIME(q = memkind_realloc(k, p, n));
        if (q)
            return q;
    }
    size_t old = block_size(p);
    if (old == 0) /* another node's block, whose size only its owner knows: copy */
        old = n;  /* n bytes (those past its end are indeterminate, as realloc allows) */
    void *q = heap_alloc(n, 0, NULL);
    if (q) {
        memcpy(q, p, old < n ? old : n);
        free(p);
    }
    return q;
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (!ours())
        return (*out = cb_memalign(align, n)) ? 0 : ENOMEM;
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    void *p = heap_alloc(n, align, NULL);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
    if (!ours())
        return cb_memalign(align, n);
    void *p = NULL;
    int rc = posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, n);
    if (rc)
        errno = rc;
    return p;
}

void *reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * size);
}

void *memalign(size_t align, size_t n) { return aligned_alloc(align, n); }

void *valloc(size_t n) { return aligned_alloc((size_t)sysconf(_SC_PAGESIZE), n); }

size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (!cb_in_gas((uintptr_t)p))
        return REAL(malloc_usable_size)(p);
    return block_size(p);
}
