/* directory.c: the home of every page.  The master keeps the directory and
 * the allocation ranges with their placement policy; every node caches the
 * homes it has learned.  A home moves in three steps (master -> old home ->
 * new home -> master); until the last step the directory names the old
 * home, which forwards what reaches it after the page has left. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uthash.h>

#include "internal.h"

typedef struct {
    uint64_t first, npages;
    cables_policy_t policy;
    int node, nnodes;
    bool reused; /* a freed range again: its pages may hold data, never claimed */
} cb_alloc_t;

/* master, comm thread only */
static cb_alloc_t *allocs;
static size_t nallocs, cap_allocs;
static _Atomic int16_t *dir; /* node + 1, 0 = unassigned */

/* allocs[] in address order: the first whose range ends above p */
static size_t alloc_index(uint64_t p)
{
    size_t lo = 0, hi = nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocs[mid].first + allocs[mid].npages <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void cb_dir_add_alloc(uint64_t first, uint64_t npages, cables_policy_t pol, int node, bool reused)
{
    if (nallocs == cap_allocs) {
        cap_allocs = cap_allocs ? cap_allocs * 2 : 64;
        allocs = realloc(allocs, cap_allocs * sizeof *allocs);
        if (!allocs)
            cb_die("out of memory for the allocation directory");
    }
    size_t i = alloc_index(first); /* past the top, unless a freed range is reused */
    memmove(allocs + i + 1, allocs + i, (nallocs - i) * sizeof *allocs);
    allocs[i] = (cb_alloc_t){ first, npages, pol, node, atomic_load(&cb.nnodes), reused };
    nallocs++;
}

bool cb_dir_remove_alloc(uint64_t p, uint64_t *first, uint64_t *npages)
{
    size_t i = alloc_index(p);
    if (i == nallocs || p != allocs[i].first)
        return false;
    *first = allocs[i].first;
    *npages = allocs[i].npages;
    memmove(allocs + i, allocs + i + 1, (nallocs - i - 1) * sizeof *allocs);
    nallocs--;
    return true;
}

static cb_alloc_t heaps; /* the heap arenas, above every other range */

void cb_dir_add_heaps(void)
{
    heaps = (cb_alloc_t){ cb.heap_first, cb.heap_pages * CB_MAX_NODES, CABLES_POLICY_BLOCK,
                          0, CB_MAX_NODES, false };
}

static const cb_alloc_t *find_alloc(uint64_t p)
{
    if (p >= cb.heap_first)
        return heaps.npages ? &heaps : NULL;
    size_t i = alloc_index(p);
    return i < nallocs && p >= allocs[i].first ? &allocs[i] : NULL;
}

static int place(const cb_alloc_t *a, uint64_t p, int toucher)
{
    uint64_t i = p - a->first;
    int n = a->nnodes, h;
    switch (a->policy) {
    case CABLES_POLICY_ROUND_ROBIN: h = (int)(i % (uint64_t)n); break;
    case CABLES_POLICY_BLOCK: h = (int)(i * (uint64_t)n / a->npages); break;
    case CABLES_POLICY_FIXED: h = a->node; break; /* checked at allocation */
    default: h = toucher;
    }
    return cb_node_up(h) ? h : 0; /* a detached node's pages are the master's */
}

static int16_t *dir_table(void)
{
    if (!dir) {
        dir = cb_mmap(NULL, cb.npages * sizeof *dir, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (dir == MAP_FAILED)
            cb_die("cannot reserve the page directory");
    }
    return (int16_t *)dir;
}

/* The runs of pages in [first, first + npages) that have a home, each of
 * one home, as (first, count, home) triples appended to *runs (*n of
 * them); the others were never accessed since they were first handed out
 * (a home is chosen at a page's first access, and a node's claims are
 * answered before its release), so they are zero.  Master. */
void cb_dir_homed_runs(uint64_t first, uint64_t npages, uint64_t **runs, size_t *n)
{
    int16_t *d = dir_table();
    size_t cap = 0;
    *runs = NULL;
    *n = 0;
    for (uint64_t p = first; p < first + npages;) {
        if (!d[p]) {
            p++;
            continue;
        }
        uint64_t q = p;
        while (q < first + npages && d[q] == d[p])
            q++;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            if (!(*runs = realloc(*runs, 3 * cap * sizeof **runs)))
                cb_die("out of memory listing the pages of a freed range");
        }
        (*runs)[3 * *n] = p;
        (*runs)[3 * *n + 1] = q - p;
        (*runs)[3 * *n + 2] = (uint64_t)(d[p] - 1);
        ++*n;
        p = q;
    }
}

/* M_DIR_LOOKUP a=page b=1: only ask, do not assign.  Reply a=home or -1. */
void cb_on_dir_lookup(const cb_msg_t *m)
{
    int16_t *d = dir_table();
    uint64_t p = m->a;
    int home = -1;
    const cb_alloc_t *al = p < cb.npages ? find_alloc(p) : NULL;
    if (al) {
        if (d[p] == 0 && !m->b)
            d[p] = (int16_t)(place(al, p, m->src) + 1);
        home = d[p] - 1;
    }
    cb_msg_t r = { .type = M_DIR_REPLY, .a = (uint64_t)(int64_t)home, .b = p };
    cb_reply(m, &r, NULL, 0, false);
}

/* master: pages whose move is under way (until M_MOVE_DONE) */
typedef struct { uint64_t page; int to; UT_hash_handle hh; } moving_t;
static moving_t *moving;

static moving_t *moving_find(uint64_t p)
{
    moving_t *x;
    HASH_FIND(hh, moving, &p, sizeof p, x);
    return x;
}

static void moving_start(uint64_t p, int to)
{
    moving_t *x = malloc(sizeof *x);
    if (!x)
        cb_die("out of memory for a home move");
    x->page = p;
    x->to = to;
    HASH_ADD(hh, moving, page, sizeof x->page, x);
}

/* master: a home move to node k under way (its page could land there after
 * k handed its homes over) */
bool cb_moving_to(int k)
{
    for (moving_t *x = moving; x; x = x->hh.next)
        if (x->to == k)
            return true;
    return false;
}

/* Sweeps.  A first touch of page p, in the aligned CABLES_PAGE_GROUP
 * [first, first + g) of its allocation, homes more of the group when its
 * toucher (node) is sweeping: the whole group before it is the toucher's
 * (SWEEP_GROUP: the whole group), or at least SWEEP_RUN pages just before
 * p are, in a run that began mid-group (SWEEP_REST: the rest of the group
 * from p: each node's part of a RADIX bucket begins anywhere).  A run
 * from a group's start may be an aligned block of one owner, its
 * neighbour in the group another's (LU's 8-page blocks); data whose
 * owners alternate at a finer grain (LU's 2-page blocks) keeps per-page
 * first touch.  Told by the directory (al, d: p's allocation and the
 * directory) or by the toucher itself (al and d NULL: its allocation
 * starts and cached homes, directory.c's local claims). */
enum sweep { SWEEP_NONE, SWEEP_REST, SWEEP_GROUP };

static bool alloc_start(uint64_t q, const cb_alloc_t *al)
{
    return al ? q == al->first : cb_bit(cb.claim_astart, q);
}

static bool toucher_homes(uint64_t q, const int16_t *d, int node)
{
    return d ? d[q] == node + 1 : cb_home_cached(q) == node;
}

static enum sweep sweeping(uint64_t p, uint64_t first, const cb_alloc_t *al, const int16_t *d,
                           int node)
{
    enum { SWEEP_RUN = 3 };
    uint64_t g = (uint64_t)cb.cfg.page_group;
    if (g == 1)
        return SWEEP_NONE;
    bool whole = !alloc_start(first, al); /* there is a group before it */
    for (uint64_t q = first - g; whole && q < first; q++)
        whole = toucher_homes(q, d, node);
    if (whole)
        return SWEEP_GROUP;
    uint64_t s = p; /* the toucher's run before p begins at s (first: at the group's start) */
    while (!alloc_start(s, al) && p - s < g && toucher_homes(s - 1, d, node))
        s--;
    return p - s >= SWEEP_RUN && (p - s >= g || s != first) ? SWEEP_REST : SWEEP_NONE;
}

/* M_FETCH via the directory (at the master): answer, or pass the request
 * to the home, which answers the requester directly. */
void cb_on_fetch_dir(const cb_msg_t *m)
{
    int16_t *d = dir_table();
    uint64_t p = m->a;
    const cb_alloc_t *al = p < cb.npages ? find_alloc(p) : NULL;
    if (!al) {
        cb_msg_t r = { .type = M_PAGE, .a = PAGE_UNALLOCATED };
        cb_reply(m, &r, NULL, 0, false);
        return;
    }
    if (d[p] == 0) {
        /* a first touch homes the page, and the pages of its group that
         * have no home yet when the toucher is sweeping (sweeping()) */
        uint64_t g = (uint64_t)cb.cfg.page_group, first = al->first + (p - al->first) / g * g;
        uint64_t end = first + g < al->first + al->npages ? first + g : al->first + al->npages;
        enum sweep sw = sweeping(p, first, al, d, m->src);
        uint64_t from = sw == SWEEP_GROUP ? first : p, to = sw != SWEEP_NONE ? end : p + 1;
        for (uint64_t q = from; q < to; q++)
            if (d[q] == 0 && !moving_find(q))
                d[q] = (int16_t)(place(al, q, m->src) + 1);
    }
    int home = d[p] - 1;
    if (home == m->src) {
        /* with it, the pages after it that are the requester's too, as many
         * as it can take (c); and whether it may claim the allocation's
         * pages itself: a first-touch one made while it was in the run (a
         * node attached later has not seen the notices of the pages homed
         * before it came, and cannot tell which ones hold data) */
        uint64_t n = 1, end = al->first + al->npages;
        while (n < m->c && p + n < end && d[p + n] == m->src + 1 && !moving_find(p + n))
            n++;
        bool claims = al->policy == CABLES_POLICY_FIRST_TOUCH && m->src < al->nnodes &&
                      !al->reused && al != &heaps && end <= UINT32_MAX;
        cb_msg_t r = { .type = M_PAGE, .a = PAGE_YOURS, .b = (uint64_t)home, .c = n,
                       .d = claims ? al->first | end << 32 : 0 };
        cb_reply(m, &r, NULL, 0, false);
        return;
    }
    cb_msg_t f = *m;
    f.b = FETCH_FROM_DIR | (m->b & FETCH_NO_DATA);
    if (f.c > al->first + al->npages - p) /* prefetch within the object only */
        f.c = al->first + al->npages - p;
    if (home == cb.self)
        cb_on_fetch(&f);
    else
        cb_forward(home, &f, NULL, 0);
}

int cables_home_of(const void *addr)
{
    if (!cb_in_gas((uintptr_t)addr))
        return -1;
    uint64_t p = cb_page_of((uintptr_t)addr);
    int h = cb_home_cached(p);
    if (h >= 0)
        return h;
    cb_msg_t m = { .type = M_DIR_LOOKUP, .a = p, .b = 1 };
    return (int)cb_rpc(0, &m, NULL);
}

/* ---- local claims ----
 * A first touch asks the directory which node is the page's home, a round
 * trip to the master while the faulting thread waits (150 us here when
 * both CPUs compute: RADIX's first permutation spent 260-290 ms a node in
 * 1800 of them).  In a first-touch allocation it already touched, a node
 * homes the page itself at once and tells the master after (M_CLAIM),
 * which records it unless another node's claim came first: that page
 * becomes a copy here whose twin is zero, the page's data when it was
 * claimed (no node had touched it, or a notice would have named it), so
 * this node's writes reach the home as diffs at its next release.
 * Reading zeros meanwhile is right: only a write that happens before this
 * node's acquires must be seen, and every page a node homes is noticed at
 * its next release (cb_homed_push), so an acquire marks it claim_no
 * before a later claim could be made (cb_claims_forbid), and waits for
 * the claims in flight (a claim refused then is a copy the notice
 * invalidates). */
void cb_claims_learn(uint64_t range)
{
    uint64_t first = range & UINT32_MAX, end = range >> 32, g = (uint64_t)cb.cfg.page_group;
    if (!cb.cfg.claim_local || first >= end || end > cb.npages || cb_bit(cb.claim_ok, first))
        return;
    cb_bit_set(cb.claim_astart, first);
    for (uint64_t q = first; q < end; q += g) /* groups as the directory aligns them */
        cb_bit_set(cb.claim_gstart, q);
    for (uint64_t q = first; q < end; q++) {
        if (q % 64 == 0 && q + 64 <= end) {
            atomic_store(&cb.claim_ok[q / 64], ~0ull);
            q += 63;
        } else {
            cb_bit_set(cb.claim_ok, q);
        }
    }
}

/* Rights end with their allocation: a freed range may be handed out again
 * as a smaller block (a claim's group would run past its end, onto pages
 * no allocation holds) or as a range whose pages hold data (never
 * claimed: a claim lost is a copy whose twin is zero).  The master hands
 * a freed range out again only once every node has dropped its rights
 * (gas.c, M_REVOKE). */
void cb_claims_revoke(uint64_t first, uint64_t npages)
{
    for (uint64_t q = first; q < first + npages && q < cb.npages; q++) {
        cb_bit_clear(cb.claim_ok, q);
        cb_bit_clear(cb.claim_astart, q);
        cb_bit_clear(cb.claim_gstart, q);
    }
}

/* M_REVOKE a=first page b=pages, from the master */
void cb_on_revoke(const cb_msg_t *m)
{
    cb_claims_revoke(m->a, m->b);
    cb_msg_t r = { .type = M_REVOKE_ACK, .a = m->a };
    cb_send(0, &r, NULL, 0, false);
}

void cb_claims_forbid(const uint32_t *pages, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cb_bit_set(cb.claim_no, pages[i]);
    atomic_thread_fence(memory_order_seq_cst); /* before cb_claims_wait reads claims_out */
}

/* Under release_mu (one caller at a time).  New claims wait meanwhile (they
 * ask the directory), or a thread sweeping an array would keep claims in
 * flight, and this waiting, as long as its sweep lasts. */
void cb_claims_wait(void)
{
    atomic_store(&cb.claims_drain, true);
    if (atomic_load(&cb.claims_out))
        cb_comm_kick(); /* claims are sent quietly (cb_claim kicks for those after) */
    for (uint32_t v; (v = atomic_load(&cb.claims_out)) != 0;)
        cb_futex_wait(&cb.claims_out, v);
    atomic_store(&cb.claims_drain, false);
}

/* A page claimed here whose answer has not come may be another node's:
 * served as a home page, the requester would take this node for its home
 * (and send it its diffs, read it in place) while the real home does not
 * know of that copy.  A request for it (only the master's directory can
 * name this node its home) is answered; the runs after one are not. */
bool cb_claim_pending(uint64_t p)
{
    return cb_bit(cb.claim_pending, p);
}

static bool claimable(uint64_t q)
{
    return q < cb.npages && cb_bit(cb.claim_ok, q) && !cb_bit(cb.claim_no, q);
}

uint32_t cb_claim(uint64_t p, uint32_t got)
{
    if (!claimable(p) || atomic_load(&cb.comm_down)) /* the latter: fetch() says why */
        return 0;
    /* as the directory sweeps, the pages of p's group from p on */
    uint64_t g = (uint64_t)cb.cfg.page_group, first = p;
    while (!cb_bit(cb.claim_gstart, first) && p - first < g)
        first--;
    uint32_t n = 1;
    if (sweeping(p, first, NULL, NULL, cb.self) != SWEEP_NONE) /* within its allocation */
        while (n < got && p + n < first + g && !cb_bit(cb.claim_astart, p + n) &&
               claimable(p + n))
            n++;
    /* against an acquire marking these pages meanwhile (it marks, then
     * reads claims_out; we count the claim, then read the marks), and
     * against a release or acquire draining the claims (it sets
     * claims_drain, then reads claims_out): this fault asks the directory */
    atomic_fetch_add(&cb.claims_out, 1);
    if (atomic_load(&cb.claims_drain))
        n = 0;
    for (uint32_t i = 0; i < n; i++)
        if (cb_bit(cb.claim_no, p + i)) {
            n = i;
            break;
        }
    if (n == 0) {
        if (atomic_fetch_sub(&cb.claims_out, 1) == 1)
            cb_futex_wake(&cb.claims_out);
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        cb_bit_set(cb.claim_pending, p + i);
        cb_home_set(p + i, cb.self);
    }
    cb_msg_t m = { .type = M_CLAIM, .a = p, .c = n };
    cb_send_quiet(0, &m);
    /* a drain that began meanwhile may have kicked before it was queued */
    if (atomic_load(&cb.claims_drain))
        cb_comm_kick();
    STAT_ADD(homes_claimed, n);
    STAT_ADD(homes_owned, n);
    return n;
}

/* M_CLAIM a=page c=pages, at the master: each page not homed yet is the
 * claimer's; the reply's payload is every page's home (int16_t), -1 for a
 * page no allocation holds (a claim made before the claimer dropped its
 * rights to a range freed since: the pages of a group past the block its
 * program touched) */
void cb_on_claim(const cb_msg_t *m)
{
    int16_t *d = dir_table();
    int16_t homes[CB_MAX_PAGE_GROUP];
    if (m->c < 1 || m->c > CB_MAX_PAGE_GROUP || m->a + m->c > cb.npages)
        cb_die("node %d: bad claim of %llu pages at %llu from node %d", cb.self,
               (unsigned long long)m->c, (unsigned long long)m->a, m->src);
    for (uint64_t i = 0; i < m->c; i++) {
        uint64_t q = m->a + i;
        const cb_alloc_t *al = find_alloc(q);
        if (!al) {
            homes[i] = -1;
            continue;
        }
        if (d[q] == 0 && !moving_find(q))
            d[q] = (int16_t)(place(al, q, m->src) + 1);
        homes[i] = (int16_t)(d[q] - 1);
    }
    cb_msg_t r = { .type = M_CLAIM_REPLY, .a = m->a, .c = m->c };
    cb_send(m->src, &r, homes, m->c * sizeof homes[0], false);
}

/* A claimed page another node homes: a written copy of it whose twin is
 * zero.  False if it is busy (the reply waits). */
static bool claim_lost(uint64_t q, int home)
{
    uint32_t s;
    if (!cb_page_try_own(q, &s))
        return false;
    cb_home_set(q, home);
    atomic_store(&cb.served[q], 0);
    uint32_t next = s;
    if ((s & PG_ACC) != PG_NONE) {
        memset(cb_twin(q), 0, cb.ps);
        next = PG_LISTED | PG_RW; /* claimed pages are opened for writing */
        if (!(s & PG_LISTED))
            cb_plist_push(&cb.dirty, q);
    }
    cb_page_unown(q, next);
    STAT_ADD(claims_lost, 1);
    STAT_ADD(homes_owned, (uint64_t)-1);
    return true;
}

/* A claimed page no allocation holds (cb_on_claim): no home known here,
 * and no access, as before its claim (only the claim's group opened it).
 * False if it is busy (the reply waits). */
static bool claim_refused(uint64_t q)
{
    uint32_t s;
    if (!cb_page_try_own(q, &s))
        return false;
    cb_home_set(q, -1);
    if ((s & PG_ACC) != PG_NONE)
        cb_page_protect(q, 1, PROT_NONE);
    cb_page_unown(q, s & PG_LISTED);
    STAT_ADD(homes_owned, (uint64_t)-1);
    return true;
}

void cb_on_claim_reply(const cb_msg_t *m, const void *p, size_t len)
{
    int16_t homes[CB_MAX_PAGE_GROUP];
    if (m->c < 1 || m->c > CB_MAX_PAGE_GROUP || len != m->c * sizeof homes[0])
        cb_die("node %d: malformed claim reply from node %d", cb.self, m->src);
    memcpy(homes, p, len);
    for (uint64_t i = 0; i < m->c; i++) {
        uint64_t q = m->a + i;
        /* a page lost before this reply was deferred is a copy already */
        if (homes[i] != cb.self && cb_home_cached(q) == cb.self &&
            !(homes[i] < 0 ? claim_refused(q) : claim_lost(q, homes[i]))) {
            cb_defer(m, p, len);
            return;
        }
    }
    for (uint64_t i = 0; i < m->c; i++)
        cb_bit_clear(cb.claim_pending, m->a + i);
    if (atomic_fetch_sub(&cb.claims_out, 1) == 1)
        cb_futex_wake(&cb.claims_out);
}

void cb_homed_push(uint64_t p)
{
    /* alone, none needed: the allocation was made by a run of one node,
     * and a node attached later never claims its pages */
    if (atomic_load(&cb.nnodes) > 1)
        cb_plist_push(&cb.homed, p);
}

/* ---- moving a home ----
 * M_MOVE at the master   a=page b=new home  (from the requester)
 * M_MOVE at the old home a=page b=new home c=requester (src=master)
 * M_MOVE_PAGE at new     a=page c=requester, payload = the page
 * M_MOVE_DONE at master  a=page b=new home, then the requester's reply. */

void cb_on_move(const cb_msg_t *m)
{
    uint64_t p = m->a;
    int to = (int)m->b;
    if (m->c == 0) {
        /* at the master: the first step; one move of a page at a time */
        if (moving_find(p)) {
            cb_defer(m, NULL, 0);
            return;
        }
        int16_t *d = dir_table();
        const cb_alloc_t *al = find_alloc(p);
        int from = d[p] - 1;
        if (!cb_node_open(to)) { /* gone, or leaving: its pages would go with it */
            cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)-1 };
            cb_reply(m, &r, NULL, 0, false);
            return;
        }
        if (from < 0 && al && al->policy != CABLES_POLICY_FIRST_TOUCH)
            from = place(al, p, to); /* not looked up yet, but its home is set */
        if (from >= 0 && from != to && !cb_node_open(from)) {
            cb_defer(m, NULL, 0); /* its node leaving: the page is the master's once it left */
            return;
        }
        if (!al || from < 0 || from == to) {
            if (al) /* untouched first-touch page: the directory alone decides */
                d[p] = (int16_t)(to + 1);
            cb_msg_t r = { .type = M_REPLY, .a = al ? 0 : (uint64_t)-1 };
            cb_reply(m, &r, NULL, 0, false);
            return;
        }
        d[p] = (int16_t)(from + 1); /* what a lookup would set: it names the old
                                     * home meanwhile, which forwards */
        cb_msg_t f = *m;
        f.c = (uint64_t)m->src + 1; /* c != 0 marks the second step */
        f.d = m->waiter;
        moving_start(p, to);
        cb_send(from, &f, NULL, 0, false);
        return;
    }
    /* at the old home */
    uint32_t s;
    if (!cb_page_try_own(p, &s)) {
        cb_defer(m, NULL, 0);
        return;
    }
    int h = cb_home_cached(p);
    if (h < 0) /* homed here by the directory alone (never touched here) */
        cb_home_set(p, h = cb.self);
    if (h != cb.self)
        cb_die("node %d: asked to move page %llu away but it is not its home (directory error)",
               cb.self, (unsigned long long)p);
    if (s & PG_STACK) {
        /* a thread runs on it: its frames must never fault; the home stays */
        cb_page_unown(p, s);
        cb_msg_t done = { .type = M_MOVE_DONE, .a = p, .b = (uint64_t)cb.self, .c = m->c, .d = m->d };
        cb_send(0, &done, NULL, 0, false);
        return;
    }
    if (s & PG_ACC)
        cb_page_protect(p, 1, PROT_NONE); /* later writes here would be lost */
    cb_bit_clear(cb.quiet, p);
    atomic_fetch_add(cb.moves, 1); /* our copy is stale from now on (rma.c) */
    cb_home_set(p, to);
    cb_msg_t mp = { .type = M_MOVE_PAGE, .a = p, .c = m->c, .d = m->d };
    cb_send(to, &mp, cb_proto_page(p), cb.ps, false);
    cb_page_unown(p, s & ~(uint32_t)PG_ACC);
    STAT_ADD(homes_moved, 1);
}

