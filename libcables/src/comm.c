/* comm.c: the communication thread.  It alone drives UCX and owns every
 * manager's state, so handlers run one at a time without locks of their
 * own.  Application threads post messages to it through a queue and an
 * eventfd; it sleeps in epoll on that eventfd and UCX's when idle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

typedef struct cb_op {
    struct cb_op *next;
    int dst;
    bool heap;   /* the op itself was malloc'd */
    cb_msg_t hdr;
    void *payload; /* owned by the op */
    size_t len;
} cb_op_t;

typedef struct { cb_op_t *head, *tail; } cb_queue_t;

static cb_mutex_t q_mu = CB_MUTEX_INIT;
static cb_queue_t inq;      /* from application threads */
static cb_queue_t selfq;    /* comm thread to itself */
static cb_queue_t deferred; /* to retry */
static pthread_t comm_tid;
static _Atomic pid_t comm_kid; /* the comm thread's kernel id */
static int evfd = -1, epfd = -1, xfd = -1, sigfd = -1;
static _Atomic bool comm_quit;
static _Atomic bool comm_sleeping; /* posters write the eventfd only then */

static void q_push(cb_queue_t *q, cb_op_t *op)
{
    op->next = NULL;
    if (q->tail) q->tail->next = op; else q->head = op;
    q->tail = op;
}

static cb_op_t *q_take_all(cb_queue_t *q)
{
    cb_op_t *h = q->head;
    q->head = q->tail = NULL;
    return h;
}

static bool on_comm_thread(void) { return atomic_load(&comm_kid) == gettid(); }

static cb_op_t *op_new(int dst, const cb_msg_t *hdr, const void *payload, size_t len, bool own)
{
    cb_op_t *op = malloc(sizeof *op);
    if (!op)
        cb_die("out of memory for a message");
    op->dst = dst;
    op->heap = true;
    op->hdr = *hdr;
    op->len = len;
    /* none kept for len 0: run_ops frees it, and an empty message from the
     * wire points into UCX's buffer (cb_defer) */
    op->payload = NULL;
    if (len && own) {
        op->payload = (void *)payload;
    } else if (len) {
        op->payload = malloc(len);
        if (!op->payload)
            cb_die("out of memory for a message");
        memcpy(op->payload, payload, len);
    } else if (own) {
        free((void *)payload);
    }
    return op;
}

/* Wake the comm thread through the eventfd.  The raw system call, not
 * libc's write: that is a cancellation point, and an application thread
 * with a cancellation pending would be unwound right here, in the middle of
 * a runtime operation (a lock request queued, a cond wait half undone),
 * with its cleanup handlers running on that broken state. */
static int wake_comm(void)
{
    uint64_t one = 1;
    return syscall(SYS_write, evfd, &one, sizeof one) < 0 ? -1 : 0;
}

void cb_comm_kick(void)
{
    /* seq_cst pairs with the comm thread's store-then-check before sleeping */
    if (!atomic_load(&comm_sleeping))
        return;
    if (wake_comm() < 0 && errno != EAGAIN)
        cb_die("cannot wake the communication thread: %s", strerror(errno));
}

static void post(cb_op_t *op, bool wake)
{
    cb_mutex_lock(&q_mu);
    q_push(&inq, op);
    cb_mutex_unlock(&q_mu);
    if (wake)
        cb_comm_kick();
}

/* Put a message on the wire (comm thread only). */
static void transmit(int dst, const cb_msg_t *hdr, const void *payload, size_t len)
{
    if (dst == cb.self) {
        q_push(&selfq, op_new(dst, hdr, payload, len, false));
        return;
    }
    uint8_t *buf = malloc(sizeof *hdr + len);
    if (!buf)
        cb_die("out of memory for a message");
    memcpy(buf, hdr, sizeof *hdr);
    if (len)
        memcpy(buf + sizeof *hdr, payload, len);
    STAT_ADD(msgs_sent, 1);
    STAT_ADD(bytes_sent, sizeof *hdr + len);
    cb_xport_send(dst, buf, sizeof *hdr + len);
}

