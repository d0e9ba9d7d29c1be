/* hlrc.c: home-based lazy release consistency.  A release diffs every copy
 * written in the interval against its twin, sends the diffs to the homes,
 * and closes the interval with its write notices once they are applied (a
 * lock's release goes on meanwhile: "Intervals closing").  An acquire
 * invalidates the copies named by the notices it has not applied yet.
 * Knowledge of notices (the log, vc) and their application (applied) are
 * kept apart: the communication thread may learn notices at any time, but
 * only an acquiring thread invalidates. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "internal.h"

static cb_mutex_t log_mu = CB_MUTEX_INIT;
static cb_wnlog_t wlog[CB_MAX_NODES]; /* interval j + 1 of node m: iv(m, j) */
static cb_vc_t vc;                     /* intervals known: a prefix per node */
static cb_vc_t applied;                /* intervals whose copies we invalidated */
static uint32_t known[CB_MAX_NODES][CB_MAX_NODES]; /* node k knows at least */
static cb_vc_t gc_base; /* every node knows these: dropped (fold) */
static _Atomic uint64_t kept; /* notices (pages) in the log and pend (changed under log_mu) */
static uint64_t kept_peak;    /* the most kept at once (log_mu) */
/* pages named by collected intervals that no thread here had applied (a
 * node whose threads do not acquire: a master whose main waits in a join):
 * each page once, invalidated at the next acquire (log_mu) */
static uint32_t *pend;
static size_t npend;
static bool merged;     /* notices came from elsewhere (else the log may start late) */

static cb_interval_t *iv(int m, uint32_t j) { return &wlog[m].iv[j - wlog[m].off]; }

static void kept_add(int64_t d)
{
    kept += (uint64_t)d;
    if (kept > kept_peak)
        kept_peak = kept;
}

/* words of an interval's notices (cb_interval_t) */
static size_t iv_words(uint32_t npages, uint32_t nmarks) { return npages + 3 * (size_t)nmarks; }

static void log_append(int m, uint32_t npages, uint32_t nmarks, uint32_t *pages)
{
    cb_wnlog_t *l = &wlog[m];
    if (l->n - l->off == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 256;
        l->iv = realloc(l->iv, l->cap * sizeof *l->iv);
        if (!l->iv)
            cb_die("out of memory for write notices");
    }
    l->iv[l->n++ - l->off] = (cb_interval_t){ npages, nmarks, pages };
    vc[m] = l->n;
    kept_add((int64_t)npages + nmarks);
}

/* log_mu held: the intervals below both gc_base and applied go */
static void trim(void)
{
    for (int m = 0; m < atomic_load(&cb.nnodes); m++) {
        cb_wnlog_t *l = &wlog[m];
        uint32_t to = gc_base[m] < applied[m] ? gc_base[m] : applied[m];
        if (to <= l->off)
            continue;
        for (uint32_t j = l->off; j < to; j++) {
            kept -= iv(m, j)->npages + iv(m, j)->nmarks;
            free(iv(m, j)->pages);
        }
        memmove(l->iv, l->iv + (to - l->off), (l->n - to) * sizeof *l->iv);
        l->off = to;
    }
}

void cb_vc_get(uint32_t *out)
{
    cb_mutex_lock(&log_mu);
    memcpy(out, vc, sizeof vc);
    cb_mutex_unlock(&log_mu);
}

void cb_vc_max(uint32_t *dst, const uint32_t *v)
{
    for (int m = 0; m < CB_MAX_NODES; m++)
        if (v[m] > dst[m])
            dst[m] = v[m];
}

void cb_known_update(int k, const uint32_t *v)
{
    cb_mutex_lock(&log_mu);
    cb_vc_max(known[k], v);
    cb_mutex_unlock(&log_mu);
}

void cb_known_get(int k, uint32_t *out)
{
    cb_mutex_lock(&log_mu);
    memcpy(out, known[k], sizeof known[k]);
    cb_mutex_unlock(&log_mu);
}

void *cb_notices_for(int node, size_t *len)
{
    cb_vc_t k;
    cb_known_get(node, k);
    return cb_notices_encode(k, len, NULL);
}

/* [u32 nn][u32 vc[nn]][u32 from[nn]] then per node per interval:
 * [u32 npages][u32 nmarks][u32 pages...][u32 marks... (3 words each)] */
void *cb_notices_encode(const uint32_t *from, size_t *len, uint32_t *vc_out)
{
    cb_mutex_lock(&log_mu);
    uint32_t nn = (uint32_t)atomic_load(&cb.nnodes), f[CB_MAX_NODES];
    size_t n = 4 + 8 * (size_t)nn;
    for (uint32_t m = 0; m < nn; m++) {
        f[m] = from[m] < vc[m] ? from[m] : vc[m];
        if (f[m] < wlog[m].off) /* collected: the receiver knows them */
            f[m] = wlog[m].off;
        for (uint32_t j = f[m]; j < vc[m]; j++)
            n += 8 + 4 * iv_words(iv((int)m, j)->npages, iv((int)m, j)->nmarks);
    }
    uint32_t *b = malloc(n), *q = b;
    if (!b)
        cb_die("out of memory encoding write notices");
    *q++ = nn;
    memcpy(q, vc, 4 * nn); q += nn;
    memcpy(q, f, 4 * nn); q += nn;
    for (uint32_t m = 0; m < nn; m++)
        for (uint32_t j = f[m]; j < vc[m]; j++) {
            cb_interval_t *i = iv((int)m, j);
            size_t w = iv_words(i->npages, i->nmarks);
            *q++ = i->npages;
            *q++ = i->nmarks;
            memcpy(q, i->pages, 4 * w);
            q += w;
        }
    if (vc_out)
        memcpy(vc_out, vc, sizeof vc);
    cb_mutex_unlock(&log_mu);
    *len = n;
    return b;
}

void cb_notices_merge(const void *buf, size_t len, uint32_t *vc_out)
{
    const uint32_t *q = buf, *end = (const uint32_t *)((const uint8_t *)buf + len);
    uint32_t nn = len >= 4 ? *q++ : UINT32_MAX;
    if (nn > CB_MAX_NODES || len < 4 + 8 * (size_t)nn)
        cb_die("node %d: malformed write notices", cb.self);
    const uint32_t *svc = q, *from = q + nn;
    q += 2 * nn;
    uint64_t fresh = 0;
    cb_mutex_lock(&log_mu);
    for (uint32_t m = 0; m < nn; m++) {
        if (from[m] > vc[m] && !merged && (int)m != cb.self && wlog[m].n == 0) {
            /* a node attached after a collection: it holds no copy older
             * than the notices collected; its log starts where these do */
            wlog[m].off = wlog[m].n = vc[m] = applied[m] = from[m];
        }
        if (from[m] > vc[m])
            cb_die("node %d: write notices of node %u from interval %u but only %u known "
                   "(protocol error)", cb.self, m, from[m] + 1, vc[m]);
        for (uint32_t j = from[m]; j < svc[m]; j++) {
            if (end - q < 2)
                cb_die("node %d: truncated write notices", cb.self);
            uint32_t np = q[0], nmk = q[1];
            size_t w = iv_words(np, nmk);
            q += 2;
            if ((size_t)(end - q) < w)
                cb_die("node %d: truncated write notices", cb.self);
            if (j == vc[m] && (int)m != cb.self) {
                uint32_t *pages = malloc(4 * w + 1);
                if (!pages)
                    cb_die("out of memory for write notices");
                memcpy(pages, q, 4 * w);
                log_append((int)m, np, nmk, pages);
                fresh += np + nmk;
            }
            q += w;
        }
    }
    merged = true;
    cb_mutex_unlock(&log_mu);
    STAT_ADD(write_notices_received, fresh);
    if (vc_out) {
        memset(vc_out, 0, sizeof(cb_vc_t));
        memcpy(vc_out, svc, 4 * nn);
    }
}

/* Diffs bound for the homes: records of [u32 page][u32 length][diff
 * bytes], in messages of up to DIFF_MSG_MAX bytes (or one record, for
 * large pages) per home.  Homes acknowledge by page count.  Bounded
 * messages come from (and go back to) malloc's heap: a release's diffs in
 * one message (16 MB in RADIX) took fresh pages in three buffers (ours,
 * the sent copy, the receiver's), each first touch a page fault (11-14 us
 * a page here), and the home applied nothing until the last diff was
 * made; now it applies them while later ones are made. */
enum { DIFF_MSG_MAX = 64 << 10 };
typedef struct { uint8_t *buf; size_t len, cap; } diff_batch_t;

static void diff_send(diff_batch_t *b, int home, cb_waiter_t *acks)
{
    if (b->len) {
        cb_msg_t m = { .type = M_DIFF, .waiter = (uintptr_t)acks };
        cb_send(home, &m, b->buf, b->len, true);
    } else {
        free(b->buf);
    }
    *b = (diff_batch_t){ 0 };
}