void cb_on_move_page(const cb_msg_t *m, const void *data, size_t len)
{
    uint64_t p = m->a;
    uint32_t s;
    if (len != cb.ps)
        cb_die("node %d: bad page move message", cb.self);
    /* our diffs still on their way to the old home may belong to this page
     * and would land after our newer writes: wait for them (cb_on_diff
     * applies those that come back to this message's page) */
    if (atomic_load(&cb.diffs_out) || cb_claim_pending(p) || !cb_page_try_own(p, &s)) {
        cb_defer(m, data, len); /* a claim pending: its answer may make the page a copy */
        return;
    }
    uint32_t acc = s & PG_ACC;
    atomic_fetch_add(cb.moves, 1); /* what was served from here before is stale */
    if (acc != PG_NONE)
        cb_page_protect(p, 1, PROT_READ); /* stop writers while merging */
    if (acc == PG_RW) {
        /* keep this node's own writes of the interval: new = home + diff */
        uint8_t *d = malloc(cb_diff_max(cb.ps));
        if (!d)
            cb_die("node %d: out of memory moving page %llu here", cb.self, (unsigned long long)p);
        size_t n = cb_diff_encode(cb_proto_page(p), cb_twin(p), cb.ps, d);
        memcpy(cb_proto_page(p), data, cb.ps);
        cb_diff_apply(cb_proto_page(p), cb.ps, d, n);
        free(d);
        cb_twin_drop(p); /* a home page's twin is a checksum */
    } else {
        if (acc == PG_RO)
            cb_page_protect(p, 1, PROT_NONE); /* never show a half-copied page */
        memcpy(cb_proto_page(p), data, cb.ps);
    }
    cb_home_set(p, cb.self);
    cb_bit_clear(cb.quiet, p);
    cb_homed_push(p); /* its data is not zero: no node that learns of it may claim it */
    if (acc != PG_NONE)
        cb_page_protect(p, 1, cb_page_prot(s));
    cb_page_unown(p, s | PG_SHARED); /* other nodes may hold copies */
    STAT_ADD(homes_owned, 1);
    cb_msg_t done = { .type = M_MOVE_DONE, .a = p, .b = (uint64_t)cb.self, .c = m->c, .d = m->d };
    cb_send(0, &done, NULL, 0, false);
}

