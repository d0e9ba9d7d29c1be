/* sync.c: mutexes, condition variables, barriers, read-write locks, spin
 * locks and unnamed semaphores in the global address space.
 *
 * A mutex or spin lock is a cluster lock keyed by its address; its kind is
 * glibc's (the __kind field, so the static initializers work) and is cached
 * per node by the lock.  Condition variables and barriers are the
 * runtime's.  A read-write lock or a semaphore keeps its state inside its
 * own object, guarded by the cluster lock of its address, with runtime
 * condition variables keyed by its address for the threads that wait. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <semaphore.h>
#include <string.h>

#include "shim.h"

int64_t shim_deadline(clockid_t c, const struct timespec *abs)
{
    if (abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
        return -1;
    struct timespec now;
    clock_gettime(c, &now);
    uint64_t mono = cb_now_ns();
    int64_t s; /* seconds left, whole: far ones (tv_sec = LONG_MAX, "for ever") never come */
    if (__builtin_sub_overflow((int64_t)abs->tv_sec, (int64_t)now.tv_sec, &s))
        return abs->tv_sec < 0 ? (int64_t)mono : INT64_MAX;
    if (s < 0) /* past (far past: its nanoseconds would overflow) */
        return (int64_t)mono;
    if (s > (INT64_MAX - (int64_t)mono) / 1000000000LL - 2)
        return INT64_MAX;
    int64_t left = s * 1000000000LL + (abs->tv_nsec - now.tv_nsec);
    return left <= 0 ? (int64_t)mono : (int64_t)(mono + (uint64_t)left);
}

/* ---- mutexes ---- */
/* The kind is read where the program keeps it, at each call: a mutex
 * initialised anew at an address (a block freed and allocated again) may
 * be of another kind, which a node learns at its acquire, as any data.
 * Before, each node kept the kind it saw first for good: a recursive
 * mutex where a normal one had been deadlocked another node's relock. */
static int kind_of(pthread_mutex_t *m)
{
    int k = m->__data.__kind & 3; /* glibc: normal 0, recursive 1, errorcheck 2, adaptive 3 */
    return k == 3 ? CB_LK_NORMAL : k;
}

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_init)(m, a);
    int type = PTHREAD_MUTEX_NORMAL;
    if (a)
        pthread_mutexattr_gettype(a, &type);
    memset(m, 0, sizeof *m);
    m->__data.__kind = type;
    return 0;
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_destroy)(m);
    return 0;
}

static int mutex_take(pthread_mutex_t *m, uint64_t deadline)
{
    return cb_lock_take((uintptr_t)m, cb_tid, kind_of(m), deadline);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_lock)(m);
    return mutex_take(m, UINT64_MAX);
}

int pthread_mutex_trylock(pthread_mutex_t *m)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_trylock)(m);
    int rc = mutex_take(m, 0);
    return rc == EDEADLK ? EBUSY : rc; /* glibc: an error-checking owner's trylock is EBUSY */
}

static int timed_take(pthread_mutex_t *m, clockid_t c, const struct timespec *abs)
{
    int rc = mutex_take(m, 0);
    if (rc != EBUSY)
        return rc;
    int64_t d = shim_deadline(c, abs);
    if (d < 0)
        return EINVAL;
    if ((uint64_t)d <= cb_now_ns())
        return ETIMEDOUT;
    return mutex_take(m, (uint64_t)d);
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_timedlock)(m, abs);
    return timed_take(m, CLOCK_REALTIME, abs);
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *abs)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_clocklock)(m, c, abs);
    return timed_take(m, c, abs);
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (!shared_obj(m))
        return REAL(pthread_mutex_unlock)(m);
    return cb_lock_give((uintptr_t)m, cb_tid, kind_of(m));
}

/* ---- condition variables: the clock of pthread_condattr_setclock is kept
 * in the object (bit 1 of __wrefs, where glibc keeps it too) ---- */
#define COND_MONOTONIC 2u

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_init)(c, a);
    clockid_t clk = CLOCK_REALTIME;
    if (a)
        pthread_condattr_getclock(a, &clk);
    memset(c, 0, sizeof *c);
    if (clk == CLOCK_MONOTONIC)
        c->__data.__wrefs = COND_MONOTONIC;
    return 0;
}

int pthread_cond_destroy(pthread_cond_t *c)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_destroy)(c);
    return 0;
}

static int cond_wait(pthread_cond_t *c, pthread_mutex_t *m, uint64_t deadline)
{
    int kind = kind_of(m);
    int rc = cb_cond_wait((uintptr_t)c, (uintptr_t)m, kind, deadline);
    if (rc == ECANCELED) {
        cb_cancel_act();
        rc = 0;
    }
    return rc;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_wait)(c, m);
    return cond_wait(c, m, UINT64_MAX);
}