/* false if the page had nothing to diff (its twin is refreshed either way) */
static bool diff_add(diff_batch_t *batch, int home, uint64_t p, cb_waiter_t *acks)
{
    diff_batch_t *b = &batch[home];
    size_t rec = 8 + cb_diff_max(cb.ps);
    if (b->len && b->len + rec > b->cap)
        diff_send(b, home, acks);
    if (!b->buf) {
        b->cap = rec > DIFF_MSG_MAX ? rec : DIFF_MSG_MAX;
        if (!(b->buf = malloc(b->cap)))
            cb_die("out of memory for diffs");
    }
    size_t n = cb_diff_encode_refresh(cb_proto_page(p), cb_twin(p), cb.ps,
                                      b->buf + b->len + 8);
    if (n == 0)
        return false;
    uint32_t hdr[2] = { (uint32_t)p, (uint32_t)n };
    memcpy(b->buf + b->len, hdr, 8);
    b->len += 8 + n;
    atomic_fetch_add(&acks->pending, 1);
    atomic_fetch_add(&cb.diffs_out, 1);
    STAT_ADD(diffs_sent, 1);
    STAT_ADD(diff_bytes_sent, n);
    return true;
}

/* one batch per home (CB_MAX_NODES of them, or NULL: none), sent and freed */
static void diff_send_all(diff_batch_t *batch, cb_waiter_t *acks)
{
    for (int h = 0; batch && h < CB_MAX_NODES; h++)
        diff_send(&batch[h], h, acks);
    free(batch);
}

/* A home page's twin is a checksum of its contents (cb.sums), taken
 * under the page's ownership: a home never diffs its pages, it only tells
 * whether they changed since (DESIGN.md: a home page has no twin); so is a
 * shared stack page's, compared at every release.  XXH3
 * (libxxhash), seeded per run: a page hashes in a fraction of a
 * microsecond, where a twin costs a copy into memory of its own, 4 KiB a
 * page, fresh (and cleared by the kernel) in every run: FFT's homes twinned
 * 16384 pages a node while serving them.  A write that races the hash
 * changes the next one.
 * A diff that lands on the page after its checksum was taken marks it
 * stale (cb.sum_stale): the home's own writes since may put back what the
 * checksum saw (a word another node changed, written back), so the next
 * comparison notices the page whatever its checksum says.  The flag is
 * taken before the page is hashed, and a diff sets it before its words
 * land and after: a diff that races the hash leaves it set.  A notice too
 * many for pages other nodes write (their writers notice them anyway). */
/* p's contents here hashed as node's checksums are (its seed) */
static uint64_t page_sum_as(uint64_t p, int node)
{
    return XXH3_64bits_withSeed(cb_proto_page(p), cb.ps, cb.sum_seeds[node]);
}

static uint64_t page_sum(uint64_t p) { return page_sum_as(p, cb.self); }

/* Own writes since the last release, told apart from diffs (for
 * cb_release_due_beside): cb.expect[p] is what home page p hashes to if
 * only diffs changed it since a release took its checksum.  Kept once
 * this node was first asked (expect_on): a diff that finds the page as
 * expected moves the expectation past its words (two hashes a page),
 * else leaves it behind for good (the node wrote it).  A write of this
 * node's threads that races a diff's words may be taken for the diff's:
 * then a release is not asked where it was due (the order these pulls
 * give polled flags is a best effort: README, Known limits); the release
 * itself still notices the page (cb.sum_stale). */
static _Atomic bool expect_on;

static void expect_set(uint64_t p, uint64_t h)
{
    atomic_store_explicit(&cb.expect[p], h, memory_order_relaxed);
}

static bool as_expected(uint64_t p)
{
    return page_sum(p) == atomic_load_explicit(&cb.expect[p], memory_order_relaxed);
}

void cb_sum_take(uint64_t p)
{
    cb_bit_clear(cb.sum_stale, p);
    cb.sums[p] = page_sum(p);
    expect_set(p, cb.sums[p]);
}

/* p changed since its last checksum (or went stale), which is taken anew */
static bool sum_changed(uint64_t p)
{
    bool stale = cb_bit_take(cb.sum_stale, p);
    uint64_t h = page_sum(p);
    if (h == cb.sums[p] && !stale)
        return false;
    cb.sums[p] = h;
    return true;
}

/* sum_changed, in a release: what it took is also what only diffs change */
static bool sum_retaken(uint64_t p)
{
    bool changed = sum_changed(p);
    expect_set(p, cb.sums[p]);
    return changed;
}

/* Another node read home page p in place since the last look (rma.c
 * marks it first): at a release, a page whose checksum says unchanged
 * gets a mark notice all the same, for a write undone within the interval
 * (x = 1 read in place, then x = 0 again) leaves the checksum as it was
 * but the reader's copy stale.  The notice carries the checksum: a reader
 * whose copy hashes to it holds what the home held then, and keeps it
 * (marks_check); any other copy goes.  Taken after the page is hashed: a
 * mark that comes later is of a read that sees at least what the hash saw,
 * and stays for the next look.  The fence: the interval's writes are
 * visible before the mark is looked at (else a read marked meanwhile could
 * miss them). */
static bool read_marked(uint64_t p)
{
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&cb.read_marks[p], memory_order_relaxed);
}

static bool read_in_place(uint64_t p)
{
    return read_marked(p) && atomic_exchange(&cb.read_marks[p], 0);
}

/* a mark notice of p, whose checksum is sum, to mk (cb_interval_t) */
static void mark_put(uint32_t *mk, uint32_t *nmk, uint64_t p, uint64_t sum)
{
    uint32_t *w = mk + 3 * (size_t)(*nmk)++;
    w[0] = (uint32_t)p;
    w[1] = (uint32_t)sum;
    w[2] = (uint32_t)(sum >> 32);
}

/* Page numbers in increasing order: an LSD radix sort, 11 bits a pass, as
 * many passes as the largest number needs; nothing to do for a list in
 * order already.  A release sorts its written pages (25000 a node at each
 * of FFT's barriers), where a heapsort's cache misses were 1.5% of FFT's
 * time at 2 nodes.  Not qsort: under ASan, its interceptor unpoisons "the
 * thread's stack" through pthread_getattr_np, which fails on our threads'
 * GAS stacks. */
static void sort_pages(uint32_t *a, size_t n)
{
    enum { BITS = 11, DIGITS = 1 << BITS };
    uint32_t max = 0;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        sorted = sorted && (i == 0 || a[i - 1] <= a[i]);
        max = a[i] > max ? a[i] : max;
    }
    if (sorted)
        return;
    uint32_t *tmp = malloc(4 * (n + DIGITS));
    if (!tmp)
        cb_die("out of memory sorting %zu pages", n);
    uint32_t *count = tmp + n, *src = a, *dst = tmp;
    for (unsigned shift = 0; shift < 32 && max >> shift; shift += BITS) {
        memset(count, 0, 4 * DIGITS);
        for (size_t i = 0; i < n; i++)
            count[src[i] >> shift & (DIGITS - 1)]++;
        for (uint32_t d = 0, at = 0; d < DIGITS; d++) {
            uint32_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[src[i] >> shift & (DIGITS - 1)]++] = src[i];
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, 4 * n);
    free(tmp);
}

/* The pages of interval i appended to a (n of cap), and its marks' pages
 * too if with_marks (each then taken for a write) */
static void pages_add(uint32_t **a, size_t *n, size_t *cap, const cb_interval_t *i,
                      bool with_marks)
{
    size_t add = i->npages + (with_marks ? i->nmarks : 0);
    if (*n + add > *cap) {
        *cap = (*n + add) * 2;
        if (!(*a = realloc(*a, 4 * *cap)))
            cb_die("out of memory applying write notices");
    }
    if (i->npages) /* an interval of mark notices only has none */
        memcpy(*a + *n, i->pages, 4 * (size_t)i->npages);
    *n += i->npages;
    for (uint32_t k = 0; with_marks && k < i->nmarks; k++)
        (*a)[(*n)++] = i->pages[i->npages + 3 * k];
}

/* a sorted, each page once; returns how many */
static size_t pages_unique(uint32_t *a, size_t n)
{
    sort_pages(a, n);
    size_t nu = 0;
    for (size_t i = 0; i < n; i++)
        if (nu == 0 || a[i] != a[nu - 1])
            a[nu++] = a[i];
    return nu;
}

/* Idle grace.  A written page (copy or shared home page) stays writable
 * and listed while releases find it unwritten, up to its grace: each such
 * release costs a comparison with its twin (well under a microsecond), but
 * protecting it and its next write fault cost two protection changes, tens
 * of microseconds each on a VM (README).  The grace is IDLE_GRACE releases,
 * doubled each time the page is written again after it was protected, up
 * to IDLE_GRACE << IDLE_LEVELS: a page written every few barriers (RADIX
 * writes each array every other digit, two barriers a digit) stays
 * writable, one written once is protected after a few releases.  8 to
 * start: a comparison costs about 1/40 of a protection change and a
 * fault, and a home page shared while it was being written (RADIX's
 * boundary pages bring 15 neighbours each) is written again 6 releases
 * later; with 4 it was protected just before (4000 pages a node, 100 ms).
 * cb.idle[p]: idle releases so far (bits 0-4), level (5-6), protected
 * since last written (7); only under release_mu. */