void cb_on_move_done(const cb_msg_t *m)
{
    dir_table()[m->a] = (int16_t)(m->b + 1);
    if (!m->d) { /* a leaving node's page, handed over (no one waits) */
        cb_node_handed((int)m->c - 1);
        return;
    }
    moving_t *x = moving_find(m->a);
    int to = x ? x->to : -1;
    if (x) {
        HASH_DEL(moving, x);
        free(x);
    }
    /* -1: the home refused (a thread stack) */
    cb_msg_t r = { .type = M_REPLY, .a = (int)m->b == to ? 0 : (uint64_t)-1 };
    cb_msg_t req = { .src = (int)m->c - 1, .waiter = m->d };
    cb_reply(&req, &r, NULL, 0, false);
}

int cables_home_move(void *addr, size_t len, int node)
{
    if (node < 0 || node >= atomic_load(&cb.nnodes) || !cb_in_gas((uintptr_t)addr) ||
        !cb_in_gas((uintptr_t)addr + (len ? len - 1 : 0)))
        return -1;
    uint64_t first = cb_page_of((uintptr_t)addr);
    uint64_t last = cb_page_of((uintptr_t)addr + (len ? len - 1 : 0));
    for (uint64_t p = first; p <= last; p++) {
        cb_msg_t m = { .type = M_MOVE, .a = p, .b = (uint64_t)node };
        if (cb_rpc(0, &m, NULL) != 0)
            return -1;
        if (node != cb.self)
            cb_home_set(p, node);
    }
    return 0;
}

