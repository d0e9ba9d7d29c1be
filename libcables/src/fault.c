/* fault.c: the fault path.  A SIGSEGV in the application view becomes a
 * protocol event of the page state machine.  It takes no lock that the
 * interrupted code may hold (no stdio; libc's malloc only for a claim's
 * message, and libc's allocator never touches shared memory, so no fault
 * interrupts it: the application's malloc is the shim's): it owns the
 * page through its state word, hands remote work to the communication
 * thread and sleeps until that is done.  Other threads faulting on the
 * same page sleep on the same word: one fetch serves them all. */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

/* The program's SIGSEGV handler (what it, or libc, installed: the
 * runtime's stays installed and calls it for faults that are not the
 * runtime's).  A change writes the next slot and then publishes it, so a
 * fault reading the current one while another thread installs a handler
 * reads a whole one. */
#define APP_SLOTS 16
static struct sigaction app_segv[APP_SLOTS];
static _Atomic unsigned app_cur;
static cb_mutex_t app_mu = CB_MUTEX_INIT;
/* bit s - 1: the program's sa_mask for signal s held SIGSEGV, which the
 * kernel's never does */
static _Atomic uint64_t mask_had_segv;
/* the program's mask holds SIGSEGV, which the kernel's never does */
__thread bool cb_segv_blocked CB_TLS;

/* Bit s - 1: the program handles signal s (a function of its own), s not
 * a fault's (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS).  Those
 * signals are held off while the runtime works on a thread's behalf (its
 * SIGSEGV handler, a poller's pull: cb_app_signals_hold), and come the
 * moment that work ends.  A handler that leaves by siglongjmp, as legacy
 * code leaves a wait at a timeout, then leaves the program's code, never
 * the runtime's halfway: before, a jump out of a pull left the thread
 * taken for one of the runtime's (its next malloc private: a block it
 * handed another node read as zeros), and one out of a fault left the
 * copies it fetched stale for good (tests/posix/jump_out.c). */
static _Atomic uint64_t app_handled;

static int (*libc_sigaction)(int, const struct sigaction *, struct sigaction *);
static int (*libc_sigmask)(int, const sigset_t *, sigset_t *);
static _Atomic bool fault_ready; /* the runtime's handler is installed */

static void libc_signal_fns(void)
{
    if (!libc_sigmask) {
        libc_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))cb_libc("sigaction");
        libc_sigmask = (int (*)(int, const sigset_t *, sigset_t *))cb_libc("pthread_sigmask");
        if (!libc_sigaction || !libc_sigmask)
            cb_die("cannot find libc's sigaction and pthread_sigmask");
    }
}

/* Reads runs r < runs of n pages at p + r * stride from home into the
 * protocol view, and keeps them if home's move epoch is still rec's at the
 * end of the read (no page moved in or out of home: they are still homed
 * there, and its copy is not stale).  fresh: never served here before
 * (cb_rma_read_served). */
static bool read_runs(uint64_t p, int home, uint32_t n, uint32_t runs, uint64_t stride,
                      uint64_t rec, bool fresh)
{
    uint64_t first[CB_MAX_FETCH_RUNS];
    uint32_t len[CB_MAX_FETCH_RUNS];
    if (stride == n) { /* runs that touch are read as one: a call, not one a run */
        n *= runs;
        runs = 1;
    }
    for (uint32_t k = 0; k < runs; k++) {
        first[k] = p + k * stride;
        len[k] = n;
        if (!fresh)
            cb_populate(cb_proto_page(first[k]), n * cb.ps, true);
    }
    return cb_rma_read_served(home, runs, first, len, rec, fresh);
}

/* A remote read of pages [p, p + *got) from home, and of as many of the
 * *runs runs at p + r * stride as are whole, as far as home served them to
 * this node before in the same move epoch, or shared them ahead (so they
 * are shared there: its writes since have notices).  No message: no
 * thread wakes at either end.  False: ask the home. */
static bool fetch_read(uint64_t p, int home, uint32_t *got, uint64_t stride, uint32_t *runs)
{
    uint64_t rec = atomic_load_explicit(&cb.served[p], memory_order_relaxed);
    uint64_t base = rec & ~CB_SERVED_AHEAD; /* (pages shared ahead are new here) */
    if (base >> 32 != (uint64_t)home + 1 || !cb_rma_ready(home))
        return false;
    uint32_t n = 1, r = 1;
    while (n < *got && atomic_load_explicit(&cb.served[p + n], memory_order_relaxed) == rec)
        n++;
    for (; r < *runs; r++) {
        uint32_t i = 0;
        while (i < n && atomic_load_explicit(&cb.served[p + r * stride + i],
                                             memory_order_relaxed) == rec)
            i++;
        if (i < n)
            break;
    }
    if (!read_runs(p, home, n, r, stride, base, rec != base)) { /* served: mapped already */
        atomic_store_explicit(&cb.served[p], 0, memory_order_relaxed);
        return false;
    }
    for (uint32_t k = 0; rec != base && k < r; k++)
        for (uint32_t i = 0; i < n; i++)
            atomic_store_explicit(&cb.served[p + k * stride + i], base, memory_order_relaxed);
    *got = n;
    *runs = r;
    return true;
}

/* Some node's pages can be read in place (a home not known yet is likely
 * one of them) */
static bool rma_any(void)
{
    for (int i = 0; i < atomic_load(&cb.nnodes); i++)
        if (i != cb.self && cb_rma_ready(i))
            return true;
    return false;
}

