/* thread.c: threads on any node.  Creating is a release and starting an
 * acquire (the start message carries the creator's notices); exiting is a
 * release and joining an acquire.  The master keeps the thread count of
 * every node and places new threads (the ACB's thread table); the node
 * running a thread keeps its entry until it is joined (or, detached, ends).
 *
 * A thread id: node << 48 | creating node << 32 | sequence; the master's
 * main thread is 0.  The shim shows them to programs tagged with bit 63. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <uthash.h>

#include "internal.h"

__thread uint64_t cb_tid CB_TLS;
__thread bool cb_app_thread CB_TLS;
__thread cb_thr_t *cb_thr CB_TLS;

typedef struct {
    uint64_t tid;
    bool done, detached, has_joiner;
    uint64_t ret;
    cb_msg_t joiner; /* a join request waiting for the exit */
    cb_thr_t *thr;   /* the running thread's shared-with-comm state */
    UT_hash_handle hh;
} th_t;

typedef struct {
    uint64_t tid;
    void *(*fn)(void *);
    void *arg;
    size_t stack;
    cb_thr_t *thr;
    cb_vc_t vc;
} th_start_t;

static th_t *threads; /* comm thread only */
static _Atomic uint32_t seq = 1;
static int load[CB_MAX_NODES]; /* master, comm thread: running threads per node */
static cb_msg_t idle_req;      /* master: main waits for all other threads to end */
static bool idle_waiting;

static void *trampoline(void *a)
{
    th_start_t st = *(th_start_t *)a;
    free(a);
    /* started by the communication thread: the program's name and CPUs, not its */
    prctl(PR_SET_NAME, cb.app_name);
    cb_numa_app_thread();
    cb_tid = st.tid;
    cb_thr = st.thr;
    cb_app_thread = true;
    cb_acquire(st.vc);
    void *ret = cb_run_on_gas_stack(st.fn, st.arg, st.stack, NULL);
    cb_release();
    cb_app_thread = false;
    cb_msg_t m = { .type = M_THREAD_EXIT, .a = st.tid, .b = (uintptr_t)ret };
    cb_send(cb.self, &m, NULL, 0, false);
    return NULL;
}

int cb_thread_create(uint64_t *t, int node, void *(*fn)(void *), void *arg, size_t stack,
                     bool detached)
{
    cb_msg_t pl = { .type = M_PLACE, .a = (uint64_t)(int64_t)node };
    node = (int)cb_rpc(0, &pl, NULL);
    if (node < 0)
        return EINVAL;
    cb_release();
    uint64_t tid = ((uint64_t)node << 48) | ((uint64_t)cb.self << 32) | atomic_fetch_add(&seq, 1);
    cb_vc_t k;
    cb_known_get(node, k);
    size_t len;
    void *n = cb_notices_encode(k, &len, NULL);
    cb_waiter_t *w = cb_waiter_new();
    cb_msg_t m = { .type = M_SPAWN, .a = tid, .b = (uintptr_t)fn, .c = (uintptr_t)arg,
                   .d = stack | (uint64_t)detached << 63 };
    cb_call(node, &m, n, len, w);
    free(n);
    int rc = (int)w->value;
    cb_waiter_free(w);
    if (rc) {
        cb_msg_t g = { .type = M_THREAD_GONE, .a = (uint64_t)node };
        cb_send(0, &g, NULL, 0, false);
        return rc;
    }
    *t = tid;
    return 0;
}

int cables_thread_create(cables_thread_t *t, int node, void *(*fn)(void *), void *arg)
{
    return cb_thread_create(t, node, fn, arg, 0, false);
}

/* master: placements waiting for the node being attached to run them */
typedef struct placing { struct placing *next; cb_msg_t req; int node; } placing_t;
static placing_t *placing;

static void place_reply(const cb_msg_t *req, int node)
{
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)node };
    cb_reply(req, &r, NULL, 0, false);
}

/* the node up (or being attached) with the fewest threads, the lowest
 * number on a tie */
static int least_loaded(bool attaching_too)
{
    int pick = 0;
    for (int k = 1; k < CB_MAX_NODES; k++)
        if ((cb_node_open(k) || (attaching_too && cb_node_attaching(k))) && load[k] < load[pick])
            pick = k;
    return pick;
}

