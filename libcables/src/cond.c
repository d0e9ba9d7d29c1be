/* cond.c: cluster condition variables.  The master keeps each condition's
 * FIFO of waiters.  A waiter registers (and is acknowledged) before it
 * unlocks, so a signal sent under the lock after that unlock finds it. */
#include <errno.h>
#include <stdlib.h>
#include <uthash.h>

#include "internal.h"

typedef struct cv_waiter { struct cv_waiter *next; int node; uint64_t wake; } cv_waiter_t;
typedef struct {
    uint64_t key;
    cv_waiter_t *head, *tail;
    UT_hash_handle hh;
} cv_t;

static cv_t *conds; /* master, comm thread only: the conditions with waiters */

static cv_t *cv_get(uint64_t key)
{
    cv_t *c;
    HASH_FIND(hh, conds, &key, sizeof key, c);
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            cb_die("out of memory for a condition variable");
        c->key = key;
        HASH_ADD(hh, conds, key, sizeof key, c);
    }
    return c;
}

/* one without waiters is forgotten (a program that makes a condition per
 * object, and signals it with no one waiting, grew the master's table) */
static void cv_done(cv_t *c)
{
    if (!c->head) {
        HASH_DEL(conds, c);
        free(c);
    }
}

/* a cancellation glibc would act on now (not disabled) */
static bool cancelled(void)
{
    return cb_app_thread && cb_thr && atomic_load(&cb_thr->cancel) && !cb_thr->cancel_off;
}

int cb_cond_wait(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline)
{
    return cb_cond_wait_held(ckey, lkey, kind, deadline, false);
}

/* a wait that ends without its wake: out of the queue, rc; or, woken
 * first (its wake on the way), 0 */
static int withdraw(uint64_t ckey, cb_waiter_t *wake, int rc)
{
    cb_msg_t x = { .type = M_COND_CANCEL, .a = ckey, .b = (uintptr_t)wake };
    if (cb_rpc(0, &x, NULL) == 1)
        return rc;
    cb_waiter_wait(wake); /* a signal took us first: its wake is on the way */
    return 0;
}

/* held: the caller holds the program's signals off while it holds lkey
 * (cb_signals_hold_enter): let in while it waits without it; intr (held):
 * a handler that ran on this thread meanwhile ends the wait (EINTR) */
static int cond_wait(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline, bool held,
                     bool intr)
{
    /* a mutex that says who holds it, not held by the caller: refused, as
     * glibc's (before, the wait went on and took the mutex at its end) */
    if (kind != CB_LK_NORMAL && !cb_lock_owned(lkey, cb_tid))
        return EPERM;
    if (cancelled())
        return ECANCELED;
    cb_waiter_t *wake = cb_waiter_new();
    cb_msg_t m = { .type = M_COND_WAIT, .a = ckey, .b = (uintptr_t)wake };
    cb_rpc(0, &m, NULL); /* registered before the unlock */
    uint32_t depth = cb_lock_depth(lkey, 1);
    cb_lock_give(lkey, cb_tid, kind);
    bool ran = false; /* a handler ran as the signals came in: before the sleep */
    if (held && intr)
        ran = cb_signals_hold_leave_ran(deadline == UINT64_MAX);
    else if (held)
        cb_signals_hold_leave();
    int rc = 0;
    if (intr) {
        int how = ran ? -2 : cb_waiter_wait_intr_until(wake, deadline);
        if (how != 1)
            rc = withdraw(ckey, wake, how == -1 ? ECANCELED : how == -2 ? EINTR : ETIMEDOUT);
    } else {
        while (!cb_waiter_wait_cancellable(wake, deadline)) {
            bool cancel = cancelled();
            if (!cancel && cb_now_ns() < deadline)
                continue; /* a cancellation that is disabled: wait on */
            rc = withdraw(ckey, wake, cancel ? ECANCELED : ETIMEDOUT);
            break;
        }
    }
    cb_waiter_free(wake);
    if (held)
        cb_signals_hold_enter();
    cb_lock_take(lkey, cb_tid, kind, UINT64_MAX);
    cb_lock_depth(lkey, depth);
    return rc;
}

int cb_cond_wait_held(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline, bool held)
{
    return cond_wait(ckey, lkey, kind, deadline, held, false);
}

int cb_cond_wait_intr(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline)
{
    return cond_wait(ckey, lkey, kind, deadline, true, true);
}

int cables_cond_timedwait(cables_cond_t *c, cables_lock_t *l, uint64_t timeout_ns)
{
    uint64_t now = cb_now_ns(); /* a timeout past the clock's end: none */
    uint64_t deadline = timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
    int rc = cb_cond_wait((uintptr_t)c, (uintptr_t)l, CB_LK_NORMAL, deadline);
    return rc == ECANCELED ? 0 : rc;
}

void cables_cond_wait(cables_cond_t *c, cables_lock_t *l)
{
    cables_cond_timedwait(c, l, UINT64_MAX);
}

int cb_cond_wake(uint64_t ckey, bool all)
{
    cb_msg_t m = { .type = M_COND_SIGNAL, .a = ckey, .b = all };
    return (int)cb_rpc(0, &m, NULL);
}

void cables_cond_signal(cables_cond_t *c) { cb_cond_wake((uintptr_t)c, false); }
void cables_cond_broadcast(cables_cond_t *c) { cb_cond_wake((uintptr_t)c, true); }

void cb_on_cond_wait(const cb_msg_t *m)
{
    cv_t *c = cv_get(m->a);
    cv_waiter_t *w = malloc(sizeof *w);
    if (!w)
        cb_die("out of memory for a condition variable's waiter");
    w->next = NULL;
    w->node = m->src;
    w->wake = m->b;
    if (c->tail) c->tail->next = w; else c->head = w;
    c->tail = w;
    cb_msg_t r = { .type = M_REPLY };
    cb_reply(m, &r, NULL, 0, false);
}

void cb_on_cond_signal(const cb_msg_t *m)
{
    cv_t *c = cv_get(m->a);
    uint64_t n = 0;
    while (c->head) {
        cv_waiter_t *w = c->head;
        c->head = w->next;
        if (!c->head) c->tail = NULL;
        cb_msg_t k = { .type = M_COND_WAKE, .b = w->wake };
        cb_send(w->node, &k, NULL, 0, false);
        free(w);
        n++;
        if (!m->b)
            break;
    }
    cv_done(c);
    cb_msg_t r = { .type = M_REPLY, .a = n };
    cb_reply(m, &r, NULL, 0, false);
}

/* a timed-out waiter leaves the queue; a=1 if it was still there */
void cb_on_cond_cancel(const cb_msg_t *m)
{
    cv_t *c = cv_get(m->a);
    uint64_t found = 0;
    for (cv_waiter_t **pp = &c->head, *prev = NULL; *pp; prev = *pp, pp = &(*pp)->next) {
        cv_waiter_t *w = *pp;
        if (w->node == m->src && w->wake == m->b) {
            *pp = w->next;
            if (c->tail == w) c->tail = prev;
            free(w);
            found = 1;
            break;
        }
    }
    cv_done(c);
    cb_msg_t r = { .type = M_REPLY, .a = found };
    cb_reply(m, &r, NULL, 0, false);
}

void cb_on_cond_wake(const cb_msg_t *m)
{
    cb_waiter_wake((cb_waiter_t *)(uintptr_t)m->b);
}
