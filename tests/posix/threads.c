/* threads.c: conformance checks for POSIX thread management.
 *
 *  1. pthread_create/pthread_join: 4 threads each return a pointer to a
 *     malloc'd struct they filled (id, a sum, their pthread_self()); the
 *     creator's ids are pairwise distinct; each thread's self equals the id
 *     its creator got and differs from main's; pthread_join of self returns
 *     EDEADLK (in main and in a created thread).
 *  2. pthread_exit(value) from a nested function: join returns the value,
 *     and the code after the pthread_exit call never runs.
 *  3. A created thread creates and joins another: the grandchild's self
 *     equals the id its (non-main) creator got, and differs from both.
 *  4. pthread_detach of a running thread returns 0; pthread_join of that
 *     detached (still running) thread returns EINVAL.
 *  5. Attributes: detach state defaults to JOINABLE, setdetachstate
 *     DETACHED reads back, an invalid value gives EINVAL; a thread created
 *     detached cannot be joined (EINVAL) and runs to completion.
 *  6. Stack size: pthread_attr_setstacksize(1 MiB) reads back through
 *     pthread_attr_getstacksize; below PTHREAD_STACK_MIN gives EINVAL; a
 *     thread with that attribute uses a 512 KiB stack array correctly.
 *  7. pthread_once: 8 threads released by a barrier call it together; the
 *     init routine runs exactly once and every caller sees its effect.
 *  8. Thread-specific data: pthread_key_create with a destructor; each of 5
 *     threads sets its own malloc'd value, and after a barrier (all set)
 *     getspecific returns its own pointer; a new thread starts with NULL
 *     even though main set the key; a key never set in a thread reads
 *     NULL; the destructor runs once per thread exiting with a non-NULL
 *     value (not for the thread that reset its value to NULL), counted
 *     under a mutex and checked after join; main's value is untouched;
 *     pthread_key_delete returns 0.
 *  9. Cancellation: a thread blocked in pthread_cond_wait is cancelled; join
 *     returns PTHREAD_CANCELED, its cleanup handler ran once (with the
 *     mutex reacquired) and unlocked the mutex, so main can lock it.
 * 10. A thread looping on pthread_testcancel is cancelled (PTHREAD_CANCELED).
 * 11. With PTHREAD_CANCEL_DISABLE a cancel request stays pending through
 *     cancellation points (cond_timedwait, testcancel, usleep) and acts at
 *     the first pthread_testcancel after PTHREAD_CANCEL_ENABLE; the old
 *     states reported by pthread_setcancelstate are right.
 * A -fsanitize=thread build leaves out a created thread's join of itself
 * and uses a 2 MiB stack in 6 (see JOIN_SELF_IN_THREAD and STACK_SET). */
#define _GNU_SOURCE
#include "check.h"

#include <limits.h>
#include <sched.h>

/* ThreadSanitizer's pthread_join interceptor consumes the target's id before
 * calling the real join, so a created thread's failing pthread_join of
 * itself makes tsan abort at the later (valid) join of that thread.  That
 * one check is left out of a -fsanitize=thread build. */
#define JOIN_SELF_IN_THREAD (!CHECK_TSAN)

static pthread_t main_self;

/* ---- 1. create/join with results ---------------------------------- */

#define NWORK 4

struct work {
    int id;
    long n;
};

struct result {
    int id;
    long sum;
    pthread_t self;
    int join_self_rc;
};

static long work_sum(int id, long n)
{
    return (long)(id + 1) * n * (n + 1) / 2;
}

static void *worker(void *arg)
{
    const struct work *w = arg;
    struct result *r = malloc(sizeof *r);
    if (!r)
        return NULL;
    r->id = w->id;
    r->sum = 0;
    for (long k = 1; k <= w->n; k++)
        r->sum += k * (w->id + 1);
    r->self = pthread_self();
    r->join_self_rc = JOIN_SELF_IN_THREAD ? pthread_join(pthread_self(), NULL) : -1;
    return r;
}