enum { IDLE_GRACE = 8, IDLE_LEVELS = 1, IDLE_COUNT = 31, IDLE_PROTECTED = 128 };

/* A snapshot release (cb_release_snapshot: made for a pull by another
 * thread than the program's, which go on writing) first owns every page
 * it lists and write-protects the writable ones, then diffs them: the
 * interval holds each thread's writes up to one point of its program.
 * Before, it diffed page after page while they ran: a flag written after
 * its data, on a page diffed later, went with this release and the data
 * with the next (a poller elsewhere saw the flag, then stale data).
 * Those that stay writable are opened again at its end (under release_mu). */
static struct {
    bool on;
    uint32_t n;
    uint32_t *page, *state; /* as many as the pages listed */
} reopen;

/* p, owned, goes to state next (unless writable in a snapshot: at its end) */
static void let_go(uint64_t p, uint32_t next)
{
    if (!reopen.on || (next & PG_ACC) != PG_RW) {
        cb_page_unown(p, next);
        return;
    }
    reopen.page[reopen.n] = (uint32_t)p;
    reopen.state[reopen.n++] = next;
}

/* p (owned, its release state next) was found unwritten: true if it
 * stays writable for now, then listed for the next release and unowned */
static bool idle_kept(uint64_t p, uint32_t next)
{
    unsigned b = cb.idle[p], level = b >> 5 & 3;
    if ((b & IDLE_COUNT) + 1 < (unsigned)IDLE_GRACE << level) {
        cb.idle[p] = (uint8_t)(b + 1);
        cb_plist_push(&cb.dirty, p);
        let_go(p, next);
        return true;
    }
    cb.idle[p] = (uint8_t)(IDLE_PROTECTED | level << 5);
    return false;
}

/* p (owned, its release state next) was found unwritten: kept writable
 * within its grace (UINT32_MAX: not held), else protected with its
 * neighbours and its state returned, held until the run ends, when it is
 * compared once more (a write that raced); PG_TWIN marks a home page */
static uint32_t idle_unwritten(cb_prot_run_t *run, uint64_t p, uint32_t next, bool is_home)
{
    if (idle_kept(p, next))
        return UINT32_MAX;
    uint32_t s = cb_page_next(next, is_home, EV_IDLE).next;
    cb_prot_run(run, p, cb_page_prot(s));
    return is_home ? s | PG_TWIN : s;
}

static void idle_written(uint64_t p)
{
    unsigned b = cb.idle[p], level = b >> 5 & 3;
    if (b & IDLE_PROTECTED && level < IDLE_LEVELS)
        level++;
    cb.idle[p] = (uint8_t)(level << 5);
}

void cb_twin_take(uint64_t p)
{
    memcpy(cb_twin(p), cb_proto_page(p), cb.ps);
    STAT_ADD(twins, 1);
}

/* A snapshot's pages (the n listed at *list, then those listed
 * meanwhile): each owned, and write-protected if writable (not a
 * stack's: a write there by its thread is left out or in), as they come;
 * then the pages listed meanwhile (a thread that went on to write pages
 * not listed before), until none are: every write left out then (its page
 * protected, or listed after the last look) comes after every write taken
 * in.  SNAP_LOOKS at most (a thread that writes new pages on and on).
 * *list becomes a malloc'd copy, in page order; their states in *pre. */
enum { SNAP_LOOKS = 8 };
static uint32_t snapshot_take(uint32_t **list, uint32_t n, uint32_t **pre)
{
    uint32_t *all = NULL, total = 0;
    cb_prot_run_t run = { 0 };
    for (int look = 1; n; look++) {
        if (!(all = realloc(all, 4 * ((size_t)total + n))))
            cb_die("out of memory closing an interval");
        memcpy(all + total, *list, 4 * (size_t)n); /* (the list's buffer is used again) */
        for (uint32_t i = total; i < total + n; i++) {
            uint32_t s = cb_page_own(all[i]);
            /* not a stack's: always writable (page.c), and this thread's
             * own is written here */
            if ((s & PG_ACC) == PG_RW && !(s & PG_STACK))
                cb_prot_run(&run, all[i], PROT_READ);
        }
        cb_prot_run_end(&run);
        total += n;
        n = look < SNAP_LOOKS ? cb_plist_take(&cb.dirty, list) : 0; /* none dropped */
    }
    sort_pages(all, total); /* (none twice: each was owned) */
    if (!(*pre = malloc(4 * ((size_t)total + 1))))
        cb_die("out of memory closing an interval");
    for (uint32_t i = 0; i < total; i++) /* as cb_page_own gave them */
        (*pre)[i] = atomic_load(&cb.pst[all[i]]) & ~(uint32_t)(PG_BUSY | PG_WAITERS);
    *list = all;
    return total;
}

/* Intervals closing.  An interval's notices are logged (log_append: from
 * then on they can leave this node) only once the homes have applied its
 * diffs: a node that applies a notice may read the page from its home at
 * once, by a remote read that no message orders after the diff.  A
 * release leaves its interval closing with the count of its diffs not
 * applied yet (acks.pending), and it is logged by that thread if they all
 * are, else by the communication thread at the last ack.  A release waits
 * until its interval is logged, except a lock's (cb_release_lazy): it goes
 * on at once, and the lock's token waits instead if another node asks for
 * it before then (lock.c, need; BARNES at 2 nodes waited about 40 us at
 * 7500 of its 19000 unlocks a node: 13% of its time went).  An acquire
 * waits for it too: the copies it drops may be read again from their
 * homes, which must have this node's writes first.  Each interval has a
 * ticket, in order; cb_closed(t): every interval up to ticket t is logged.
 * A release begins once the intervals before it are logged (release_mu
 * held): one interval at most is closing, so two diffs of a page are never
 * on their way (a home that defers one, its home not known yet, could apply
 * the later first), and cb.diffs_out, which home moves wait on, comes back
 * to 0. */
typedef struct closing {
    cb_waiter_t acks;          /* .closing; .pending: diffs not applied yet */
    uint32_t nw, nmk, *pages;  /* its notices, as log_append takes them */
    uint64_t ticket;
} closing_t;
static cb_mutex_t cq_mu = CB_MUTEX_INIT;
static closing_t *cq_open;           /* the interval closing (cq_mu) */
static uint64_t cq_issued;           /* tickets handed out (cq_mu) */
static _Atomic uint64_t cq_logged;   /* intervals logged up to this ticket */
static _Atomic uint32_t cq_seq;      /* futex word, bumped at each logging */

bool cb_closed(uint64_t ticket) { return atomic_load(&cq_logged) >= ticket; }

/* cq_mu held: the interval closing is logged if its diffs are all
 * applied; true if it was */
static bool closing_log(void)
{
    closing_t *e = cq_open;
    if (!e || atomic_load(&e->acks.pending) != 0)
        return false;
    cq_open = NULL;
    cb_mutex_lock(&log_mu);
    log_append(cb.self, e->nw, e->nmk, e->pages);
    applied[cb.self] = vc[cb.self];
    cb_mutex_unlock(&log_mu);
    atomic_store(&cq_logged, e->ticket);
    free(e);
    return true;
}

/* after closing_log logged one (cq_mu released): its waiters go on */
static void closing_logged(void)
{
    atomic_fetch_add(&cq_seq, 1);
    cb_futex_wake(&cq_seq);
    cb_lock_closed();
}

void cb_closing_acked(cb_waiter_t *w, uint32_t n)
{
    cb_mutex_lock(&cq_mu);
    bool logged = atomic_fetch_sub(&w->pending, n) == n && closing_log();
    cb_mutex_unlock(&cq_mu);
    if (logged)
        closing_logged();
}

/* until every interval up to ticket t is logged */
static void closed_wait(uint64_t t)
{
    for (;;) {
        uint32_t seq = atomic_load(&cq_seq);
        if (cb_closed(t))
            return;
        cb_futex_wait(&cq_seq, seq);
    }
}

/* the last ticket handed out */
static uint64_t closing_last(void)
{
    cb_mutex_lock(&cq_mu);
    uint64_t t = cq_issued;
    cb_mutex_unlock(&cq_mu);
    return t;
}

void cb_closed_wait_all(void) { closed_wait(closing_last()); }

/* libc's memory, not the shim's heap (in the GAS): the communication
 * thread writes its acks */
static closing_t *closing_new(void)
{
    bool app = cb_app_thread;
    cb_app_thread = false;
    closing_t *e = calloc(1, sizeof *e);
    cb_app_thread = app;
    if (!e)
        cb_die("out of memory closing an interval");
    e->acks.closing = true;
    return e;
}