/* Fetch page p into the protocol view.  With the home unknown (-1) the
 * request goes through the master's directory, which names (or, on first
 * touch, chooses) the home and has it answer: one round trip, not two.
 * Returns the home, -1 if the page is not allocated, or FETCH_RETRY if the
 * page is moving to this node (the caller lets the move land, then
 * faults again). */
enum { FETCH_RETRY = -2, FIRST_REFRESH = 4 };
/* *pulled: one of the pages a pull's acquire dropped (propagate.c) */
static int fetch(uint64_t p, int home, uint32_t *got, uint64_t stride, uint32_t *runs,
                 bool *pulled)
{
    uint32_t want = *runs;
    uint64_t t0 = cb_now_ns();
    /* a copy this node held before, read again after an invalidation: the
     * next acquires refresh it in place instead (hlrc.c) */
    uint64_t rec0 = atomic_load(&cb.served[p]);
    bool again = home >= 0 && home != cb.self && cb.cfg.refresh && rec0 && !(rec0 & CB_SERVED_AHEAD);
    /* The process is ending (an exit or exec, at the master; this node's
     * leaving after it elsewhere): that end ends the threads still
     * running, as a process's exit or exec ends its threads wherever they
     * are, so one that faults now waits for it (it is named if the end
     * does not come).  The thread ending the process is the runtime's by
     * now (cb_node_finish): its own late faults are named at once. */
    if (atomic_load(&cb.comm_down) && cb_app_thread && atomic_load(&cb.ending))
        for (int i = 0; i < 300; i++)
            usleep(100000);
    if (atomic_load(&cb.comm_down))
        cb_die("node %d: shared page %llu accessed after the node left the cluster (at exit, "
               "after the runtime stopped); its data cannot be fetched", cb.self,
               (unsigned long long)p);
    if (home >= 0 && home != cb.self && cb.cfg.fetch_get && fetch_read(p, home, got, stride, runs)) {
        STAT_ADD(fetches_read, 1);
        STAT_ADD(fetches_unasked, 1);
        goto fetched;
    }
    *runs = 1;
    /* where its pages can be read in place, the home only shares them and
     * the data comes by remote read: one copy, and no thread of the home's
     * or ours handles it (a reply carries it through four copies) */
    bool data = !cb.cfg.fetch_get;
    for (;;) {
        bool no_data = !data && (home >= 0 ? cb_rma_ready(home) : rma_any());
        cb_waiter_t w = { .dst = cb_proto_page(p), .dst_pages = *got, .dst_runs = want,
                          .dst_stride = stride * cb.ps,
                          .dst_fresh = !(atomic_load_explicit(&cb.served[p], memory_order_relaxed) &
                                         ~CB_SERVED_AHEAD) };
        cb_msg_t m = { .type = M_FETCH, .a = p,
                       .b = (home < 0 ? FETCH_VIA_DIR : FETCH_DIRECT) | (no_data ? FETCH_NO_DATA : 0),
                       .c = *got, .d = want > 1 ? want | stride << 16 : 0 };
        cb_call(home < 0 ? 0 : home, &m, NULL, 0, &w);
        if (home < 0)
            STAT_ADD(dir_lookups, 1);
        if (w.value == PAGE_UNALLOCATED)
            return -1;
        home = (int)w.value2;
        if (home == cb.self && w.value == PAGE_MOVED)
            return FETCH_RETRY; /* the page is on its way here: only its arrival makes us home */
        cb_home_set(p, home);
        if (w.value == PAGE_YOURS) { /* with the pages after it the directory gave us */
            *got = w.value3 >= 1 && w.value3 <= *got ? (uint32_t)w.value3 : 1;
            STAT_ADD(homes_owned, *got);
            cb_claims_learn((uint64_t)w.value4);
            return home;
        }
        uint64_t rec = (uint64_t)(home + 1) << 32 | (uint32_t)w.value3;
        if (w.value == PAGE_SHARED) {
            uint32_t n = (uint32_t)(w.value3 >> 32 & 0xffff), r = (uint32_t)(w.value3 >> 48);
            if (n < 1 || n > *got || r < 1 || r > want)
                cb_die("node %d: page %llu shared as %u runs of %u pages by node %d (asked %u of %u)",
                       cb.self, (unsigned long long)p, r, n, home, want, *got);
            if (!cb_rma_ready(home) || !read_runs(p, home, n, r, stride, rec, w.dst_fresh)) {
                data = true; /* moved meanwhile, or not readable: its data, then */
                continue;
            }
            *got = n;
            *runs = r;
            STAT_ADD(fetches_read, 1);
            /* the pages after them it shared ahead: read without asking,
             * where not served here before */
            for (uint64_t q = p + n, end = q + (w.value4 >> 16 & 0xffff); r == 1 && q < end; q++) {
                uint64_t none = 0;
                atomic_compare_exchange_strong(&cb.served[q], &none, rec | CB_SERVED_AHEAD);
            }
        } else if (w.value == PAGE_DATA) {
            *runs = w.dst_runs;
            *got = (uint32_t)(w.len / cb.ps / *runs);
        } else {
            continue; /* PAGE_MOVED: follow the home */
        }
        for (uint32_t r = 0; r < *runs; r++)
            for (uint32_t i = 0; i < *got; i++)
                atomic_store_explicit(&cb.served[p + r * stride + i], rec, memory_order_relaxed);
        /* the home's pages after them, those whose home is not known here:
         * their first fetches go to it directly (a wrong guess, after a
         * move, is answered PAGE_MOVED) */
        for (uint64_t q = p + *got, end = p + (uint64_t)(w.value4 >> 32); q < end; q++)
            if (cb_home_cached(q) < 0)
                cb_home_set(q, home);
        break;
    }
fetched:
    /* refreshed at the next acquires that name them (hlrc.c): pages read
     * again after an invalidation for CABLES_REFRESH acquires, the pages of
     * a first fetch for FIRST_REFRESH (at most that): a remote read costs
     * a fraction of the protection change an invalidation costs here */
    for (uint32_t r = 0; r < *runs; r++)
        for (uint32_t i = 0; i < *got; i++)
            *pulled |= cb_bit_take(cb.pulled, p + r * stride + i);
    if (cb.cfg.refresh) {
        uint8_t first = (uint8_t)(cb.cfg.refresh < FIRST_REFRESH ? cb.cfg.refresh : FIRST_REFRESH);
        for (uint32_t r = 0; r < *runs; r++)
            for (uint32_t i = 0; i < *got; i++)
                atomic_store_explicit(&cb.hot[p + r * stride + i],
                                      r == 0 && again ? (uint8_t)cb.cfg.refresh : first,
                                      memory_order_relaxed);
    }
    STAT_ADD(pages_fetched, *got * *runs);
    STAT_ADD(fetches, 1);
    STAT_ADD(fetch_ns, cb_now_ns() - t0);
    return home;
}

