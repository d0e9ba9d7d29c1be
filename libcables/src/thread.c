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
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
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
    uint64_t mask; /* the creator's signal mask (signals 1 to 64) */
    cb_vc_t vc;
} th_start_t;

static th_t *threads; /* comm thread only */
static _Atomic uint32_t seq = 1;
static int load[CB_MAX_NODES]; /* master, comm thread: running threads per node */
static cb_msg_t idle_req;      /* master: main waits for all other threads to end */
static cb_thr_t *main_thr;     /* master: main's (thread 0, not in threads) */
static bool idle_waiting;

static void *trampoline(void *a)
{
    th_start_t st = *(th_start_t *)a;
    free(a);
    /* started by the communication thread: the program's name and CPUs, not its */
    prctl(PR_SET_NAME, cb.app_name);
    cb_numa_app_thread();
    if (cb.self != 0) /* the libraries the master loaded before, here too */
        cb_libs_wait();
    cb_tid = st.tid;
    cb_thr = st.thr;
    cb_app_thread = true;
    cb_acquire(st.vc);
    sigset_t mask; /* its creator's, as pthread_create gives */
    sigemptyset(&mask);
    memcpy(&mask, &st.mask, sizeof st.mask);
    cb_sigmask(SIG_SETMASK, &mask, NULL);
    cb_psig_thread_start(); /* (with that mask, not the comm thread's) */
    atomic_fetch_add(&cb.app_threads, 1);
    void *ret = cb_run_on_gas_stack(st.fn, st.arg, st.stack, NULL);
    atomic_store(&st.thr->ending, true); /* no cancellation reaches sys from now on */
    atomic_fetch_sub(&cb.app_threads, 1);
    cb_psig_thread_end();
    /* the program's signals held off for good (none is sent here now):
     * glibc's end of the thread frees its malloc cache (blocks the
     * communication thread allocated) into their arena with its lock, past
     * cb_free (sys.c) */
    cb_signals_hold_enter();
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
    size_t len;
    void *n = cb_notices_for(node, &len);
    /* the payload: the caller's signal mask, then the notices */
    sigset_t mask;
    cb_sigmask(SIG_BLOCK, NULL, &mask);
    uint8_t *pl_buf = malloc(sizeof(uint64_t) + len);
    if (!pl_buf)
        cb_die("out of memory for a thread's start");
    memcpy(pl_buf, &mask, sizeof(uint64_t));
    memcpy(pl_buf + sizeof(uint64_t), n, len);
    free(n);
    cb_waiter_t *w = cb_waiter_new();
    cb_msg_t m = { .type = M_SPAWN, .a = tid, .b = (uintptr_t)fn, .c = (uintptr_t)arg,
                   .d = stack | (uint64_t)detached << 63 };
    cb_call(node, &m, pl_buf, sizeof(uint64_t) + len, w);
    free(pl_buf);
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
    atomic_store(&cb.app_threads, 1);
    cb_tid = 0;
    cb_thr = main_thr = calloc(1, sizeof *cb_thr);
    cb_thr->sys = ((pthread_t (*)(void))cb_libc("pthread_self"))();
    atomic_store(&cb_thr->ktid, gettid()); /* its GAS stack comes later (stack.c) */
    cb_app_thread = true;
}

