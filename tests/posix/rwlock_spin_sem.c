/* rwlock_spin_sem.c: conformance checks for POSIX read-write locks, spin
 * locks and unnamed semaphores.
 *
 * Read-write locks:
 *  1. Readers share: reader 1 takes the read lock, reader 2 takes it with
 *     pthread_rwlock_timedrdlock (5 s bound, so an exclusive lock fails
 *     instead of deadlocking) and both meet main at a barrier while holding
 *     it; meanwhile pthread_rwlock_trywrlock returns EBUSY,
 *     pthread_rwlock_tryrdlock succeeds, and pthread_rwlock_timedwrlock
 *     (200 ms, CLOCK_REALTIME) returns ETIMEDOUT after at least 150 ms.
 *  2. A writer excludes: while a created thread holds the write lock,
 *     tryrdlock and trywrlock return EBUSY, timedrdlock (200 ms) returns
 *     ETIMEDOUT after at least 150 ms, timedwrlock with an invalid tv_nsec
 *     returns EINVAL; after it unlocks, trywrlock succeeds.
 *  3. Stress: 2 writers x 5000 increments of two counters under the write
 *     lock, 2 readers x 5000 reads under the read lock always see them
 *     equal; both end at 10000.  Destroy returns 0.
 * Spin locks:
 *  4. pthread_spin_init(PTHREAD_PROCESS_PRIVATE); 4 threads x 2000
 *     increments under lock/unlock give exactly 80000.
 *  5. pthread_spin_trylock while a created thread holds it returns EBUSY;
 *     after release it succeeds.  Destroy returns 0.
 * Semaphores:
 *  6. sem_init(value 0); sem_trywait returns -1/EAGAIN; sem_timedwait
 *     (200 ms) returns -1/ETIMEDOUT after at least 150 ms, and with an
 *     invalid tv_nsec -1/EINVAL; after 3 sem_post sem_getvalue is 3, three
 *     sem_trywait succeed and a fourth gives EAGAIN.
 *  7. Ping-pong: two created threads, sem_post in one / sem_wait in the
 *     other, 2000 round trips passing a value that is checked each time.
 *  8. A counting semaphore (capacity 2) as a resource pool for 4 threads x
 *     2000 acquisitions (sem_timedwait, 5 s bound): holders, counted under
 *     a mutex, never exceed 2; the value is back to 2 at the end.
 *  9. sem_init with a value above SEM_VALUE_MAX returns -1/EINVAL;
 *     sem_destroy returns 0. */
#define _GNU_SOURCE
#include "check.h"

#include <limits.h>
#include <sched.h>
#include <semaphore.h>

/* ==== read-write locks ================================================ */

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t meet; /* two readers + main */

struct rd {
    int rc, unlock_rc;
};

static void *sharing_reader(void *arg)
{
    struct rd *r = arg;
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    r->rc = pthread_rwlock_timedrdlock(&rw, &dl);
    pthread_barrier_wait(&meet); /* both hold the read lock */
    pthread_barrier_wait(&meet); /* main is done probing */
    r->unlock_rc = r->rc == 0 ? pthread_rwlock_unlock(&rw) : 0;
    return NULL;
}

static void test_readers_share(void)
{
    if (!CHECK_ERR("share_barrier_init", pthread_barrier_init(&meet, NULL, 3), 0))
        return;
    pthread_t t[2];
    struct rd r[2];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        r[i].rc = r[i].unlock_rc = -1;
        if (!CHECK_ERR("share_create", pthread_create(&t[i], NULL, sharing_reader, &r[i]), 0))
            return; /* the barrier cannot complete */
    }
    pthread_barrier_wait(&meet);
    CHECK_ERR("share_trywrlock_ebusy", pthread_rwlock_trywrlock(&rw), EBUSY);
    int rc = pthread_rwlock_tryrdlock(&rw);
    CHECK_ERR("share_third_reader_tryrdlock", rc, 0);
    if (rc == 0)
        CHECK_ERR("share_third_reader_unlock", pthread_rwlock_unlock(&rw), 0);
    double t0 = check_now_ms(CLOCK_MONOTONIC);
    struct timespec dl = check_deadline(CLOCK_REALTIME, 200);
    rc = pthread_rwlock_timedwrlock(&rw, &dl);
    double waited = check_now_ms(CLOCK_MONOTONIC) - t0;
    CHECK_ERR("share_timedwrlock_etimedout", rc, ETIMEDOUT);
    CHECK_GE("share_timedwrlock_waited_ms", (long)waited, 150);
    CHECK_LT("share_timedwrlock_waited_ms_bounded", (long)waited, 2000);
    pthread_barrier_wait(&meet);
    for (int i = 0; i < 2; i++) {
        CHECK_ERR("share_join", pthread_join(t[i], NULL), 0);
        CHECK_ERR("share_reader_rdlock", r[i].rc, 0);
        CHECK_ERR("share_reader_unlock", r[i].unlock_rc, 0);
    }
    rc = pthread_rwlock_trywrlock(&rw);
    CHECK_ERR("share_trywrlock_after", rc, 0);
    if (rc == 0)
        CHECK_ERR("share_unlock_after", pthread_rwlock_unlock(&rw), 0);
    pthread_barrier_destroy(&meet);
}