/* Prefetch: the invalid pages right after p with the same home come with it
 * in one reply, as far as the home is theirs (a fetch costs its round trip,
 * hardly its bytes).  On a first access (home -1: not known here) they are
 * the pages not known either, and the directory keeps them to p's
 * allocation.  Takes those it can own without waiting; their states go to
 * state[]. */
/* Page q for a fetch with the page before it (after_prev: it must follow
 * that one in the application view too): of the same cached home, invalid
 * here, and owned without waiting (its state to *s). */
static bool take_page(uint64_t q, int home, bool after_prev, uint32_t *s)
{
    if (q >= cb.npages || cb_home_cached(q) != home ||
        (after_prev && cb_app_page(q) != cb_app_page(q - 1) + cb.ps) || !cb_page_try_own(q, s))
        return false;
    if ((*s & PG_ACC) != PG_NONE) {
        cb_page_unown(q, *s);
        return false;
    }
    return true;
}

/* the most pages a fetch of copies brings: a read fault's CABLES_FETCH_PAGES,
 * a write fault's page group (its copies are written ahead) */
static uint32_t fetch_limit(bool write)
{
    return (uint32_t)(write ? cb.cfg.page_group : cb.cfg.fetch_pages);
}

static uint32_t take_next(uint64_t p, int home, uint32_t limit, uint32_t *state)
{
    uint32_t k = 0;
    while (k + 1 < limit && take_page(p + k + 1, home, true, &state[k]))
        k++;
    return k;
}

/* Strided prefetch: a thread whose fetches follow a stride (LU reading a
 * column of blocks, a transpose reading a column of rows) is sent the runs
 * ahead of it with the one it faulted on, more as the stride holds (4, 8,
 * 16, ... runs, up to CABLES_FETCH_RUNS and CB_MAX_FETCH_PAGES pages). */
static __thread uint64_t last_run CB_TLS; /* the last run this thread fetched */
static __thread uint64_t last_stride CB_TLS;
static __thread uint32_t stride_hits CB_TLS;

static uint32_t plan_runs(uint64_t p, uint32_t n, uint64_t *stride)
{
    uint64_t d = p - last_run;
    bool hit = d == last_stride && d >= n && d < (1ull << 40);
    last_stride = d;
    stride_hits = hit ? stride_hits + 1 : 0;
    *stride = d;
    if (!hit)
        return 1;
    uint32_t runs = 2u << (stride_hits < 5 ? stride_hits : 5);
    if (runs > (uint32_t)cb.cfg.fetch_runs)
        runs = (uint32_t)cb.cfg.fetch_runs;
    if (runs * n > CB_MAX_FETCH_PAGES)
        runs = CB_MAX_FETCH_PAGES / n;
    return runs ? runs : 1;
}

/* Takes runs 1.. of a strided fetch of the run of n pages at p, as far as
 * this thread's fetches follow a stride (plan_runs; *stride): n pages each
 * at p + r * stride, taken as take_next takes run 0; stops at the first run
 * it cannot take whole.  Run r's states go to state[(r - 1) * n ...].
 * Returns how many runs, run 0 included. */
static uint32_t take_runs(uint64_t p, int home, uint32_t n, uint64_t *stride, uint32_t *state)
{
    uint32_t r = 1, want = plan_runs(p, n, stride);
    for (; r < want; r++) {
        uint64_t q = p + r * *stride;
        uint32_t *st = state + (r - 1) * n, j = 0;
        while (j < n && take_page(q + j, home, j > 0, &st[j]))
            j++;
        if (j < n) {
            while (j--)
                cb_page_unown(q + j, st[j]);
            break;
        }
    }
    return r;
}

/* The runs 1.. of a strided fetch: the first got pages of each of the
 * first fetched runs arrived (readable copies), the rest stay as they were.
 * Runs that touch (a stride of got pages) share their protection change. */