/* e (its diffs sent) is the interval closing; its ticket */
static uint64_t closing_begin(closing_t *e)
{
    cb_mutex_lock(&cq_mu);
    if (cq_open)
        cb_die("node %d: two intervals closing at once (protocol error)", cb.self);
    uint64_t t = e->ticket = ++cq_issued;
    cq_open = e;
    bool logged = closing_log(); /* (e may be gone) */
    cb_mutex_unlock(&cq_mu);
    if (logged)
        closing_logged();
    return t;
}

/* the interval's writes to their homes, and its notices (release_mu held);
 * snapshot: as the comment of reopen says.  Its ticket (the last one
 * handed out if it had no notices), maybe not logged yet */
static uint64_t close_interval(bool snapshot)
{
    atomic_store(&cb.release_ns, cb_now_ns());
    uint32_t *list, *pre = NULL;
    cb_claims_wait(); /* a claim lost is a copy whose writes go in this release */
    uint32_t *homed, n = cb_plist_take(&cb.dirty, &list), nh = cb_plist_take(&cb.homed, &homed);
    if (snapshot)
        n = snapshot_take(&list, n, &pre);
    if (n == 0 && nh == 0) {
        free(snapshot ? list : NULL);
        free(pre);
        return closing_last();
    }
    closing_t *e = closing_new();
    cb_waiter_t *acks = &e->acks;
    diff_batch_t *batch = calloc(CB_MAX_NODES, sizeof *batch);
    /* the interval's written pages, and the pages it homed here; its mark
     * notices (read_marked) */
    uint32_t *pages = malloc(4 * ((size_t)n + nh)), nw = 0;
    uint32_t *mk = malloc(12 * (size_t)n + 1), nmk = 0;
    if (!pages || !batch || !mk)
        cb_die("out of memory closing an interval");
    /* pages to write-protect (written home pages, copies no longer
     * written) are protected with their neighbours, one call a run, and
     * stay owned until then: their states wait in held[] */
    sort_pages(list, n);
    uint32_t *held = malloc(4 * (size_t)n + 1);
    if (!held)
        cb_die("out of memory closing an interval");
    cb_prot_run_t run = { 0 };
    if (snapshot) {
        reopen.page = malloc(4 * (size_t)n + 1);
        reopen.state = malloc(4 * (size_t)n + 1);
        if (!reopen.page || !reopen.state)
            cb_die("out of memory closing an interval");
        reopen.on = true;
        reopen.n = 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t p = list[i];
        uint32_t s = pre ? pre[i] : cb_page_own(p);
        int home = cb_home_cached(p);
        bool written = true;
        cb_page_step_t st = cb_page_next(s, home == cb.self, EV_RELEASE);
        held[i] = UINT32_MAX;
        if (home == cb.self && st.next & PG_TWIN) {
            /* a shared home page stays writable: written in this interval
             * if it took a write fault (no checksum yet) or its checksum changed */
            if (!(st.act & ACT_TWIN) && cb_bit(cb.quiet, p)) {
                /* noticed, and no copy has left since (quiet): its writes
                 * since need no notice, nor a checksum.  Every copy
                 * elsewhere is older than that notice, and an acquire that
                 * must see these writes follows this node's release of it,
                 * so applies it first and drops the copy.  Copies come
                 * from the home only: fetched (share() ends quiet) or read
                 * in place (marked: a mark notice with its checksum now).
                 * A claim lost (a copy the home never served) is made only
                 * by a node that has not applied the notice yet (an
                 * applied notice forbids the claim: directory.c), so it
                 * too goes when that node applies it. */
                if (read_in_place(p)) {
                    cb_bit_clear(cb.quiet, p);
                    cb_sum_take(p);
                    mark_put(mk, &nmk, p, cb.sums[p]);
                }
                cb_plist_push(&cb.dirty, p);
                let_go(p, st.next);
                continue;
            }
            if (st.act & ACT_TWIN) {
                cb_sum_take(p);
            } else if (!sum_retaken(p)) {
                /* unwritten (if protected now, its marks are looked at
                 * below, after the last comparison) */
                uint64_t sum = cb.sums[p];
                held[i] = idle_unwritten(&run, p, st.next, true);
                if (held[i] == UINT32_MAX && read_in_place(p))
                    mark_put(mk, &nmk, p, sum);
                continue;
            }
            read_in_place(p); /* noticed anyway: the marks so far are answered */
            if (cb.cfg.quiet)
                cb_bit_set(cb.quiet, p);
            idle_written(p);
            cb_plist_push(&cb.dirty, p);
            pages[nw++] = (uint32_t)p;
            cb_stat_page_written(p, cb.self);
            let_go(p, st.next);
            continue;
        }
        if (st.act & ACT_PROTECT) { /* a private home page: no diff */
            cb_prot_run(&run, p, cb_page_prot(st.next));
            held[i] = st.next;
            continue;
        }
        if (st.act & ACT_DIFF) {
            if (!diff_add(batch, home, p, acks)) { /* not written since the last release */
                held[i] = idle_unwritten(&run, p, st.next, false);
                continue;
            }
            idle_written(p);
        }
        if (s & PG_STACK && home == cb.self) {
            written = sum_retaken(p);
            if (read_in_place(p) && !written)
                mark_put(mk, &nmk, p, cb.sums[p]);
        }
        if (st.act & ACT_LIST)
            cb_plist_push(&cb.dirty, p); /* still written: next interval's list */
        if (written)
            pages[nw++] = (uint32_t)p;
        if (written && home == cb.self)
            cb_stat_page_written(p, cb.self);
        let_go(p, st.next);
    }
    cb_prot_run_end(&run);
    for (uint32_t i = 0; i < n; i++) {
        if (held[i] == UINT32_MAX)
            continue;
        uint64_t p = list[i];
        int home = cb_home_cached(p);
        /* a page found unchanged: noticed if a write raced that comparison
         * (compared again now that no thread can write it) */
        if (home != cb.self) {
            if (diff_add(batch, home, p, acks))
                pages[nw++] = (uint32_t)p;
            cb_twin_drop(p); /* write-protected now */
        } else {
            bool written = !(held[i] & PG_TWIN) || cb_bit_take(cb.sum_stale, p) ||
                           page_sum(p) != cb.sums[p];
            bool read = read_in_place(p);
            if (written) {
                cb_stat_page_written(p, cb.self);
                pages[nw++] = (uint32_t)p;
            } else if (read) {
                mark_put(mk, &nmk, p, cb.sums[p]);
            }
        }
        cb_page_unown(p, held[i] & ~(uint32_t)PG_TWIN);
    }
    free(held);
    if (snapshot) { /* its diffs taken: the pages that stay writable open again */
        for (uint32_t k = 0; k < reopen.n; k++)
            cb_prot_run(&run, reopen.page[k], PROT_READ | PROT_WRITE);
        cb_prot_run_end(&run);
        for (uint32_t k = 0; k < reopen.n; k++)
            cb_page_unown(reopen.page[k], reopen.state[k]);
        reopen.on = false;
        free(reopen.page);
        free(reopen.state);
        free(pre);
        free(list);
    }
    diff_send_all(batch, acks);
    memcpy(pages + nw, homed, 4 * (size_t)nh); /* a page may be in both: noticed twice */
    nw += nh;
    if (nw + nmk == 0 && atomic_load(&acks->pending) == 0) {
        free(pages);
        free(mk);
        free(e);
        return closing_last();
    }
    if (nmk) {
        if (!(pages = realloc(pages, 4 * iv_words(nw, nmk))))
            cb_die("out of memory closing an interval");
        memcpy(pages + nw, mk, 12 * (size_t)nmk);
    }
    free(mk);
    e->nw = nw;
    e->nmk = nmk;
    e->pages = pages;
    STAT_ADD(write_notices_made, nw + nmk);
    return closing_begin(e);
}

/* Frees of shared blocks that another node hands out again (heap.c's
 * arenas, the master's GAS ranges) go out after the next release that
 * begins once they are queued, with this node's notices: no diff of a
 * block's old writes reaches a home after its new owner's writes, and the
 * new owner can acquire what this node wrote.  One message per node and
 * type: [u64 n][u64 address x n][notices]. */
typedef struct { int node; uint32_t type; uint64_t addr; } freed_t;
static cb_mutex_t freed_mu = CB_MUTEX_INIT;
static freed_t *freed;
static size_t nfreed, capfreed;

void cb_send_freed(int node, uint32_t type, uint64_t addr, bool now)
{
    cb_mutex_lock(&freed_mu);
    if (nfreed == capfreed) {
        capfreed = capfreed ? capfreed * 2 : 16;
        freed = realloc(freed, capfreed * sizeof *freed);
        if (!freed)
            cb_die("out of memory for the freed blocks");
    }
    freed[nfreed++] = (freed_t){ node, type, addr };
    cb_mutex_unlock(&freed_mu);
    if (now)
        cb_release();
}

