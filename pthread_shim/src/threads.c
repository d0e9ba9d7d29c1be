/* threads.c: thread life (create, join, detach, exit, self, cancel), once
 * and keys.  Application threads create cluster threads, placed by the
 * master; runtime threads (UCX's, Open MPI's) create libc threads. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <sys/sysinfo.h>
#include <unistd.h>

#include "shim.h"

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    if (!cb_app_thread)
        return REAL(pthread_create)(t, attr, fn, arg);
    int detach = PTHREAD_CREATE_JOINABLE;
    size_t stack = 0;
    if (attr) {
        pthread_attr_getdetachstate(attr, &detach);
        pthread_attr_getstacksize(attr, &stack);
    }
    uint64_t tid;
    int rc = cb_thread_create(&tid, -1, fn, arg, stack, detach == PTHREAD_CREATE_DETACHED);
    if (rc == 0)
        *t = (pthread_t)(tid | TID_TAG);
    return rc == EINVAL ? EAGAIN : rc;
}

/* joins are cancellation points: a join that a cancellation stopped is
 * withdrawn (cb_thread_join_until), then the cancellation acts, or, where
 * one acts already (a cleanup handler's join), the join waits on */
static int join_until(pthread_t t, void **ret, uint64_t deadline_ns)
{
    int rc;
    while ((rc = cb_thread_join_until(t & ~TID_TAG, ret, deadline_ns)) == ECANCELED)
        cb_cancel_act(); /* unwinds, or the next wait is not stopped */
    return rc;
}

int pthread_join(pthread_t t, void **ret)
{
    if (!(t & TID_TAG))
        return REAL(pthread_join)(t, ret);
    return join_until(t, ret, UINT64_MAX);
}

int pthread_detach(pthread_t t)
{
    if (!(t & TID_TAG))
        return REAL(pthread_detach)(t);
    return cb_thread_detach(t & ~TID_TAG);
}

void pthread_exit(void *value)
{
    if (cb_app_thread)
        cb_thread_exit(value);
    REAL(pthread_exit)(value);
    __builtin_unreachable();
}

pthread_t pthread_self(void)
{
    if (cb_app_thread)
        return (pthread_t)(cb_tid | TID_TAG);
    return REAL(pthread_self)();
}

int pthread_equal(pthread_t a, pthread_t b) { return a == b; }

int pthread_cancel(pthread_t t)
{
    if (!(t & TID_TAG))
        return REAL(pthread_cancel)(t);
    return cb_thread_cancel(t & ~TID_TAG);
}

/* glibc keeps the state; the runtime's cancellable waits need to know it */
int pthread_setcancelstate(int state, int *old)
{
    int rc = REAL(pthread_setcancelstate)(state, old);
    if (!rc && cb_app_thread && cb_thr)
        cb_thr->cancel_off = state == PTHREAD_CANCEL_DISABLE;
    return rc;
}

/* ---- other calls on a thread: glibc's for a glibc thread; for a cluster
 * thread, made on its node on its kernel thread (cb_thread_op) ---- */
#define CLUSTER(t) ((t) & ~TID_TAG)

/* glibc's own signals (cancellation, setxid) are not the program's */
static bool bad_signal(int sig)
{
    return sig < 0 || sig >= NSIG || sig == __SIGRTMIN || sig == __SIGRTMIN + 1;
}

int pthread_kill(pthread_t t, int sig)
{
    if (!(t & TID_TAG))
        return REAL(pthread_kill)(t, sig);
    if (bad_signal(sig))
        return EINVAL;
    return cb_thread_op(CLUSTER(t), TOP_KILL, (uint64_t)sig, 0, NULL, 0, NULL, 0, NULL);
}

int pthread_sigqueue(pthread_t t, int sig, const union sigval v)
{
    if (!(t & TID_TAG))
        return REAL(pthread_sigqueue)(t, sig, v);
    if (bad_signal(sig))
        return EINVAL;
    return cb_thread_op(CLUSTER(t), TOP_SIGQUEUE, (uint64_t)sig, (uintptr_t)v.sival_ptr, NULL, 0,
                        NULL, 0, NULL);
}

