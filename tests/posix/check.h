/* check.h: the small check framework shared by the tests/posix programs.
 *
 * Plain pthreads (no cables headers).  Every check goes through
 * check_report(), which counts it under a mutex (checks may be made from
 * any thread) and prints a failure to stderr with the check's name, the
 * observed and expected values and the source line.  check_finish() prints
 * the single stdout line, "RESULT ok=1 checks=N" or
 * "RESULT ok=0 checks=N failed=F first=NAME", and returns the exit code.
 *
 *   CHECK(name, cond)            cond must be true
 *   CHECK_EQ/NE/GE/LE/GT/LT(name, got, want)   integer comparison, both printed
 *   CHECK_ERR(name, got, want)   error numbers, printed by name
 *   CHECK_PTR(name, got, want)   pointers equal
 *
 * Helpers for bounded waits (nothing may hang: every wait on another thread
 * is bounded by WAIT_MS where the API allows; check_start() arms alarm(150)
 * as a watchdog for the waits that cannot be bounded):
 *   check_deadline(clock, ms)    absolute time ms from now on that clock
 *   check_now_ms(clock)          current time in milliseconds
 *   check_sleep_ms(ms)           sleeps ms milliseconds
 *   check_pending(sig)           1 if sig is pending for the thread (or
 *                                the process), else 0
 *   check_block_signal(sig)      the calling thread blocks sig (a timer's
 *                                signals go to the thread they are for)
 *   check_handler(sig, handler, flags)
 *                                installs handler (sa_flags flags, an empty
 *                                sa_mask) for sig: 1, or 0 (check failed)
 *   check_signal_timer(sig, handler, flags, &timer)
 *                                handler (sa_flags flags) for sig, and a
 *                                CLOCK_MONOTONIC timer (not armed) that
 *                                sends sig: 1, or 0 (checks failed)
 *   check_timer_every(timer, us) arms timer to fire every us microseconds
 *                                (us < 1000000), or disarms it (us 0)
 *   struct gate                  a stage number protected by a mutex and a
 *                                condition variable: gate_set(g, s) raises
 *                                it, gate_wait(g, s) waits (bounded) until
 *                                it reaches s and returns 1, or 0 on timeout.
 * Names must not contain spaces (the RESULT line is split on spaces).
 *
 * CHECK_TSAN is 1 in a -fsanitize=thread build, where a program leaves out
 * the few deliberate misuses that ThreadSanitizer reports or cannot follow
 * (each place says why); the check count is then smaller. */
#ifndef TESTS_POSIX_CHECK_H
#define TESTS_POSIX_CHECK_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 5000 /* bound on any wait for another thread */

#define CHECK_UNUSED __attribute__((unused))

#ifdef __SANITIZE_THREAD__
#define CHECK_TSAN 1
#else
#define CHECK_TSAN 0
#endif

static pthread_mutex_t check_mu = PTHREAD_MUTEX_INITIALIZER;
static int check_total, check_failed;
static char check_first[128];

static CHECK_UNUSED const char *check_errname(long long e)
{
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EBUSY: return "EBUSY";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case EDEADLK: return "EDEADLK";
    case ENOTSUP: return "ENOTSUP";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EOVERFLOW: return "EOVERFLOW";
    default: return "?";
    }
}

__attribute__((format(printf, 4, 5)))
static CHECK_UNUSED int check_report(const char *name, int line, int ok,
                                     const char *fmt, ...)
{
    pthread_mutex_lock(&check_mu);
    check_total++;
    if (!ok) {
        if (check_failed++ == 0)
            snprintf(check_first, sizeof check_first, "%s", name);
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "FAIL %s (line %d): ", name, line);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    pthread_mutex_unlock(&check_mu);
    return ok;
}