void cb_forward(int dst, const cb_msg_t *m, const void *payload, size_t len)
{
    transmit(dst, m, payload, len); /* comm thread: src and waiter kept */
}

static void send(int dst, const cb_msg_t *hdr, const void *payload, size_t len, bool own,
                 bool wake)
{
    cb_msg_t h = *hdr;
    h.src = cb.self;
    if (on_comm_thread()) {
        transmit(dst, &h, payload, len);
        if (own)
            free((void *)payload);
        return;
    }
    post(op_new(dst, &h, payload, len, own), wake);
}

void cb_send(int dst, const cb_msg_t *hdr, const void *payload, size_t len, bool own)
{
    send(dst, hdr, payload, len, own, true);
}

void cb_send_quiet(int dst, const cb_msg_t *hdr)
{
    send(dst, hdr, NULL, 0, false, false);
}

_Static_assert(sizeof(cb_op_t) <= sizeof(((cb_waiter_t *)0)->op), "cb_waiter_t.op too small");

/* The fault path comes here: no malloc.  The op lives in the waiter, which
 * is safe because the comm thread is done with it before the reply. */
void cb_call(int dst, cb_msg_t *hdr, const void *payload, size_t len, cb_waiter_t *w)
{
    cb_call_post(dst, hdr, payload, len, w);
    cb_waiter_wait(w);
}

void cb_call_post(int dst, cb_msg_t *hdr, const void *payload, size_t len, cb_waiter_t *w)
{
    hdr->src = cb.self;
    hdr->waiter = (uintptr_t)w;
    if (len) {
        post(op_new(dst, hdr, payload, len, false), true);
    } else {
        cb_op_t *op = (cb_op_t *)w->op;
        *op = (cb_op_t){ .dst = dst, .heap = false, .hdr = *hdr };
        post(op, true);
    }
}

int64_t cb_rpc(int dst, cb_msg_t *hdr, int64_t *b)
{
    cb_waiter_t *w = cb_waiter_new();
    cb_call(dst, hdr, NULL, 0, w);
    int64_t a = w->value;
    if (b)
        *b = w->value2;
    cb_waiter_free(w);
    return a;
}

/* The waiters are libc's memory, not the thread's pool (of 16): a node
 * that leaves meanwhile may never answer, and its waiter is left to the
 * late answer. */
uint64_t cb_ask_all(uint64_t mask, const cb_msg_t *m, const void *p, size_t len,
                    cb_answer_fn answer, void *arg)
{
    cb_waiter_t *w[CB_MAX_NODES] = { 0 };
    for (int k = 0; k < CB_MAX_NODES; k++)
        if (mask >> k & 1) {
            bool app = cb_app_thread;
            cb_app_thread = false; /* libc's calloc (the shim's heap is shared) */
            w[k] = calloc(1, sizeof *w[k]);
            cb_app_thread = app;
            if (!w[k])
                cb_die("node %d: out of memory asking node %d", cb.self, k);
            cb_msg_t c = *m;
            cb_call_post(k, &c, p, len, w[k]);
        }
    uint64_t answered = 0;
    for (int k = 0; k < CB_MAX_NODES; k++) {
        if (!w[k])
            continue;
        bool done;
        while (!(done = cb_waiter_wait_until(w[k], cb_now_ns() + 100000000ull)) &&
               cb_node_up(k) && !atomic_load(&cb.stopping))
            ;
        if (!done)
            continue;
        answer(k, w[k], arg);
        free(w[k]->data); /* (libc's: not in the GAS) */
        free(w[k]);
        answered |= 1ull << k;
    }
    return answered;
}

void cb_reply(const cb_msg_t *req, cb_msg_t *hdr, const void *payload, size_t len, bool own)
{
    hdr->waiter = req->waiter;
    cb_send(req->src, hdr, payload, len, own);
}

void cb_defer(const cb_msg_t *m, const void *payload, size_t len)
{
    q_push(&deferred, op_new(cb.self, m, payload, len, false));
}

