/* barrier.c: a combining-tree barrier over the launched nodes (node i's
 * parent is (i-1)/2); nodes attached later are children of the master.
 * Arrivals are counted up the tree, each report carrying the write notices
 * its subtree made since the last barrier; the release comes down the tree
 * with all of them, and releases the arrivals that met the round, no later
 * one.  Entry is a release, exit an acquire.  State lives in the
 * communication thread. */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "internal.h"

typedef struct bar_waiter { struct bar_waiter *next; cb_waiter_t *w; } bar_waiter_t;

/* arrivals this node reported up, in order: n of them from src (this node's
 * threads, or a child's subtree) */
typedef struct bar_entry { struct bar_entry *next; int src; uint32_t n; } bar_entry_t;

typedef struct {
    uint64_t key;
    uint32_t count, arrived; /* arrived: at the root, reported and not released */
    bar_entry_t *head, *tail; /* arrivals not released yet, oldest first */
    bar_waiter_t *waiters, **wtail; /* this node's threads waiting, oldest first */
    UT_hash_handle hh;
} bar_t;

static bar_t *bars;
static cb_vc_t base; /* the vc of the last barrier release seen here */

static bar_t *bar_get(uint64_t key)
{
    bar_t *s;
    HASH_FIND(hh, bars, &key, sizeof key, s);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            cb_die("node %d: out of memory for a barrier", cb.self);
        s->key = key;
        s->wtail = &s->waiters;
        HASH_ADD(hh, bars, key, sizeof key, s);
    }
    return s;
}

void cables_barrier_init(cables_barrier_t *b, unsigned count)
{
    b->count = count;
    b->reserved = 0;
}

void cables_barrier_wait(cables_barrier_t *b) { cb_barrier_wait(b); }

/* A run of one node that no node can join: its barriers are met in this
 * process, the last thread to come waking the others, without the
 * communication thread (whose wakeups and reply cost 20-100 us a barrier
 * on this VM).  Release and acquire are still made: they are this node's
 * only (no other node holds copies). */
typedef struct local_bar {
    uint64_t key;
    uint32_t arrived;
    cb_waiter_t *waiters; /* linked by next */
    UT_hash_handle hh;
} local_bar_t;
static local_bar_t *local_bars;
static cb_mutex_t local_mu = CB_MUTEX_INIT;

static bool alone(void)
{
    return cb.launched == 1 && cb.cfg.max_nodes <= 1 && atomic_load(&cb.nnodes) == 1;
}

static int local_wait(uint64_t key, uint32_t count)
{
    cb_mutex_lock(&local_mu);
    local_bar_t *s;
    HASH_FIND(hh, local_bars, &key, sizeof key, s);
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            cb_die("node %d: out of memory for a barrier", cb.self);
        s->key = key;
        HASH_ADD(hh, local_bars, key, sizeof key, s);
    }
    if (++s->arrived < count) {
        cb_waiter_t *w = cb_waiter_new();
        w->next = s->waiters;
        s->waiters = w;
        cb_mutex_unlock(&local_mu);
        cb_waiter_wait(w);
        cb_waiter_free(w);
        return 0;
    }
    for (cb_waiter_t *w = s->waiters, *nx; w; w = nx) {
        nx = w->next; /* (w is its thread's once woken) */
        cb_waiter_wake(w);
    }
    s->waiters = NULL;
    s->arrived = 0;
    cb_mutex_unlock(&local_mu);
    return 1; /* the serial thread: the last to come */
}

int cb_barrier_wait(cables_barrier_t *b)
{
    uint32_t count = b->count; /* read through the application view first */
    if (count == 0)
        cb_die("node %d: cables_barrier_wait on a barrier never initialized (count 0)", cb.self);
    uint64_t t0 = cb_now_ns();
    cb_release();
    int serial;
    if (alone()) {
        serial = local_wait((uintptr_t)b, count);
        static const cb_vc_t none; /* no other node's intervals */
        cb_acquire(none);
    } else {
        cb_waiter_t *w = cb_waiter_new();
        cb_msg_t m = { .type = M_BAR_ARRIVE, .a = (uintptr_t)b, .b = count, .c = 1 };
        cb_call(cb.self, &m, NULL, 0, w);
        cb_acquire(w->data);
        free(w->data);
        serial = (int)w->value;
        cb_waiter_free(w);
    }
    STAT_ADD(barriers, 1);
    STAT_ADD(barrier_wait_ns, cb_now_ns() - t0);
    return serial;
}

/* A round releases the arrivals that met it, oldest first, and no others:
 * a thread that arrives for the next round while the release is on its way
 * (more threads than the count use the barrier) waits for that round.  So
 * each node releases the first n of the arrivals it reported up: its own
 * threads' (woken, oldest first) and its children's (each told how many of
 * its own to release).  The round's serial thread
 * (PTHREAD_BARRIER_SERIAL_THREAD) is the first arrival released at the
 * root, found down the tree.  Every child gets each release, with 0 to
 * release if none of its arrivals are in it: it learns the release's vc
 * (base). */
