/* lock.c: cluster locks, a distributed queue.  The manager (the master)
 * knows only the tail of each lock's queue and forwards a request to it;
 * the token then goes from holder to next holder directly, carrying the
 * write notices the acquirer lacks.  A node keeps the token after a release
 * until someone else asks, so re-acquiring on the same node is local.
 * Local threads queue in FIFO order; a remote request that arrived is
 * served before later local ones (fair between nodes).  A release here
 * does not wait for the homes to apply its diffs (cb_release_lazy): the
 * token does, if another node asks for it before they are (need). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "internal.h"


typedef struct {
    uint64_t key;
    bool token, held, requested;
    int next_node;
    cb_vc_t next_vc;
    uint32_t *acq;   /* vc for the next local taker: a grant that found no waiter */
    uint64_t owner;  /* the thread holding it (when held) */
    uint32_t depth;  /* recursive holds */
    int tail;        /* manager: the node its queue ends at (-1: never asked for) */
    uint64_t need;   /* the token leaves once cb_closed(need): its releases here noticed */
    bool grant_waits; /* granted to next_node, waiting for need (in waiting[]) */
    cb_waiter_t *qhead, *qtail; /* local waiters; data: the vc to acquire, if granted from afar */
    UT_hash_handle hh;
} lk_t;

static cb_mutex_t lk_mu = CB_MUTEX_INIT;
static lk_t *locks; /* this node's view of each lock (and the manager's tails), under lk_mu */
static lk_t **waiting; /* grant_waits (under lk_mu) */
static size_t nwaiting, capwaiting;

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
        s->tail = -1;
        HASH_ADD(hh, locks, key, sizeof key, s);
    }
    return s;
}

static void send_request(uint64_t key, bool try)
{
    cb_vc_t v;
    cb_vc_get(v);
    cb_msg_t m = { .type = M_LOCK_REQ, .a = key, .b = (uint64_t)cb.self, .c = try };
    cb_send(0, &m, v, sizeof v, false);
}

/* under lk_mu: the token leaves for the node queued after us, or waits
 * for the intervals of its releases here to be noticed (cb_lock_closed
 * sends it then); false if it waits */
static bool grant_next(lk_t *s)
{
    if (!cb_closed(s->need)) {
        if (!s->grant_waits) {
            if (nwaiting == capwaiting &&
                !(waiting = realloc(waiting, (capwaiting = capwaiting * 2 + 8) * sizeof *waiting)))
                cb_die("out of memory for a lock");
            waiting[nwaiting++] = s;
            s->grant_waits = true;
        }
        return false;
    }
    size_t len;
    void *n = cb_notices_encode(s->next_vc, &len, NULL);
    cb_msg_t g = { .type = M_LOCK_GRANT, .a = s->key };
    cb_send(s->next_node, &g, n, len, true);
    s->token = false;
    s->next_node = -1;
    free(s->acq); /* what it held is in the notices that went along */
    s->acq = NULL;
    return true;
}

void cb_lock_closed(void)
{
    size_t keep = 0;
    cb_mutex_lock(&lk_mu);
    for (size_t i = 0; i < nwaiting; i++) {
        lk_t *s = waiting[i];
        if (!cb_closed(s->need)) {
            waiting[keep++] = s;
            continue;
        }
        s->grant_waits = false;
        if (s->token && !s->held && s->next_node >= 0 && grant_next(s) && s->qhead &&
            !s->requested) { /* local takers queued behind it */
            s->requested = true;
            send_request(s->key, false);
        }
    }
    nwaiting = keep;
    cb_mutex_unlock(&lk_mu);
}

/* under lk_mu: the head waiter takes the lock */
static void hand_to_head(lk_t *s, uint32_t *vc)
{
    cb_waiter_t *w = s->qhead;
    s->qhead = w->next;
    if (!s->qhead) s->qtail = NULL;
    s->held = true;
    s->owner = w->who;
    s->depth = 1;
    w->data = vc;
    cb_waiter_wake(w);
}

static bool dequeue(lk_t *s, cb_waiter_t *w)
{
    for (cb_waiter_t **pp = &s->qhead, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            if (s->qtail == w) s->qtail = prev;
            return true;
        }
    return false;
}

static void acquired(uint32_t *vc, uint64_t t0)
{
    if (vc) {
        cb_acquire(vc);
        free(vc);
        STAT_ADD(lock_remote_acquires, 1);
    }
    STAT_ADD(lock_acquires, 1);
    STAT_ADD(lock_wait_ns, cb_now_ns() - t0);
}