uint64_t cb_freed_decode(const void *p, size_t len, uint32_t *vc_out)
{
    uint64_t n;
    if (len < 8 || (memcpy(&n, p, 8), (len - 8) / 8 < n))
        cb_die("node %d: malformed list of freed blocks", cb.self);
    cb_notices_merge((const uint8_t *)p + 8 * (1 + n), len - 8 * (1 + n), vc_out);
    return n;
}

uint64_t cb_freed_addr(const void *p, uint64_t i)
{
    uint64_t a;
    memcpy(&a, (const uint8_t *)p + 8 * (1 + i), 8);
    return a;
}

/* grouped by node and type without sorting (libc's qsort may malloc: the
 * shim's, in an application thread) */
static void send_freed(freed_t *f, size_t n)
{
    while (n) {
        int node = f[0].node;
        uint32_t type = f[0].type;
        size_t k = 0, rest = 0;
        for (size_t i = 0; i < n; i++)
            k += f[i].node == node && f[i].type == type;
        size_t nl;
        void *notices = cb_notices_for(node, &nl);
        uint64_t *b = malloc(8 * (1 + k) + nl);
        if (!b)
            cb_die("out of memory for the freed blocks");
        b[0] = k;
        for (size_t i = 0, x = 1; i < n; i++)
            if (f[i].node == node && f[i].type == type)
                b[x++] = f[i].addr;
            else
                f[rest++] = f[i];
        n = rest;
        memcpy(b + 1 + k, notices, nl);
        free(notices);
        cb_msg_t m = { .type = type };
        if (cb_node_up(node)) /* else its blocks went with it (heap.c) */
            cb_send(node, &m, b, 8 * (1 + k) + nl, true);
        else
            free(b);
    }
}

__thread int cb_syncing CB_TLS;
void (*cb_release_hook)(void);

static uint64_t release(bool snapshot, bool lazy)
{
    cb_syncing++;
    cb_mutex_lock(&cb.release_mu);
    cb_closed_wait_all(); /* (Intervals closing) */
    cb_mutex_lock(&freed_mu); /* those queued before this release began */
    freed_t *go = freed;
    size_t ngo = nfreed;
    freed = NULL;
    nfreed = capfreed = 0;
    cb_mutex_unlock(&freed_mu);
    uint64_t t = close_interval(snapshot);
    if (!lazy || ngo) /* (the frees go with its notices) */
        closed_wait(t);
    send_freed(go, ngo);
    free(go);
    cb_mutex_unlock(&cb.release_mu);
    cb_syncing--;
    return t;
}

void cb_release(void)
{
    if (cb_release_hook && cb_app_thread)
        cb_release_hook();
    release(false, false);
}

uint64_t cb_release_lazy(void)
{
    if (cb_release_hook && cb_app_thread)
        cb_release_hook();
    return release(false, cb.cfg.lazy_acks);
}

void cb_release_snapshot(void) { release(true, false); }

static bool plist_any(cb_plist_t *l)
{
    cb_mutex_lock(&l->mu);
    bool any = l->n > 0;
    cb_mutex_unlock(&l->mu);
    return any;
}

/* blocks freed here wait for this node's next release (cb_send_freed) */
static bool freed_pending(void)
{
    cb_mutex_lock(&freed_mu);
    bool any = nfreed > 0;
    cb_mutex_unlock(&freed_mu);
    return any;
}

/* at most this many pages hashed to answer: more, and the release is due */
enum { BESIDE_MAX = 1024 };

bool cb_release_due_beside(uint64_t p)
{
    atomic_store(&expect_on, true);
    if (freed_pending() || plist_any(&cb.homed))
        return true;
    uint32_t list[BESIDE_MAX], n;
    cb_mutex_lock(&cb.dirty.mu);
    n = cb.dirty.n;
    if (n <= BESIDE_MAX)
        memcpy(list, cb.dirty.list[cb.dirty.cur], n * sizeof *list);
    cb_mutex_unlock(&cb.dirty.mu);
    if (n > BESIDE_MAX)
        return true;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t q = list[i];
        uint32_t s = atomic_load(&cb.pst[q]);
        bool home = cb_home_cached(q) == cb.self;
        if (q == p || (home && !(s & PG_SHARED)))
            continue; /* p came with its writes; no copy of a private page is out */
        if (!home || !(s & PG_TWIN))
            return true; /* a written copy (its diff is due), or a page changing */
        if (!cb_bit(cb.quiet, q) && !as_expected(q))
            return true; /* (a quiet page's copies all go at the notice it had) */
    }
    return false;
}

bool cb_release_due(uint64_t age_ns)
{
    return (freed_pending() || plist_any(&cb.dirty) || plist_any(&cb.homed)) &&
           cb_now_ns() - atomic_load(&cb.release_ns) >= age_ns;
}

/* Refreshed copies: a readable copy named by a notice that this node read
 * again after each of its last invalidations (cb.hot, set by the fault
 * path) is read anew from its home in place, by remote read, instead of
 * being invalidated: no protection change now, no fault and no request
 * later (OCEAN reads its neighbours' edge rows after every barrier).  Its
 * mapping stays readable while the data comes in: a thread here that has
 * not acquired may only read words nobody changed since (else its program
 * has a data race), and those are rewritten with the same bytes.  It stays
 * hot for CABLES_REFRESH (8) such acquires; then one invalidation tells
 * again if it is still read.  A copy just fetched is hot for 4 (fault.c).
 * Only where fetches read in place too (CABLES_FETCH=get, a transport
 * that can).  Pages are read in runs (contiguous), up to REFRESH_RUNS
 * runs of one home and move epoch together, with one read of the epoch
 * after them (a transpose's copies are half rows: half the remote reads
 * of a run at a time); runs that cannot be read are invalidated after all.
 * A run of LONG_RUN pages or more is invalidated instead: one protection
 * change, and read on demand (fault.c: fetch_read, no message) in reads of
 * up to CB_MAX_FETCH_PAGES pages a fault, if it is read at all before its
 * next notice (FFT at 2 nodes refreshed its copies at 3 barriers of 4 in
 * vain, 12 ms each, whole half-matrices written by their homes twice
 * between two reads). */
enum { REFRESH_RUNS = 64, LONG_RUN = 64 };
typedef struct {
    uint64_t rec;
    int home;
    uint32_t nruns;
    size_t i0[REFRESH_RUNS]; /* run k's first page is pages[i0[k]] */
    uint64_t first[REFRESH_RUNS];
    uint32_t n[REFRESH_RUNS];
} refresh_t;

static bool hot_copy(uint64_t p, int home)
{
    return home >= 0 && home != cb.self && cb.cfg.fetch_get &&
           atomic_load_explicit(&cb.hot[p], memory_order_relaxed) &&
           atomic_load_explicit(&cb.served[p], memory_order_relaxed) >> 32 == (uint64_t)home + 1 &&
           cb_rma_ready(home);
}

/* The runs of one home and move epoch, read together (one check of the
 * epoch after them all).  Their pages stay owned, their states in held[]
 * (as they were, or invalidated if the read failed). */
static void refresh_end(refresh_t *r, uint32_t *held)
{
    if (!r->nruns)
        return;
    uint64_t first_read[REFRESH_RUNS];
    uint32_t n_read[REFRESH_RUNS], nread = 0;
    for (uint32_t k = 0; k < r->nruns; k++)
        if (r->n[k] < LONG_RUN) {
            first_read[nread] = r->first[k];
            n_read[nread++] = r->n[k];
        }
    bool ok = nread && cb_rma_read_served(r->home, nread, first_read, n_read, r->rec, false);
    for (uint32_t k = 0; k < r->nruns; k++) {
        uint64_t first = r->first[k];
        uint32_t n = r->n[k];
        bool short_run = n < LONG_RUN; /* read now, not on demand */
        if (ok && short_run) {
            for (uint32_t j = 0; j < n; j++)
                atomic_fetch_sub_explicit(&cb.hot[first + j], 1, memory_order_relaxed);
            STAT_ADD(pages_refreshed, n);
            continue;
        }
        /* long, or a page moved at the home, or it cannot be read:
         * invalidated (the latter two read again from the home's answer) */
        cb_page_protect(first, n, PROT_NONE);
        for (uint32_t j = 0; j < n; j++) {
            held[r->i0[k] + j] = cb_page_next(held[r->i0[k] + j], false, EV_INVALIDATE).next;
            if (short_run) /* a long run stays served: read in place on demand */
                atomic_store_explicit(&cb.served[first + j], 0, memory_order_relaxed);
        }
        STAT_ADD(invalidations, n);
    }
    r->nruns = 0;
}

static void refresh_add(refresh_t *r, size_t i, uint64_t p, int home, uint32_t *held)
{
    uint64_t rec = atomic_load_explicit(&cb.served[p], memory_order_relaxed);
    uint32_t k = r->nruns;
    bool same = k && home == r->home && rec == r->rec;
    if (same && p == r->first[k - 1] + r->n[k - 1] && r->n[k - 1] < CB_MAX_FETCH_PAGES) {
        r->n[k - 1]++;
        return;
    }
    if (!same || k == REFRESH_RUNS) {
        refresh_end(r, held);
        r->home = home;
        r->rec = rec;
    }
    k = r->nruns++;
    r->i0[k] = i;
    r->first[k] = p;
    r->n[k] = 1;
}