static void land_runs(uint64_t p, int home, uint32_t n, uint64_t stride, uint32_t taken,
                      uint32_t fetched, uint32_t got, uint32_t *state)
{
    bool adjacent = stride == got;
    for (uint32_t r = 1; r < fetched; r++) {
        uint64_t q = p + r * stride;
        uint32_t *st = state + (r - 1) * n;
        for (uint32_t j = 0; j < got; j++) {
            cb_home_set(q + j, home);
            st[j] = cb_page_next(st[j], false, EV_READ_FAULT).next;
        }
        if (!adjacent || r + 1 == fetched) {
            uint64_t first = adjacent ? p + stride : q, len = adjacent ? (r * stride) : got;
            cb_page_protect(first, len, PROT_READ); /* mapped by read faults (cb_fault) */
        }
    }
    for (uint32_t r = 1; r < taken; r++)
        for (uint32_t j = 0; j < n; j++)
            cb_page_unown(p + r * stride + j, state[(r - 1) * n + j]);
}

/* Whether home pages opened at p continue one of the last SWEEPS runs this
 * thread opened (it records the new one, ending before end): a sweep in
 * order across few arrays at once.  Those are worth mapping in one call,
 * not a fault each; pages opened for a scatter are not: RADIX writing 256
 * buckets at once, 16 pages ahead in each, spent 90 ms more in its first
 * pass over 256 MB than it did faulting them in one by one (the pages
 * cleared ahead leave the cache before they are written).  A sweep also
 * asks the store to allocate the pages ahead of it (store.c), as many as
 * it has covered, up to CB_STORE_AHEAD, when fewer than half of those are
 * asked for already. */
#define SWEEPS 4
#define CB_STORE_AHEAD 256
static __thread struct sweep { uint64_t start, end, asked; } sweeps[SWEEPS] CB_TLS;
static __thread uint32_t sweep_next CB_TLS;

static bool sweeping(uint64_t p, uint64_t end)
{
    struct sweep *w = NULL;
    for (int i = 0; i < SWEEPS && !w; i++)
        if (p > 0 && sweeps[i].end == p)
            w = &sweeps[i];
    if (!w) {
        sweeps[sweep_next++ % SWEEPS] = (struct sweep){ p, end, end };
        return false;
    }
    w->end = end;
    uint64_t ahead = end - w->start < CB_STORE_AHEAD ? end - w->start : CB_STORE_AHEAD;
    if (w->asked < end + ahead / 2) {
        uint64_t from = w->asked > end ? w->asked : end;
        w->asked = end + ahead;
        if (!cb_store_allocated(w->asked - 1))
            cb_store_ahead(from, w->asked, true);
    }
    return true;
}

/* Write-ahead: the clean shared home pages next to a home page that took a
 * write fault are opened with it (page.c, EV_WRITE_AHEAD), as a run is
 * mostly written in order: those after it, or those before it when the
 * page after it is writable already (a run written downwards, as glibc's
 * memcpy does with large blocks).  Home pages already writable (private
 * ones, or written in the last interval) are passed over.  Returns how many
 * pages from p in direction dir are in the run (they stay owned); *opened
 * counts the ones opened. */
static uint32_t open_near(uint64_t p, int dir, uint32_t *next, uint32_t *opened)
{
    uint32_t k = 0;
    uint64_t twinned = 0; /* bit i: page p + dir * (1 + i) was opened */
    for (; k + 1 < (uint32_t)cb.cfg.page_group; k++) {
        uint64_t q = p + (uint64_t)dir * (k + 1), prev = q - (uint64_t)dir;
        uint32_t s;
        if (q >= cb.npages || cb_home_cached(q) != cb.self ||
            cb_app_page(q) != cb_app_page(prev) + dir * (ptrdiff_t)cb.ps ||
            !cb_page_try_own(q, &s))
            break;
        cb_page_step_t st = cb_page_next(s, true, EV_WRITE_AHEAD);
        if (!st.act && (s & PG_ACC) != PG_RW) {
            cb_page_unown(q, s);
            break;
        }
        if (st.act)
            twinned |= 1ull << k;
        next[k] = st.next;
    }
    *opened = 0;
    for (uint32_t i = 0; i < k; i++)
        if (twinned >> i & 1) {
            uint64_t q = p + (uint64_t)dir * (i + 1);
            cb_sum_take(q);
            cb_plist_push(&cb.dirty, q);
            ++*opened;
        }
    return k;
}