int cb_lock_take(uint64_t key, uint64_t who, int kind, uint64_t deadline)
{
    uint64_t t0 = cb_now_ns();
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    if (kind != CB_LK_NORMAL && s->held && s->owner == who) {
        int rc = kind == CB_LK_ERRORCHECK ? EDEADLK : s->depth == UINT32_MAX ? EAGAIN : 0;
        if (!rc)
            s->depth++;
        cb_mutex_unlock(&lk_mu);
        return rc;
    }
    if (cb.self == 0 && !s->token && !s->requested && s->tail < 0) {
        /* the manager's own first take of a lock no node has asked for:
         * its token is made here, without a message to itself (two
         * wakeups of the communication thread); there is nothing to
         * acquire, as nobody ever released it */
        s->tail = 0;
        s->token = true;
    }
    if (s->token && !s->held && !s->qhead && s->next_node < 0) {
        s->held = true;
        s->owner = who;
        s->depth = 1;
        uint32_t *vc = s->acq;
        s->acq = NULL;
        cb_mutex_unlock(&lk_mu);
        acquired(vc, t0);
        return 0;
    }
    bool try = deadline == 0;
    if (try && (s->token || s->requested)) { /* held here, or a thread here waits for it */
        cb_mutex_unlock(&lk_mu);
        return EBUSY;
    }
    cb_waiter_t *w = cb_waiter_new();
    w->who = who;
    w->try_only = try;
    if (s->qtail) s->qtail->next = w; else s->qhead = w;
    s->qtail = w;
    bool ask = !s->token && !s->requested;
    if (ask)
        s->requested = true;
    cb_mutex_unlock(&lk_mu);
    if (ask)
        send_request(key, try);
    if (try || deadline == UINT64_MAX) {
        cb_waiter_wait(w); /* a try is answered: granted or busy */
    } else if (!cb_waiter_wait_until(w, deadline)) {
        cb_mutex_lock(&lk_mu);
        bool gone = dequeue(lk_get(key), w);
        cb_mutex_unlock(&lk_mu);
        if (gone) { /* the request stays: its grant will find no waiter */
            cb_waiter_free(w);
            return ETIMEDOUT;
        }
        cb_waiter_wait(w); /* granted meanwhile */
    }
    int rc = (int)w->value;
    uint32_t *vc = w->data;
    cb_waiter_free(w);
    if (rc)
        return rc;
    acquired(vc, t0);
    return 0;
}

/* A normal lock's unlock by a thread of a node without its token: every
 * other node is told (M_LOCK_STRAY), with this node's writes released and
 * their notices along (what was written before the unlock is seen by the
 * next taker, as after a give here); the one whose token is held gives it
 * (cb_on_lock_stray), the others have nothing to give.  The token is at
 * one node at a time; one on its way was given already (as a second
 * unlock of glibc's, it may then release the next holder's hold). */
static void give_elsewhere(uint64_t key)
{
    cb_release();
    int n = atomic_load(&cb.nnodes);
    for (int k = 0; k < n; k++) {
        if (k == cb.self || !cb_node_up(k))
            continue;
        size_t len;
        void *p = cb_notices_for(k, &len);
        cb_msg_t m = { .type = M_LOCK_STRAY, .a = key };
        cb_send(k, &m, p, len, true);
    }
}

int cb_lock_give(uint64_t key, uint64_t who, int kind)
{
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    if (kind != CB_LK_NORMAL && (!s->held || s->owner != who)) {
        cb_mutex_unlock(&lk_mu);
        return EPERM;
    }
    if (kind == CB_LK_RECURSIVE && s->depth > 1) {
        s->depth--;
        cb_mutex_unlock(&lk_mu);
        return 0;
    }
    if (!s->held) { /* a stray unlock of a normal lock: nothing to give here.  Going
                     * on would hand the lock to local waiters (or the token to the
                     * next node) while the token may still be on its way here. */
        /* the token is elsewhere: it may be held there (glibc lets any
         * thread unlock a normal mutex: one locked by a thread of node 1
         * and unlocked by main, a binary semaphore, stayed locked for
         * ever).  The node holding it gives it, as its holder's give;
         * the token here and not held: the lock is free already; never
         * asked for by any node (the manager knows): never locked */
        bool elsewhere = !s->token && !(cb.self == 0 && s->tail < 0);
        cb_mutex_unlock(&lk_mu);
        if (elsewhere)
            give_elsewhere(key);
        return 0;
    }
    cb_mutex_unlock(&lk_mu);
    uint64_t t = cb_release_lazy();
    cb_mutex_lock(&lk_mu);
    bool ask = false;
    s->held = false;
    if (t > s->need)
        s->need = t;
    if (s->next_node >= 0) {
        if (grant_next(s) && s->qhead && !s->requested)
            ask = s->requested = true;
    } else if (s->qhead) {
        hand_to_head(s, NULL);
    }
    cb_mutex_unlock(&lk_mu);
    if (ask)
        send_request(key, false);
    return 0;
}

bool cb_lock_owned(uint64_t key, uint64_t who)
{
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    bool owned = s->held && s->owner == who;
    cb_mutex_unlock(&lk_mu);
    return owned;
}

uint32_t cb_lock_depth(uint64_t key, uint32_t depth)
{
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(key);
    uint32_t old = s->depth;
    s->depth = depth;
    cb_mutex_unlock(&lk_mu);
    return old;
}

void cables_lock(cables_lock_t *l) { cb_lock_take((uintptr_t)l, 0, CB_LK_NORMAL, UINT64_MAX); }
void cables_unlock(cables_lock_t *l) { cb_lock_give((uintptr_t)l, 0, CB_LK_NORMAL); }

