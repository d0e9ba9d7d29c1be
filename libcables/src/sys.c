/* sys.c: futex waiting, clocks, the waiter handshake with the comm thread. */
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

int cb_futex_wait_until(_Atomic uint32_t *w, uint32_t val, uint64_t deadline)
{
    struct timespec ts, *tp = NULL;
    if (deadline != UINT64_MAX) {
        uint64_t now = cb_now_ns(), left = deadline > now ? deadline - now : 0;
        ts.tv_sec = (time_t)(left / 1000000000ull);
        ts.tv_nsec = (long)(left % 1000000000ull);
        tp = &ts;
    }
    return (int)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, tp, NULL, 0);
}

void cb_futex_wait(_Atomic uint32_t *w, uint32_t val) { cb_futex_wait_until(w, val, UINT64_MAX); }

void cb_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

uint64_t cb_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Spin briefly (a reply over shared memory takes a few microseconds), then
 * sleep: the machine has 2 cores and a spinning waiter steals one. */
#define POOL 16
static __thread cb_waiter_t pool[POOL];
static __thread uint32_t pool_used;

cb_waiter_t *cb_waiter_new(void)
{
    for (int i = 0; i < POOL; i++)
        if (!(pool_used & (1u << i))) {
            pool_used |= 1u << i;
            memset(&pool[i], 0, sizeof pool[i]);
            return &pool[i];
        }
    cb_die("more than %d runtime waits at once in one thread (runtime bug)", POOL);
}

void cb_waiter_free(cb_waiter_t *w)
{
    pool_used &= ~(1u << (w - pool));
}

/* done: 0 pending, 1 done, 2 pending and the waiter sleeps (wake it), 3
 * pending and the waiter woken by a cancellation (cb_waiter_poke): it
 * sleeps again as 2.  Before each sleep: true if done */
static bool rearm(cb_waiter_t *w)
{
    uint32_t v = atomic_load_explicit(&w->done, memory_order_acquire);
    if (v == 3)
        atomic_compare_exchange_strong(&w->done, &v, 2);
    return atomic_load_explicit(&w->done, memory_order_acquire) == 1;
}

/* a waiter in cb_waiter_wait_held: read before the wake (then w may be
 * reused); a signal that comes after its wait ended is ignored there or
 * taken by its next (rsys.c: cb_rsig's disposition off the master) */
static void wake_by_signal(pid_t tid)
{
    if (tid)
        syscall(SYS_tgkill, cb_pid(), tid, cb_rsig);
}

void cb_waiter_poke(cb_waiter_t *w)
{
    pid_t tid = w->wake_tid;
    uint32_t two = 2;
    if (atomic_compare_exchange_strong(&w->done, &two, 3))
        cb_futex_wake(&w->done);
    wake_by_signal(tid);
}

/* a program's thread asleep in the runtime: not spinning (propagate.c) */
static void blocked(int d)
{
    if (cb_app_thread)
        atomic_fetch_add(&cb.app_blocked, d);
}

void cb_waiter_wait(cb_waiter_t *w)
{
    for (int i = 0; i < 200; i++) {
        if (atomic_load_explicit(&w->done, memory_order_acquire) == 1)
            return;
        __builtin_ia32_pause();
    }
    uint32_t v = 0;
    if (!atomic_compare_exchange_strong(&w->done, &v, 2) && v == 1)
        return;
    blocked(1);
    while (!rearm(w))
        cb_futex_wait(&w->done, 2);
    blocked(-1);
}

void cb_waiter_wake(cb_waiter_t *w)
{
    pid_t tid = w->wake_tid;
    if (atomic_exchange_explicit(&w->done, 1, memory_order_acq_rel) == 2)
        cb_futex_wake(&w->done);
    wake_by_signal(tid);
}

void cb_waiter_wait_pending(cb_waiter_t *w)
{
    uint32_t v;
    while ((v = atomic_load_explicit(&w->pending, memory_order_acquire)) != 0)
        cb_futex_wait(&w->pending, v);
}

/* wait_core's sleep */
static int wait_loop(cb_waiter_t *w, uint64_t deadline, cb_thr_t *t, bool intr)
{
    while (!rearm(w)) {
        uint64_t now = cb_now_ns();
        if (t && atomic_load(&t->cancel) && !t->cancel_off)
            return -1;
        if (now >= deadline)
            return 0;
        if (cb_futex_wait_until(&w->done, 2, deadline) && errno == EINTR && intr)
            return -2;
    }
    return 1;
}

/* Sleep until w is done (1), the deadline passes (0; UINT64_MAX: none),
 * with t, t's cancellation is asked and enabled (-1), or, with intr, a
 * handler ran on this thread (-2): the kernel restarts an untimed sleep
 * after a handler with SA_RESTART, and ends a timed one after any. */