int cb_fault(uint64_t p, bool write)
{
    uint32_t s = cb_page_own(p);
    int home = cb_home_cached(p);
    bool fetched = false, pulled = false;
    uint32_t got = 1, next_state[CB_MAX_PAGE_GROUP], nnext = 0;
    uint32_t run_state[CB_MAX_FETCH_PAGES], taken = 1, runs = 1;
    uint64_t stride = 0;
    if (home < 0 && (s & PG_ACC) == PG_NONE) {
        nnext = take_next(p, -1, (uint32_t)cb.cfg.page_group, next_state);
        got = 1 + nnext;
        uint32_t claimed = cb_claim(p, got);
        if (claimed) { /* homed here at once (directory.c) */
            home = cb.self;
            got = claimed;
        } else {
            uint32_t limit = fetch_limit(write);
            if (cb.cfg.claim_local && got > limit) { /* taken for a claim, not a fetch */
                for (uint32_t i = limit - 1; i < nnext; i++)
                    cb_page_unown(p + 1 + i, next_state[i]);
                nnext = limit - 1;
                got = limit;
            }
            taken = runs = take_runs(p, -1, got, &stride, run_state);
            home = fetch(p, -1, &got, stride, &runs, &pulled);
            fetched = home >= 0 && home != cb.self;
            if (home < 0)
                got = 1;
        }
    }
    bool is_home = home == cb.self;
    /* a home page's first access here, and of the pages that come with
     * it: noticed at the next release (directory.c: from then on it may
     * hold data, and another node must not claim it), however this node
     * learnt it was their home.  Not a shared one: it was served before
     * any access here, and from then on its writes are noticed anyway. */
    for (uint32_t i = 0; is_home && i < got; i++) {
        uint32_t si = i ? next_state[i - 1] : s; /* those after p: never accessed (take_next) */
        if ((si & PG_ACC) == PG_NONE && !(si & (PG_STACK | PG_SHARED)))
            cb_homed_push(p + i);
    }
    cb_page_step_t st = cb_page_next(s, is_home, write ? EV_WRITE_FAULT : EV_READ_FAULT);
    if (home >= 0 && st.act & ACT_FETCH && !fetched) {
        nnext = take_next(p, home, fetch_limit(write), next_state);
        got = 1 + nnext;
        taken = runs = take_runs(p, home, got, &stride, run_state);
        home = fetch(p, home, &got, stride, &runs, &pulled);
        fetched = home >= 0;
        if (home < 0)
            got = 1;
    }
    if (fetched && home != cb.self)
        last_run = p + (runs - 1) * stride;
    land_runs(p, home, 1 + nnext, stride, taken, fetched && home != cb.self ? runs : 0, got,
              run_state);
    /* the pages that came with p: pages the directory made ours with it,
     * or copies fetched with it, accessed as p is: readable, or, for a
     * write, written ahead (a run is mostly written in order: RADIX writes
     * its part of every bucket into copies), twinned before they open; one
     * mprotect, p's too when it gets the same.  The others stay as they were. */
    bool counted = st.act != 0;
    enum cb_page_event xev = write ? EV_WRITE_FAULT : EV_READ_FAULT;
    int xprot = PROT_READ;
    uint32_t twinned = 0;
    for (uint32_t i = 0; i + 1 < got; i++) {
        cb_home_set(p + 1 + i, home);
        cb_page_step_t x = cb_page_next(next_state[i], is_home, xev);
        next_state[i] = x.next;
        xprot = cb_page_prot(x.next);
        if (x.act & ACT_TWIN) {
            cb_twin_take(p + 1 + i);
            twinned++;
        }
        if (x.act & ACT_LIST)
            cb_plist_push(&cb.dirty, p + 1 + i);
    }
    STAT_ADD(written_ahead, twinned);
    if (home >= 0 && st.act & ACT_TWIN) {
        cb_twin_take(p); /* before any thread here can write it */
        st.act &= ~(unsigned)ACT_TWIN;
    }
    bool with_p = got > 1 && (st.act & ACT_PROTECT) && cb_page_prot(st.next) == xprot;
    if (got > 1) {
        uint64_t first = with_p ? p : p + 1, n = got - !with_p;
        cb_page_protect(first, n, xprot);
        /* map them now if they are being swept in order (sweeping), or are
         * copies opened for writing (written ahead); pages the directory
         * gave us but nobody touched take no memory.  Readable copies are
         * left to the kernel's read faults, which map 16 pages at a time
         * from the store (0.27 us a page here, populating 0.51), and none
         * of the pages fetched but never read (a transpose's half rows) */
        bool sweep = is_home && sweeping(p, first + n);
        /* a first touch that is no sweep but continues a run written
         * before (a scatter's run: one of RADIX's buckets) asks the store
         * for the group after this one, in no hurry; a first touch far
         * from others (sparse.c) asks for nothing */
        if (is_home && !sweep && !(s & PG_ACC) && p > 0 && cb_home_cached(p - 1) == cb.self &&
            (atomic_load(&cb.pst[p - 1]) & PG_ACC) && !cb_store_allocated(first + n))
            cb_store_ahead(first + n, first + 2 * n, false);
        if (is_home ? sweep : (xprot & PROT_WRITE) != 0)
            cb_populate(cb_app_page(first), n * cb.ps, xprot & PROT_WRITE);
    }
    for (uint32_t i = 0; i < nnext; i++)
        cb_page_unown(p + 1 + i, next_state[i]);
    if (with_p)
        st.act &= ~(unsigned)ACT_PROTECT;
    if (home == FETCH_RETRY) {
        /* the move waits for this page: let it in.  At most 10 ms, then
         * the access faults (and asks) again: a node that has just moved
         * the page away is told the same by a new home that has not taken
         * it in yet (its cache still names the old one), and waiting for
         * an arrival then would wait for one that never comes */
        cb_page_unown(p, s);
        struct timespec ts = { 0, 100000 };
        for (int i = 0; i < 100 && cb_home_cached(p) != cb.self; i++)
            /* not owning the page meanwhile; the raw call, as libc's
             * nanosleep is a cancellation point: a pending cancellation
             * must not unwind the thread out of a fault */
            syscall(SYS_nanosleep, &ts, NULL);
        return 0; /* the access faults again */
    }
    if (home < 0) {
        cb_page_unown(p, s);
        return -1;
    }
    if (st.act & ACT_LIST)
        cb_plist_push(&cb.dirty, p);
    if (st.act & ACT_PROTECT && is_home && write && s & PG_SHARED) {
        int dir = p > 0 && p + 1 < cb.npages && cb_home_cached(p + 1) == cb.self &&
                  (atomic_load(&cb.pst[p + 1]) & PG_ACC) == PG_RW ? -1 : 1;
        uint32_t opened, k = open_near(p, dir, next_state, &opened);
        uint64_t lo = dir > 0 ? p : p - k;
        cb_page_protect(lo, 1 + k, PROT_READ | PROT_WRITE);
        cb_populate(cb_app_page(lo), (1 + k) * cb.ps, true);
        for (uint32_t i = 0; i < k; i++)
            cb_page_unown(p + (uint64_t)dir * (i + 1), next_state[i]);
        STAT_ADD(written_ahead, opened);
    } else if (st.act & ACT_PROTECT) {
        cb_page_protect(p, 1, cb_page_prot(st.next));
        if (st.next & PG_ACC)
            cb_populate(cb_app_page(p), cb.ps, (st.next & PG_ACC) == PG_RW);
    }
    if (counted) {
        if (write) STAT_ADD(write_faults, 1);
        else STAT_ADD(read_faults, 1);
        if (is_home) STAT_ADD(home_faults, 1);
    }
    cb_page_unown(p, st.next);
    if (pulled && home != cb.self)
        cb_after_fetch(p); /* what came may be newer than the notices acquired */
    return 0;
}