/* manager: M_LOCK_REQ a=key b=requester, payload = requester's vc */
void cb_on_lock_req(const cb_msg_t *m, const void *p, size_t len)
{
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(m->a);
    int prev = s->tail;
    s->tail = (int)m->b;
    cb_mutex_unlock(&lk_mu);
    if (prev < 0) { /* never held: the manager grants it */
        size_t nl;
        void *n = cb_notices_encode(p, &nl, NULL);
        cb_msg_t g = { .type = M_LOCK_GRANT, .a = m->a };
        cb_send((int)m->b, &g, n, nl, true);
        return;
    }
    cb_msg_t f = { .type = M_LOCK_FWD, .a = m->a, .b = m->b, .c = m->c };
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
    if (s->token && !s->held && !s->qhead) {
        grant_next(s);
    } else if (m->c) { /* a try: it is held here or wanted here */
        cb_msg_t b = { .type = M_LOCK_BUSY, .a = m->a };
        cb_send((int)m->b, &b, NULL, 0, false);
    }
    cb_mutex_unlock(&lk_mu);
}

/* a message's notices merged into the log: its sender's vc (malloc'd) */
static uint32_t *merged(const cb_msg_t *m, const void *p, size_t len)
{
    uint32_t *v = malloc(sizeof(cb_vc_t));
    if (!v)
        cb_die("node %d: out of memory for a lock's message", cb.self);
    cb_notices_merge(p, len, v);
    cb_known_update(m->src, v);
    return v;
}

/* (lk_mu) the vc v (taken) for the next taker here to acquire */
static void keep_for_taker(lk_t *s, uint32_t *v)
{
    if (s->acq) {
        cb_vc_max(s->acq, v);
        free(v);
    } else {
        s->acq = v;
    }
}

void cb_on_lock_grant(const cb_msg_t *m, const void *p, size_t len)
{
    uint32_t *v = merged(m, p, len);
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(m->a);
    s->token = true;
    s->requested = false;
    if (s->qhead) {
        hand_to_head(s, v);
    } else { /* its waiter gave up (timed out, or a try told busy) */
        keep_for_taker(s, v);
        if (s->next_node >= 0)
            grant_next(s);
    }
    cb_mutex_unlock(&lk_mu);
    cb_node_idle(); /* an attached node may have waited only for this */
}

/* M_LOCK_STRAY a=key, payload = the unlocker's notices: a normal lock
 * unlocked by a thread of node src, which had not its token (give_elsewhere).
 * Held here: given, as by its holder (the notices are merged into this
 * node's log first: a grant carries them on, a taker here acquires them). */
void cb_on_lock_stray(const cb_msg_t *m, const void *p, size_t len)
{
    uint32_t *v = merged(m, p, len);
    uint64_t key = m->a;
    bool ask = false;
    cb_mutex_lock(&lk_mu);
    lk_t *s;
    HASH_FIND(hh, locks, &key, sizeof key, s);
    if (s && s->token && s->held) {
        s->held = false;
        s->depth = 0;
        if (s->next_node >= 0) { /* its notices went into the log: the grant carries them */
            if (grant_next(s) && s->qhead && !s->requested)
                ask = s->requested = true;
        } else if (s->qhead) {
            hand_to_head(s, v);
            v = NULL;
        } else { /* the next taker here acquires them */
            keep_for_taker(s, v);
            v = NULL;
        }
    }
    cb_mutex_unlock(&lk_mu);
    free(v);
    if (ask)
        send_request(key, false);
}

/* the previous tail says a try lost: the lock is held or wanted there */
void cb_on_lock_busy(const cb_msg_t *m)
{
    cb_mutex_lock(&lk_mu);
    lk_t *s = lk_get(m->a);
    for (cb_waiter_t *w = s->qhead; w; w = w->next)
        if (w->try_only) {
            dequeue(s, w);
            w->value = EBUSY;
            cb_waiter_wake(w);
            break;
        }
    cb_mutex_unlock(&lk_mu);
}

bool cb_lock_waiting(void)
{
    bool any = false;
    cb_mutex_lock(&lk_mu);
    for (lk_t *s = locks; s && !any; s = s->hh.next)
        any = s->requested || s->qhead;
    cb_mutex_unlock(&lk_mu);
    return any;
}

/* Node k leaves: the master asks for every lock whose queue ends at k, so
 * that the token comes back here (k grants it at once: no thread of k
 * holds or waits for a lock any more). */
void cb_lock_recall(int k)
{
    cb_vc_t v;
    cb_vc_get(v);
    cb_mutex_lock(&lk_mu);
    for (lk_t *s = locks; s; s = s->hh.next) {
        if (s->tail != k)
            continue;
        s->requested = true; /* local takers wait for it */
        s->tail = 0;
        cb_msg_t f = { .type = M_LOCK_FWD, .a = s->key, .b = 0 };
        cb_send(k, &f, v, sizeof v, false);
    }
    cb_mutex_unlock(&lk_mu);
}