/* A mark notice of node m's (mark_put) */
typedef struct { uint64_t sum; uint32_t page; int node; } mark_t;

static void marks_add(mark_t **a, size_t *n, size_t *cap, const cb_interval_t *i, int m)
{
    if (*n + i->nmarks > *cap) {
        *cap = (*n + i->nmarks) * 2;
        if (!(*a = realloc(*a, sizeof **a * *cap)))
            cb_die("out of memory applying write notices");
    }
    for (uint32_t k = 0; k < i->nmarks; k++) {
        const uint32_t *w = i->pages + i->npages + 3 * (size_t)k;
        (*a)[(*n)++] = (mark_t){ w[1] | (uint64_t)w[2] << 32, w[0], m };
    }
}

/* The pages named by mark notices whose copies here are not what their
 * homes held at those releases (a readable copy hashing to the notice's
 * checksum is kept: copies_confirmed), appended to pages */
static void marks_check(uint32_t **pages, size_t *n, size_t *cap, const mark_t *mk, size_t nmk)
{
    for (size_t k = 0; k < nmk; k++) {
        uint64_t p = mk[k].page;
        uint32_t s = cb_page_own(p);
        bool same = (s & PG_ACC) == PG_RO && cb_home_cached(p) == mk[k].node &&
                    page_sum_as(p, mk[k].node) == mk[k].sum;
        cb_page_unown(p, s);
        if (same) {
            STAT_ADD(copies_confirmed, 1);
            continue;
        }
        if (*n == *cap && !(*pages = realloc(*pages, 4 * (*cap = *cap * 2 + 64))))
            cb_die("out of memory applying write notices");
        (*pages)[(*n)++] = (uint32_t)p;
    }
}

__thread uint32_t cb_acquires CB_TLS;

/* a readable copy this node writes (its writes not all diffed yet) */
static bool written_copy(uint64_t p)
{
    return (atomic_load(&cb.pst[p]) & PG_ACC) == PG_RW && cb_home_cached(p) != cb.self;
}

static void acquire(const uint32_t *target, bool pull)
{
    cb_acquires += !pull;
    cb_syncing++;
    cb_mutex_lock(&cb.release_mu);
    /* the copies it drops may be read again from their homes at once:
     * this node's writes get there first (Intervals closing) */
    cb_closed_wait_all();
    size_t np = 0, cap = 0, nmk = 0, capmk = 0;
    uint32_t *pages = NULL;
    mark_t *mk = NULL;
    cb_mutex_lock(&log_mu);
    if (npend) { /* collected before an acquire here: applied first */
        pages = pend;
        np = cap = npend;
        kept_add(-(int64_t)npend);
        pend = NULL;
        npend = 0;
    }
    for (int m = 0; m < atomic_load(&cb.nnodes); m++) {
        if (m == cb.self || target[m] <= applied[m])
            continue;
        if (target[m] > vc[m])
            cb_die("node %d: acquire of node %d's interval %u before its notice (protocol error)",
                   cb.self, m, target[m]);
        for (uint32_t j = applied[m]; j < target[m]; j++) {
            pages_add(&pages, &np, &cap, iv(m, j), false);
            marks_add(&mk, &nmk, &capmk, iv(m, j), m);
        }
        applied[m] = target[m];
    }
    trim();
    cb_mutex_unlock(&log_mu);
    marks_check(&pages, &np, &cap, mk, nmk);
    free(mk);
    /* no claim here of a page written before (directory.c); claims in
     * flight answered first: one lost is a copy these notices may name */
    cb_claims_forbid(pages, np);
    cb_claims_wait();

    /* in page order, once each: neighbours share a protection change, and
     * a page is owned once while its run waits */
    size_t nu = pages_unique(pages, np);
    /* A pull's acquire (propagate.c) that drops a copy this node writes
     * releases first: that copy's diff goes with the rest of the node's
     * writes, not ahead of those made before it (a flag and its ack on one
     * page: the flag reached the poller before the data written first) */
    for (size_t i = 0; pull && i < nu; i++)
        if (written_copy(pages[i])) {
            closed_wait(close_interval(true)); /* the program's threads run on */
            break;
        }
    cb_waiter_t *acks = cb_waiter_new();
    uint32_t *held = malloc(4 * (nu ? nu : 1)); /* states of the pages owned until the run ends */
    if (!held)
        cb_die("out of memory applying write notices");
    cb_prot_run_t run = { 0 };
    refresh_t fresh = { 0 };
    for (size_t i = 0; i < nu; i++) {
        uint64_t p = pages[i];
        uint32_t s = cb_page_own(p);
        int home = cb_home_cached(p);
        cb_page_step_t st = cb_page_next(s, home == cb.self, EV_INVALIDATE);
        held[i] = UINT32_MAX;
        /* not for a pull: a copy read now may hold writes of intervals
         * not acquired yet, which a poller must not read before their
         * notices (propagate.c: only a fetch is followed by a pull) */
        if (!pull && st.act == ACT_PROTECT && (s & PG_ACC) == PG_RO && hot_copy(p, home)) {
            held[i] = s;
            refresh_add(&fresh, i, p, home, held);
            continue;
        }
        if (st.act & ACT_PROTECT)
            STAT_ADD(invalidations, 1);
        if (pull && st.act & ACT_PROTECT) /* its next fetch is followed by a pull */
            cb_bit_set(cb.pulled, p);
        if (st.act & ACT_PROTECT) {
            /* a dirty copy (ACT_DIFF, marked by PG_TWIN, which copies never
             * have) is diffed once protected: its own writes go to the home */
            cb_prot_run(&run, p, PROT_NONE);
            held[i] = st.next | (st.act & ACT_DIFF ? PG_TWIN : 0);
            continue;
        }
        cb_page_unown(p, st.next);
    }
    cb_prot_run_end(&run);
    refresh_end(&fresh, held);
    diff_batch_t *batch = NULL; /* only if a dirty copy was invalidated */
    for (size_t i = 0; i < nu; i++) {
        if (held[i] == UINT32_MAX || !(held[i] & PG_TWIN))
            continue;
        if (!batch && !(batch = calloc(CB_MAX_NODES, sizeof *batch)))
            cb_die("out of memory applying write notices");
        diff_add(batch, cb_home_cached(pages[i]), pages[i], acks);
        cb_twin_drop(pages[i]);
    }
    diff_send_all(batch, acks);
    /* an invalidated page is fetched again at its next access, maybe by a
     * remote read that no message orders after its diff: it stays owned
     * (its faults wait) until the home has applied this node's writes */
    cb_waiter_wait_pending(acks);
    cb_waiter_free(acks);
    for (size_t i = 0; i < nu; i++)
        if (held[i] != UINT32_MAX)
            cb_page_unown(pages[i], held[i] & ~(uint32_t)PG_TWIN);
    free(held);
    free(pages);
    cb_mutex_unlock(&cb.release_mu);
    cb_syncing--;
}

void cb_acquire(const uint32_t *target) { acquire(target, false); }
void cb_acquire_pull(const uint32_t *target) { acquire(target, true); }


void cb_acquire_from(int node, const void *notices, size_t len)
{
    cb_vc_t v;
    cb_notices_merge(notices, len, v);
    cb_known_update(node, v);
    cb_acquire(v);
}

/* ---- collecting the notice logs ----
 * A node needs an interval's notices until it applied them (its acquire)
 * and no node can need them from it any more.  Each time a node's log grew
 * by CABLES_LOG_GC notices it asks the master for a round (the master
 * itself just starts one).  The master sends every node up the notices it
 * lacks and asks for its vc and the notices the master lacks: then every
 * node knows at least what the master knew when the round began, and the
 * master learns what nodes that synchronize only among themselves made.
 * The least of their vcs and the master's is a base that every node up
 * knows, and that only grows: nobody sends anybody notices below it again
 * (an encode starts at the oldest interval kept, which the receiver
 * knows), so each node drops the intervals below the base; those its
 * threads did not apply yet leave their pages in pend (fold).  A node
 * attached later knows nothing, and holds no copy older than what was
 * collected: its first notices may start above what it knows (merge).  A
 * round during which a node is attached is dropped (and begun again); one
 * that leaves is no longer waited for.  The comm threads only. */
static struct {
    bool on;
    uint32_t gen;
    uint64_t waiting, attached; /* nodes asked; attaches when it began */
    cb_vc_t least;
} round;
static uint64_t kept_after; /* our log after the last round */
static bool asked; /* a node asked for a round (master); we asked for one (the others) */

/* log_mu held: the collected intervals not applied here become pages of
 * pend (each once), applied, and the log drops them (trim).  Their diffs
 * are at the homes (a release waits for them before its notices go out),
 * so a copy invalidated later than its notice asked still gets them. */