struct wr {
    struct gate g; /* 1: holds the write lock, 2: main says release */
    int rc, unlock_rc, wait_ok;
};

static void *holding_writer(void *arg)
{
    struct wr *w = arg;
    w->rc = pthread_rwlock_wrlock(&rw);
    gate_set(&w->g, 1);
    w->wait_ok = gate_wait(&w->g, 2);
    w->unlock_rc = w->rc == 0 ? pthread_rwlock_unlock(&rw) : 0;
    return NULL;
}

static void test_writer_excludes(void)
{
    struct wr w;
    memset(&w, 0, sizeof w);
    w.rc = w.unlock_rc = -1;
    gate_init(&w.g);
    pthread_t t;
    if (!CHECK_ERR("excl_create", pthread_create(&t, NULL, holding_writer, &w), 0))
        return;
    CHECK("excl_writer_holds", gate_wait(&w.g, 1));
    CHECK_ERR("excl_tryrdlock_ebusy", pthread_rwlock_tryrdlock(&rw), EBUSY);
    CHECK_ERR("excl_trywrlock_ebusy", pthread_rwlock_trywrlock(&rw), EBUSY);
    double t0 = check_now_ms(CLOCK_MONOTONIC);
    struct timespec dl = check_deadline(CLOCK_REALTIME, 200);
    int rc = pthread_rwlock_timedrdlock(&rw, &dl);
    double waited = check_now_ms(CLOCK_MONOTONIC) - t0;
    CHECK_ERR("excl_timedrdlock_etimedout", rc, ETIMEDOUT);
    CHECK_GE("excl_timedrdlock_waited_ms", (long)waited, 150);
    CHECK_LT("excl_timedrdlock_waited_ms_bounded", (long)waited, 2000);
    struct timespec bad = check_deadline(CLOCK_REALTIME, 200);
    bad.tv_nsec = 1000000000L;
    CHECK_ERR("excl_timedwrlock_bad_nsec_einval", pthread_rwlock_timedwrlock(&rw, &bad), EINVAL);
    gate_set(&w.g, 2);
    CHECK_ERR("excl_join", pthread_join(t, NULL), 0);
    CHECK_ERR("excl_writer_wrlock", w.rc, 0);
    CHECK_ERR("excl_writer_unlock", w.unlock_rc, 0);
    CHECK_EQ("excl_writer_wait_ok", w.wait_ok, 1);
    rc = pthread_rwlock_trywrlock(&rw);
    CHECK_ERR("excl_trywrlock_after", rc, 0);
    if (rc == 0)
        CHECK_ERR("excl_unlock_after", pthread_rwlock_unlock(&rw), 0);
    gate_destroy(&w.g);
}

#define RW_ITERS 1000

static pthread_rwlock_t rws;
static long rw_a, rw_b; /* under rws */

struct rws_arg {
    int writer;
    int mismatches, bad_rc;
};

static void *rw_stress_body(void *arg)
{
    struct rws_arg *a = arg;
    for (int i = 0; i < RW_ITERS; i++) {
        int rc = a->writer ? pthread_rwlock_wrlock(&rws) : pthread_rwlock_rdlock(&rws);
        if (rc != 0) {
            a->bad_rc++;
            continue;
        }
        if (a->writer) {
            rw_a++;
            if ((i & 63) == 0)
                sched_yield(); /* widen the window between the two writes */
            rw_b++;
        } else {
            a->mismatches += rw_a != rw_b;
        }
        a->bad_rc += pthread_rwlock_unlock(&rws) != 0;
    }
    return NULL;
}