void cb_on_spawn(const cb_msg_t *m, const void *p, size_t len)
{
    if (len < sizeof(uint64_t)) {
        cb_die("node %d: malformed thread start (%zu bytes) from node %d", cb.self, len, m->src);
    }
    th_start_t *st = malloc(sizeof *st);
    if (!st)
        cb_die("node %d: out of memory starting a thread", cb.self);
    memcpy(&st->mask, p, sizeof st->mask);
    cb_notices_merge((const uint8_t *)p + sizeof st->mask, len - sizeof st->mask, st->vc);
    cb_known_update(m->src, st->vc);
    st->tid = m->a;
    st->fn = (void *(*)(void *))(uintptr_t)m->b;
    st->arg = (void *)(uintptr_t)m->c;
    st->stack = (size_t)(m->d & ~(1ull << 63));
    st->thr = calloc(1, sizeof *st->thr);
    th_t *t = calloc(1, sizeof *t);
    if (!st->thr || !t)
        cb_die("node %d: out of memory starting a thread", cb.self);
    t->tid = m->a;
    t->detached = m->d >> 63;
    t->thr = st->thr;
    t->thr->detached = t->detached;
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
    size_t len;
    void *n = cb_notices_for(t->joiner.src, &len);
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

/* the answer to a join (w), whose thread ran on node */
static int join_done(cb_waiter_t *w, int node, void **ret)
{
    void *data = w->data;
    size_t len = w->len;
    int64_t value = w->value;
    cb_waiter_free(w);
    if (!data)
        return value ? (int)value : ESRCH;
    cb_acquire_from(node, data, len);
    free(data);
    if (ret)
        *ret = (void *)(uintptr_t)value;
    return 0;
}

/* asks node for the join of t, answered to *w (cb_waiter_wait, join_done) */
static int join_post(uint64_t t, int *node, cb_waiter_t **w)
{
    *node = (int)(t >> 48);
    if (!cb_node_up(*node))
        return ESRCH;
    if (cb_app_thread && t == cb_tid)
        return EDEADLK;
    /* what this thread wrote goes out first: the thread joined may spin
     * on it (main: stop = 1; pthread_join), and a spin is shown only
     * released writes (propagate.c) */
    cb_release();
    *w = cb_waiter_new();
    cb_msg_t m = { .type = M_JOIN, .a = t };
    cb_call_post(*node, &m, NULL, 0, *w);
    return 0;
}

int cables_thread_join(cables_thread_t t, void **ret)
{
    int node;
    cb_waiter_t *w;
    int rc = join_post(t, &node, &w);
    if (rc)
        return rc;
    cb_waiter_wait(w);
    return join_done(w, node, ret);
}

/* The join is asked for as cables_thread_join asks; at the deadline (or
 * a cancellation of the joining thread, which the wait acts on) the
 * thread's node is asked to answer it with ETIMEDOUT if the thread is
 * still running (TOP_JOIN_ABORT, after the join: the node has it), and
 * the answer, whichever it is, is awaited: a join aborted for a
 * cancellation is ECANCELED. */
int cb_thread_join_until(uint64_t t, void **ret, uint64_t deadline_ns)
{
    int node;
    cb_waiter_t *w;
    int rc = join_post(t, &node, &w);
    if (rc)
        return rc;
    bool cancelled = false;
    if (!cb_waiter_wait_cancellable(w, deadline_ns)) {
        cancelled = cb_now_ns() < deadline_ns;
        cb_msg_t a = { .type = M_THREAD_OP, .a = t, .b = TOP_JOIN_ABORT, .c = (uintptr_t)w };
        cb_rpc(node, &a, NULL);
        cb_waiter_wait(w);
    }
    rc = join_done(w, node, ret);
    return rc == ETIMEDOUT && cancelled ? ECANCELED : rc;
}

/* M_DETACH a=tid */
void cb_on_detach(const cb_msg_t *m)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    int rc = !t ? ESRCH : t->detached || t->has_joiner ? EINVAL : 0;
    if (!rc) {
        t->detached = true;
        t->thr->detached = true;
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
    if (!t || t->done || atomic_load(&t->thr->ending)) {
        /* (an ended thread's glibc handle may be a new thread's: its exit
         * message waits behind this one) */
        reply_rc(m, t ? 0 : ESRCH);
        return;
    }
    int rc = libc_cancel(t->thr->sys);
    if (!rc) {
        atomic_store(&t->thr->cancel, 1);
        cb_waiter_t *w = atomic_load(&t->thr->waiting);
        if (w)
            cb_waiter_poke(w);
    }
    reply_rc(m, rc);
}

void cb_cancel_act(void)
{
    static void (*testcancel)(void);
    if (!testcancel)
        testcancel = (void (*)(void))cb_libc("pthread_testcancel");
    if (cb_thr)
        cb_thr->cancel_off = true;
    testcancel(); /* glibc's: unwinds the thread if cancellation is enabled */
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

/* ---- operations on a thread by id (TOP_*, internal.h) ----
 * Made on the thread's node, on its kernel thread id rather than glibc's
 * handle (which is gone once a detached thread ended; the thread table
 * says first whether the thread still runs): the system calls glibc's
 * pthread_kill, pthread_setname_np... make. */
static int top_comm(pid_t k, char *name, bool set)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)k);
    /* raw calls: on an application thread of another node the shim's open,
     * read and write are made at the master (rsys.c) */
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, (set ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? ESRCH : errno;
    ssize_t n = set ? syscall(SYS_write, fd, name, strlen(name)) : syscall(SYS_read, fd, name, 15);
    int rc = n < 0 ? errno : 0;
    syscall(SYS_close, fd);
    if (!set && n >= 0) {
        name[n] = 0;
        if (n > 0 && name[n - 1] == '\n')
            name[n - 1] = 0;
    }
    return rc;
}

