/* barrier.c: a combining-tree barrier over the launched nodes (node i's
 * parent is (i-1)/2); nodes attached later are children of the master.  Arrivals are counted up the tree, each report carrying the
 * write notices its subtree made since the last barrier; the release comes
 * down the tree with all of them.  Entry is a release, exit an acquire.
 * State lives in the communication thread. */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "internal.h"

typedef struct bar_waiter { struct bar_waiter *next; cb_waiter_t *w; } bar_waiter_t;

typedef struct {
    uint64_t key;
    uint32_t count, arrived; /* arrived: counted here, not yet reported up */
    uint64_t kids;           /* children that reported this round (bit k: node k) */
    bar_waiter_t *waiters;
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
        s->key = key;
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

/* The round's serial thread (PTHREAD_BARRIER_SERIAL_THREAD): the root's
 * first waiter, or, if the root has none, one found down the tree through
 * the children that reported arrivals. */
static void release_to(bar_t *s, int c, const void *notices, size_t len, bool *serial)
{
    bool mine = *serial && s->kids >> c & 1;
    if (mine)
        *serial = false;
    cb_msg_t r = { .type = M_BAR_RELEASE, .a = s->key, .c = mine };
    cb_send(c, &r, notices, len, false);
}

static void release_down(bar_t *s, const void *notices, size_t len, bool serial)
{
    if (cb.self < cb.launched)
        for (int c = 2 * cb.self + 1; c <= 2 * cb.self + 2 && c < cb.launched; c++)
            release_to(s, c, notices, len, &serial);
    if (cb.self == 0)
        for (int c = cb.launched; c < atomic_load(&cb.nnodes); c++)
            if (cb_node_up(c))
                release_to(s, c, notices, len, &serial);
    s->kids = 0;
}

/* returns whether a local thread took the serial role */
static bool wake_all(bar_t *s, const uint32_t *v, bool serial)
{
    memcpy(base, v, sizeof base);
    bool took = serial && s->waiters;
    for (bar_waiter_t *x = s->waiters, *nx; x; x = nx) {
        nx = x->next;
        x->w->value = serial && x == s->waiters;
        x->w->data = malloc(sizeof(cb_vc_t));
        memcpy(x->w->data, v, sizeof(cb_vc_t));
        cb_waiter_wake(x->w);
        free(x);
    }
    s->waiters = NULL;
    return took;
}

/* M_BAR_ARRIVE a=key b=count c=arrivals; from self: waiter; from a child:
 * payload = its subtree's notices */
void cb_on_bar_arrive(const cb_msg_t *m, const void *p, size_t len)
{
    bar_t *s = bar_get(m->a);
    if (m->src == cb.self && m->waiter) {
        bar_waiter_t *x = malloc(sizeof *x);
        x->w = (cb_waiter_t *)(uintptr_t)m->waiter;
        x->next = s->waiters;
        s->waiters = x;
    }
    if (m->src != cb.self)
        s->kids |= 1ull << m->src;
    if (len)
        cb_notices_merge(p, len, NULL);
    s->count = (uint32_t)m->b;
    s->arrived += (uint32_t)m->c;
    size_t nl;
    if (cb.self != 0) {
        void *n = cb_notices_encode(base, &nl, NULL);
        cb_msg_t up = { .type = M_BAR_ARRIVE, .a = m->a, .b = m->b, .c = s->arrived };
        s->arrived = 0;
        cb_send(cb.self < cb.launched ? (cb.self - 1) / 2 : 0, &up, n, nl, true);
        return;
    }
    if (s->arrived < s->count)
        return;
    s->arrived -= s->count;
    cb_vc_t v; /* exactly what goes down: a local release may follow at once */
    void *n = cb_notices_encode(base, &nl, v);
    bool serial = !wake_all(s, v, true);
    release_down(s, n, nl, serial);
    free(n);
}

void cb_on_bar_release(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    cb_notices_merge(p, len, v);
    bar_t *s = bar_get(m->a);
    bool serial = !wake_all(s, v, m->c) && m->c;
    release_down(s, p, len, serial);
}