static void test_create_join(void)
{
    struct work w[NWORK];
    pthread_t t[NWORK];
    int created[NWORK];
    for (int i = 0; i < NWORK; i++) {
        w[i].id = i;
        w[i].n = 1000 + 37 * i;
        created[i] = pthread_create(&t[i], NULL, worker, &w[i]) == 0;
        CHECK("create_rc", created[i]);
    }
    int distinct = 1;
    for (int i = 0; i < NWORK; i++)
        for (int j = i + 1; j < NWORK; j++)
            if (created[i] && created[j] && pthread_equal(t[i], t[j]))
                distinct = 0;
    CHECK("created_ids_distinct", distinct);
    for (int i = 0; i < NWORK; i++) {
        if (!created[i])
            continue;
        void *rv = (void *)1;
        CHECK_ERR("join_rc", pthread_join(t[i], &rv), 0);
        struct result *r = rv;
        if (!CHECK("join_result_nonnull", r != NULL && r != (void *)1))
            continue;
        CHECK_EQ("join_result_id", r->id, i);
        CHECK_EQ("join_result_sum", r->sum, work_sum(i, w[i].n));
        CHECK("self_equals_created_id", pthread_equal(r->self, t[i]));
        CHECK("self_differs_from_main", !pthread_equal(r->self, main_self));
        if (JOIN_SELF_IN_THREAD)
            CHECK_ERR("join_self_in_thread", r->join_self_rc, EDEADLK);
        free(r);
    }
    CHECK("main_self_equals_self", pthread_equal(pthread_self(), main_self));
    CHECK_ERR("join_self_in_main", pthread_join(pthread_self(), NULL), EDEADLK);
}

/* ---- 2. pthread_exit from a nested function ------------------------- */

static pthread_mutex_t exit_mu = PTHREAD_MUTEX_INITIALIZER;
static int after_exit_ran;

struct exit_val {
    int magic;
    int tag;
};

__attribute__((noinline)) static void exit_inner(struct exit_val *v, int tag)
{
    v->magic = 0x5eed;
    v->tag = tag;
    pthread_exit(v);
}

__attribute__((noinline)) static void exit_middle(struct exit_val *v, int tag)
{
    exit_inner(v, tag);
    pthread_mutex_lock(&exit_mu);
    after_exit_ran = 1;
    pthread_mutex_unlock(&exit_mu);
}

static void *exiter(void *arg)
{
    struct exit_val *v = malloc(sizeof *v);
    if (!v)
        return NULL;
    exit_middle(v, (int)(intptr_t)arg);
    pthread_mutex_lock(&exit_mu);
    after_exit_ran = 2;
    pthread_mutex_unlock(&exit_mu);
    return NULL;
}

static void test_exit(void)
{
    pthread_t t;
    if (!CHECK_ERR("exit_create", pthread_create(&t, NULL, exiter, (void *)(intptr_t)77), 0))
        return;
    void *rv = NULL;
    CHECK_ERR("exit_join", pthread_join(t, &rv), 0);
    struct exit_val *v = rv;
    if (CHECK("exit_value_nonnull", v != NULL)) {
        CHECK_EQ("exit_value_magic", v->magic, 0x5eed);
        CHECK_EQ("exit_value_tag", v->tag, 77);
        free(v);
    }
    pthread_mutex_lock(&exit_mu);
    CHECK_EQ("exit_code_after_not_run", after_exit_ran, 0);
    pthread_mutex_unlock(&exit_mu);
}

/* ---- 3. a created thread creates another ---------------------------- */

struct nest {
    pthread_t a_self;
    int create_rc, join_rc;
    int c_equals_created, c_differs_from_a, c_differs_from_main;
};

static void *nest_child(void *arg)
{
    (void)arg;
    pthread_t *p = malloc(sizeof *p);
    if (p)
        *p = pthread_self();
    return p;
}

