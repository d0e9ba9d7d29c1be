/* threads.c: thread life (create, join, detach, exit, self, cancel), once
 * and keys.  Application threads create cluster threads, placed by the
 * master; runtime threads (UCX's, Open MPI's) create libc threads. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

int pthread_join(pthread_t t, void **ret)
{
    if (!(t & TID_TAG))
        return REAL(pthread_join)(t, ret);
    return cables_thread_join(t & ~TID_TAG, ret);
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

/* ---- once: a cluster lock on the control word's address guards it ---- */
#define ONCE_DONE 0x4f4e4345 /* "ONCE" */

int pthread_once(pthread_once_t *once, void (*init)(void))
{
    if (!shared_obj(once) || !cb_app_thread)
        return REAL(pthread_once)(once, init);
    uint64_t key = (uintptr_t)once;
    cb_lock_take(key, cb_tid, CB_LK_NORMAL, UINT64_MAX);
    if (*(volatile int *)once != ONCE_DONE) {
        init();
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
}

__attribute__((constructor)) static void shim_threads_init(void)
{
    cb_thread_end_hook = run_key_destructors;
}