static int wait_core(cb_waiter_t *w, uint64_t deadline, cb_thr_t *t, bool intr)
{
    uint32_t v = 0;
    if (!atomic_compare_exchange_strong(&w->done, &v, 2) && v == 1)
        return 1;
    blocked(1);
    int r = wait_loop(w, deadline, t, intr);
    blocked(-1);
    return r;
}

static bool wait_done(cb_waiter_t *w, uint64_t deadline, cb_thr_t *t)
{
    return wait_core(w, deadline, t, false) == 1;
}

/* An interruptible wait until deadline (UINT64_MAX: none): untimed, the
 * kernel's futex wait restarts after a handler with SA_RESTART; timed, a
 * day at a time, it ends after any handler (-2) */
static int wait_intr(cb_waiter_t *w, uint64_t deadline, bool timed)
{
    cb_thr_t *t = cb_app_thread ? cb_thr : NULL;
    if (t)
        atomic_store(&t->waiting, w); /* where a cancellation wakes it */
    int r;
    if (!timed)
        r = wait_core(w, UINT64_MAX, t, true);
    else for (;;) {
        uint64_t day = cb_now_ns() + 86400000000000ull;
        r = wait_core(w, day < deadline ? day : deadline, t, true);
        if (r != 0 || cb_now_ns() >= deadline)
            break;
    }
    if (t)
        atomic_store(&t->waiting, NULL);
    return r;
}

int cb_waiter_wait_intr(cb_waiter_t *w, bool restart)
{
    int r = wait_intr(w, UINT64_MAX, !restart); /* without restart: timed */
    return r == -2 ? 0 : r;
}

/* as glibc's sem_wait (untimed) and sem_timedwait (timed) */
int cb_waiter_wait_intr_until(cb_waiter_t *w, uint64_t deadline)
{
    return wait_intr(w, deadline, deadline != UINT64_MAX);
}

int cb_waiter_wait_held(cb_waiter_t *w, const sigset_t *take, siginfo_t *si, bool cancellable)
{
    static const struct timespec none, tick = { 0, 250000000 }; /* (a lost wake: not for ever) */
    sigset_t wakes;
    sigemptyset(&wakes);
    sigaddset(&wakes, cb_rsig);
    while (syscall(SYS_rt_sigtimedwait, &wakes, NULL, &none, _NSIG / 8) > 0)
        ; /* those of waits before, if the program blocks cb_rsig */
    cb_thr_t *t = cb_thr;
    atomic_store(&t->waiting, w);
    blocked(1);
    int r = 0;
    while (!r) {
        if (atomic_load_explicit(&w->done, memory_order_acquire) == 1)
            r = 1;
        else if (cancellable && atomic_load(&t->cancel) && !t->cancel_off)
            r = -1;
        else {
            long s = syscall(SYS_rt_sigtimedwait, take, si, &tick, _NSIG / 8);
            if (s > 0 && s != cb_rsig)
                r = -2;
        }
    }
    blocked(-1);
    atomic_store(&t->waiting, NULL);
    return r;
}

bool cb_waiter_wait_until(cb_waiter_t *w, uint64_t deadline)
{
    return wait_done(w, deadline, NULL);
}

bool cb_waiter_wait_cancellable(cb_waiter_t *w, uint64_t deadline)
{
    cb_thr_t *t = cb_app_thread ? cb_thr : NULL;
    if (t)
        atomic_store(&t->waiting, w); /* where a cancellation wakes it */
    bool done = wait_done(w, deadline, t);
    if (t)
        atomic_store(&t->waiting, NULL);
    return done;
}

/* An application thread holds the program's handled signals off while it
 * holds a lock that the runtime's threads take too, or that its own fault
 * path takes: a handler that ran there and touched a shared page, or slept
 * (a poller's pull), would wait for what its own thread holds (a page an
 * acquire owns, release_mu, the queue's lock, the C library's malloc arena
 * that the communication thread allocates from).  They come in as the
 * outermost such lock is let go.  "Application thread" is the program's
 * thread (cb_thr), also where it runs the runtime's code as the runtime's
 * (AS_RUNTIME).  (tests/posix/handler_shared.c) */
static __thread uint32_t hold_depth CB_TLS;
static __thread bool held_off CB_TLS;
static __thread sigset_t hold_added CB_TLS; /* the signals blocked at the outermost hold */

void cb_signals_hold_enter(void)
{
    if (hold_depth++ == 0)
        held_off = cb_thr && cb_app_signals_block(&hold_added);
}