#define CHECK(name, cond) \
    check_report((name), __LINE__, (cond) != 0, "'%s' is false", #cond)

#define CHECK_CMP(name, got, op, want) __extension__({                       \
    long long check_g_ = (long long)(got), check_w_ = (long long)(want);     \
    check_report((name), __LINE__, check_g_ op check_w_,                     \
                 "%s = %lld, expected %s %lld (%s)", #got, check_g_, #op,    \
                 check_w_, #want); })
#define CHECK_EQ(name, got, want) CHECK_CMP(name, got, ==, want)
#define CHECK_NE(name, got, want) CHECK_CMP(name, got, !=, want)
#define CHECK_GE(name, got, want) CHECK_CMP(name, got, >=, want)
#define CHECK_LE(name, got, want) CHECK_CMP(name, got, <=, want)
#define CHECK_GT(name, got, want) CHECK_CMP(name, got, >, want)
#define CHECK_LT(name, got, want) CHECK_CMP(name, got, <, want)

#define CHECK_ERR(name, got, want) __extension__({                           \
    long long check_g_ = (long long)(got), check_w_ = (long long)(want);     \
    check_report((name), __LINE__, check_g_ == check_w_,                     \
                 "%s = %s (%lld), expected %s (%lld)", #got,                 \
                 check_errname(check_g_), check_g_,                          \
                 check_errname(check_w_), check_w_); })

#define CHECK_PTR(name, got, want) __extension__({                           \
    const void *check_g_ = (got), *check_w_ = (want);                        \
    check_report((name), __LINE__, check_g_ == check_w_,                     \
                 "%s = %p, expected %p (%s)", #got, check_g_, check_w_,      \
                 #want); })

static CHECK_UNUSED void check_start(void)
{
    /* watchdog: a deadlock kills the program instead of hanging.  Later
     * than the runtime's giving up of a hung attach (60 s after it began:
     * Open MPI's spawn hangs at times, README), whose message has the test
     * harness run the program again: at 60 s the alarm came first, and
     * the run failed with no word of the spawn.  Later too than the
     * multinode harness's timeouts (120 s at most), which show where each
     * thread of each node waits: at 90 s this alarm came first in a run
     * that hung, and said nothing of where */
    alarm(150);
}

static CHECK_UNUSED int check_finish(void)
{
    pthread_mutex_lock(&check_mu);
    int total = check_total, failed = check_failed;
    if (failed == 0 && total > 0)
        printf("RESULT ok=1 checks=%d\n", total);
    else
        printf("RESULT ok=0 checks=%d failed=%d first=%s\n", total, failed,
               failed ? check_first : "no_checks");
    pthread_mutex_unlock(&check_mu);
    fflush(stdout);
    return failed == 0 && total > 0 ? 0 : 1;
}

static CHECK_UNUSED struct timespec check_deadline(clockid_t clk, long ms)
{
    struct timespec t;
    clock_gettime(clk, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static CHECK_UNUSED void check_sleep_ms(long ms)
{
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&t, NULL);
}

static CHECK_UNUSED int check_pending(int sig)
{
    sigset_t p;
    sigemptyset(&p);
    sigpending(&p);
    return sigismember(&p, sig) == 1;
}

static CHECK_UNUSED double check_now_ms(clockid_t clk)
{
    struct timespec t;
    clock_gettime(clk, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static CHECK_UNUSED void check_block_signal(int sig)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

static CHECK_UNUSED int check_handler(int sig, void (*handler)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    return CHECK_ERR("sigaction", sigaction(sig, &sa, NULL), 0);
}

static CHECK_UNUSED int check_signal_timer(int sig, void (*handler)(int), int flags,
                                           timer_t *timer)
{
    if (!check_handler(sig, handler, flags))
        return 0;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = sig;
    return CHECK_ERR("timer_create", timer_create(CLOCK_MONOTONIC, &ev, timer), 0);
}

static CHECK_UNUSED int check_timer_every(timer_t timer, long us)
{
    struct itimerspec its = { { 0, us * 1000 }, { 0, us * 1000 } };
    return CHECK_ERR(us ? "timer_arm" : "timer_disarm", timer_settime(timer, 0, &its, NULL), 0);
}

struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
};
#define GATE_INITIALIZER { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 }

static CHECK_UNUSED void gate_init(struct gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->stage = 0;
}

static CHECK_UNUSED void gate_destroy(struct gate *g)
{
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* raise the stage to s (never lowers it) and wake every waiter */
static CHECK_UNUSED void gate_set(struct gate *g, int s)
{
    pthread_mutex_lock(&g->mu);
    if (s > g->stage)
        g->stage = s;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static CHECK_UNUSED int gate_get(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    int s = g->stage;
    pthread_mutex_unlock(&g->mu);
    return s;
}

/* wait until the stage reaches s: 1, or 0 after WAIT_MS */
static CHECK_UNUSED int gate_wait(struct gate *g, int s)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&g->mu);
    while (g->stage < s)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT)
            break;
    int ok = g->stage >= s;
    pthread_mutex_unlock(&g->mu);
    return ok;
}

#endif