/* ---- a detached node's homes become the master's ---- */

/* The store's data around page p, as pages [*lo, *hi) holding data (p
 * below *lo: none from p to *lo).  lseek's SEEK_DATA counts a page swapped
 * out as data, where mincore() calls it not resident, and works in bytes
 * whatever the coherence page is; an error means data (sent anyway). */
static void data_around(uint64_t p, uint64_t *lo, uint64_t *hi)
{
    off_t d = lseek(cb.memfd, (off_t)(p * cb.ps), SEEK_DATA);
    if (d < 0) {
        *lo = errno == ENXIO ? cb.npages : p;
        *hi = errno == ENXIO ? cb.npages : p + 1;
        return;
    }
    off_t h = lseek(cb.memfd, d, SEEK_HOLE);
    *lo = (uint64_t)d / cb.ps;
    *hi = h < 0 ? *lo + 1 : ((uint64_t)h + cb.ps - 1) / cb.ps;
}

bool cb_homes_hand_over(int64_t *sent)
{
    uint64_t lo = 0, hi = 0; /* data in [lo, hi), none in [p, lo) */
    for (uint64_t p = 0; p < cb.npages; p++) {
        if (cb_home_cached(p) != cb.self)
            continue;
        if (p >= hi)
            data_around(p, &lo, &hi);
        uint32_t s;
        if (!cb_page_try_own(p, &s))
            return false; /* (those sent are counted: no longer ours) */
        atomic_fetch_add(cb.moves, 1);
        /* no thread runs here any more: the application view stays as it is */
        cb_home_set(p, 0); /* what reaches us for it goes on there */
        if (p >= lo) { /* else never touched: zero, as the master's store is */
            cb_msg_t mp = { .type = M_MOVE_PAGE, .a = p, .c = (uint64_t)cb.self + 1 };
            cb_send(0, &mp, cb_proto_page(p), cb.ps, false);
            (*sent)++;
        }
        cb_page_unown(p, 0);
    }
    return true;
}

void cb_homes_forget(int k)
{
    for (uint64_t p = 0; p < cb.npages; p++)
        if (atomic_load(&cb.home[p]) == k + 1)
            cb_home_set(p, 0);
}

void cb_dir_node_gone(int k)
{
    int16_t *d = dir_table();
    for (uint64_t p = 0; p < cb.npages; p++)
        if (d[p] == k + 1)
            d[p] = 1;
}