static void fold(void)
{
    uint32_t *add = NULL;
    size_t na = 0, cap = 0;
    for (int m = 0; m < atomic_load(&cb.nnodes); m++) {
        uint32_t to = gc_base[m] < vc[m] ? gc_base[m] : vc[m];
        if (m == cb.self || to <= applied[m])
            continue;
        for (uint32_t j = applied[m]; j < to; j++)
            pages_add(&add, &na, &cap, iv(m, j), true);
        applied[m] = to;
    }
    trim();
    if (!na)
        return;
    /* the new pages sorted, then merged with pend (sorted): not the whole
     * of pend sorted again each round, on the communication thread */
    na = pages_unique(add, na);
    uint32_t *all = malloc(4 * (npend + na));
    if (!all)
        cb_die("out of memory collecting write notices");
    size_t i = 0, k = 0, n = 0;
    while (i < npend || k < na) {
        uint32_t v = k == na || (i < npend && pend[i] < add[k]) ? pend[i++] : add[k++];
        if (n == 0 || all[n - 1] != v)
            all[n++] = v;
    }
    free(pend);
    free(add);
    kept_add((int64_t)(n - npend));
    pend = all;
    npend = n;
}

static void gc_apply(const uint32_t *base)
{
    cb_mutex_lock(&log_mu);
    cb_vc_max(gc_base, base);
    fold();
    cb_mutex_unlock(&log_mu);
    kept_after = atomic_load(&kept);
    if (cb.self != 0)
        asked = false; /* the master's: cleared when a round begins */
}

static void round_end(void)
{
    round.on = false;
    if (cb_stats.nodes_attached != round.attached) {
        asked = true; /* a node came meanwhile, unasked: again */
        return;
    }
    for (int n = 1; n < atomic_load(&cb.nnodes); n++)
        if (cb_node_up(n)) {
            cb_msg_t b = { .type = M_GC_BASE };
            cb_send(n, &b, round.least, sizeof round.least, false);
        }
    gc_apply(round.least);
}

void cb_gc_tick(void)
{
    if (!cb.cfg.log_gc || atomic_load(&cb.stopping))
        return;
    uint64_t now = atomic_load_explicit(&kept, memory_order_relaxed);
    if (now < kept_after)
        kept_after = now; /* an acquire applied pend, or a trim */
    bool grew = now >= kept_after + (uint64_t)cb.cfg.log_gc;
    if (cb.self != 0) {
        if (grew && !asked) {
            cb_msg_t a = { .type = M_GC_ASK };
            cb_send(0, &a, NULL, 0, false);
            asked = true;
        }
        return;
    }
    if (round.on || !(grew || asked))
        return;
    for (int n = 1; n < cb.launched; n++)
        if (!cb_node_up(n)) /* not in yet: it must be asked too */
            return;
    asked = false;
    round.on = true;
    round.gen++;
    round.waiting = 0;
    round.attached = cb_stats.nodes_attached;
    cb_vc_get(round.least);
    for (int n = 1; n < atomic_load(&cb.nnodes); n++)
        if (cb_node_up(n)) {
            size_t len;
            void *notices = cb_notices_for(n, &len);
            cb_msg_t q = { .type = M_GC_QUERY, .a = round.gen };
            cb_send(n, &q, notices, len, false);
            free(notices);
            round.waiting |= 1ull << n;
        }
    if (!round.waiting)
        round_end();
}

void cb_gc_node_gone(int node)
{
    if (round.on && round.waiting >> node & 1 && !(round.waiting &= ~(1ull << node)))
        round_end();
}

uint64_t cb_notices_kept(uint64_t *peak)
{
    cb_mutex_lock(&log_mu);
    uint64_t k = kept;
    *peak = kept_peak;
    cb_mutex_unlock(&log_mu);
    return k;
}

/* M_GC_ASK: a node's log grew by CABLES_LOG_GC notices since its last round */
void cb_on_gc_ask(void) { asked = true; }

/* M_GC_QUERY a=round, payload = the master's notices we lack: merged (a
 * node that notices reach no other way still catches up), then reply
 * M_GC_VC a=round with ours that the master lacks (it learns those of
 * nodes that synchronize only among themselves) and our vc */
void cb_on_gc_query(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    cb_notices_merge(p, len, v);
    cb_known_update(0, v);
    size_t rl;
    void *notices = cb_notices_for(0, &rl);
    cb_msg_t r = { .type = M_GC_VC, .a = m->a };
    cb_send(0, &r, notices, rl, false);
    free(notices);
}

void cb_on_gc_vc(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    cb_notices_merge(p, len, v);
    cb_known_update(m->src, v);
    if (!round.on || m->a != round.gen || !(round.waiting >> m->src & 1))
        return;
    for (int k = 0; k < CB_MAX_NODES; k++)
        if (v[k] < round.least[k])
            round.least[k] = v[k];
    if (!(round.waiting &= ~(1ull << m->src)))
        round_end();
}

void cb_on_gc_base(const cb_msg_t *m, const void *p, size_t len)
{
    if (len != sizeof(cb_vc_t))
        cb_die("node %d: malformed collection base from node %d", cb.self, m->src);
    cb_vc_t v;
    memcpy(v, p, sizeof v);
    gc_apply(v);
}

/* ---- at the home (communication thread) ---- */

/* A request for a page this node does not know it is home of: learn the
 * home from the master (the reply fills the cache), then retry. */
static bool home_unknown(const cb_msg_t *m, const void *p, size_t len, uint64_t page)
{
    if (cb_home_cached(page) >= 0)
        return false;
    cb_msg_t q = { .type = M_DIR_LOOKUP, .a = page, .b = 1 };
    cb_send(0, &q, NULL, 0, false);
    cb_defer(m, p, len);
    return true;
}

/* A home page is about to leave as a copy: from now on the home's writes
 * need notices, those after its data is taken (page.c, EV_SHARE).  A page
 * kept writable (PG_TWIN) takes its checksum anew, as its data leaves: a
 * later write that puts back what the last one saw is a change for this
 * copy; a change before it stays to be noticed (stale).  A requester that
 * reads the page itself (FETCH_NO_DATA) marks it first (read_in_place):
 * a write between this hash and that read, put back before the release,
 * gets a mark notice, which drops the copy that saw it.  False if it is
 * busy (the request waits). */
static bool share(uint64_t p)
{
    uint32_t s = atomic_load(&cb.pst[p]);
    if ((s & (PG_SHARED | PG_TWIN)) == PG_SHARED)
        return true;
    if (!cb_page_try_own(p, &s))
        return false;
    if (s & PG_SHARED) {
        if (s & PG_TWIN && cb_bit_take(cb.quiet, p))
            cb_sum_take(p); /* what leaves is all a copy needs */
        else if (s & PG_TWIN && sum_changed(p))
            cb_bit_set(cb.sum_stale, p);
        cb_page_unown(p, s);
        return true;
    }
    cb_page_step_t st = cb_page_next(s, true, EV_SHARE);
    if (st.act & ACT_TWIN)
        cb_sum_take(p);
    if (st.act & ACT_LIST)
        cb_plist_push(&cb.dirty, p);
    cb_page_unown(p, st.next);
    return true;
}

/* A fetch's reply names its home as the home of up to HOME_RUN_MAX pages,
 * and shares up to SHARE_AHEAD after those asked for */
enum { HOME_RUN_MAX = 4096, SHARE_AHEAD = 64 };

/* q is homed here, confirmed (no claim of it pending: it may be another's) */
static bool ours(uint64_t q)
{
    return q < cb.npages && cb_home_cached(q) == cb.self && !cb_claim_pending(q);
}

/* Pages [q, q + n) are all homed here, and leave as copies. */
static bool run_ours(uint64_t q, uint64_t n)
{
    if (q + n > cb.npages)
        return false;
    for (uint64_t i = 0; i < n; i++)
        if (!ours(q + i))
            return false;
    for (uint64_t i = 0; i < n; i++)
        if (!share(q + i))
            return false; /* busy: those shared already only cost notices */
    return true;
}

