/* lock.c: cluster locks, a distributed queue.  The manager (the master)
 * knows only the tail of each lock's queue and forwards a request to it;
 * the token then goes from holder to next holder directly, carrying the
 * write notices the acquirer lacks.  A node keeps the token after a release
 * until someone else asks, so re-acquiring on the same node is local.
 * Local threads queue in FIFO order; a remote request that arrived is
 * served before later local ones (fair between nodes). */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "internal.h"


typedef struct {
    uint64_t key;
    bool token, held, requested;
    int next_node;
    cb_vc_t next_vc;
    cb_waiter_t *qhead, *qtail; /* local waiters; data: the vc to acquire, if granted from afar */
    UT_hash_handle hh;
} lk_t;

typedef struct { uint64_t key; int tail; UT_hash_handle hh; } lk_tail_t;

static cb_mutex_t lk_mu = CB_MUTEX_INIT;
static lk_t *locks;      /* this node's view of each lock, under lk_mu */
static lk_tail_t *tails; /* manager: comm thread only */

static lk_t *lk_get(uint64_t key)
{
    lk_t *s;
    HASH_FIND(hh, locks, &key, sizeof key, s);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            cb_die("out of memory for a lock");
        s->key = key;
        s->next_node = -1;
        HASH_ADD(hh, locks, key, sizeof key, s);
    }
    return s;
}

static void send_request(uint64_t key)
{
    cb_vc_t v;
    cb_vc_get(v);
    cb_msg_t m = { .type = M_LOCK_REQ, .a = key, .b = (uint64_t)cb.self };
    cb_send(0, &m, v, sizeof v, false);
}

/* under lk_mu: the token leaves for the node queued after us */
static void grant_next(lk_t *s)
{
    size_t len;
    void *n = cb_notices_encode(s->next_vc, &len, NULL);
    cb_msg_t g = { .type = M_LOCK_GRANT, .a = s->key };
    cb_send(s->next_node, &g, n, len, true);
    s->token = false;
    s->next_node = -1;
}

void cables_lock(cables_lock_t *l)
{
    uint64_t key = (uintptr_t)l, t0 = cb_now_ns();
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    if (s->token && !s->held && !s->qhead && s->next_node < 0) {
        s->held = true;
        cb_mutex_unlock(&lk_mu);
        STAT_ADD(lock_acquires, 1);
        return;
    }
    cb_waiter_t *w = cb_waiter_new();
    if (s->qtail) s->qtail->next = w; else s->qhead = w;
    s->qtail = w;
    bool ask = !s->token && !s->requested;
    if (ask)
        s->requested = true;
    cb_mutex_unlock(&lk_mu);
    if (ask)
        send_request(key);
    cb_waiter_wait(w);
    void *vc = w->data;
    cb_waiter_free(w);
    if (vc) {
        cb_acquire(vc);
        free(vc);
        STAT_ADD(lock_remote_acquires, 1);
    }
    STAT_ADD(lock_acquires, 1);
    STAT_ADD(lock_wait_ns, cb_now_ns() - t0);
}

void cables_unlock(cables_lock_t *l)
{
    uint64_t key = (uintptr_t)l;
    cb_release();
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    bool ask = false;
    s->held = false;
    if (s->next_node >= 0) {
        grant_next(s);
        if (s->qhead && !s->requested)
            ask = s->requested = true;
    } else if (s->qhead) {
        cb_waiter_t *w = s->qhead;
        s->qhead = w->next;
        if (!s->qhead) s->qtail = NULL;
        s->held = true;
        cb_waiter_wake(w);
    }
    cb_mutex_unlock(&lk_mu);
    if (ask)
        send_request(key);
}

/* manager: M_LOCK_REQ a=key b=requester, payload = requester's vc */
void cb_on_lock_req(const cb_msg_t *m, const void *p, size_t len)
{
    lk_tail_t *t;
    HASH_FIND(hh, tails, &m->a, sizeof m->a, t);
    if (!t) {
        t = calloc(1, sizeof *t);
        t->key = m->a;
        t->tail = -1;
        HASH_ADD(hh, tails, key, sizeof t->key, t);
    }
    int prev = t->tail;
    t->tail = (int)m->b;
    if (prev < 0) { /* never held: the manager grants it */
        size_t nl;
        void *n = cb_notices_encode(p, &nl, NULL);
        cb_msg_t g = { .type = M_LOCK_GRANT, .a = m->a };
        cb_send((int)m->b, &g, n, nl, true);
        return;
    }
    cb_msg_t f = { .type = M_LOCK_FWD, .a = m->a, .b = m->b };
    cb_send(prev, &f, p, len, false);
}

/* previous tail: M_LOCK_FWD a=key b=requester, payload = its vc */
void cb_on_lock_fwd(const cb_msg_t *m, const void *p, size_t len)
{
    if (len != sizeof(cb_vc_t))
        cb_die("node %d: malformed lock request", cb.self);
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(m->a);
    s->next_node = (int)m->b;
    memcpy(s->next_vc, p, sizeof s->next_vc);
    if (s->token && !s->held && !s->qhead)
        grant_next(s);
    cb_mutex_unlock(&lk_mu);
}

void cb_on_lock_grant(const cb_msg_t *m, const void *p, size_t len)
{
    uint32_t *v = malloc(sizeof(cb_vc_t));
    cb_notices_merge(p, len, v);
    cb_known_update(m->src, v);
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(m->a);
    s->token = true;
    s->requested = false;
    cb_waiter_t *w = s->qhead;
    if (w) {
        s->qhead = w->next;
        if (!s->qhead) s->qtail = NULL;
        s->held = true;
        w->data = v;
        cb_waiter_wake(w);
    } else {
        free(v);
        if (s->next_node >= 0)
            grant_next(s);
    }
    cb_mutex_unlock(&lk_mu);
}