void *cb_deferred_payload(uint32_t type, uint64_t a, size_t *len)
{
    for (cb_op_t *op = deferred.head; op; op = op->next)
        if (op->hdr.type == type && op->hdr.a == a) {
            *len = op->len;
            return op->payload;
        }
    return NULL;
}

/* Replies wake the thread that waits for them. */
static void deliver_reply(const cb_msg_t *m, const void *p, size_t len)
{
    cb_waiter_t *w = (cb_waiter_t *)(uintptr_t)m->waiter;
    if (m->type == M_DIFF_ACK) {
        atomic_fetch_sub(&cb.diffs_out, m->a);
        if (w->closing) {
            cb_closing_acked(w, (uint32_t)m->a);
            return;
        }
        if (atomic_fetch_sub(&w->pending, (uint32_t)m->a) == (uint32_t)m->a)
            cb_futex_wake(&w->pending);
        return;
    }
    if (m->type == M_PAGE && m->a == 0) {
        uint32_t sent = (uint32_t)m->d ? (uint32_t)m->d : 1; /* runs; the home's pages above */
        uint64_t runs = sent;
        size_t run = len / runs;
        if (len == 0 || runs > (w->dst_runs ? w->dst_runs : 1) || len % runs || run % cb.ps ||
            run / cb.ps > (w->dst_pages ? w->dst_pages : 1))
            cb_die("node %d: page reply of %zu bytes in %llu runs from node %d", cb.self, len,
                   (unsigned long long)runs, m->src);
        if (runs > 1 && w->dst_stride == run)
            run = len, runs = 1; /* runs that touch: one block */
        for (uint64_t i = 0; i < runs; i++) {
            uint8_t *d = (uint8_t *)w->dst + i * w->dst_stride;
            const uint8_t *src = (const uint8_t *)p + i * run;
            if (w->dst_fresh) { /* allocated, not mapped (rma.c: fresh) */
                cb_store_write((uint64_t)(d - cb.proto) / cb.ps, src, run);
                continue;
            }
            cb_populate(d, run, true); /* one call, not a fault per page */
            memcpy(d, src, run);
        }
        w->dst_runs = sent;
        w->len = len;
    } else if (len) {
        w->data = malloc(len);
        if (!w->data)
            cb_die("out of memory for a reply");
        memcpy(w->data, p, len);
        w->len = len;
    }
    w->value = (int64_t)m->a;
    w->value2 = (int64_t)m->b;
    w->value3 = (int64_t)m->c;
    w->value4 = (int64_t)m->d;
    cb_waiter_wake(w);
}

