/* thread.c: threads on any node.  Creating is a release and starting an
 * acquire (the start message carries the creator's notices); exiting is a
 * release and joining an acquire.  The node running a thread keeps its
 * entry in the thread table until it is joined. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "internal.h"

typedef struct {
    uint64_t tid;
    bool done;
    uint64_t ret;
    cb_msg_t joiner; /* a join request waiting for the exit */
    bool has_joiner;
    UT_hash_handle hh;
} th_t;

typedef struct { uint64_t tid; void *(*fn)(void *); void *arg; cb_vc_t vc; } th_start_t;

static th_t *threads; /* comm thread only */
static _Atomic uint32_t seq;

static void *trampoline(void *a)
{
    th_start_t st = *(th_start_t *)a;
    free(a);
    cb_acquire(st.vc);
    void *ret = cb_run_on_gas_stack(st.fn, st.arg);
    cb_release();
    cb_msg_t m = { .type = M_THREAD_EXIT, .a = st.tid, .b = (uintptr_t)ret };
    cb_send(cb.self, &m, NULL, 0, false);
    return NULL;
}

int cables_thread_create(cables_thread_t *t, int node, void *(*fn)(void *), void *arg)
{
    if (node < 0)
        node = cb_pick_node();
    if (node >= atomic_load(&cb.nnodes))
        return EINVAL;
    cb_release();
    uint64_t tid = ((uint64_t)node << 48) | ((uint64_t)cb.self << 32) | atomic_fetch_add(&seq, 1);
    cb_vc_t k;
    cb_known_get(node, k);
    size_t len;
    void *n = cb_notices_encode(k, &len, NULL);
    cb_waiter_t *w = cb_waiter_new();
    cb_msg_t m = { .type = M_SPAWN, .a = tid, .b = (uintptr_t)fn, .c = (uintptr_t)arg };
    cb_call(node, &m, n, len, w);
    free(n);
    int rc = (int)w->value;
    cb_waiter_free(w);
    if (rc)
        return rc;
    *t = tid;
    return 0;
}

void cb_on_spawn(const cb_msg_t *m, const void *p, size_t len)
{
    th_start_t *st = malloc(sizeof *st);
    cb_notices_merge(p, len, st->vc);
    cb_known_update(m->src, st->vc);
    st->tid = m->a;
    st->fn = (void *(*)(void *))(uintptr_t)m->b;
    st->arg = (void *)(uintptr_t)m->c;
    th_t *t = calloc(1, sizeof *t);
    t->tid = m->a;
    HASH_ADD(hh, threads, tid, sizeof t->tid, t);
    pthread_t pt;
    int rc = cb_thread_start(&pt, trampoline, st, true);
    if (rc) {
        HASH_DEL(threads, t);
        free(t);
        free(st);
    }
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)rc };
    cb_reply(m, &r, NULL, 0, false);
}

static void answer_join(th_t *t)
{
    cb_vc_t k;
    cb_known_get(t->joiner.src, k);
    size_t len;
    void *n = cb_notices_encode(k, &len, NULL);
    cb_msg_t r = { .type = M_JOIN_REPLY, .a = t->ret };
    cb_reply(&t->joiner, &r, n, len, true);
    HASH_DEL(threads, t);
    free(t);
}

void cb_on_thread_exit(const cb_msg_t *m, const void *p, size_t len)
{
    (void)p; (void)len;
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    if (!t)
        return;
    t->done = true;
    t->ret = m->b;
    if (t->has_joiner)
        answer_join(t);
}

void cb_on_join(const cb_msg_t *m)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    if (!t) {
        cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)ESRCH };
        cb_reply(m, &r, NULL, 0, false);
        return;
    }
    t->joiner = *m;
    t->has_joiner = true;
    if (t->done)
        answer_join(t);
}

int cables_thread_join(cables_thread_t t, void **ret)
{
    int node = (int)(t >> 48);
    if (node >= atomic_load(&cb.nnodes))
        return ESRCH;
    cb_waiter_t *w = cb_waiter_new();
    cb_msg_t m = { .type = M_JOIN, .a = t };
    cb_call(node, &m, NULL, 0, w);
    void *data = w->data;
    size_t len = w->len;
    int64_t value = w->value;
    cb_waiter_free(w);
    if (!data)
        return value ? (int)value : ESRCH;
    cb_vc_t v;
    cb_notices_merge(data, len, v);
    cb_known_update(node, v);
    free(data);
    cb_acquire(v);
    if (ret)
        *ret = (void *)(uintptr_t)value;
    return 0;
}