int pthread_setname_np(pthread_t t, const char *name)
{
    if (!(t & TID_TAG))
        return REAL(pthread_setname_np)(t, name);
    char copy[16];
    size_t n = strlen(name);
    if (n >= sizeof copy)
        return ERANGE;
    memcpy(copy, name, n + 1); /* a private copy: it travels in a message */
    return cb_thread_op(CLUSTER(t), TOP_SETNAME, 0, 0, copy, n + 1, NULL, 0, NULL);
}

int pthread_getname_np(pthread_t t, char *buf, size_t len)
{
    if (!(t & TID_TAG))
        return REAL(pthread_getname_np)(t, buf, len);
    if (len < 16) /* glibc: room for any name */
        return ERANGE;
    char name[16] = "";
    int rc = cb_thread_op(CLUSTER(t), TOP_GETNAME, 0, 0, NULL, 0, name, sizeof name, NULL);
    if (rc)
        return rc;
    memcpy(buf, name, strlen(name) + 1);
    return 0;
}

int pthread_setaffinity_np(pthread_t t, size_t size, const cpu_set_t *set)
{
    if (!(t & TID_TAG))
        return REAL(pthread_setaffinity_np)(t, size, set);
    char copy[CPU_ALLOC_SIZE(4096)];
    if (size > sizeof copy)
        return EINVAL;
    memcpy(copy, set, size);
    return cb_thread_op(CLUSTER(t), TOP_SETAFFINITY, 0, 0, copy, size, NULL, 0, NULL);
}

int pthread_getaffinity_np(pthread_t t, size_t size, cpu_set_t *set)
{
    if (!(t & TID_TAG))
        return REAL(pthread_getaffinity_np)(t, size, set);
    char copy[CPU_ALLOC_SIZE(4096)];
    if (size > sizeof copy || size == 0)
        return EINVAL;
    int rc = cb_thread_op(CLUSTER(t), TOP_GETAFFINITY, 0, 0, NULL, 0, copy, size, NULL);
    if (!rc)
        memcpy(set, copy, size);
    return rc;
}

int pthread_setschedparam(pthread_t t, int policy, const struct sched_param *p)
{
    if (!(t & TID_TAG))
        return REAL(pthread_setschedparam)(t, policy, p);
    return cb_thread_op(CLUSTER(t), TOP_SETSCHED, (uint64_t)policy, (uint64_t)p->sched_priority,
                        NULL, 0, NULL, 0, NULL);
}

int pthread_getschedparam(pthread_t t, int *policy, struct sched_param *p)
{
    if (!(t & TID_TAG))
        return REAL(pthread_getschedparam)(t, policy, p);
    int64_t v = 0;
    int rc = cb_thread_op(CLUSTER(t), TOP_GETSCHED, 0, 0, NULL, 0, NULL, 0, &v);
    if (!rc) {
        *policy = (int)(uint32_t)v;
        memset(p, 0, sizeof *p);
        p->sched_priority = (int)(v >> 32);
    }
    return rc;
}

int pthread_setschedprio(pthread_t t, int prio)
{
    if (!(t & TID_TAG))
        return REAL(pthread_setschedprio)(t, prio);
    return cb_thread_op(CLUSTER(t), TOP_SETPRIO, (uint64_t)prio, 0, NULL, 0, NULL, 0, NULL);
}