static int cond_timed(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                      const struct timespec *abs)
{
    int64_t d = shim_deadline(clk, abs);
    if (d < 0)
        return EINVAL;
    return cond_wait(c, m, (uint64_t)d);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_timedwait)(c, m, abs);
    clockid_t clk = c->__data.__wrefs & COND_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
    return cond_timed(c, m, clk, abs);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk,
                           const struct timespec *abs)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_clockwait)(c, m, clk, abs);
    return cond_timed(c, m, clk, abs);
}

int pthread_cond_signal(pthread_cond_t *c)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_signal)(c);
    cb_cond_wake((uintptr_t)c, false);
    return 0;
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
    if (!shared_obj(c))
        return REAL(pthread_cond_broadcast)(c);
    cb_cond_wake((uintptr_t)c, true);
    return 0;
}

/* ---- barriers ---- */
int pthread_barrier_init(pthread_barrier_t *b, const pthread_barrierattr_t *a, unsigned count)
{
    if (!shared_obj(b))
        return REAL(pthread_barrier_init)(b, a, count);
    if (count == 0)
        return EINVAL;
    cables_barrier_init((cables_barrier_t *)b, count);
    return 0;
}

int pthread_barrier_wait(pthread_barrier_t *b)
{
    if (!shared_obj(b))
        return REAL(pthread_barrier_wait)(b);
    return cb_barrier_wait((cables_barrier_t *)b) ? PTHREAD_BARRIER_SERIAL_THREAD : 0;
}

int pthread_barrier_destroy(pthread_barrier_t *b)
{
    if (!shared_obj(b))
        return REAL(pthread_barrier_destroy)(b);
    return 0;
}

/* ---- spin locks: cluster locks (a waiter sleeps, it never spins) ---- */
int pthread_spin_init(pthread_spinlock_t *s, int pshared)
{
    if (!shared_obj(s))
        return REAL(pthread_spin_init)(s, pshared);
    *s = 0;
    return 0;
}

int pthread_spin_destroy(pthread_spinlock_t *s)
{
    if (!shared_obj(s))
        return REAL(pthread_spin_destroy)(s);
    return 0;
}

int pthread_spin_lock(pthread_spinlock_t *s)
{
    if (!shared_obj(s))
        return REAL(pthread_spin_lock)(s);
    return cb_lock_take((uintptr_t)s, cb_tid, CB_LK_NORMAL, UINT64_MAX);
}

int pthread_spin_trylock(pthread_spinlock_t *s)
{
    if (!shared_obj(s))
        return REAL(pthread_spin_trylock)(s);
    return cb_lock_take((uintptr_t)s, cb_tid, CB_LK_NORMAL, 0);
}

int pthread_spin_unlock(pthread_spinlock_t *s)
{
    if (!shared_obj(s))
        return REAL(pthread_spin_unlock)(s);
    return cb_lock_give((uintptr_t)s, cb_tid, CB_LK_NORMAL);
}

/* ---- objects with their state inside: guard, wait, wake ---- */
/* An object's state is guarded by the cluster lock of its address, held
 * with the program's signals off: sem_post is async-signal-safe, and a
 * handler that posted while its thread held the guard (inside sem_wait or
 * sem_post) waited for its own thread (tests/posix/sem_handler.c).  They
 * are let in while a wait_on waits, without the guard. */
static void guard(const void *o)
{
    cb_signals_hold_enter();
    cb_lock_take((uintptr_t)o, cb_tid, CB_LK_NORMAL, UINT64_MAX);
}

static void unguard(const void *o)
{
    cb_lock_give((uintptr_t)o, cb_tid, CB_LK_NORMAL);
    cb_signals_hold_leave();
}

/* wait on condition key ck of object o, which is guarded */
static int wait_on(const void *o, uint64_t ck, uint64_t deadline)
{
    return cb_cond_wait_held(ck, (uintptr_t)o, CB_LK_NORMAL, deadline, true);
}

/* ... which a handler that ran on this thread ends (EINTR), as glibc's
 * semaphore waits: a timed one whatever SA_RESTART says, an untimed one
 * for a handler without SA_RESTART (the kernel restarts its futex wait) */
static int wait_on_intr(const void *o, uint64_t ck, uint64_t deadline)
{
    return cb_cond_wait_intr(ck, (uintptr_t)o, CB_LK_NORMAL, deadline);
}