void cb_dispatch(const cb_msg_t *m, const void *p, size_t len)
{
    /* before the table, only the master speaks to us; a node that learnt
     * of us first waits (it may need an answer, or we may need its address) */
    if (cb.self != 0 && !cb_node_joined() && m->src != 0 && m->src != cb.self) {
        if (m->type != M_HEARTBEAT)
            cb_defer(m, p, len);
        return;
    }
    switch (m->type) {
    case M_HELLO: cb_on_hello(m, p, len); break;
    case M_TABLE: cb_on_table(m, p, len); break;
    case M_HEARTBEAT: break;
    case M_SHUTDOWN: cb_on_shutdown(m); break;
    case M_BYE: cb_on_bye(m); break;
    case M_DIR_LOOKUP: cb_on_dir_lookup(m); break;
    case M_DIR_REPLY:
        if (!m->waiter) { /* the comm thread's own question; a move may have answered it */
            if ((int64_t)m->a >= 0 && cb_home_cached(m->b) < 0)
                cb_home_set(m->b, (int)m->a);
            break;
        }
        deliver_reply(m, p, len);
        break;
    case M_ALLOC: cb_on_alloc(m); break;
    case M_FREE: cb_on_free(m, p, len); break;
    case M_FETCH: cb_on_fetch(m); break;
    case M_DIFF: cb_on_diff(m, p, len); break;
    case M_LOCK_REQ: cb_on_lock_req(m, p, len); break;
    case M_LOCK_FWD: cb_on_lock_fwd(m, p, len); break;
    case M_LOCK_GRANT: cb_on_lock_grant(m, p, len); break;
    case M_BAR_ARRIVE: cb_on_bar_arrive(m, p, len); break;
    case M_BAR_RELEASE: cb_on_bar_release(m, p, len); break;
    case M_COND_WAIT: cb_on_cond_wait(m); break;
    case M_COND_SIGNAL: cb_on_cond_signal(m); break;
    case M_COND_CANCEL: cb_on_cond_cancel(m); break;
    case M_COND_WAKE: cb_on_cond_wake(m); break;
    case M_SPAWN: cb_on_spawn(m, p, len); break;
    case M_THREAD_EXIT: cb_on_thread_exit(m, p, len); break;
    case M_JOIN: cb_on_join(m); break;
    case M_MOVE: cb_on_move(m); break;
    case M_MOVE_PAGE: cb_on_move_page(m, p, len); break;
    case M_MOVE_DONE: cb_on_move_done(m); break;
    case M_LOCK_BUSY: cb_on_lock_busy(m); break;
    case M_LOCK_STRAY: cb_on_lock_stray(m, p, len); break;
    case M_PLACE: cb_on_place(m); break;
    case M_THREAD_GONE: cb_on_thread_gone(m); break;
    case M_THREADS_IDLE: cb_on_threads_idle(m); break;
    case M_DETACH: cb_on_detach(m); break;
    case M_CANCEL: cb_on_cancel(m); break;
    case M_THREAD_OP: cb_on_thread_op(m, p, len); break;
    case M_PROC: cb_on_proc(m, p, len); break;
    case M_RSYS: cb_on_rsys(m, p, len); break;
    case M_WAIT: cb_on_wait(m); break;
    case M_SIGNAL: cb_on_signal(m, p, len); break;
    case M_PULL: cb_on_pull(m, p, len); break;
    case M_PULL_REPLY: cb_on_pull_reply(m, p, len); break;
    case M_KEY: cb_on_key(m); break;
    case M_HEAP_FREE: cb_on_heap_free(m, p, len); break;
    case M_TABLE_ACK: cb_on_table_ack(m); break;
    case M_ATTACH_FAILED: cb_on_attach_failed(m); break;
    case M_NODE_IDLE: cb_on_node_idle(m); break;
    case M_LEAVE: cb_on_leave(m); break;
    case M_LEFT: cb_on_left(m, p, len); break;
    case M_NODE_GONE: cb_on_node_gone(m); break;
    case M_GONE_FLUSH: cb_on_gone_flush(m); break;
    case M_KEYS: cb_rma_peer(m->src, p, len); break;
    case M_CLAIM: cb_on_claim(m); break;
    case M_CLAIM_REPLY: cb_on_claim_reply(m, p, len); break;
    case M_GC_ASK: cb_on_gc_ask(); break;
    case M_GC_QUERY: cb_on_gc_query(m, p, len); break;
    case M_GC_VC: cb_on_gc_vc(m, p, len); break;
    case M_GC_BASE: cb_on_gc_base(m, p, len); break;
    case M_REVOKE: cb_on_revoke(m); break;
    case M_REVOKE_ACK: cb_on_revoke_ack(m); break;
    case M_ALLOC_REPLY: case M_PAGE: case M_DIFF_ACK: case M_REPLY: case M_JOIN_REPLY:
        deliver_reply(m, p, len);
        break;
    default:
        cb_die("node %d: unknown message type %u from node %d", cb.self, m->type, m->src);
    }
}

static void run_ops(cb_op_t *op)
{
    while (op) {
        cb_op_t *next = op->next;
        cb_msg_t hdr = op->hdr; /* a stack op may vanish once its reply is sent */
        void *payload = op->payload;
        size_t len = op->len;
        int dst = op->dst;
        if (op->heap)
            free(op);
        if (dst == cb.self)
            cb_dispatch(&hdr, payload, len);
        else
            transmit(dst, &hdr, payload, len);
        free(payload);
        op = next;
    }
}