/* the thread's stack is its stack in the GAS, where its locals are */
int pthread_getattr_np(pthread_t t, pthread_attr_t *attr)
{
    if (!(t & TID_TAG))
        return REAL(pthread_getattr_np)(t, attr);
    cb_thread_attr_t a;
    int rc = cb_thread_op(CLUSTER(t), TOP_ATTR, 0, 0, NULL, 0, &a, sizeof a, NULL);
    if (rc)
        return rc;
    if ((rc = pthread_attr_init(attr)))
        return rc;
    pthread_attr_setdetachstate(attr, a.detached ? PTHREAD_CREATE_DETACHED
                                                 : PTHREAD_CREATE_JOINABLE);
    if (a.stack && a.stack_size)
        pthread_attr_setstack(attr, (void *)(uintptr_t)a.stack, (size_t)a.stack_size);
    return 0;
}

/* A thread's CPU-time clock is its node's kernel's: a thread of this node
 * gets the kernel's clock id, one of another node an id the kernel never
 * makes (cputime.c reads it there: shim_remote_cpuclock_id).  Before, threads
 * of other nodes had none (ENOENT). */
int pthread_getcpuclockid(pthread_t t, clockid_t *clk)
{
    if (!(t & TID_TAG))
        return REAL(pthread_getcpuclockid)(t, clk);
    if ((int)(CLUSTER(t) >> 48) != cb.self) {
        int rc = cb_thread_op(CLUSTER(t), TOP_KILL, 0, 0, NULL, 0, NULL, 0, NULL); /* there? */
        return rc ? rc : shim_remote_cpuclock_id(CLUSTER(t), clk);
    }
    int64_t k = 0;
    int rc = cb_thread_op(CLUSTER(t), TOP_KTID, 0, 0, NULL, 0, NULL, 0, &k);
    if (!rc)
        *clk = (clockid_t)((~(clockid_t)k) * 8 | 6); /* the kernel's per-thread CPU clock */
    return rc;
}

int pthread_tryjoin_np(pthread_t t, void **ret)
{
    if (!(t & TID_TAG))
        return REAL(pthread_tryjoin_np)(t, ret);
    int rc = cb_thread_join_until(CLUSTER(t), ret, 0); /* not a cancellation point */
    return rc == ETIMEDOUT ? EBUSY : rc;
}

int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t c, const struct timespec *abs)
{
    if (!(t & TID_TAG))
        return REAL(pthread_clockjoin_np)(t, ret, c, abs);
    if (!abs)
        return join_until(t, ret, UINT64_MAX);
    if (c != CLOCK_REALTIME && c != CLOCK_MONOTONIC)
        return EINVAL;
    int64_t d = shim_deadline(c, abs);
    if (d < 0)
        return EINVAL;
    return join_until(t, ret, (uint64_t)d);
}

int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abs)
{
    if (!(t & TID_TAG))
        return REAL(pthread_timedjoin_np)(t, ret, abs);
    return pthread_clockjoin_np(t, ret, CLOCK_REALTIME, abs);
}

/* ---- once: a cluster lock on the control word's address guards it ---- */
#define ONCE_DONE 0x4f4e4345 /* "ONCE" */

static void once_give(void *once) { cb_lock_give((uintptr_t)once, cb_tid, CB_LK_NORMAL); }

/* An init that does not return (cancelled, pthread_exit, a C++ exception:
 * this file is built with -fexceptions) leaves the control word not done
 * and the lock given back, as glibc's: the next caller runs init.  Before,
 * the lock stayed taken and the next caller waited for ever. */
int pthread_once(pthread_once_t *once, void (*init)(void))
{
    if (!shared_obj(once) || !cb_app_thread)
        return REAL(pthread_once)(once, init);
    uint64_t key = (uintptr_t)once;
    cb_lock_take(key, cb_tid, CB_LK_NORMAL, UINT64_MAX);
    if (*(volatile int *)once != ONCE_DONE) {
        pthread_cleanup_push(once_give, once);
        init();
        pthread_cleanup_pop(0);
        *(volatile int *)once = ONCE_DONE;
    }
    cb_lock_give(key, cb_tid, CB_LK_NORMAL);
    return 0;
}

/* ---- keys: numbered by the master (KEY_BASE + n, never reused), values
 * per thread in private memory, destructors run at the thread's end ---- */