/* ---- read-write locks ----
 * Readers preferred, as glibc's default; writers with the kind
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP (glibc's __flags, which its
 * initializer for that kind sets too): a reader waits while a writer
 * waits.  An unlock wakes every class that may go on now; so does a waiter
 * that gives up (a timeout): a reader that timed out, still counted when
 * an unlock woke the readers only, left a waiting writer asleep with the
 * lock free (tests/posix/rwlock_kinds.c). */
typedef struct {
    uint32_t readers, writer, wwait, rwait;
    uint64_t wtid;
} rw_t; /* inside pthread_rwlock_t; zero is unlocked (the static initializers) */
_Static_assert(sizeof(rw_t) <= offsetof(pthread_rwlock_t, __data.__cur_writer),
               "rw_t must fit before glibc's fields the shim reads");

int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
    if (!shared_obj(l))
        return REAL(pthread_rwlock_init)(l, a);
    int kind = PTHREAD_RWLOCK_DEFAULT_NP;
    if (a)
        pthread_rwlockattr_getkind_np(a, &kind);
    memset(l, 0, sizeof *l);
    l->__data.__flags = (unsigned)kind;
    return 0;
}

int pthread_rwlock_destroy(pthread_rwlock_t *l)
{
    if (!shared_obj(l))
        return REAL(pthread_rwlock_destroy)(l);
    return 0;
}

static uint64_t rd_key(pthread_rwlock_t *l) { return (uintptr_t)l; }
static uint64_t wr_key(pthread_rwlock_t *l) { return (uintptr_t)l + 1; }

static bool prefer_writers(pthread_rwlock_t *l)
{
    return l->__data.__flags == PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/* (guarded) which waiters may go on now */
static void rw_wakes(pthread_rwlock_t *l, bool *rd, bool *wr)
{
    rw_t *s = (rw_t *)l;
    *wr = !s->writer && !s->readers && s->wwait;
    *rd = !s->writer && s->rwait && !(s->wwait && prefer_writers(l));
}

/* (not guarded) */
static void rw_wake(pthread_rwlock_t *l, bool rd, bool wr)
{
    if (rd)
        cb_cond_wake(rd_key(l), true);
    if (wr)
        cb_cond_wake(wr_key(l), false);
}

static int rw_rdlock(pthread_rwlock_t *l, bool try, uint64_t deadline)
{
    rw_t *s = (rw_t *)l;
    guard(l);
    int rc = 0;
    bool rd = false, wr = false;
    if (s->writer && s->wtid == cb_tid) {
        rc = EDEADLK;
    } else {
        while ((s->writer || (s->wwait && prefer_writers(l))) && !rc) {
            if (try) { rc = EBUSY; break; }
            s->rwait++;
            rc = wait_on(l, rd_key(l), deadline);
            s->rwait--;
        }
        if (!rc)
            s->readers++;
        else if (!try)
            rw_wakes(l, &rd, &wr); /* (what this one's wait may have taken) */
    }
    unguard(l);
    rw_wake(l, rd, wr);
    if (rc == ECANCELED) {
        cb_cancel_act();
        return rw_rdlock(l, try, deadline);
    }
    return rc;
}

static int rw_wrlock(pthread_rwlock_t *l, bool try, uint64_t deadline)
{
    rw_t *s = (rw_t *)l;
    guard(l);
    int rc = 0;
    bool rd = false, wr = false;
    if (s->writer && s->wtid == cb_tid) {
        rc = EDEADLK;
    } else {
        while ((s->writer || s->readers) && !rc) {
            if (try) { rc = EBUSY; break; }
            s->wwait++;
            rc = wait_on(l, wr_key(l), deadline);
            s->wwait--;
        }
        if (!rc) {
            s->writer = 1;
            s->wtid = cb_tid;
        } else if (!try) {
            rw_wakes(l, &rd, &wr); /* (readers held back by this writer) */
        }
    }
    unguard(l);
    rw_wake(l, rd, wr);
    if (rc == ECANCELED) {
        cb_cancel_act();
        return rw_wrlock(l, try, deadline);
    }
    return rc;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_rdlock)(l);
    return rw_rdlock(l, false, UINT64_MAX);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_tryrdlock)(l);
    return rw_rdlock(l, true, 0);
}

int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_wrlock)(l);
    return rw_wrlock(l, false, UINT64_MAX);
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_trywrlock)(l);
    return rw_wrlock(l, true, 0);
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_timedrdlock)(l, abs);
    int64_t d = shim_deadline(CLOCK_REALTIME, abs);
    return d < 0 ? EINVAL : rw_rdlock(l, false, (uint64_t)d);
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abs)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_timedwrlock)(l, abs);
    int64_t d = shim_deadline(CLOCK_REALTIME, abs);
    return d < 0 ? EINVAL : rw_wrlock(l, false, (uint64_t)d);
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *abs)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_clockrdlock)(l, c, abs);
    int64_t d = shim_deadline(c, abs);
    return d < 0 ? EINVAL : rw_rdlock(l, false, (uint64_t)d);
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *abs)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_clockwrlock)(l, c, abs);
    int64_t d = shim_deadline(c, abs);
    return d < 0 ? EINVAL : rw_wrlock(l, false, (uint64_t)d);
}