static void *comm_main(void *arg)
{
    (void)arg;
    atomic_store(&comm_kid, gettid());
    cb_block_process_signals();
    prctl(PR_GET_NAME, cb.app_name); /* main's, inherited */
    prctl(PR_SET_NAME, "cables-comm");
    cb_numa_comm_thread();
    /* it sleeps when idle and runs briefly when woken: favour it over the
     * application threads, which may keep every CPU busy while a peer waits
     * for its answer (where allowed; not real-time: a container may give
     * real-time threads no CPU time at all) */
    if (setpriority(PRIO_PROCESS, (id_t)gettid(), -10)) {}
    uint64_t next_check = 0;
    bool sig = false; /* the signalfd of psig.c is readable */
    for (;;) {
        cb_psig_tick(sig);
        sig = false;
        /* bounded: steady incoming traffic must not starve local requests */
        for (int i = 0; i < 64 && cb_xport_progress(); i++)
            ;
        cb_mutex_lock(&q_mu);
        cb_op_t *ops = q_take_all(&inq);
        cb_mutex_unlock(&q_mu);
        run_ops(ops);
        while (selfq.head)
            run_ops(q_take_all(&selfq));
        bool retry = deferred.head != NULL;
        if (retry)
            run_ops(q_take_all(&deferred));
        uint64_t now = cb_now_ns();
        if (now >= next_check) {
            cb_check_peers();
            cb_rsys_tick();
            sig = true; /* a busy loop may not reach epoll_wait, which says so */
            next_check = now + 250000000ull;
        }
        cb_gc_tick();
        if (atomic_load(&comm_quit)) {
            /* what was posted before the quit still goes out */
            cb_mutex_lock(&q_mu);
            ops = q_take_all(&inq);
            cb_mutex_unlock(&q_mu);
            run_ops(ops);
            cb_xport_flush();
            return NULL;
        }
        atomic_store(&comm_sleeping, true);
        cb_mutex_lock(&q_mu);
        bool more = inq.head != NULL || selfq.head != NULL;
        cb_mutex_unlock(&q_mu);
        more = more || cb_psig_poked();
        if (more || !cb_xport_arm()) {
            atomic_store(&comm_sleeping, false);
            continue;
        }
        struct epoll_event ev[3];
        int n = epoll_wait(epfd, ev, 3, retry ? 1 : 250);
        atomic_store(&comm_sleeping, false);
        for (int i = 0; i < n; i++)
            if (ev[i].data.fd == evfd) {
                uint64_t v;
                if (read(evfd, &v, sizeof v) < 0) { /* drained already */ }
            } else if (ev[i].data.fd == sigfd) {
                sig = true;
            }
    }
}

void cb_comm_start(void)
{
    xfd = cb_xport_init();
    cb_rma_init();
    evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (evfd < 0 || epfd < 0)
        cb_die("cannot create the communication thread's event fds: %s", strerror(errno));
    struct epoll_event e = { .events = EPOLLIN, .data.fd = evfd };
    epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &e);
    e.data.fd = xfd;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, xfd, &e))
        cb_die("cannot watch UCX's event fd: %s", strerror(errno));
    if ((sigfd = cb_psig_init()) >= 0) {
        e.data.fd = sigfd;
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, sigfd, &e))
            cb_die("cannot watch the signals sent to the process: %s", strerror(errno));
    }
}

void cb_comm_run(void)
{
    int rc = cb_thread_start(&comm_tid, comm_main, NULL, false);
    if (rc)
        cb_die("cannot start the communication thread: %s", strerror(rc));
}

void cb_comm_stop(void)
{
    if (!comm_tid)
        return;
    atomic_store(&comm_quit, true);
    atomic_store(&cb.comm_down, true);
    if (wake_comm() < 0) {}
    cb_thread_wait(comm_tid);
    comm_tid = 0;
    atomic_store(&comm_kid, 0);
    cb_rma_fini();
    cb_xport_fini();
}