static void *nest_parent(void *arg)
{
    struct nest *n = arg;
    pthread_t c;
    n->a_self = pthread_self();
    n->create_rc = pthread_create(&c, NULL, nest_child, NULL);
    n->join_rc = -1;
    if (n->create_rc == 0) {
        void *rv = NULL;
        n->join_rc = pthread_join(c, &rv);
        pthread_t *cs = rv;
        if (cs) {
            n->c_equals_created = pthread_equal(*cs, c) != 0;
            n->c_differs_from_a = !pthread_equal(*cs, pthread_self());
            n->c_differs_from_main = !pthread_equal(*cs, main_self);
            free(cs);
        }
    }
    return NULL;
}

static void test_nested_create(void)
{
    struct nest n;
    memset(&n, 0, sizeof n);
    pthread_t a;
    if (!CHECK_ERR("nest_create", pthread_create(&a, NULL, nest_parent, &n), 0))
        return;
    CHECK_ERR("nest_join", pthread_join(a, NULL), 0);
    CHECK("nest_parent_self", pthread_equal(n.a_self, a));
    CHECK_ERR("nest_inner_create", n.create_rc, 0);
    CHECK_ERR("nest_inner_join", n.join_rc, 0);
    CHECK_EQ("nest_child_self_equals_created", n.c_equals_created, 1);
    CHECK_EQ("nest_child_differs_from_parent", n.c_differs_from_a, 1);
    CHECK_EQ("nest_child_differs_from_main", n.c_differs_from_main, 1);
}

/* ---- 4./5. detach ---------------------------------------------------- */

/* stages: 1 the thread runs, 2 main is done with it, 3 the thread saw 2
 * and finished (4 if its wait for 2 timed out) */
static void *detached_body(void *arg)
{
    struct gate *g = arg;
    gate_set(g, 1);
    int ok = gate_wait(g, 2);
    gate_set(g, ok ? 3 : 4);
    return NULL;
}

static void test_detach(void)
{
    static struct gate g = GATE_INITIALIZER;
    pthread_t t;
    if (!CHECK_ERR("detach_create", pthread_create(&t, NULL, detached_body, &g), 0))
        return;
    CHECK("detach_thread_running", gate_wait(&g, 1));
    CHECK_ERR("detach_rc", pthread_detach(t), 0);
    CHECK_ERR("join_detached_einval", pthread_join(t, NULL), EINVAL);
    gate_set(&g, 2);
    CHECK("detach_thread_finished", gate_wait(&g, 3));
    CHECK_EQ("detach_thread_stage", gate_get(&g), 3);
}

static void test_attr_detached(void)
{
    static struct gate g = GATE_INITIALIZER;
    pthread_attr_t at;
    int st = -1;
    CHECK_ERR("attr_init", pthread_attr_init(&at), 0);
    CHECK_ERR("attr_getdetach_default_rc", pthread_attr_getdetachstate(&at, &st), 0);
    CHECK_EQ("attr_detach_default_joinable", st, PTHREAD_CREATE_JOINABLE);
    CHECK_ERR("attr_setdetach_invalid", pthread_attr_setdetachstate(&at, 12345), EINVAL);
    CHECK_ERR("attr_setdetach_rc", pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED), 0);
    st = -1;
    CHECK_ERR("attr_getdetach_rc", pthread_attr_getdetachstate(&at, &st), 0);
    CHECK_EQ("attr_detach_readback", st, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int rc = pthread_create(&t, &at, detached_body, &g);
    CHECK_ERR("attr_detached_create", rc, 0);
    CHECK_ERR("attr_destroy", pthread_attr_destroy(&at), 0);
    if (rc != 0)
        return;
    CHECK("attr_detached_running", gate_wait(&g, 1));
    /* still running (waits for stage 2), so its id is valid */
    CHECK_ERR("join_created_detached_einval", pthread_join(t, NULL), EINVAL);
    gate_set(&g, 2);
    CHECK("attr_detached_finished", gate_wait(&g, 3));
    CHECK_EQ("attr_detached_stage", gate_get(&g), 3);
}

