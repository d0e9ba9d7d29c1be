/* once_unwound: an init routine of pthread_once that does not return
 * leaves the once not done, as glibc's: the next caller runs an init.
 *   - a thread (on libcables, on another node than main) whose init calls
 *     pthread_exit; then another thread's pthread_once runs its init (its
 *     join is bounded);
 *   - a thread cancelled in its init's sleep; then main's pthread_once
 *     runs its init.
 * Before, on libcables, the once's lock stayed taken: the second caller
 * waited for ever.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include "check.h"

#include <time.h>
#include <unistd.h>

static pthread_once_t exits = PTHREAD_ONCE_INIT, cancelled = PTHREAD_ONCE_INIT;
static int exits_runs, cancelled_runs;
static struct gate in_init = GATE_INITIALIZER;

static void init_exits(void)
{
    exits_runs++;
    pthread_exit(NULL);
}

static void init_counts(void) { exits_runs++; }

static void init_sleeps(void)
{
    cancelled_runs++;
    gate_set(&in_init, 1);
    sleep(30); /* cancelled here */
}

static void init_quick(void) { cancelled_runs++; }

static void *calls(void *arg)
{
    pthread_once(&exits, (void (*)(void))arg);
    return NULL;
}

static void *calls_sleeping(void *arg)
{
    (void)arg;
    pthread_once(&cancelled, init_sleeps);
    return NULL;
}

static int bounded_join(pthread_t t, void **ret)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, 5000);
    return pthread_timedjoin_np(t, ret, &dl);
}

int main(void)
{
    check_start();
    pthread_t t;
    if (CHECK_ERR("create_exits", pthread_create(&t, NULL, calls, (void *)init_exits), 0))
        CHECK_ERR("join_exits", bounded_join(t, NULL), 0);
    if (CHECK_ERR("create_again", pthread_create(&t, NULL, calls, (void *)init_counts), 0))
        CHECK_ERR("join_again", bounded_join(t, NULL), 0);
    CHECK_EQ("exits_runs", exits_runs, 2);
    CHECK_ERR("once_done", pthread_once(&exits, init_counts), 0);
    CHECK_EQ("exits_runs_after", exits_runs, 2);

    void *ret = NULL;
    if (CHECK_ERR("create_sleeping", pthread_create(&t, NULL, calls_sleeping, NULL), 0)) {
        CHECK("in_init", gate_wait(&in_init, 1));
        check_sleep_ms(100); /* in its sleep */
        CHECK_ERR("cancel", pthread_cancel(t), 0);
        CHECK_ERR("join_cancelled", bounded_join(t, &ret), 0);
        CHECK("was_cancelled", ret == PTHREAD_CANCELED);
    }
    CHECK_ERR("once_after_cancel", pthread_once(&cancelled, init_quick), 0);
    CHECK_EQ("cancelled_runs", cancelled_runs, 2);
    return check_finish();
}
