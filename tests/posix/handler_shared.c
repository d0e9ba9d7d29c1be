/* handler_shared: a signal handler that writes a shared global, as legacy
 * code sets a flag from a SIGALRM handler, while its thread is busy in
 * mutex and condition-variable calls whose other users run on another
 * node.  A worker thread writes the same page under the mutex, so main's
 * copy of it is often invalid when the handler writes it.  An interval
 * timer sends SIGUSR1 every 200 us for SECONDS; every handler must run and
 * return, and every count must come out whole.  (A handler that interrupts
 * the runtime while it holds one of its own locks, and faults, must not
 * wait for that lock.)
 * RESULT ok=1 checks=N */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define SECONDS 2.0

struct counts {
    volatile long by_handler, by_worker, by_main; /* one page: written by all three */
};
static struct counts *volatile page; /* (mu) the worker's: homed on its node */
static volatile sig_atomic_t hits;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile bool stop; /* (mu) */
static long worker_rounds, main_rounds;

static void on_usr1(int sig)
{
    (void)sig;
    if (page) {
        page->by_handler++;
        hits++;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    check_block_signal(SIGUSR1); /* the timer's signals are main's */
    struct counts *mine = calloc(1, 4096);
    pthread_mutex_lock(&mu);
    page = mine;
    pthread_mutex_unlock(&mu);
    long n = 0;
    for (bool go = true; go; n++) {
        pthread_mutex_lock(&mu);
        mine->by_worker++;
        pthread_cond_signal(&cv);
        go = !stop;
        pthread_mutex_unlock(&mu);
    }
    worker_rounds = n;
    return NULL;
}

int main(void)
{
    check_start();
    timer_t timer;
    if (!check_signal_timer(SIGUSR1, on_usr1, SA_RESTART, &timer))
        return check_finish();
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, worker, NULL), 0))
        return check_finish();
    check_timer_every(timer, 200);
    for (bool ready = false; !ready;) {
        pthread_mutex_lock(&mu);
        ready = page != NULL;
        pthread_mutex_unlock(&mu);
    }
    double end = check_now_ms(CLOCK_MONOTONIC) + SECONDS * 1000;
    while (check_now_ms(CLOCK_MONOTONIC) < end) {
        pthread_mutex_lock(&mu);
        page->by_main++;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        main_rounds++;
    }
    check_timer_every(timer, 0);
    pthread_mutex_lock(&mu);
    stop = true;
    pthread_mutex_unlock(&mu);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    pthread_mutex_lock(&mu);
    CHECK_EQ("main_count", page->by_main, main_rounds);
    CHECK_EQ("worker_count", page->by_worker, worker_rounds);
    CHECK_EQ("handler_count", page->by_handler, (long)hits);
    CHECK("handlers_ran", hits > 100);
    pthread_mutex_unlock(&mu);
    return check_finish();
}