int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    if (!shared_obj(l)) return REAL(pthread_rwlock_unlock)(l);
    rw_t *s = (rw_t *)l;
    int rc = 0;
    guard(l);
    if (s->writer && s->wtid == cb_tid) {
        s->writer = 0;
        s->wtid = 0;
    } else if (s->readers && !s->writer) {
        s->readers--;
    } else {
        rc = EPERM;
    }
    bool rd = false, wr = false;
    if (!rc)
        rw_wakes(l, &rd, &wr);
    unguard(l);
    rw_wake(l, rd, wr);
    return rc;
}

/* ---- unnamed semaphores ---- */
typedef struct { uint32_t value, waiters; } sm_t; /* inside sem_t */

int sem_init(sem_t *sem, int pshared, unsigned value)
{
    if (!shared_obj(sem))
        return REAL(sem_init)(sem, pshared, value);
    if (value > SEM_VALUE_MAX) {
        errno = EINVAL;
        return -1;
    }
    memset(sem, 0, sizeof *sem);
    ((sm_t *)sem)->value = value;
    return 0;
}

int sem_destroy(sem_t *sem)
{
    if (!shared_obj(sem))
        return REAL(sem_destroy)(sem);
    return 0;
}

static int sem_take(sem_t *sem, bool try, uint64_t deadline)
{
    sm_t *s = (sm_t *)sem;
    int rc = 0;
    guard(sem);
    while (s->value == 0 && !rc) {
        if (try) { rc = EAGAIN; break; }
        s->waiters++;
        rc = wait_on_intr(sem, (uintptr_t)sem, deadline);
        s->waiters--;
        /* interrupted (out of the queue, or its wake taken), a post there
         * now: taken, as a wait that ended before the handler (a post whose
         * wake was this waiter's is not lost); else EINTR, the value kept.
         * Before, a handler did not end the wait (tests/posix/sem_intr.c). */
        if (rc == EINTR && s->value > 0)
            rc = 0;
    }
    if (!rc)
        s->value--;
    unguard(sem);
    if (rc == ECANCELED) {
        cb_cancel_act();
        return sem_take(sem, try, deadline);
    }
    if (rc) {
        errno = rc;
        return -1;
    }
    return 0;
}

int sem_wait(sem_t *sem)
{
    if (!shared_obj(sem)) return REAL(sem_wait)(sem);
    return sem_take(sem, false, UINT64_MAX);
}

int sem_trywait(sem_t *sem)
{
    if (!shared_obj(sem)) return REAL(sem_trywait)(sem);
    return sem_take(sem, true, 0);
}

static int sem_timed(sem_t *sem, clockid_t c, const struct timespec *abs)
{
    if (sem_take(sem, true, 0) == 0)
        return 0;
    int64_t d = shim_deadline(c, abs);
    if (d < 0) {
        errno = EINVAL;
        return -1;
    }
    return sem_take(sem, false, (uint64_t)d);
}

int sem_timedwait(sem_t *sem, const struct timespec *abs)
{
    if (!shared_obj(sem)) return REAL(sem_timedwait)(sem, abs);
    return sem_timed(sem, CLOCK_REALTIME, abs);
}

int sem_clockwait(sem_t *sem, clockid_t c, const struct timespec *abs)
{
    if (!shared_obj(sem)) return REAL(sem_clockwait)(sem, c, abs);
    return sem_timed(sem, c, abs);
}

int sem_post(sem_t *sem)
{
    if (!shared_obj(sem)) return REAL(sem_post)(sem);
    sm_t *s = (sm_t *)sem;
    guard(sem);
    if (s->value == SEM_VALUE_MAX) {
        unguard(sem);
        errno = EOVERFLOW;
        return -1;
    }
    s->value++;
    bool wake = s->waiters > 0;
    unguard(sem);
    if (wake)
        cb_cond_wake((uintptr_t)sem, false);
    return 0;
}

int sem_getvalue(sem_t *sem, int *v)
{
    if (!shared_obj(sem)) return REAL(sem_getvalue)(sem, v);
    guard(sem);
    *v = (int)((sm_t *)sem)->value;
    unguard(sem);
    return 0;
}