static void say(const char *s) { if (syscall(SYS_write, 2, s, strlen(s)) < 0) {} }

/* the program's disposition now: a copy taken whole (a reader overtaken by
 * a ring's worth of changes while it copied reads again) */
static struct sigaction app_now(void)
{
    for (;;) {
        unsigned c = atomic_load(&app_cur);
        struct sigaction a = app_segv[c % APP_SLOTS];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load(&app_cur) - c < APP_SLOTS - 1)
            return a;
    }
}

static const struct sigaction app_dfl = { .sa_handler = SIG_DFL };

/* The program's disposition as it is (returned), next written in its place
 * if not NULL and, where expect is not NULL, the current one is still
 * expect's handler and flags.  Signals blocked meanwhile: no handler of
 * this thread comes in between. */
static struct sigaction app_swap(const struct sigaction *next, const struct sigaction *expect)
{
    sigset_t all, was;
    sigfillset(&all);
    libc_sigmask(SIG_BLOCK, &all, &was);
    cb_mutex_lock(&app_mu);
    unsigned c = atomic_load(&app_cur);
    struct sigaction cur = app_segv[c % APP_SLOTS];
    if (next && (!expect || (cur.sa_handler == expect->sa_handler &&
                             cur.sa_flags == expect->sa_flags))) {
        app_segv[(c + 1) % APP_SLOTS] = *next;
        atomic_store(&app_cur, c + 1);
    }
    cb_mutex_unlock(&app_mu);
    libc_sigmask(SIG_SETMASK, &was, NULL);
    return cur;
}

/* A SIGSEGV sent to the thread while the program's mask blocks it: sent
 * again when the program unblocks it (cb_sigmask). */
static __thread bool segv_pending CB_TLS;
/* the program's SIGSEGV handler is running on this thread (on_segv's
 * frame is below it on the signal stack) */
static __thread bool in_app_segv CB_TLS;

bool cb_in_segv_handler(void)
{
    if (!in_app_segv)
        return false;
    stack_t ss;
    if (syscall(SYS_sigaltstack, NULL, &ss) == 0 && !(ss.ss_flags & SS_ONSTACK))
        in_app_segv = false; /* it left by a jump */
    return in_app_segv;
}

/* what the program would have had without us.  A fault (si_code > 0): its
 * handler, with the mask and flags it asked for (SIGSEGV itself left
 * unblocked, as everywhere); for the default, SIG_IGN (a fault cannot be
 * ignored) or SIGSEGV blocked in the program's mask, the default action,
 * which the access, executed again, meets.  A SIGSEGV sent by kill, raise
 * or sigqueue: ignored, kept pending while the program blocks it, its
 * handler, or the default action now. */
static void to_program(int sig, siginfo_t *si, void *ucv)
{
    struct sigaction a = app_now();
    bool sent = si->si_code <= 0;
    if (sent && a.sa_handler == SIG_IGN)
        return;
    if (sent && cb_segv_blocked) {
        segv_pending = true;
        return;
    }
    if (!cb_sig_is_handler(&a) || (!sent && cb_segv_blocked)) {
        libc_sigaction(SIGSEGV, &app_dfl, NULL);
        if (sent || si->si_code == SI_KERNEL) /* nothing to execute again */
            syscall(SYS_tgkill, cb_pid(), gettid(), SIGSEGV);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) /* unless another thread changed it meanwhile */
        app_swap(&app_dfl, &a);
    /* the interrupted code's mask and the handler's, as the kernel would
     * have set them (not the signals the runtime's handler held off) */
    sigset_t m, was;
    sigorset(&m, &((ucontext_t *)ucv)->uc_sigmask, &a.sa_mask);
    sigdelset(&m, SIGSEGV);
    libc_sigmask(SIG_SETMASK, &m, &was);
    bool nested = in_app_segv;
    in_app_segv = true;
    if (a.sa_flags & SA_SIGINFO)
        a.sa_sigaction(sig, si, ucv);
    else
        a.sa_handler(sig);
    in_app_segv = nested;
    libc_sigmask(SIG_SETMASK, &was, NULL);
    /* a mask the handler put in its context for the return */
    sigdelset(&((ucontext_t *)ucv)->uc_sigmask, SIGSEGV);
}

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    if (cb_in_gas(a) && si->si_code == SEGV_ACCERR && !cb.forked) { /* a child has no runtime */
        int saved = errno;
        ucontext_t *uc = ucv;
        bool write = uc->uc_mcontext.gregs[REG_ERR] & 2;
        if (cb_fault(cb_page_of(a), write) == 0) {
            errno = saved;
            return;
        }
        say("cables: segmentation fault: access to unallocated shared memory\n");
    }
    /* a child of fork has the pages its node held at the fork, no others */
    if (cb_in_gas(a) && si->si_code == SEGV_ACCERR && cb.forked)
        say("cables: segmentation fault in a child of fork: a shared page its node did not hold "
            "at the fork (the child has no runtime to fetch it)\n");
    to_program(sig, si, ucv);
}