static void release(bar_t *s, uint32_t n, const uint32_t *v, const void *notices, size_t len,
                    bool serial)
{
    uint32_t to[CB_MAX_NODES] = { 0 };
    int first = n && s->head ? s->head->src : -1; /* the source of the first arrival released */
    memcpy(base, v, sizeof base);
    while (n) {
        bar_entry_t *e = s->head;
        if (!e)
            cb_die("node %d: a barrier released more arrivals than reported (protocol error)",
                   cb.self);
        uint32_t k = e->n < n ? e->n : n;
        if (e->src != cb.self) {
            to[e->src] += k;
        } else {
            for (uint32_t i = 0; i < k; i++) {
                bar_waiter_t *x = s->waiters;
                if (!x)
                    cb_die("node %d: a barrier released a thread not waiting (protocol error)",
                           cb.self);
                if (!(s->waiters = x->next))
                    s->wtail = &s->waiters;
                x->w->value = serial && first == cb.self;
                first = first == cb.self ? -1 : first; /* (one serial thread) */
                if (!(x->w->data = malloc(sizeof(cb_vc_t))))
                    cb_die("node %d: out of memory for a barrier", cb.self);
                memcpy(x->w->data, v, sizeof(cb_vc_t));
                cb_waiter_wake(x->w);
                free(x);
            }
        }
        n -= k;
        if ((e->n -= k) == 0) {
            if (!(s->head = e->next))
                s->tail = NULL;
            free(e);
        }
    }
    int kids[CB_MAX_NODES], nk = 0;
    if (cb.self < cb.launched)
        for (int c = 2 * cb.self + 1; c <= 2 * cb.self + 2 && c < cb.launched; c++)
            kids[nk++] = c;
    if (cb.self == 0)
        for (int c = cb.launched; c < atomic_load(&cb.nnodes); c++)
            if (cb_node_up(c))
                kids[nk++] = c;
    for (int i = 0; i < nk; i++) {
        int c = kids[i];
        cb_msg_t r = { .type = M_BAR_RELEASE, .a = s->key, .c = serial && first == c, .d = to[c] };
        if (c < cb.launched) {
            cb_send(c, &r, notices, len, false);
            continue;
        }
        /* an attached node may not hold the last release's vc: its first
         * notices came with its first thread, from whichever node made it,
         * which may not have had that release yet (its merge would find
         * notices from beyond what it holds).  Its own: from what it is
         * known to hold. */
        size_t nl;
        void *n = cb_notices_for(c, &nl);
        cb_send(c, &r, n, nl, true);
    }
}

/* M_BAR_ARRIVE a=key b=count c=arrivals; from self: waiter; from a child:
 * payload = its subtree's notices */
void cb_on_bar_arrive(const cb_msg_t *m, const void *p, size_t len)
{
    bar_t *s = bar_get(m->a);
    if (s->tail && s->tail->src == m->src) {
        s->tail->n += (uint32_t)m->c;
    } else {
        bar_entry_t *e = malloc(sizeof *e);
        if (!e)
            cb_die("node %d: out of memory for a barrier", cb.self);
        *e = (bar_entry_t){ .src = m->src, .n = (uint32_t)m->c };
        if (s->tail) s->tail->next = e; else s->head = e;
        s->tail = e;
    }
    if (m->src == cb.self && m->waiter) {
        bar_waiter_t *x = malloc(sizeof *x);
        if (!x)
            cb_die("node %d: out of memory for a barrier", cb.self);
        *x = (bar_waiter_t){ .w = (cb_waiter_t *)(uintptr_t)m->waiter };
        *s->wtail = x;
        s->wtail = &x->next;
    }
    if (len)
        cb_notices_merge(p, len, NULL);
    s->count = (uint32_t)m->b;
    size_t nl;
    if (cb.self != 0) {
        void *n = cb_notices_encode(base, &nl, NULL);
        cb_msg_t up = { .type = M_BAR_ARRIVE, .a = m->a, .b = m->b, .c = m->c };
        cb_send(cb.self < cb.launched ? (cb.self - 1) / 2 : 0, &up, n, nl, true);
        return;
    }
    if ((s->arrived += (uint32_t)m->c) < s->count)
        return;
    s->arrived -= s->count;
    cb_vc_t v; /* exactly what goes down: a local release may follow at once */
    void *n = cb_notices_encode(base, &nl, v);
    release(s, s->count, v, n, nl, true);
    free(n);
}

/* M_BAR_RELEASE a=key c=the serial thread is in it d=arrivals released */
void cb_on_bar_release(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    cb_notices_merge(p, len, v);
    release(bar_get(m->a), (uint32_t)m->d, v, p, len, m->c);
}