void cb_signals_hold_leave(void)
{
    if (--hold_depth == 0 && held_off) {
        held_off = false;
        cb_app_signals_unblock(&hold_added);
    }
}

bool cb_signals_hold_leave_ran(bool restart)
{
    bool ran = false;
    if (hold_depth == 1 && held_off) {
        sigset_t pending; /* the kernel's: those held off that come in now */
        sigemptyset(&pending);
        if (syscall(SYS_rt_sigpending, &pending, _NSIG / 8) == 0)
            for (int s = 1; s <= 64 && !ran; s++)
                ran = sigismember(&hold_added, s) == 1 && sigismember(&pending, s) == 1 &&
                      !(restart && cb_sig_restarts(s));
    }
    cb_signals_hold_leave();
    return ran;
}

void *cb_malloc(size_t n)
{
    cb_signals_hold_enter();
    void *p = __libc_malloc(n);
    cb_signals_hold_leave();
    return p;
}

void *cb_calloc(size_t n, size_t size)
{
    cb_signals_hold_enter();
    void *p = __libc_calloc(n, size);
    cb_signals_hold_leave();
    return p;
}

void *cb_realloc(void *p, size_t n)
{
    cb_signals_hold_enter();
    void *q = __libc_realloc(p, n);
    cb_signals_hold_leave();
    return q;
}

void *cb_memalign(size_t align, size_t n)
{
    cb_signals_hold_enter();
    void *p = __libc_memalign(align, n);
    cb_signals_hold_leave();
    return p;
}

void cb_free(void *p)
{
    int e = errno; /* free keeps errno (POSIX 2024) */
    cb_signals_hold_enter();
    __libc_free(p);
    cb_signals_hold_leave();
    errno = e;
}

/* Drepper's three-state futex mutex ("Futexes are tricky", mutex 2), held
 * with the program's signals off (above). */
void cb_mutex_lock(cb_mutex_t *m)
{
    cb_signals_hold_enter();
    uint32_t c = 0;
    if (atomic_compare_exchange_strong(&m->v, &c, 1))
        return;
    if (c != 2)
        c = atomic_exchange(&m->v, 2);
    while (c != 0) {
        cb_futex_wait(&m->v, 2);
        c = atomic_exchange(&m->v, 2);
    }
}

void cb_mutex_unlock(cb_mutex_t *m)
{
    if (atomic_exchange(&m->v, 0) == 2)
        syscall(SYS_futex, (uint32_t *)&m->v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    cb_signals_hold_leave();
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

void *cb_libc(const char *name)
{
    bool app = cb_app_thread;
    cb_app_thread = false; /* what dlsym allocates is the runtime's */
    void *f = dlsym(RTLD_NEXT, name); /* libc's, past any interposer here */
    cb_app_thread = app;
    if (!f)
        cb_die("cannot find libc's %s", name);
    return f;
}

static int thread_start(pthread_t *t, void *(*fn)(void *), void *arg, bool detached, size_t stack)
{
    static create_fn create;
    if (!create)
        create = (create_fn)cb_libc("pthread_create");
    pthread_attr_t a;
    pthread_attr_init(&a);
    if (detached)
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (stack)
        pthread_attr_setstacksize(&a, stack);
    /* a thread inherits its creator's signal mask: one the runtime starts
     * begins with the process's signals blocked (the runtime's threads keep
     * them so; a program's thread, placed here by the communication thread,
     * takes its creator's mask where the program's code begins: thread.c) */
    sigset_t procs, was;
    cb_process_signals(&procs);
    if (!cb_app_thread)
        pthread_sigmask(SIG_SETMASK, &procs, &was);
    int rc = create(t, &a, fn, arg);
    if (!cb_app_thread)
        pthread_sigmask(SIG_SETMASK, &was, NULL);
    pthread_attr_destroy(&a);
    return rc;
}

int cb_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, bool detached)
{
    return thread_start(t, fn, arg, detached, 0);
}

int cb_thread_start_sized(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack)
{
    return thread_start(t, fn, arg, false, stack);
}

void cb_process_signals(sigset_t *set)
{
    sigfillset(set);
    static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS };
    for (size_t i = 0; i < sizeof sync_sigs / sizeof *sync_sigs; i++)
        sigdelset(set, sync_sigs[i]);
}

void cb_block_process_signals(void)
{
    sigset_t procs;
    cb_process_signals(&procs);
    pthread_sigmask(SIG_BLOCK, &procs, NULL);
}

int cb_thread_wait(pthread_t t)
{
    static join_fn join;
    if (!join)
        join = (join_fn)cb_libc("pthread_join");
    return join(t, NULL);
}
