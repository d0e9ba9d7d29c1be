/* sem_intr: a signal handler that runs on a thread blocked in a semaphore
 * wait ends the wait with -1/EINTR as glibc's do: sem_timedwait and
 * sem_clockwait whatever SA_RESTART says (signal(7)), sem_wait for a
 * handler without SA_RESTART (with it, glibc's untimed futex wait is
 * restarted by the kernel: the wait goes on, and takes the later post).
 * Legacy code uses the EINTR to stop a waiter.  No post is lost or taken
 * by an interrupted wait: after the EINTR the value is still 0 and the
 * next post is taken by the next wait; a post and a signal sent together
 * leave the post either taken (the wait returns 0) or in the value (EINTR).
 * The waiting thread is the first main creates (node 1 at 2 nodes).
 * Before (relinked, 1 and 2 nodes), the handler ran but no wait ended with
 * EINTR: each went on until the later sem_post and returned 0
 * (sem_wait_norestart_rc failed first). */
#define _GNU_SOURCE
#include <semaphore.h>
#include <stdbool.h>

#include "check.h"

enum { WAIT, TIMED, CLOCK, NWAYS };
static const char *const way_name[NWAYS] = { "sem_wait", "sem_timedwait", "sem_clockwait" };

static sem_t sem;
static volatile sig_atomic_t got;
static void on_usr1(int s) { (void)s; got = 1; }

struct job { int way; int rc, err; };

static void *waiter(void *a)
{
    struct job *j = a;
    int rc;
    if (j->way == TIMED) {
        struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
        rc = sem_timedwait(&sem, &dl);
    } else if (j->way == CLOCK) {
        struct timespec dl = check_deadline(CLOCK_MONOTONIC, WAIT_MS);
        rc = sem_clockwait(&sem, CLOCK_MONOTONIC, &dl);
    } else {
        rc = sem_wait(&sem);
    }
    j->err = rc ? errno : 0;
    j->rc = rc;
    return NULL;
}

static int value(void)
{
    int v = -1;
    sem_getvalue(&sem, &v);
    return v;
}

/* a waiter, a signal while it waits: EINTR; the post after it stays */
static void interrupted(int way, int flags)
{
    char n[96];
    const char *f = flags ? "restart" : "norestart";
    check_handler(SIGUSR1, on_usr1, flags);
    got = 0;
    struct job j = { way, 99, 0 };
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, waiter, &j), 0))
        return;
    check_sleep_ms(250); /* in its wait */
    pthread_kill(t, SIGUSR1);
    check_sleep_ms(300);
    sem_post(&sem); /* in case the wait went on (the bug): it ends then */
    pthread_join(t, NULL);
    bool goes_on = way == WAIT && (flags & SA_RESTART); /* restarted */
    snprintf(n, sizeof n, "%s_%s_rc", way_name[way], f);
    CHECK_EQ(n, j.rc, goes_on ? 0 : -1);
    snprintf(n, sizeof n, "%s_%s_eintr", way_name[way], f);
    CHECK_ERR(n, j.err, goes_on ? 0 : EINTR);
    snprintf(n, sizeof n, "%s_%s_handler_ran", way_name[way], f);
    CHECK(n, got == 1);
    /* the post after the EINTR was not taken by the interrupted wait */
    snprintf(n, sizeof n, "%s_%s_post_kept", way_name[way], f);
    CHECK_EQ(n, value(), j.rc ? 1 : 0);
    /* and the next wait takes it at once */
    if (j.rc) {
        struct job k = { way, 99, 0 };
        waiter(&k);
        snprintf(n, sizeof n, "%s_%s_next_takes", way_name[way], f);
        CHECK_EQ(n, k.rc, 0);
    }
    snprintf(n, sizeof n, "%s_%s_value_0", way_name[way], f);
    CHECK_EQ(n, value(), 0);
}

/* a post and a signal together: taken once, or kept */
static void racing(int round)
{
    char n[64];
    check_handler(SIGUSR1, on_usr1, 0);
    struct job j = { round % NWAYS, 99, 0 };
    pthread_t t;
    if (!CHECK_ERR("race_create", pthread_create(&t, NULL, waiter, &j), 0))
        return;
    check_sleep_ms(20 + round % 3 * 5);
    if (round & 1) {
        sem_post(&sem);
        pthread_kill(t, SIGUSR1);
    } else {
        pthread_kill(t, SIGUSR1);
        sem_post(&sem);
    }
    pthread_join(t, NULL);
    int ok = (j.rc == 0 && value() == 0) || (j.rc == -1 && j.err == EINTR && value() == 1);
    snprintf(n, sizeof n, "race_%d_post_once", round);
    if (!CHECK(n, ok))
        fprintf(stderr, "round %d: rc %d err %d value %d\n", round, j.rc, j.err, value());
    while (value() > 0)
        sem_trywait(&sem);
}

int main(void)
{
    check_start();
    CHECK_ERR("sem_init", sem_init(&sem, 0, 0), 0);
    for (int way = 0; way < NWAYS; way++) {
        interrupted(way, 0);
        interrupted(way, SA_RESTART);
    }
    for (int round = 0; round < 12; round++)
        racing(round);
    return check_finish();
}