void cb_on_fetch(const cb_msg_t *m)
{
    uint64_t p = m->a;
    if ((m->b & FETCH_HOW) == FETCH_VIA_DIR) {
        cb_on_fetch_dir(m);
        return;
    }
    if ((m->b & FETCH_HOW) == FETCH_FROM_DIR && cb_home_cached(p) < 0)
        cb_home_set(p, cb.self); /* the directory just made us its home */
    if (p >= cb.npages || home_unknown(m, NULL, 0, p))
        return;
    int h = cb_home_cached(p);
    cb_msg_t r = { .type = M_PAGE, .a = h == cb.self ? PAGE_DATA : PAGE_MOVED,
                   .b = (uint64_t)h, .c = atomic_load(cb.moves) };
    if (h != cb.self) {
        cb_reply(m, &r, NULL, 0, false);
        return;
    }
    if (!share(p)) {
        cb_defer(m, NULL, 0);
        return;
    }
    /* the pages after it that the requester can take, while they are ours */
    uint64_t n = 1;
    while (n < m->c && ours(p + n) && share(p + n))
        n++;
    /* a strided fetch: the whole runs ahead, as far as they are ours */
    uint64_t runs = 1, want = m->d & 0xffff, stride = m->d >> 16;
    if (want > 1 && stride >= m->c)
        while (runs < want && run_ours(p + runs * stride, n))
            runs++;
    /* and how far from p the pages are ours (those before p + n are), so
     * that the requester's first fetches of them come here directly, not
     * through the directory */
    uint64_t mine = n;
    while (mine < HOME_RUN_MAX && ours(p + mine))
        mine++;
    r.d = runs | mine << 32;
    /* with the first, the keys to read the next ones itself (ahead of the
     * reply: they are installed when the requester faults again) */
    static bool keys_sent[CB_MAX_NODES];
    if (!keys_sent[m->src]) {
        keys_sent[m->src] = true;
        size_t klen;
        void *keys = cb_rma_keys(&klen);
        cb_msg_t k = { .type = M_KEYS };
        if (keys)
            cb_send(m->src, &k, keys, klen, true);
    }
    if (m->b & FETCH_NO_DATA) { /* shared: the requester reads them */
        /* and the SHARE_AHEAD pages after them, as far as they are ours:
         * a requester that reads on reads them without asking (RADIX at 2
         * nodes asked once a page group, 100-130 us each, for runs of
         * pages it read whole); not a thread's stack (a shared one is
         * hashed at each release) */
        uint64_t ahead = 0;
        while (runs == 1 && ahead < SHARE_AHEAD && n + ahead < mine &&
               !(atomic_load(&cb.pst[p + n + ahead]) & PG_STACK) && share(p + n + ahead))
            ahead++;
        r.d |= ahead << 16;
        r.a = PAGE_SHARED;
        r.c = (uint32_t)r.c | n << 32 | runs << 48;
        cb_reply(m, &r, NULL, 0, false);
        return;
    }
    /* the pages leave in the reply: marked as a reader in place marks them
     * (rma.c), before their data is read (it is sent from where it lies).
     * A write the home makes meanwhile and undoes before its release
     * leaves the checksum as it was, but is in the copy: the mark notice
     * drops it.  A page kept writable here (PG_TWIN), a thread's stack,
     * or one opened for writing while the reply is on its way. */
    for (uint64_t i = 0; i < runs; i++)
        for (uint64_t j = 0; j < n; j++)
            atomic_store_explicit(&cb.read_marks[p + i * stride + j], 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    if (runs == 1 || stride == n) {
        cb_reply(m, &r, cb_proto_page(p), runs * n * cb.ps, false);
        return;
    }
    size_t run = n * cb.ps;
    uint8_t *b = malloc(runs * run);
    if (!b)
        cb_die("node %d: out of memory serving %llu pages", cb.self,
               (unsigned long long)(runs * n));
    for (uint64_t i = 0; i < runs; i++)
        memcpy(b + i * run, cb_proto_page(p + i * stride), run);
    cb_reply(m, &r, b, runs * run, true);
}

/* A message's diffs land on the home pages in place, one record after
 * another (in page order: a release sorts its pages).  A thread here
 * that polls a plain flag reads them in place too, with no fault and no
 * acquire: one that ran between two records saw the flag new and the data
 * of the pages after it old (flag_publish home: seq shares the first page
 * with the data's start; under load, 1-7 stale rounds of 500 in half the
 * runs).  So while a thread here polls (pulled as a poller within two
 * propagation periods: cb.poll_ns), the message's home pages are owned
 * and inaccessible in the application view while all its records land: a
 * thread here reads all of them or none (a fault on one waits for the
 * page, cb_fault).  If one is busy (a thread here owns it), the message
 * waits (deferred, tried again), as the communication thread never waits
 * for a page.  A program that synchronizes pays nothing: its threads do
 * not poll.  Returns false if the message was deferred; else *own holds
 * the pages owned and their states (n), NULL if none. */
typedef struct { uint64_t p; uint32_t s; } shield_t;

static bool shield_wanted(void)
{
    uint64_t t = atomic_load(&cb.poll_ns);
    return t && cb.cfg.propagate > 0 &&
           cb_now_ns() - t < (uint64_t)(2 * cb.cfg.propagate * 1e9);
}

static void shield_end(shield_t *own, size_t n)
{
    cb_prot_run_t run = { 0 };
    for (size_t i = 0; i < n; i++)
        if ((own[i].s & PG_ACC) != PG_NONE && !(own[i].s & PG_STACK))
            cb_prot_run(&run, own[i].p, cb_page_prot(own[i].s));
    cb_prot_run_end(&run);
    for (size_t i = 0; i < n; i++)
        cb_page_unown(own[i].p, own[i].s);
    free(own);
}

static bool shield_begin(const cb_msg_t *m, const void *d, size_t len, shield_t **own, size_t *n)
{
    const uint8_t *q = d, *end = q + len;
    *own = NULL;
    *n = 0;
    if (!shield_wanted())
        return true;
    shield_t *a = malloc(sizeof *a * ((size_t)(end - q) / 8 + 1));
    if (!a)
        cb_die("node %d: out of memory applying diffs", cb.self);
    size_t k = 0;
    while (end - q >= 8) { /* (a malformed message is told by the caller) */
        uint32_t hdr[2];
        memcpy(hdr, q, 8);
        if ((size_t)(end - q - 8) < hdr[1] || hdr[0] >= cb.npages)
            break;
        uint64_t p = hdr[0];
        q += 8 + hdr[1];
        if (cb_home_cached(p) != cb.self)
            continue;
        uint32_t s;
        if (!cb_page_try_own(p, &s)) {
            bool twice = false; /* (a page twice in one message) */
            for (size_t i = 0; i < k && !twice; i++)
                twice = a[i].p == p;
            if (twice)
                continue;
            shield_end(a, k); /* busy: the message waits */
            cb_defer(m, d, len);
            return false;
        }
        a[k++] = (shield_t){ p, s };
    }
    cb_prot_run_t run = { 0 };
    for (size_t i = 0; i < k; i++)
        if ((a[i].s & PG_ACC) != PG_NONE && !(a[i].s & PG_STACK))
            cb_prot_run(&run, a[i].p, PROT_NONE);
    cb_prot_run_end(&run);
    *own = a;
    *n = k;
    return true;
}

void cb_on_diff(const cb_msg_t *m, const void *d, size_t len)
{
    const uint8_t *q = d, *end = q + len;
    uint64_t applied_here = 0;
    shield_t *own;
    size_t nown;
    if (!shield_begin(m, d, len, &own, &nown))
        return;
    while (q < end) {
        uint32_t hdr[2];
        if (end - q < 8 || (memcpy(hdr, q, 8), (size_t)(end - q - 8) < hdr[1]) ||
            hdr[0] >= cb.npages)
            cb_die("node %d: malformed diff message from node %d", cb.self, m->src);
        uint64_t p = hdr[0];
        size_t rl = 8 + hdr[1];
        int h = cb_home_cached(p);
        size_t plen;
        uint8_t *moving = h != cb.self ? cb_deferred_payload(M_MOVE_PAGE, p, &plen) : NULL;
        if (moving) {
            /* a diff sent to the old home before the page left it, ours
             * (come back) or another node's (forwarded): it belongs to the
             * page waiting here (directory.c, cb_on_move_page), under the
             * writes we made since.  Forwarded back instead, it would go
             * round while that page waits for our own diffs: two moves
             * crossing, each new home with a diff for the other's page,
             * never ended. */
            if (plen != cb.ps || cb_diff_apply(moving, cb.ps, q + 8, hdr[1]))
                cb_die("node %d: malformed diff for a moving page", cb.self);
            applied_here++;
        } else if (h != cb.self) {
            /* the home moved away, or we have not learned we are it yet:
             * that record travels alone, and is acknowledged alone */
            if (!home_unknown(m, q, rl, p))
                cb_forward(h, m, q, rl);
        } else {
            /* its checksum cannot tell these words from the home's own
             * writes: its next comparison notices it (stale), set before
             * they land and again after (a release that took the bit in
             * between hashed the page without them) */
            cb_bit_set(cb.sum_stale, p);
            bool expected = atomic_load(&expect_on) && as_expected(p);
            if (cb_diff_apply(cb_proto_page(p), cb.ps, q + 8, hdr[1]))
                cb_die("node %d: malformed diff for page %llu from node %d", cb.self,
                       (unsigned long long)p, m->src);
            cb_bit_set(cb.sum_stale, p);
            if (expected)
                expect_set(p, page_sum(p));
            STAT_ADD(diffs_applied, 1);
            cb_stat_page_written(p, m->src);
            applied_here++;
        }
        q += rl;
    }
    if (own)
        shield_end(own, nown);
    if (applied_here) {
        cb_msg_t r = { .type = M_DIFF_ACK, .a = applied_here };
        cb_reply(m, &r, NULL, 0, false);
    }
}