/* master: where the next thread runs.  A named node, or the least loaded
 * node; when that one is full (CABLES_THREADS_PER_NODE) a new node is
 * attached for it, if CABLES_MAX_NODES allows, else it takes one more. */
void cb_on_place(const cb_msg_t *m)
{
    int want = (int)(int64_t)m->a, pick;
    if (want >= 0) {
        pick = cb_node_open(want) ? want : -1;
    } else {
        pick = least_loaded(true);
        if (load[pick] >= cb.cfg.threads_per_node) {
            int k = cb_node_attach();
            if (k >= 0)
                pick = k;
        }
    }
    if (pick >= 0)
        load[pick]++;
    if (pick >= 0 && cb_node_attaching(pick)) {
        placing_t *x = malloc(sizeof *x);
        if (!x)
            cb_die("out of memory placing a thread");
        *x = (placing_t){ placing, *m, pick };
        placing = x;
        return;
    }
    place_reply(m, pick);
}

void cb_place_attached(int k, bool ok)
{
    for (placing_t **pp = &placing, *x; (x = *pp);) {
        if (x->node != k) {
            pp = &x->next;
            continue;
        }
        *pp = x->next;
        int node = k;
        if (!ok) { /* the nodes there are take it */
            load[k]--;
            node = least_loaded(false);
            load[node]++;
        }
        place_reply(&x->req, node);
        free(x);
    }
}

static void answer_idle(void)
{
    int total = 0;
    for (int k = 0; k < CB_MAX_NODES; k++)
        total += load[k];
    if (idle_waiting && total <= 1) { /* main itself */
        idle_waiting = false;
        cb_msg_t r = { .type = M_REPLY };
        cb_reply(&idle_req, &r, NULL, 0, false);
    }
}

void cb_on_thread_gone(const cb_msg_t *m)
{
    if (m->a < CB_MAX_NODES && load[m->a] > 0)
        load[m->a]--;
    answer_idle();
}

void cb_on_threads_idle(const cb_msg_t *m)
{
    idle_req = *m;
    idle_waiting = true;
    answer_idle();
}

void cb_threads_wait_all(void)
{
    cb_msg_t m = { .type = M_THREADS_IDLE };
    cb_rpc(0, &m, NULL);
}

void cb_thread_main_start(void)
{
    load[0] = 1; /* main, on the master */
    cb_tid = 0;
    cb_thr = calloc(1, sizeof *cb_thr);
    cb_thr->sys = ((pthread_t (*)(void))cb_libc("pthread_self"))();
    cb_app_thread = true;
}

void cb_on_spawn(const cb_msg_t *m, const void *p, size_t len)
{
    th_start_t *st = malloc(sizeof *st);
    cb_notices_merge(p, len, st->vc);
    cb_known_update(m->src, st->vc);
    st->tid = m->a;
    st->fn = (void *(*)(void *))(uintptr_t)m->b;
    st->arg = (void *)(uintptr_t)m->c;
    st->stack = (size_t)(m->d & ~(1ull << 63));
    st->thr = calloc(1, sizeof *st->thr);
    th_t *t = calloc(1, sizeof *t);
    t->tid = m->a;
    t->detached = m->d >> 63;
    t->thr = st->thr;
    HASH_ADD(hh, threads, tid, sizeof t->tid, t);
    cb_thr_t *thr = st->thr;
    int rc = cb_thread_start(&thr->sys, trampoline, st, true);
    if (rc) {
        HASH_DEL(threads, t);
        free(t);
        free(thr);
        free(st);
    }
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)rc };
    cb_reply(m, &r, NULL, 0, false);
}

static void forget(th_t *t)
{
    HASH_DEL(threads, t);
    free(t->thr);
    free(t);
    if (!threads)
        cb_node_idle();
}

int cb_thread_count(void) { return (int)HASH_COUNT(threads); }
int cb_place_load(int k) { return load[k]; }

static void answer_join(th_t *t)
{
    cb_vc_t k;
    cb_known_get(t->joiner.src, k);
    size_t len;
    void *n = cb_notices_encode(k, &len, NULL);
    cb_msg_t r = { .type = M_JOIN_REPLY, .a = t->ret };
    cb_reply(&t->joiner, &r, n, len, true);
    forget(t);
}