/* ---- 6. stack size --------------------------------------------------- */

/* ThreadSanitizer's runtime keeps ~780 KiB of static TLS, which glibc
 * carves out of the requested stack: give it room for the same array. */
#ifdef __SANITIZE_THREAD__
#define STACK_SET (2048 * 1024)
#else
#define STACK_SET (1024 * 1024)
#endif
#define STACK_USE (512 * 1024)

__attribute__((noinline)) static unsigned long fill_and_sum(unsigned char *buf,
                                                            size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)(i * 31u + seed + (i >> 12));
    __asm__ volatile("" : : "r"(buf) : "memory");
    unsigned long s = 0;
    for (size_t i = 0; i < n; i++)
        s = s * 131 + buf[i];
    return s;
}

static void *stack_body(void *arg)
{
    unsigned char buf[STACK_USE];
    unsigned long s = fill_and_sum(buf, sizeof buf, (unsigned)(uintptr_t)arg);
    /* read the far end once more after the call */
    s ^= buf[0] ^ ((unsigned long)buf[STACK_USE - 1] << 8);
    return (void *)(uintptr_t)s;
}

static void test_stack_size(void)
{
    pthread_attr_t at;
    size_t sz = 0;
    CHECK_ERR("stack_attr_init", pthread_attr_init(&at), 0);
    CHECK_ERR("stack_set_too_small", pthread_attr_setstacksize(&at, PTHREAD_STACK_MIN - 1), EINVAL);
    CHECK_ERR("stack_set_rc", pthread_attr_setstacksize(&at, STACK_SET), 0);
    CHECK_ERR("stack_get_rc", pthread_attr_getstacksize(&at, &sz), 0);
    CHECK_EQ("stack_size_readback", sz, STACK_SET);
    unsigned seed = 9;
    pthread_t t;
    int rc = pthread_create(&t, &at, stack_body, (void *)(uintptr_t)seed);
    CHECK_ERR("stack_create", rc, 0);
    pthread_attr_destroy(&at);
    if (rc != 0)
        return;
    void *rv = NULL;
    CHECK_ERR("stack_join", pthread_join(t, &rv), 0);
    unsigned char *ref = malloc(STACK_USE);
    if (!ref)
        return;
    unsigned long want = fill_and_sum(ref, STACK_USE, seed);
    want ^= ref[0] ^ ((unsigned long)ref[STACK_USE - 1] << 8);
    free(ref);
    CHECK_EQ("stack_array_checksum", (uintptr_t)rv, (uintptr_t)want);
}

/* ---- 7. pthread_once ------------------------------------------------- */

#define NONCE 8

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t once_mu = PTHREAD_MUTEX_INITIALIZER;
static int once_runs;
static int once_value;
static pthread_barrier_t once_bar;

static void once_init(void)
{
    pthread_mutex_lock(&once_mu);
    once_runs++;
    pthread_mutex_unlock(&once_mu);
    usleep(20000); /* makes it likely the others block in pthread_once */
    once_value = 4242;
}

struct once_res {
    int rc, value, runs;
};

static void *once_body(void *arg)
{
    struct once_res *r = arg;
    pthread_barrier_wait(&once_bar);
    r->rc = pthread_once(&once, once_init);
    r->value = once_value; /* published by pthread_once's return */
    pthread_mutex_lock(&once_mu);
    r->runs = once_runs;
    pthread_mutex_unlock(&once_mu);
    return NULL;
}