/* thr: the thread's state (done: it ended, not joined yet) */
static int top_run(cb_thr_t *thr, bool done, int op, uint64_t c, uint64_t d, const void *in,
                   size_t inlen, void *out, size_t outlen, int64_t *b2)
{
    if (done && op != TOP_KILL)
        return ESRCH;
    pid_t k = atomic_load(&thr->ktid);
    struct sched_param sp = { 0 };
    int rc = 0;
    switch (op) {
    case TOP_KILL: /* an ended thread not joined yet: there, no signal (glibc) */
        if (!done && c && syscall(SYS_tgkill, cb_pid(), k, (int)c))
            rc = errno == ESRCH ? 0 : errno; /* ending: its exit is on its way */
        break;
    case TOP_SIGQUEUE: {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_signo = (int)c;
        si.si_code = SI_QUEUE;
        si.si_pid = cb_program_pid();
        si.si_uid = getuid();
        si.si_value.sival_ptr = (void *)(uintptr_t)d;
        if (syscall(SYS_rt_tgsigqueueinfo, cb_pid(), k, (int)c, &si))
            rc = errno;
        break;
    }
    case TOP_SETNAME: {
        char name[16];
        if (inlen > sizeof name || !inlen)
            return ERANGE;
        memcpy(name, in, inlen);
        name[inlen - 1] = 0;
        rc = top_comm(k, name, true);
        break;
    }
    case TOP_GETNAME:
        if (outlen < 16)
            return ERANGE;
        rc = top_comm(k, out, false);
        break;
    case TOP_SETAFFINITY: {
        uint8_t set[CPU_ALLOC_SIZE(4096)];
        if (inlen > sizeof set)
            return EINVAL;
        memcpy(set, in, inlen);
        cb_cpus_fold(set, inlen); /* the program counts the cluster's CPUs */
        if (cb_setaffinity(k, inlen, (cpu_set_t *)set))
            rc = errno;
        break;
    }
    case TOP_GETAFFINITY: {
        long n = syscall(SYS_sched_getaffinity, k, outlen, out);
        if (n < 0)
            rc = errno;
        else if ((size_t)n < outlen)
            memset((char *)out + n, 0, outlen - (size_t)n);
        break;
    }
    case TOP_SETSCHED:
        sp.sched_priority = (int)d;
        if (sched_setscheduler(k, (int)c, &sp))
            rc = errno;
        break;
    case TOP_GETSCHED: {
        int pol = sched_getscheduler(k);
        if (pol < 0 || sched_getparam(k, &sp))
            return errno;
        *b2 = (int64_t)(uint32_t)pol | (int64_t)sp.sched_priority << 32;
        break;
    }
    case TOP_SETPRIO:
        sp.sched_priority = (int)c;
        if (sched_setparam(k, &sp))
            rc = errno;
        break;
    case TOP_ATTR: {
        cb_thread_attr_t a = { (uintptr_t)thr->stack, thr->stack_size, atomic_load(&thr->detached) };
        if (outlen < sizeof a)
            return EINVAL;
        memcpy(out, &a, sizeof a);
        break;
    }
    case TOP_KTID:
        *b2 = k;
        break;
    case TOP_CPUTIME: { /* its clock as the kernel's MAKE_THREAD_CPUCLOCK makes it */
        struct timespec ts;
        if (c > 2 || syscall(SYS_clock_gettime, (clockid_t)((~(clockid_t)k) * 8 | 4 | (int)c), &ts))
            return c > 2 ? EINVAL : errno;
        *b2 = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        break;
    }
    default:
        rc = EINVAL;
    }
    return rc;
}