#define KEY_BASE 0x40000000u
#define KEY_MAX CB_KEYS_MAX
static __thread void **vals CB_TLS;
static __thread size_t nvals CB_TLS;

static bool cluster_key(pthread_key_t k) { return k >= KEY_BASE && k < KEY_BASE + KEY_MAX; }

int pthread_key_create(pthread_key_t *k, void (*dtor)(void *))
{
    if (!cb_app_thread)
        return REAL(pthread_key_create)(k, dtor);
    int64_t n = cb_key(CB_KEY_CREATE, (uintptr_t)dtor);
    if (n < 0 || n >= KEY_MAX)
        return EAGAIN;
    *k = KEY_BASE + (pthread_key_t)n;
    return 0;
}

int pthread_key_delete(pthread_key_t k)
{
    if (!cluster_key(k))
        return REAL(pthread_key_delete)(k);
    return cb_key(CB_KEY_DELETE, k - KEY_BASE) < 0 ? EINVAL : 0;
}

void *pthread_getspecific(pthread_key_t k)
{
    if (!cluster_key(k))
        return REAL(pthread_getspecific)(k);
    size_t i = k - KEY_BASE;
    return i < nvals ? vals[i] : NULL;
}

int pthread_setspecific(pthread_key_t k, const void *v)
{
    if (!cluster_key(k))
        return REAL(pthread_setspecific)(k, v);
    size_t i = k - KEY_BASE;
    if (i >= nvals) {
        size_t n = nvals ? nvals : 16;
        while (n <= i)
            n *= 2;
        void **nv = realloc(vals, n * sizeof *nv);
        if (!nv)
            return ENOMEM;
        memset(nv + nvals, 0, (n - nvals) * sizeof *nv);
        vals = nv;
        nvals = n;
    }
    vals[i] = (void *)v;
    return 0;
}

/* The processors an application thread counts are the cluster's: as many
 * as it runs threads at once (cables_cpu_count: its most nodes, launched
 * or attached on demand, times CABLES_THREADS_PER_NODE), so that a program
 * sizing its pool by them (sysconf, get_nprocs, C++'s
 * hardware_concurrency) fills every node, not one node's worth.  The
 * runtime's threads, and libraries acting for it, count the node's. */
long sysconf(int name)
{
    if (cb_app_thread && (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF))
        return cables_cpu_count();
    return REAL(sysconf)(name);
}

/* A thread pinning itself: the CPUs it names are the cluster's, folded
 * onto its node's (cb_cpus_fold) */
int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    pid = shim_pid(pid);
    if (!cb_app_thread || (pid != 0 && pid != gettid()) || size > CPU_ALLOC_SIZE(4096))
        return REAL(sched_setaffinity)(pid, size, set);
    uint8_t copy[CPU_ALLOC_SIZE(4096)];
    memcpy(copy, set, size);
    cb_cpus_fold(copy, size);
    return REAL(sched_setaffinity)(pid, size, (cpu_set_t *)copy);
}

int get_nprocs(void) { return cb_app_thread ? cables_cpu_count() : REAL(get_nprocs)(); }

int get_nprocs_conf(void) { return cb_app_thread ? cables_cpu_count() : REAL(get_nprocs_conf)(); }

/* at a thread's end (on its stack): destructors, as glibc runs them */
static void run_key_destructors(void)
{
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        bool any = false;
        for (size_t i = 0; i < nvals; i++) {
            void *v = vals[i];
            if (!v)
                continue;
            vals[i] = NULL;
            int64_t d = cb_key(CB_KEY_DTOR, i);
            if (d > 0) {
                ((void (*)(void *))(uintptr_t)d)(v);
                any = true;
            }
        }
        if (!any)
            break;
    }
    free(vals);
    vals = NULL;
    nvals = 0;
    shim_io_thread_end();
}

__attribute__((constructor)) static void shim_threads_init(void)
{
    cb_thread_end_hook = run_key_destructors;
}