static void test_once(void)
{
    pthread_t t[NONCE];
    struct once_res r[NONCE];
    int ok[NONCE];
    memset(r, 0, sizeof r);
    CHECK_ERR("once_barrier_init", pthread_barrier_init(&once_bar, NULL, NONCE), 0);
    for (int i = 0; i < NONCE; i++) {
        ok[i] = pthread_create(&t[i], NULL, once_body, &r[i]) == 0;
        CHECK("once_create", ok[i]);
    }
    for (int i = 0; i < NONCE; i++)
        if (ok[i])
            CHECK_ERR("once_join", pthread_join(t[i], NULL), 0);
    int bad_rc = 0, bad_value = 0, bad_runs = 0;
    for (int i = 0; i < NONCE; i++) {
        bad_rc += r[i].rc != 0;
        bad_value += r[i].value != 4242;
        bad_runs += r[i].runs != 1;
    }
    CHECK_EQ("once_rc_all_zero", bad_rc, 0);
    CHECK_EQ("once_effect_seen_by_all", bad_value, 0);
    CHECK_EQ("once_runs_seen_by_all", bad_runs, 0);
    pthread_mutex_lock(&once_mu);
    CHECK_EQ("once_init_ran_once", once_runs, 1);
    pthread_mutex_unlock(&once_mu);
    CHECK_ERR("once_again_rc", pthread_once(&once, once_init), 0);
    pthread_mutex_lock(&once_mu);
    CHECK_EQ("once_init_not_rerun", once_runs, 1);
    pthread_mutex_unlock(&once_mu);
    pthread_barrier_destroy(&once_bar);
}

/* ---- 8. thread-specific data ---------------------------------------- */

#define NKEY 5
#define KEY_CLEARER 2 /* this thread resets its value to NULL before exit */

static pthread_key_t key, key_unset;
static pthread_mutex_t dtor_mu = PTHREAD_MUTEX_INITIALIZER;
static int dtor_runs, dtor_null;
static long dtor_sum;
static pthread_barrier_t key_bar;

static void key_dtor(void *v)
{
    pthread_mutex_lock(&dtor_mu);
    dtor_runs++;
    if (v)
        dtor_sum += *(int *)v;
    else
        dtor_null++;
    pthread_mutex_unlock(&dtor_mu);
    free(v);
}

struct key_res {
    int id;
    int null_at_start, set_rc, got_own, got_value, unset_null, reset_rc;
};

static void *key_body(void *arg)
{
    struct key_res *r = arg;
    r->null_at_start = pthread_getspecific(key) == NULL;
    int *v = malloc(sizeof *v);
    if (!v)
        return NULL;
    *v = 100 + r->id;
    r->set_rc = pthread_setspecific(key, v);
    pthread_barrier_wait(&key_bar); /* every thread has set its value */
    int *g = pthread_getspecific(key);
    r->got_own = g == v;
    r->got_value = g ? *g : -1;
    r->unset_null = pthread_getspecific(key_unset) == NULL;
    if (r->id == KEY_CLEARER) {
        r->reset_rc = pthread_setspecific(key, NULL);
        free(v);
    }
    return NULL;
}