static void test_rw_stress(void)
{
    if (!CHECK_ERR("stress_rwlock_init", pthread_rwlock_init(&rws, NULL), 0))
        return;
    pthread_t t[4];
    struct rws_arg a[4];
    int ok[4];
    memset(a, 0, sizeof a);
    for (int i = 0; i < 4; i++) {
        a[i].writer = i % 2 == 0;
        ok[i] = pthread_create(&t[i], NULL, rw_stress_body, &a[i]) == 0;
        CHECK("stress_rw_create", ok[i]);
    }
    int mism = 0, bad = 0;
    for (int i = 0; i < 4; i++) {
        if (!ok[i])
            continue;
        CHECK_ERR("stress_rw_join", pthread_join(t[i], NULL), 0);
        mism += a[i].mismatches;
        bad += a[i].bad_rc;
    }
    CHECK_EQ("stress_rw_readers_saw_equal", mism, 0);
    CHECK_EQ("stress_rw_rc", bad, 0);
    CHECK_EQ("stress_rw_count_a", rw_a, 2L * RW_ITERS);
    CHECK_EQ("stress_rw_count_b", rw_b, 2L * RW_ITERS);
    CHECK_ERR("stress_rwlock_destroy", pthread_rwlock_destroy(&rws), 0);
}

/* ==== spin locks ====================================================== */

#define SPIN_THREADS 4
#define SPIN_ITERS 2000

static pthread_spinlock_t spin;
static long spin_counter; /* under spin */

static void *spin_body(void *arg)
{
    int *bad = arg;
    for (int i = 0; i < SPIN_ITERS; i++) {
        if (pthread_spin_lock(&spin) != 0) {
            ++*bad;
            continue;
        }
        spin_counter++;
        *bad += pthread_spin_unlock(&spin) != 0;
    }
    return NULL;
}

struct spin_holder {
    struct gate g; /* 1: holds it, 2: main says release */
    int rc, unlock_rc, wait_ok;
};

static void *spin_holder_body(void *arg)
{
    struct spin_holder *h = arg;
    h->rc = pthread_spin_lock(&spin);
    gate_set(&h->g, 1);
    h->wait_ok = gate_wait(&h->g, 2);
    h->unlock_rc = h->rc == 0 ? pthread_spin_unlock(&spin) : 0;
    return NULL;
}

static void test_spin(void)
{
    if (!CHECK_ERR("spin_init", pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE), 0))
        return;
    pthread_t t[SPIN_THREADS];
    int bad[SPIN_THREADS] = { 0 }, ok[SPIN_THREADS], badsum = 0;
    for (int i = 0; i < SPIN_THREADS; i++) {
        ok[i] = pthread_create(&t[i], NULL, spin_body, &bad[i]) == 0;
        CHECK("spin_stress_create", ok[i]);
    }
    for (int i = 0; i < SPIN_THREADS; i++) {
        if (!ok[i])
            continue;
        CHECK_ERR("spin_stress_join", pthread_join(t[i], NULL), 0);
        badsum += bad[i];
    }
    CHECK_EQ("spin_stress_rc", badsum, 0);
    CHECK_EQ("spin_stress_count", spin_counter, (long)SPIN_THREADS * SPIN_ITERS);

    struct spin_holder h;
    memset(&h, 0, sizeof h);
    h.rc = h.unlock_rc = -1;
    gate_init(&h.g);
    pthread_t th;
    if (CHECK_ERR("spin_holder_create", pthread_create(&th, NULL, spin_holder_body, &h), 0)) {
        CHECK("spin_holder_holds", gate_wait(&h.g, 1));
        CHECK_ERR("spin_trylock_held_ebusy", pthread_spin_trylock(&spin), EBUSY);
        gate_set(&h.g, 2);
        CHECK_ERR("spin_holder_join", pthread_join(th, NULL), 0);
        CHECK_ERR("spin_holder_lock", h.rc, 0);
        CHECK_ERR("spin_holder_unlock", h.unlock_rc, 0);
        CHECK_EQ("spin_holder_wait_ok", h.wait_ok, 1);
        int rc = pthread_spin_trylock(&spin);
        CHECK_ERR("spin_trylock_after_release", rc, 0);
        if (rc == 0)
            CHECK_ERR("spin_unlock_after", pthread_spin_unlock(&spin), 0);
    }
    gate_destroy(&h.g);
    CHECK_ERR("spin_destroy", pthread_spin_destroy(&spin), 0);
}

/* ==== semaphores ====================================================== */

