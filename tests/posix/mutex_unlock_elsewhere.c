/* mutex_unlock_elsewhere: glibc lets any thread unlock a normal (default)
 * mutex, and legacy code uses one as a binary semaphore: locked by one
 * thread, unlocked by another.  Checked: (1) a default mutex locked by a
 * worker that then ends, unlocked by main: the next lock, by another
 * thread or by main, gets it; (2) two PTHREAD_MUTEX_NORMAL mutexes used as
 * semaphores between main and a worker, each unlocked by the thread that
 * did not lock it, ROUNDS times, with the data written before each unlock
 * seen after the lock that follows; (3) error-checking and recursive
 * mutexes still refuse a non-owner's unlock (EPERM) and stay the owner's.
 * Each worker is placed on node 1 at 2 nodes, main is on node 0.
 * Before (relinked, 2 nodes), main's unlock of a mutex held on node 1 did
 * nothing (the token stayed there, held): every later lock timed out
 * (sema_taker_timedlock first, then the ping-pong's). */
#include <stdbool.h>

#include "check.h"

#define ROUNDS 40

static pthread_mutex_t sema = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t go, done; /* PTHREAD_MUTEX_NORMAL */
static pthread_mutex_t ec, rec;
static volatile long data, echo;
static int worker_fails;

static int lock_bounded(pthread_mutex_t *m)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, 3000);
    return pthread_mutex_timedlock(m, &dl);
}

static void *sema_locker(void *a)
{
    (void)a;
    CHECK_ERR("sema_lock_worker", pthread_mutex_lock(&sema), 0);
    return NULL; /* ends holding it: main unlocks it */
}

static void *sema_taker(void *a)
{
    (void)a;
    int rc = lock_bounded(&sema);
    CHECK_ERR("sema_taker_timedlock", rc, 0);
    if (!rc)
        CHECK_ERR("sema_taker_unlock", pthread_mutex_unlock(&sema), 0);
    return NULL;
}

/* worker: takes go (main unlocks it), answers, unlocks done (main's) */
static void *ponger(void *a)
{
    (void)a;
    for (int i = 0; i < ROUNDS; i++) {
        if (lock_bounded(&go)) {
            worker_fails++;
            break;
        }
        echo = data * 7;
        if (pthread_mutex_unlock(&done)) {
            worker_fails++;
            break;
        }
    }
    return NULL;
}

static void *owner(void *a)
{
    pthread_mutex_t *m = a;
    CHECK_ERR("owner_lock", pthread_mutex_lock(m), 0);
    check_sleep_ms(300); /* main tries to unlock it meanwhile */
    CHECK_ERR("owner_unlock", pthread_mutex_unlock(m), 0);
    return NULL;
}

int main(void)
{
    check_start();
    pthread_t t;
    /* 1. locked by a worker that ends, unlocked by main */
    CHECK_ERR("sema_create", pthread_create(&t, NULL, sema_locker, NULL), 0);
    pthread_join(t, NULL);
    CHECK_ERR("sema_trylock_busy", pthread_mutex_trylock(&sema), EBUSY);
    CHECK_ERR("sema_unlock_main", pthread_mutex_unlock(&sema), 0);
    CHECK_ERR("sema_taker_create", pthread_create(&t, NULL, sema_taker, NULL), 0);
    pthread_join(t, NULL);
    CHECK_ERR("sema_main_relock", lock_bounded(&sema), 0);
    CHECK_ERR("sema_main_unlock", pthread_mutex_unlock(&sema), 0);

    /* 2. ping-pong: main unlocks go (the worker's), the worker unlocks done
     * (main's) */
    pthread_mutexattr_t na;
    pthread_mutexattr_init(&na);
    pthread_mutexattr_settype(&na, PTHREAD_MUTEX_NORMAL);
    pthread_mutex_init(&go, &na);
    pthread_mutex_init(&done, &na);
    pthread_mutex_lock(&go);
    pthread_mutex_lock(&done);
    CHECK_ERR("pong_create", pthread_create(&t, NULL, ponger, NULL), 0);
    int got = 0;
    long bad = 0;
    for (int i = 1; i <= ROUNDS; i++) {
        data = i;
        if (pthread_mutex_unlock(&go) || lock_bounded(&done))
            break;
        bad += echo != i * 7L;
        got++;
    }
    pthread_join(t, NULL);
    CHECK_EQ("pong_rounds", got, ROUNDS);
    CHECK_EQ("pong_data_seen", bad, 0);
    CHECK_EQ("pong_worker_fails", worker_fails, 0);

    /* 3. kinds that say who holds them: a non-owner's unlock is refused */
    pthread_mutexattr_t ea, ra;
    pthread_mutexattr_init(&ea);
    pthread_mutexattr_settype(&ea, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutexattr_init(&ra);
    pthread_mutexattr_settype(&ra, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ec, &ea);
    pthread_mutex_init(&rec, &ra);
    pthread_mutex_t *kinds[2] = { &ec, &rec };
    const char *names[2][3] = { { "errorcheck_unlock_eperm", "errorcheck_still_held", "errorcheck_free_after" },
                                { "recursive_unlock_eperm", "recursive_still_held", "recursive_free_after" } };
    for (int k = 0; k < 2; k++) {
        CHECK_ERR("owner_create", pthread_create(&t, NULL, owner, kinds[k]), 0);
        check_sleep_ms(100);
        CHECK_ERR(names[k][0], pthread_mutex_unlock(kinds[k]), EPERM);
        CHECK_ERR(names[k][1], pthread_mutex_trylock(kinds[k]), EBUSY);
        pthread_join(t, NULL);
        int rc = lock_bounded(kinds[k]);
        CHECK_ERR(names[k][2], rc, 0);
        if (!rc)
            pthread_mutex_unlock(kinds[k]);
    }
    return check_finish();
}