static void test_keys(void)
{
    static int main_value = 7;
    if (!CHECK_ERR("key_create", pthread_key_create(&key, key_dtor), 0))
        return;
    CHECK_ERR("key_create_unset", pthread_key_create(&key_unset, NULL), 0);
    CHECK("keys_distinct", key != key_unset);
    CHECK_PTR("key_main_initially_null", pthread_getspecific(key), NULL);
    CHECK_ERR("key_main_set", pthread_setspecific(key, &main_value), 0);
    CHECK_ERR("key_barrier_init", pthread_barrier_init(&key_bar, NULL, NKEY), 0);

    pthread_t t[NKEY];
    struct key_res r[NKEY];
    int ok[NKEY];
    memset(r, 0, sizeof r);
    for (int i = 0; i < NKEY; i++) {
        r[i].id = i;
        r[i].reset_rc = -1;
        ok[i] = pthread_create(&t[i], NULL, key_body, &r[i]) == 0;
        CHECK("key_thread_create", ok[i]);
    }
    for (int i = 0; i < NKEY; i++)
        if (ok[i])
            CHECK_ERR("key_thread_join", pthread_join(t[i], NULL), 0);
    long want_sum = 0;
    int want_runs = 0;
    for (int i = 0; i < NKEY; i++) {
        CHECK_EQ("key_null_in_new_thread", r[i].null_at_start, 1);
        CHECK_ERR("key_setspecific", r[i].set_rc, 0);
        CHECK_EQ("key_getspecific_own_pointer", r[i].got_own, 1);
        CHECK_EQ("key_getspecific_own_value", r[i].got_value, 100 + i);
        CHECK_EQ("key_never_set_is_null", r[i].unset_null, 1);
        if (i == KEY_CLEARER) {
            CHECK_ERR("key_reset_null", r[i].reset_rc, 0);
        } else {
            want_sum += 100 + i;
            want_runs++;
        }
    }
    pthread_mutex_lock(&dtor_mu);
    CHECK_EQ("key_dtor_runs", dtor_runs, want_runs);
    CHECK_EQ("key_dtor_values", dtor_sum, want_sum);
    CHECK_EQ("key_dtor_never_null", dtor_null, 0);
    pthread_mutex_unlock(&dtor_mu);
    CHECK_PTR("key_main_value_kept", pthread_getspecific(key), &main_value);
    CHECK_PTR("key_unset_in_main", pthread_getspecific(key_unset), NULL);
    CHECK_ERR("key_main_reset", pthread_setspecific(key, NULL), 0);
    CHECK_ERR("key_delete", pthread_key_delete(key), 0);
    CHECK_ERR("key_delete_unset", pthread_key_delete(key_unset), 0);
    pthread_barrier_destroy(&key_bar);
}

/* ---- 9. cancel a thread blocked in pthread_cond_wait ---------------- */

static pthread_mutex_t cw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cw_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cw_main_cv = PTHREAD_COND_INITIALIZER;
static int cw_state, cw_release, cw_cleanup_runs; /* under cw_mu */

static void cw_cleanup(void *arg)
{
    cw_cleanup_runs++; /* runs with cw_mu reacquired by the cancelled wait */
    pthread_mutex_unlock(arg);
}

static void *cw_body(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cw_mu);
    pthread_cleanup_push(cw_cleanup, &cw_mu);
    cw_state = 1;
    pthread_cond_signal(&cw_main_cv);
    while (!cw_release)
        pthread_cond_wait(&cw_cv, &cw_mu);
    cw_state = 2; /* only if the wait was not cancelled */
    pthread_cleanup_pop(1);
    return (void *)1;
}

static void test_cancel_cond_wait(void)
{
    pthread_t t;
    if (!CHECK_ERR("cancel_cw_create", pthread_create(&t, NULL, cw_body, NULL), 0))
        return;
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&cw_mu);
    while (cw_state != 1)
        if (pthread_cond_timedwait(&cw_main_cv, &cw_mu, &dl) == ETIMEDOUT)
            break;
    /* cw_state == 1 and we hold cw_mu: the thread is inside cond_wait */
    CHECK_EQ("cancel_cw_thread_waiting", cw_state, 1);
    CHECK_ERR("cancel_cw_rc", pthread_cancel(t), 0);
    pthread_mutex_unlock(&cw_mu);
    void *rv = NULL;
    CHECK_ERR("cancel_cw_join", pthread_join(t, &rv), 0);
    CHECK_PTR("cancel_cw_canceled", rv, PTHREAD_CANCELED);
    int got = pthread_mutex_trylock(&cw_mu);
    CHECK_ERR("cancel_cw_cleanup_unlocked_mutex", got, 0);
    if (got == 0) {
        CHECK_EQ("cancel_cw_cleanup_ran_once", cw_cleanup_runs, 1);
        CHECK_EQ("cancel_cw_not_past_wait", cw_state, 1);
        pthread_mutex_unlock(&cw_mu);
    }
}

