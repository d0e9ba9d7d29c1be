/* sem_handler: sem_post is async-signal-safe (POSIX), and legacy code posts
 * a semaphore from a signal handler to wake a thread.  A SIGUSR1 timer
 * fires every 100 us; its handler posts a shared semaphore that main
 * waits on, SECONDS long, while a worker (on 2 nodes, on the other node)
 * posts and takes another one guarded the same way.  Every wait must end
 * and the posts be counted whole.  Under libcables a semaphore's state is
 * guarded by a cluster lock; a handler that posted while its thread held
 * that lock (inside sem_wait or sem_post) waited for its own thread.
 * RESULT ok=1 checks=N */
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "check.h"

#define SECONDS 1.5

static sem_t ticks, other;
static volatile sig_atomic_t fired;
static volatile bool stop;
static long worker_rounds;

static void on_usr1(int sig)
{
    (void)sig;
    sem_post(&ticks);
    fired++;
}

static void *worker(void *arg)
{
    (void)arg;
    check_block_signal(SIGUSR1);
    long n = 0;
    while (!stop) {
        sem_post(&other);
        sem_wait(&other);
        n++;
    }
    worker_rounds = n;
    return NULL;
}

int main(void)
{
    check_start();
    CHECK_ERR("sem_init", sem_init(&ticks, 0, 0), 0);
    CHECK_ERR("sem_init_other", sem_init(&other, 0, 0), 0);
    timer_t timer;
    if (!check_signal_timer(SIGUSR1, on_usr1, SA_RESTART, &timer))
        return check_finish();
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, worker, NULL), 0))
        return check_finish();
    check_timer_every(timer, 100);
    long taken = 0, bad = 0;
    double end = check_now_ms(CLOCK_MONOTONIC) + SECONDS * 1000;
    while (check_now_ms(CLOCK_MONOTONIC) < end) {
        int rc;
        while ((rc = sem_wait(&ticks)) == -1 && errno == EINTR)
            ;
        bad += rc != 0;
        taken++;
    }
    check_timer_every(timer, 0);
    stop = true;
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    int left = -1;
    sem_getvalue(&ticks, &left);
    CHECK_EQ("waits_ok", bad, 0);
    CHECK_GT("taken", taken, 100);
    CHECK_EQ("posts_counted", taken + left, (long)fired);
    CHECK_GT("worker_rounds", worker_rounds, 0);
    return check_finish();
}