static void held_set(sigset_t *set)
{
    uint64_t h = atomic_load(&app_handled);
    sigemptyset(set);
    for (int s = 1; s <= 64; s++)
        if (h >> (s - 1) & 1)
            sigaddset(set, s);
}

/* the runtime's SIGSEGV handler, with the signals held off as they are
 * now (app_mu held, or before any thread of the program's) */
static void segv_install(struct sigaction *old)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK; /* stack.c */
    held_set(&sa.sa_mask);
    if (libc_sigaction(SIGSEGV, &sa, old))
        cb_die("cannot install the SIGSEGV handler: %s", strerror(errno));
}

/* sig's disposition is now act's (a program's sigaction) */
static void held_note(int sig, const struct sigaction *act)
{
    static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
        if (sig == faults[i])
            return;
    uint64_t bit = 1ull << (sig - 1);
    bool handled = cb_sig_is_handler(act);
    if (handled == !!(atomic_load(&app_handled) & bit))
        return;
    cb_mutex_lock(&app_mu);
    handled ? atomic_fetch_or(&app_handled, bit) : atomic_fetch_and(&app_handled, ~bit);
    segv_install(NULL);
    cb_mutex_unlock(&app_mu);
}

bool cb_app_signals_hold(sigset_t *was)
{
    if (!atomic_load_explicit(&app_handled, memory_order_relaxed))
        return false;
    sigset_t set;
    held_set(&set);
    return libc_sigmask(SIG_BLOCK, &set, was) == 0;
}

/* set less the signals `was` blocked already: those a SIG_BLOCK of set
 * blocked anew (true if any) */
static bool drop_blocked(sigset_t *set, const sigset_t *was)
{
    bool any = false;
    for (int s = 1; s <= 64; s++)
        if (sigismember(set, s) == 1 && sigismember(was, s) == 1)
            sigdelset(set, s);
        else
            any |= sigismember(set, s) == 1;
    return any;
}

bool cb_app_signals_block(sigset_t *added)
{
    if (!atomic_load_explicit(&app_handled, memory_order_relaxed))
        return false;
    sigset_t was;
    held_set(added);
    return !libc_sigmask(SIG_BLOCK, added, &was) && drop_blocked(added, &was);
}

void cb_app_signals_unblock(const sigset_t *added) { libc_sigmask(SIG_UNBLOCK, added, NULL); }

bool cb_app_signals_hold_taking(int also, sigset_t *was, sigset_t *take)
{
    if (!atomic_load_explicit(&app_handled, memory_order_relaxed))
        return false;
    held_set(take);
    sigaddset(take, also);
    if (libc_sigmask(SIG_BLOCK, take, was))
        return false;
    drop_blocked(take, was);
    sigaddset(take, also);
    return true;
}

bool cb_app_signals_let(const sigset_t *was)
{
    sigset_t held, pending; /* the kernel's (sigpending adds the master's kept ones) */
    held_set(&held);
    bool any = false;
    if (syscall(SYS_rt_sigpending, &pending, _NSIG / 8) == 0)
        for (int s = 1; s <= 64 && !any; s++)
            any = sigismember(&held, s) == 1 && sigismember(&pending, s) == 1 &&
                  sigismember(was, s) != 1;
    libc_sigmask(SIG_SETMASK, was, NULL);
    return any;
}

int cb_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    libc_signal_fns();
    if (sig == cb_rsig && sig) /* the runtime's (rsys.c), past the program's SIGRTMAX */
        return errno = EINVAL, -1;
    if (!atomic_load(&fault_ready)) /* before the runtime's start, or without it */
        return libc_sigaction(sig, act, old);
    struct sigaction copy; /* read before any signal is blocked: it may be on a shared page */
    if (act)
        copy = *act;
    if (sig == SIGSEGV) {
        struct sigaction cur = app_swap(act ? &copy : NULL, NULL);
        if (old)
            *old = cur;
        return 0;
    }
    bool had = false;
    if (act) {
        had = sigismember(&copy.sa_mask, SIGSEGV) == 1;
        sigdelset(&copy.sa_mask, SIGSEGV);
    }
    if (libc_sigaction(sig, act ? &copy : NULL, old))
        return -1;
    if (sig < 1 || sig > 64)
        return 0;
    uint64_t bit = 1ull << (sig - 1);
    if (old && atomic_load(&mask_had_segv) & bit)
        sigaddset(&old->sa_mask, SIGSEGV);
    if (act) {
        had ? atomic_fetch_or(&mask_had_segv, bit) : atomic_fetch_and(&mask_had_segv, ~bit);
        held_note(sig, &copy);
    }
    return 0;
}