static void test_sem_basic(void)
{
    sem_t s;
    int v = -1;
    if (!CHECK_EQ("sem_init_zero", sem_init(&s, 0, 0), 0))
        return;
    errno = 0;
    int rc = sem_trywait(&s);
    int e = errno;
    CHECK_EQ("sem_trywait_zero_rc", rc, -1);
    CHECK_ERR("sem_trywait_zero_eagain", e, EAGAIN);

    double t0 = check_now_ms(CLOCK_MONOTONIC);
    struct timespec dl = check_deadline(CLOCK_REALTIME, 200);
    errno = 0;
    while ((rc = sem_timedwait(&s, &dl)) == -1 && errno == EINTR)
        ;
    e = errno;
    double waited = check_now_ms(CLOCK_MONOTONIC) - t0;
    CHECK_EQ("sem_timedwait_zero_rc", rc, -1);
    CHECK_ERR("sem_timedwait_zero_etimedout", e, ETIMEDOUT);
    CHECK_GE("sem_timedwait_waited_ms", (long)waited, 150);
    CHECK_LT("sem_timedwait_waited_ms_bounded", (long)waited, 2000);

    struct timespec bad = check_deadline(CLOCK_REALTIME, 200);
    bad.tv_nsec = 1000000000L;
    errno = 0;
    rc = sem_timedwait(&s, &bad);
    e = errno;
    CHECK_EQ("sem_timedwait_bad_nsec_rc", rc, -1);
    CHECK_ERR("sem_timedwait_bad_nsec_einval", e, EINVAL);

    CHECK_EQ("sem_getvalue_zero_rc", sem_getvalue(&s, &v), 0);
    CHECK_EQ("sem_getvalue_zero", v, 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ("sem_post_rc", sem_post(&s), 0);
    v = -1;
    CHECK_EQ("sem_getvalue_rc", sem_getvalue(&s, &v), 0);
    CHECK_EQ("sem_getvalue_after_3_posts", v, 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ("sem_trywait_positive", sem_trywait(&s), 0);
    errno = 0;
    rc = sem_trywait(&s);
    e = errno;
    CHECK_EQ("sem_trywait_drained_rc", rc, -1);
    CHECK_ERR("sem_trywait_drained_eagain", e, EAGAIN);
    CHECK_EQ("sem_destroy_basic", sem_destroy(&s), 0);

    sem_t big;
    errno = 0;
    rc = sem_init(&big, 0, (unsigned)SEM_VALUE_MAX + 1u);
    e = errno;
    CHECK_EQ("sem_init_above_max_rc", rc, -1);
    CHECK_ERR("sem_init_above_max_einval", e, EINVAL);
    if (rc == 0)
        sem_destroy(&big);
}

#define SEM_ROUNDS 2000

static sem_t ping, pong;
static long sem_ball; /* written before sem_post, read after sem_wait */

struct sem_player {
    int bad_value, bad_rc;
};

static int sem_wait_nointr(sem_t *s)
{
    int rc;
    while ((rc = sem_wait(s)) == -1 && errno == EINTR)
        ;
    return rc;
}

static void *sem_pinger(void *arg)
{
    struct sem_player *p = arg;
    for (int i = 0; i < SEM_ROUNDS; i++) {
        sem_ball = 2L * i;
        p->bad_rc += sem_post(&ping) != 0;
        p->bad_rc += sem_wait_nointr(&pong) != 0;
        p->bad_value += sem_ball != 2L * i + 1;
    }
    return NULL;
}

static void *sem_ponger(void *arg)
{
    struct sem_player *p = arg;
    for (int i = 0; i < SEM_ROUNDS; i++) {
        p->bad_rc += sem_wait_nointr(&ping) != 0;
        p->bad_value += sem_ball != 2L * i;
        sem_ball = 2L * i + 1;
        p->bad_rc += sem_post(&pong) != 0;
    }
    return NULL;
}

static void test_sem_pingpong(void)
{
    if (!CHECK_EQ("sem_pp_init_ping", sem_init(&ping, 0, 0), 0) ||
        !CHECK_EQ("sem_pp_init_pong", sem_init(&pong, 0, 0), 0))
        return;
    struct sem_player p[2];
    pthread_t t[2];
    memset(p, 0, sizeof p);
    int ok0 = CHECK_ERR("sem_pp_create", pthread_create(&t[0], NULL, sem_pinger, &p[0]), 0);
    int ok1 = CHECK_ERR("sem_pp_create", pthread_create(&t[1], NULL, sem_ponger, &p[1]), 0);
    if (!ok0 || !ok1)
        return; /* the other one would block forever: exit ends it */
    CHECK_ERR("sem_pp_join", pthread_join(t[0], NULL), 0);
    CHECK_ERR("sem_pp_join", pthread_join(t[1], NULL), 0);
    CHECK_EQ("sem_pp_pinger_values", p[0].bad_value, 0);
    CHECK_EQ("sem_pp_ponger_values", p[1].bad_value, 0);
    CHECK_EQ("sem_pp_rc", p[0].bad_rc + p[1].bad_rc, 0);
    CHECK_EQ("sem_pp_final_ball", sem_ball, 2L * SEM_ROUNDS - 1);
    int v1 = -1, v2 = -1;
    sem_getvalue(&ping, &v1);
    sem_getvalue(&pong, &v2);
    CHECK_EQ("sem_pp_ping_drained", v1, 0);
    CHECK_EQ("sem_pp_pong_drained", v2, 0);
    CHECK_EQ("sem_pp_destroy_ping", sem_destroy(&ping), 0);
    CHECK_EQ("sem_pp_destroy_pong", sem_destroy(&pong), 0);
}

#define POOL_CAP 2
#define POOL_THREADS 4
#define POOL_ITERS 2000

static sem_t pool;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static int pool_holders, pool_max, pool_violations; /* under pool_mu */

struct pool_arg {
    int timeouts, bad_rc, acquired;
};

static void *pool_body(void *arg)
{
    struct pool_arg *a = arg;
    for (int i = 0; i < POOL_ITERS; i++) {
        struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
        int rc;
        while ((rc = sem_timedwait(&pool, &dl)) == -1 && errno == EINTR)
            ;
        if (rc != 0) {
            if (errno == ETIMEDOUT)
                a->timeouts++;
            else
                a->bad_rc++;
            break;
        }
        a->acquired++;
        pthread_mutex_lock(&pool_mu);
        pool_holders++;
        if (pool_holders > pool_max)
            pool_max = pool_holders;
        if (pool_holders > POOL_CAP)
            pool_violations++;
        pthread_mutex_unlock(&pool_mu);
        if ((i & 7) == 0)
            sched_yield(); /* hold the resource a little */
        pthread_mutex_lock(&pool_mu);
        pool_holders--;
        pthread_mutex_unlock(&pool_mu);
        a->bad_rc += sem_post(&pool) != 0;
    }
    return NULL;
}

static void test_sem_pool(void)
{
    if (!CHECK_EQ("sem_pool_init", sem_init(&pool, 0, POOL_CAP), 0))
        return;
    pthread_t t[POOL_THREADS];
    struct pool_arg a[POOL_THREADS];
    int ok[POOL_THREADS];
    memset(a, 0, sizeof a);
    for (int i = 0; i < POOL_THREADS; i++) {
        ok[i] = pthread_create(&t[i], NULL, pool_body, &a[i]) == 0;
        CHECK("sem_pool_create", ok[i]);
    }
    int timeouts = 0, bad = 0;
    long acquired = 0;
    for (int i = 0; i < POOL_THREADS; i++) {
        if (!ok[i])
            continue;
        CHECK_ERR("sem_pool_join", pthread_join(t[i], NULL), 0);
        timeouts += a[i].timeouts;
        bad += a[i].bad_rc;
        acquired += a[i].acquired;
    }
    CHECK_EQ("sem_pool_timeouts", timeouts, 0);
    CHECK_EQ("sem_pool_rc", bad, 0);
    CHECK_EQ("sem_pool_acquisitions", acquired, (long)POOL_THREADS * POOL_ITERS);
    pthread_mutex_lock(&pool_mu);
    CHECK_EQ("sem_pool_capacity_never_exceeded", pool_violations, 0);
    CHECK_LE("sem_pool_max_holders", pool_max, POOL_CAP);
    CHECK_GE("sem_pool_max_holders_positive", pool_max, 1);
    CHECK_EQ("sem_pool_no_holders_left", pool_holders, 0);
    pthread_mutex_unlock(&pool_mu);
    int v = -1;
    CHECK_EQ("sem_pool_getvalue_rc", sem_getvalue(&pool, &v), 0);
    CHECK_EQ("sem_pool_value_restored", v, POOL_CAP);
    CHECK_EQ("sem_pool_destroy", sem_destroy(&pool), 0);
}

int main(void)
{
    check_start();
    test_readers_share();
    test_writer_excludes();
    test_rw_stress();
    CHECK_ERR("rwlock_destroy_static", pthread_rwlock_destroy(&rw), 0);
    test_spin();
    test_sem_basic();
    test_sem_pingpong();
    test_sem_pool();
    return check_finish();
}
