/* mutex_reuse: a mutex initialised again at the same address, as another
 * kind (a block freed and allocated again), is of its new kind on every
 * node.  A thread (on another node) locks a normal mutex; main then
 * initialises it as recursive, and a new thread relocks it (granted, as
 * natively), then as error-checking, and a third thread's relock is
 * refused with EDEADLK, as is its condition wait without it (EPERM).
 * Before, each node kept the kind it first saw: the recursive relock
 * waited (ETIMEDOUT here) and the error-checking one was granted; and the
 * condition wait went on, and took the mutex at its end.
 * RESULT ok=1 checks=N (check.h) */
#include "check.h"

struct obj {
    pthread_mutex_t m;
    int v;
};
static struct obj *o;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void init_as(int type)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, type);
    CHECK_ERR("init", pthread_mutex_init(&o->m, &a), 0);
    pthread_mutexattr_destroy(&a);
}

/* the relock's result, within 2 s */
static int relock(void)
{
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_sec += 2;
    return pthread_mutex_timedlock(&o->m, &d);
}

static void *as_normal(void *arg)
{
    (void)arg;
    CHECK_ERR("normal_lock", pthread_mutex_lock(&o->m), 0);
    o->v++;
    CHECK_ERR("normal_unlock", pthread_mutex_unlock(&o->m), 0);
    return NULL;
}

static void *as_recursive(void *arg)
{
    (void)arg;
    CHECK_ERR("recursive_lock", pthread_mutex_lock(&o->m), 0);
    CHECK_ERR("recursive_relock", relock(), 0);
    o->v++;
    CHECK_ERR("recursive_unlock", pthread_mutex_unlock(&o->m), 0);
    CHECK_ERR("recursive_unlock_outer", pthread_mutex_unlock(&o->m), 0);
    return NULL;
}

static void *as_errorcheck(void *arg)
{
    (void)arg;
    CHECK_ERR("errorcheck_lock", pthread_mutex_lock(&o->m), 0);
    CHECK_ERR("errorcheck_relock", relock(), EDEADLK);
    o->v++;
    CHECK_ERR("errorcheck_unlock", pthread_mutex_unlock(&o->m), 0);
    CHECK_ERR("errorcheck_unlock_again", pthread_mutex_unlock(&o->m), EPERM);
    struct timespec d = check_deadline(CLOCK_REALTIME, 1000);
    CHECK_ERR("errorcheck_cond_not_held", pthread_cond_timedwait(&cv, &o->m, &d), EPERM);
    return NULL;
}

static void run(void *(*fn)(void *))
{
    pthread_t t;
    if (CHECK_ERR("create", pthread_create(&t, NULL, fn, NULL), 0))
        CHECK_ERR("join", pthread_join(t, NULL), 0);
}

int main(void)
{
    check_start();
    o = malloc(sizeof *o);
    if (!CHECK("alloc", o != NULL))
        return check_finish();
    o->v = 0;
    init_as(PTHREAD_MUTEX_NORMAL);
    run(as_normal);
    CHECK_ERR("destroy", pthread_mutex_destroy(&o->m), 0);
    init_as(PTHREAD_MUTEX_RECURSIVE);
    run(as_recursive);
    CHECK_ERR("destroy_recursive", pthread_mutex_destroy(&o->m), 0);
    init_as(PTHREAD_MUTEX_ERRORCHECK);
    run(as_errorcheck);
    CHECK_EQ("v", o->v, 3);
    return check_finish();
}