int cb_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    libc_signal_fns();
    if (!atomic_load(&fault_ready))
        return libc_sigmask(how, set, old);
    bool was = cb_segv_blocked, now = was;
    sigset_t s;
    if (set) {
        s = *set;
        bool has = sigismember(&s, SIGSEGV) == 1;
        sigdelset(&s, SIGSEGV);
        if (how == SIG_BLOCK)
            now = was || has;
        else if (how == SIG_UNBLOCK)
            now = was && !has;
        else if (how == SIG_SETMASK)
            now = has;
        else
            return EINVAL;
    }
    cb_segv_blocked = now; /* before: a signal the call lets in sees the new mask */
    sigset_t o; /* the kernel writes here, not into the program's (a shared page) */
    int rc = libc_sigmask(how, set ? &s : NULL, &o);
    if (rc) {
        cb_segv_blocked = was;
        return rc;
    }
    if (set)
        cb_psig_mask(how, &s, &o);
    if (was)
        sigaddset(&o, SIGSEGV);
    if (old)
        *old = o;
    if (!now && segv_pending) {
        segv_pending = false;
        syscall(SYS_tgkill, cb_pid(), gettid(), SIGSEGV);
    }
    return 0;
}

void cb_fault_after_fork(void)
{
    app_mu = (cb_mutex_t)CB_MUTEX_INIT;
    segv_pending = false; /* a child starts with no signal pending */
    in_app_segv = false;
}

/* s has a handler of UCX's (libucs installs them as it is loaded) */
static bool ucx_handler(int s)
{
    struct sigaction h;
    Dl_info in;
    return libc_sigaction(s, NULL, &h) == 0 && cb_sig_is_handler(&h) &&
           dladdr((void *)(uintptr_t)h.sa_handler, &in) && in.dli_fname &&
           strstr(in.dli_fname, "libucs");
}

/* The dispositions the program starts with, as it would alone: those of
 * the launcher's start (CABLES_SIGIGN, the signals cables-run found
 * ignored; mpirun ignores SIGQUIT, and its children inherit that), and
 * the defaults where UCX took a signal: SIGHUP for its debug mode
 * (UCX_DEBUG_SIGNO; start.c sets it to 0 for a node process it starts
 * again), SIGILL, SIGSEGV, SIGBUS and SIGFPE to print a backtrace (unless
 * UCX_ERROR_SIGNALS or UCX_HANDLE_ERRORS asks for that).  Before, a
 * relinked program ignored SIGQUIT, SIGHUP only made UCX verbose, the
 * program found handlers on the fault signals, and its own faults printed
 * UCX's backtrace. */
static void start_dispositions(void)
{
    const char *ign = getenv("CABLES_SIGIGN");
    char *end = NULL;
    unsigned long long mask = ign ? strtoull(ign, &end, 16) : 0;
    bool known = ign && *ign && end && !*end;
    struct sigaction h, dfl = { .sa_handler = SIG_DFL };
    for (int s = 1; s < 32 && known; s++) {
        if (s == SIGKILL || s == SIGSTOP || s == SIGSEGV || libc_sigaction(s, NULL, &h))
            continue;
        bool want_ign = mask & (1ull << (s - 1));
        if (want_ign && h.sa_handler == SIG_DFL)
            libc_sigaction(s, &(struct sigaction){ .sa_handler = SIG_IGN }, NULL);
        else if (!want_ign && h.sa_handler == SIG_IGN)
            libc_sigaction(s, &dfl, NULL);
    }
    bool ucx_errors = getenv("UCX_ERROR_SIGNALS") || getenv("UCX_HANDLE_ERRORS"); /* asked for */
    static const int errs[] = { SIGILL, SIGSEGV, SIGBUS, SIGFPE };
    for (size_t i = 0; i < sizeof errs / sizeof *errs && !ucx_errors; i++)
        if (ucx_handler(errs[i]))
            libc_sigaction(errs[i], &dfl, NULL);
    if (!getenv("UCX_DEBUG_SIGNO") && ucx_handler(SIGHUP))
        libc_sigaction(SIGHUP, &dfl, NULL);
}

void cb_fault_init(void)
{
    libc_signal_fns();
    start_dispositions();
    segv_install(&app_segv[0]);
    /* handlers installed before (libraries' constructors, UCX, Open MPI)
     * leave SIGSEGV unblocked too */
    for (int s = 1; s <= 64; s++) {
        struct sigaction h;
        if (s == SIGSEGV || s == SIGKILL || s == SIGSTOP || libc_sigaction(s, NULL, &h) ||
            sigismember(&h.sa_mask, SIGSEGV) != 1)
            continue;
        sigdelset(&h.sa_mask, SIGSEGV);
        if (libc_sigaction(s, &h, NULL) == 0)
            atomic_fetch_or(&mask_had_segv, 1ull << (s - 1));
    }
    /* started with SIGSEGV blocked: the program's mask says so, the kernel's not */
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    sigset_t cur;
    if (libc_sigmask(SIG_UNBLOCK, &segv, &cur) == 0 && sigismember(&cur, SIGSEGV) == 1)
        cb_segv_blocked = true;
    atomic_store(&fault_ready, true);
}