/* M_THREAD_OP a=tid b=op c, d; payload: in.  Answer: a=rc, b=b2, payload:
 * out (TOP_GET* and TOP_ATTR: d is its length) */
void cb_on_thread_op(const cb_msg_t *m, const void *p, size_t len)
{
    th_t *t;
    HASH_FIND(hh, threads, &m->a, sizeof m->a, t);
    cb_thr_t *thr = t ? t->thr : m->a == 0 && cb.self == 0 ? main_thr : NULL;
    if (thr && !(t && t->done) && !atomic_load(&thr->ktid)) {
        cb_defer(m, p, len); /* created, not running yet: its kernel id comes soon */
        return;
    }
    int64_t b2 = 0;
    int rc = ESRCH;
    if (m->b == TOP_JOIN_ABORT) {
        if (t && t->has_joiner && !t->done && t->joiner.src == m->src &&
            t->joiner.waiter == m->c) {
            cb_msg_t r = { .type = M_REPLY, .a = ETIMEDOUT };
            cb_reply(&t->joiner, &r, NULL, 0, false);
            t->has_joiner = false;
        }
        rc = 0;
    } else if (thr) {
        bool outs = m->b == TOP_GETNAME || m->b == TOP_GETAFFINITY || m->b == TOP_ATTR;
        size_t outlen = outs ? (size_t)m->d : 0;
        void *out = outlen ? calloc(1, outlen) : NULL;
        if (outlen && !out)
            rc = ENOMEM;
        else
            rc = top_run(thr, t && t->done, (int)m->b, m->c, m->d, p, len, out, outlen, &b2);
        if (out) {
            cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc, .b = (uint64_t)b2 };
            cb_reply(m, &r, out, rc == 0 ? outlen : 0, false);
            free(out);
            return;
        }
    }
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc, .b = (uint64_t)b2 };
    cb_reply(m, &r, NULL, 0, false);
}

int cb_thread_op(uint64_t tid, int op, uint64_t c, uint64_t d, const void *in, size_t inlen,
                 void *out, size_t outlen, int64_t *b2)
{
    int64_t second = 0;
    int rc;
    if (cb_app_thread && tid == cb_tid && cb_thr) { /* itself: here, no message */
        rc = top_run(cb_thr, false, op, c, d, in, inlen, out, outlen, &second);
    } else {
        int node = (int)(tid >> 48);
        if (!cb_node_up(node))
            return ESRCH;
        cb_waiter_t *w = cb_waiter_new();
        cb_msg_t m = { .type = M_THREAD_OP, .a = tid, .b = (uint64_t)op, .c = c,
                       .d = outlen ? outlen : d };
        cb_call(node, &m, in, inlen, w);
        rc = (int)w->value;
        second = w->value2;
        if (w->data) {
            memcpy(out, w->data, w->len < outlen ? w->len : outlen);
            free(w->data);
        }
        cb_waiter_free(w);
    }
    if (b2)
        *b2 = second;
    return rc;
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