/* ---- 10. cancel a thread looping on pthread_testcancel -------------- */

static void *tc_body(void *arg)
{
    struct gate *g = arg;
    double end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
    unsigned long spins = 0;
    gate_set(g, 1);
    while (check_now_ms(CLOCK_MONOTONIC) < end) {
        spins++;
        pthread_testcancel();
    }
    return (void *)(uintptr_t)(spins | 1); /* not cancelled */
}

static void test_cancel_testcancel(void)
{
    static struct gate g = GATE_INITIALIZER;
    pthread_t t;
    if (!CHECK_ERR("cancel_tc_create", pthread_create(&t, NULL, tc_body, &g), 0))
        return;
    CHECK("cancel_tc_running", gate_wait(&g, 1));
    CHECK_ERR("cancel_tc_rc", pthread_cancel(t), 0);
    void *rv = NULL;
    CHECK_ERR("cancel_tc_join", pthread_join(t, &rv), 0);
    CHECK_PTR("cancel_tc_canceled", rv, PTHREAD_CANCELED);
}

/* ---- 11. cancel with PTHREAD_CANCEL_DISABLE is deferred ------------- */

struct dis {
    struct gate g; /* 1: disabled, 2: main has cancelled */
    int disable_rc, old_state, wait_ok, survived, enable_rc, old_state2, after_enable;
};

static void *dis_body(void *arg)
{
    struct dis *d = arg;
    int old = -1;
    int rc = pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    d->disable_rc = rc;
    d->old_state = old;
    gate_set(&d->g, 1);
    d->wait_ok = gate_wait(&d->g, 2); /* a cancellation point, disabled */
    pthread_testcancel();
    usleep(1000); /* another cancellation point */
    pthread_testcancel();
    d->survived = 1;
    old = -1;
    d->enable_rc = pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
    d->old_state2 = old;
    pthread_testcancel(); /* the pending request acts here at the latest */
    d->after_enable = 1;
    return (void *)3;
}

static void test_cancel_disabled(void)
{
    struct dis d;
    memset(&d, 0, sizeof d);
    gate_init(&d.g);
    d.disable_rc = d.enable_rc = -1;
    pthread_t t;
    if (!CHECK_ERR("cancel_dis_create", pthread_create(&t, NULL, dis_body, &d), 0))
        return;
    CHECK("cancel_dis_disabled", gate_wait(&d.g, 1));
    CHECK_ERR("cancel_dis_rc", pthread_cancel(t), 0);
    gate_set(&d.g, 2);
    void *rv = NULL;
    CHECK_ERR("cancel_dis_join", pthread_join(t, &rv), 0);
    CHECK_PTR("cancel_dis_canceled", rv, PTHREAD_CANCELED);
    CHECK_ERR("cancel_dis_setstate_disable", d.disable_rc, 0);
    CHECK_EQ("cancel_dis_old_enabled", d.old_state, PTHREAD_CANCEL_ENABLE);
    CHECK_EQ("cancel_dis_wait_ok", d.wait_ok, 1);
    CHECK_EQ("cancel_dis_survived_while_disabled", d.survived, 1);
    CHECK_ERR("cancel_dis_setstate_enable", d.enable_rc, 0);
    CHECK_EQ("cancel_dis_old_disabled", d.old_state2, PTHREAD_CANCEL_DISABLE);
    CHECK_EQ("cancel_dis_acted_after_enable", d.after_enable, 0);
    gate_destroy(&d.g);
}

int main(void)
{
    check_start();
    main_self = pthread_self();
    test_create_join();
    test_exit();
    test_nested_create();
    test_detach();
    test_attr_detached();
    test_stack_size();
    test_once();
    test_keys();
    test_cancel_cond_wait();
    test_cancel_testcancel();
    test_cancel_disabled();
    return check_finish();
}