void cb_on_thread_exit(const cb_msg_t *m, const void *p, size_t len)
{
    (void)p; (void)len;
    cb_msg_t g = { .type = M_THREAD_GONE, .a = (uint64_t)cb.self };
    cb_send(0, &g, NULL, 0, false);
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    if (!t)
        return;
    t->done = true;
    t->ret = m->b;
    if (t->detached)
        forget(t);
    else if (t->has_joiner)
        answer_join(t);
}

static void reply_rc(const cb_msg_t *m, int rc)
{
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc };
    cb_reply(m, &r, NULL, 0, false);
}

void cb_on_join(const cb_msg_t *m)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    if (!t || t->detached || t->has_joiner) {
        reply_rc(m, t ? EINVAL : ESRCH);
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
    if (!cb_node_up(node))
        return ESRCH;
    if (cb_app_thread && t == cb_tid)
        return EDEADLK;
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

/* M_DETACH a=tid */
void cb_on_detach(const cb_msg_t *m)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    int rc = !t ? ESRCH : t->detached || t->has_joiner ? EINVAL : 0;
    if (!rc) {
        t->detached = true;
        if (t->done)
            forget(t);
    }
    reply_rc(m, rc);
}

int cb_thread_detach(uint64_t t)
{
    int node = (int)(t >> 48);
    if (!cb_node_up(node))
        return ESRCH;
    cb_msg_t m = { .type = M_DETACH, .a = t };
    return (int)cb_rpc(node, &m, NULL);
}

static int libc_cancel(pthread_t t)
{
    static int (*cancel)(pthread_t);
    if (!cancel)
        cancel = (int (*)(pthread_t))cb_libc("pthread_cancel");
    return cancel(t);
}

/* M_CANCEL a=tid: glibc's cancellation state is set on the thread (its
 * cancellation points act on it), and a runtime wait of the thread that is
 * a cancellation point is woken. */
void cb_on_cancel(const cb_msg_t *m)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    if (!t || t->done) {
        reply_rc(m, t ? 0 : ESRCH);
        return;
    }
    int rc = libc_cancel(t->thr->sys);
    if (!rc) {
        atomic_store(&t->thr->cancel, 1);
        cb_waiter_t *w = atomic_load(&t->thr->waiting);
        if (w)
            cb_futex_wake(&w->done);
    }
    reply_rc(m, rc);
}

int cb_thread_cancel(uint64_t t)
{
    int node = (int)(t >> 48);
    if (!cb_node_up(node))
        return ESRCH;
    if (cb_app_thread && t == cb_tid && cb_thr) { /* itself: no message needed */
        atomic_store(&cb_thr->cancel, 1);
        return libc_cancel(cb_thr->sys);
    }
    cb_msg_t m = { .type = M_CANCEL, .a = t };
    return (int)cb_rpc(node, &m, NULL);
}

/* ---- the master's key table (pthread keys): a key is its index, never
 * reused; its destructor is a function address, the same on every node ---- */
void cb_on_key(const cb_msg_t *m)
{
    static uint64_t *dtors; /* destructor + 1 (0: deleted), comm thread only */
    static uint32_t nkeys;
    int64_t r = -1;
    if (!dtors && !(dtors = calloc(CB_KEYS_MAX, sizeof *dtors)))
        cb_die("out of memory for the key table");
    if (m->a == CB_KEY_CREATE && nkeys < CB_KEYS_MAX) {
        dtors[nkeys] = m->b + 1;
        r = nkeys++;
    } else if (m->a == CB_KEY_DELETE && m->b < nkeys && dtors[m->b]) {
        dtors[m->b] = 0;
        r = 0;
    } else if (m->a == CB_KEY_DTOR && m->b < nkeys && dtors[m->b]) {
        r = (int64_t)(dtors[m->b] - 1);
    }
    cb_msg_t rep = { .type = M_REPLY, .a = (uint64_t)r };
    cb_reply(m, &rep, NULL, 0, false);
}

int64_t cb_key(int op, uint64_t arg)
{
    cb_msg_t m = { .type = M_KEY, .a = (uint64_t)op, .b = arg };
    return cb_rpc(0, &m, NULL);
}
