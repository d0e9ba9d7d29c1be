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

static cv_t *conds; /* master, comm thread only */

static cv_t *cv_get(uint64_t key)
{
    cv_t *c;
    HASH_FIND(hh, conds, &key, sizeof key, c);
    if (!c) {
        c = calloc(1, sizeof *c);
        c->key = key;
        HASH_ADD(hh, conds, key, sizeof key, c);
    }
    return c;
}

int cables_cond_timedwait(cables_cond_t *c, cables_lock_t *l, uint64_t timeout_ns)
{
    cb_waiter_t *wake = cb_waiter_new();
    uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : cb_now_ns() + timeout_ns;
    cb_msg_t m = { .type = M_COND_WAIT, .a = (uintptr_t)c, .b = (uintptr_t)wake };
    cb_rpc(0, &m, NULL); /* registered before the unlock */
    cables_unlock(l);
    int rc = 0;
    if (!cb_waiter_wait_until(wake, deadline)) {
        cb_msg_t x = { .type = M_COND_CANCEL, .a = (uintptr_t)c, .b = (uintptr_t)wake };
        if (cb_rpc(0, &x, NULL) == 1)
            rc = ETIMEDOUT;
        else
            cb_waiter_wait(wake); /* a signal took us first: its wake is on the way */
    }
    cb_waiter_free(wake);
    cables_lock(l);
    return rc;
}

void cables_cond_wait(cables_cond_t *c, cables_lock_t *l)
{
    cables_cond_timedwait(c, l, UINT64_MAX);
}

static void signal(cables_cond_t *c, bool all)
{
    cb_msg_t m = { .type = M_COND_SIGNAL, .a = (uintptr_t)c, .b = all };
    cb_rpc(0, &m, NULL);
}

void cables_cond_signal(cables_cond_t *c) { signal(c, false); }
void cables_cond_broadcast(cables_cond_t *c) { signal(c, true); }

void cb_on_cond_wait(const cb_msg_t *m)
{
    cv_t *c = cv_get(m->a);
    cv_waiter_t *w = malloc(sizeof *w);
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
    cb_msg_t r = { .type = M_REPLY, .a = found };
    cb_reply(m, &r, NULL, 0, false);
}

void cb_on_cond_wake(const cb_msg_t *m)
{
    cb_waiter_wake((cb_waiter_t *)(uintptr_t)m->b);
}
