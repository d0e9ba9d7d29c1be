/* rwlock_kinds: a read-write lock's kind and its wakeups, as glibc's.
 *   - kinds: main holds a read lock and a writer waits (its timedwrlock);
 *     another thread's tryrdlock then gets the lock of the default kind
 *     (readers preferred) and EBUSY from one made with
 *     PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, at init or by its
 *     static initializer; a writer that gives up lets the readers it held
 *     back in (their timedrdlock gets the lock);
 *   - a reader whose timedrdlock times out as the writer holding the lock
 *     unlocks, while a second writer waits (ROUNDS rounds): that writer
 *     gets the lock, every round.
 * Before, on libcables, the kind was ignored (readers always preferred),
 * and in about 1 round in 7 the unlock woke only the readers, still
 * counting the one that had timed out: the second writer slept on with
 * the lock free until its own deadline (1 s).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include "check.h"

#include <time.h>

#define ROUNDS 100

static pthread_rwlock_t plain, by_init,
    by_static = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;

static void *writer(void *arg)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, 5000);
    int rc = pthread_rwlock_timedwrlock(arg, &dl);
    CHECK_ERR("writer_lock", rc, 0);
    if (!rc)
        pthread_rwlock_unlock(arg);
    return NULL;
}

static int try_rd(pthread_rwlock_t *l)
{
    int rc = pthread_rwlock_tryrdlock(l);
    if (!rc)
        pthread_rwlock_unlock(l);
    return rc;
}

static void *try_reader(void *arg) { return (void *)(intptr_t)try_rd(arg); }

/* main reads l while a writer waits: another thread's tryrdlock gives? */
static int kind_case(pthread_rwlock_t *l)
{
    pthread_t w, r;
    void *got = (void *)-1;
    CHECK_ERR("kind_rdlock", pthread_rwlock_rdlock(l), 0);
    CHECK_ERR("kind_writer", pthread_create(&w, NULL, writer, l), 0);
    check_sleep_ms(200); /* the writer waits */
    CHECK_ERR("kind_reader", pthread_create(&r, NULL, try_reader, l), 0);
    CHECK_ERR("kind_reader_join", pthread_join(r, &got), 0);
    CHECK_ERR("kind_unlock", pthread_rwlock_unlock(l), 0);
    CHECK_ERR("kind_writer_join", pthread_join(w, NULL), 0);
    return (int)(intptr_t)got;
}

/* a writer that times out lets in the reader it held back */
static void *giving_up(void *arg)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, 300);
    CHECK_ERR("gives_up", pthread_rwlock_timedwrlock(arg, &dl), ETIMEDOUT);
    return NULL;
}

static void *held_back(void *arg)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, 3000);
    int rc = pthread_rwlock_timedrdlock(arg, &dl);
    CHECK_ERR("held_back_gets_it", rc, 0);
    if (!rc)
        pthread_rwlock_unlock(arg);
    return NULL;
}

static pthread_rwlock_t race = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t bar;
static struct timespec rd_deadline; /* the reader's, set by main each round */
static int slow_rounds, w2_failed;

static void *race_reader(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&bar);
        if (pthread_rwlock_timedrdlock(&race, &rd_deadline) == 0)
            pthread_rwlock_unlock(&race);
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

static void *race_writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&bar);
        check_sleep_ms(5);
        double t0 = check_now_ms(CLOCK_MONOTONIC);
        struct timespec dl = check_deadline(CLOCK_REALTIME, 1000);
        int rc = pthread_rwlock_timedwrlock(&race, &dl);
        if (rc)
            w2_failed++;
        else
            pthread_rwlock_unlock(&race);
        slow_rounds += check_now_ms(CLOCK_MONOTONIC) - t0 > 500;
        pthread_barrier_wait(&bar);
    }
    return NULL;
}

int main(void)
{
    check_start();
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    CHECK_ERR("init_plain", pthread_rwlock_init(&plain, NULL), 0);
    CHECK_ERR("init_writers", pthread_rwlock_init(&by_init, &a), 0);
    CHECK_EQ("readers_preferred", kind_case(&plain), 0);
    CHECK_EQ("writers_preferred_init", kind_case(&by_init), EBUSY);
    CHECK_EQ("writers_preferred_static", kind_case(&by_static), EBUSY);

    pthread_t w, r;
    CHECK_ERR("held_rdlock", pthread_rwlock_rdlock(&by_init), 0);
    CHECK_ERR("giving_up", pthread_create(&w, NULL, giving_up, &by_init), 0);
    check_sleep_ms(100); /* it waits */
    CHECK_ERR("held_back", pthread_create(&r, NULL, held_back, &by_init), 0);
    CHECK_ERR("giving_up_join", pthread_join(w, NULL), 0);
    CHECK_ERR("held_back_join", pthread_join(r, NULL), 0);
    CHECK_ERR("held_unlock", pthread_rwlock_unlock(&by_init), 0);

    pthread_barrier_init(&bar, NULL, 3);
    CHECK_ERR("race_reader", pthread_create(&r, NULL, race_reader, NULL), 0);
    CHECK_ERR("race_writer", pthread_create(&w, NULL, race_writer, NULL), 0);
    for (int i = 0; i < ROUNDS; i++) {
        pthread_rwlock_wrlock(&race);
        rd_deadline = check_deadline(CLOCK_REALTIME, 20);
        pthread_barrier_wait(&bar);
        /* unlock around the reader's deadline: -1 ms .. +1 ms */
        struct timespec u = rd_deadline;
        u.tv_nsec += (i % 41 - 20) * 50 * 1000L;
        if (u.tv_nsec < 0)
            u.tv_nsec += 1000000000L, u.tv_sec--;
        if (u.tv_nsec >= 1000000000L)
            u.tv_nsec -= 1000000000L, u.tv_sec++;
        clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &u, NULL);
        pthread_rwlock_unlock(&race);
        pthread_barrier_wait(&bar);
    }
    CHECK_ERR("race_reader_join", pthread_join(r, NULL), 0);
    CHECK_ERR("race_writer_join", pthread_join(w, NULL), 0);
    CHECK_EQ("race_writer_failed", w2_failed, 0);
    CHECK_EQ("race_slow_rounds", slow_rounds, 0);
    return check_finish();
}
