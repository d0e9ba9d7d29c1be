/* cond.c: conformance checks for POSIX condition variables.
 *
 *  1. pthread_cond_signal wakes one of several waiters: 4 created threads
 *     wait (pthread_cond_timedwait, 5 s bound, predicate loop) for a token;
 *     once main has seen all 4 waiting (under the mutex) it posts one token
 *     per signal; each signal is followed by exactly one consumption while
 *     the other waiters stay waiting (3, 2, 1, 0 left), and no waiter had
 *     to time out to see its token.
 *  2. pthread_cond_broadcast wakes all 4 waiters (one broadcast; a waiter
 *     not woken would time out after 5 s, which is counted).
 *  3. pthread_cond_timedwait with nobody signalling returns ETIMEDOUT after
 *     at least 150 ms of a 200 ms CLOCK_REALTIME deadline, and again with a
 *     condattr set to CLOCK_MONOTONIC (pthread_condattr_setclock, read back
 *     by getclock; this case runs in a created thread); the mutex, an
 *     errorcheck one, is held on return (unlock returns 0, a second unlock
 *     EPERM); a deadline already past returns ETIMEDOUT at once.
 *  4. Ping-pong: two created threads pass a ball 2000 round trips, each
 *     waiting on its own condition variable for its turn; every receive
 *     sees the value the other sent.
 *  5. Static PTHREAD_COND_INITIALIZER (sections 1, 2 and 4 use it);
 *     signal/broadcast with no waiter return 0; destroy returns 0.
 *  6. A deadline far in the future (tv_sec = LONG_MAX, as code writes "for
 *     ever") is waited for: a created thread's pthread_cond_timedwait and
 *     pthread_mutex_timedlock return 0 once main signals, or unlocks, 300
 *     ms later (under libcables both returned ETIMEDOUT at once: the
 *     nanoseconds left overflowed).
 * A -fsanitize=thread build leaves out the second unlock (tsan reports it). */
#define _GNU_SOURCE
#include <limits.h>

#include "check.h"

#define NWAIT 4

/* ---- 1. signal wakes one ------------------------------------------- */

static pthread_mutex_t sg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sg_cv = PTHREAD_COND_INITIALIZER;   /* waiters */
static pthread_cond_t sg_main = PTHREAD_COND_INITIALIZER; /* main */
static int sg_waiting, sg_tokens, sg_consumed;             /* under sg_mu */

struct wres {
    int timeouts, bad_rc, got;
};

static void *sg_waiter(void *arg)
{
    struct wres *r = arg;
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&sg_mu);
    sg_waiting++;
    pthread_cond_signal(&sg_main);
    while (sg_tokens == 0) {
        int rc = pthread_cond_timedwait(&sg_cv, &sg_mu, &dl);
        if (rc == ETIMEDOUT) {
            r->timeouts++;
            break;
        }
        r->bad_rc += rc != 0;
    }
    if (sg_tokens > 0) {
        sg_tokens--;
        sg_consumed++;
        r->got = 1;
    }
    sg_waiting--;
    pthread_cond_signal(&sg_main);
    pthread_mutex_unlock(&sg_mu);
    return NULL;
}

/* with sg_mu held: wait on sg_main until *v == want; 1 if reached */
static int sg_main_wait(const int *v, int want)
{
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    while (*v != want)
        if (pthread_cond_timedwait(&sg_main, &sg_mu, &dl) == ETIMEDOUT)
            break;
    return *v == want;
}

static void test_signal(void)
{
    pthread_t t[NWAIT];
    struct wres r[NWAIT];
    int ok[NWAIT], n = 0;
    memset(r, 0, sizeof r);
    for (int i = 0; i < NWAIT; i++) {
        ok[i] = pthread_create(&t[i], NULL, sg_waiter, &r[i]) == 0;
        CHECK("signal_create", ok[i]);
        n += ok[i];
    }
    pthread_mutex_lock(&sg_mu);
    CHECK("signal_all_waiting", sg_main_wait(&sg_waiting, n));
    for (int k = 1; k <= n; k++) {
        sg_tokens++;
        CHECK_ERR("signal_rc", pthread_cond_signal(&sg_cv), 0);
        CHECK("signal_consumed", sg_main_wait(&sg_consumed, k));
        CHECK_EQ("signal_tokens_left", sg_tokens, 0);
        /* one consumer per signal: the others are still waiting */
        CHECK_EQ("signal_others_still_waiting", sg_waiting, n - k);
    }
    pthread_mutex_unlock(&sg_mu);
    int timeouts = 0, bad = 0, got = 0;
    for (int i = 0; i < NWAIT; i++) {
        if (!ok[i])
            continue;
        CHECK_ERR("signal_join", pthread_join(t[i], NULL), 0);
        timeouts += r[i].timeouts;
        bad += r[i].bad_rc;
        got += r[i].got;
    }
    CHECK_EQ("signal_no_waiter_timed_out", timeouts, 0);
    CHECK_EQ("signal_wait_rc", bad, 0);
    CHECK_EQ("signal_every_waiter_got_one", got, NWAIT);
}

/* ---- 2. broadcast wakes all ---------------------------------------- */

static pthread_mutex_t bc_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bc_cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t bc_main = PTHREAD_COND_INITIALIZER;
static int bc_waiting, bc_go, bc_woken; /* under bc_mu */

static void *bc_waiter(void *arg)
{
    struct wres *r = arg;
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&bc_mu);
    bc_waiting++;
    pthread_cond_signal(&bc_main);
    while (!bc_go) {
        int rc = pthread_cond_timedwait(&bc_cv, &bc_mu, &dl);
        if (rc == ETIMEDOUT) {
            r->timeouts++;
            break;
        }
        r->bad_rc += rc != 0;
    }
    if (bc_go) {
        bc_woken++;
        r->got = 1;
    }
    pthread_mutex_unlock(&bc_mu);
    return NULL;
}

static void test_broadcast(void)
{
    pthread_t t[NWAIT];
    struct wres r[NWAIT];
    int ok[NWAIT], n = 0;
    memset(r, 0, sizeof r);
    for (int i = 0; i < NWAIT; i++) {
        ok[i] = pthread_create(&t[i], NULL, bc_waiter, &r[i]) == 0;
        CHECK("broadcast_create", ok[i]);
        n += ok[i];
    }
    struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    pthread_mutex_lock(&bc_mu);
    while (bc_waiting != n)
        if (pthread_cond_timedwait(&bc_main, &bc_mu, &dl) == ETIMEDOUT)
            break;
    CHECK_EQ("broadcast_all_waiting", bc_waiting, n);
    bc_go = 1;
    CHECK_ERR("broadcast_rc", pthread_cond_broadcast(&bc_cv), 0);
    pthread_mutex_unlock(&bc_mu);
    int timeouts = 0, bad = 0, got = 0;
    for (int i = 0; i < NWAIT; i++) {
        if (!ok[i])
            continue;
        CHECK_ERR("broadcast_join", pthread_join(t[i], NULL), 0);
        timeouts += r[i].timeouts;
        bad += r[i].bad_rc;
        got += r[i].got;
    }
    CHECK_EQ("broadcast_no_waiter_timed_out", timeouts, 0);
    CHECK_EQ("broadcast_wait_rc", bad, 0);
    CHECK_EQ("broadcast_all_woken", got, NWAIT);
    pthread_mutex_lock(&bc_mu);
    CHECK_EQ("broadcast_woken_count", bc_woken, NWAIT);
    pthread_mutex_unlock(&bc_mu);
}

/* ---- 3. timed wait times out ----------------------------------------- */

static void timed_case(clockid_t clk, const char *p)
{
    char nb[64];
#define TN(what) (snprintf(nb, sizeof nb, "%s_%s", p, what), nb)
    pthread_mutexattr_t ma;
    pthread_mutex_t mu;
    pthread_condattr_t ca;
    pthread_cond_t cv;
    clockid_t got_clk = (clockid_t)-1;
    pthread_mutexattr_init(&ma);
    CHECK_ERR(TN("errorcheck_attr"), pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK), 0);
    CHECK_ERR(TN("mutex_init"), pthread_mutex_init(&mu, &ma), 0);
    pthread_mutexattr_destroy(&ma);
    CHECK_ERR(TN("condattr_init"), pthread_condattr_init(&ca), 0);
    if (clk != CLOCK_REALTIME) {
        CHECK_ERR(TN("condattr_setclock"), pthread_condattr_setclock(&ca, clk), 0);
    }
    CHECK_ERR(TN("condattr_getclock_rc"), pthread_condattr_getclock(&ca, &got_clk), 0);
    CHECK_EQ(TN("condattr_clock"), got_clk, clk);
    CHECK_ERR(TN("cond_init"), pthread_cond_init(&cv, &ca), 0);
    CHECK_ERR(TN("condattr_destroy"), pthread_condattr_destroy(&ca), 0);

    CHECK_ERR(TN("lock"), pthread_mutex_lock(&mu), 0);
    double t0 = check_now_ms(CLOCK_MONOTONIC);
    struct timespec dl = check_deadline(clk, 200);
    int rc;
    while ((rc = pthread_cond_timedwait(&cv, &mu, &dl)) == 0)
        ; /* a spurious wakeup: wait again for the same deadline */
    double waited = check_now_ms(CLOCK_MONOTONIC) - t0;
    CHECK_ERR(TN("timedwait_etimedout"), rc, ETIMEDOUT);
    CHECK_GE(TN("timedwait_waited_ms"), (long)waited, 150);
    CHECK_LT(TN("timedwait_waited_ms_bounded"), (long)waited, 2000);
    CHECK_ERR(TN("mutex_held_after_timeout"), pthread_mutex_unlock(&mu), 0);
    if (!CHECK_TSAN) /* tsan reports "unlock of an unlocked mutex" */
        CHECK_ERR(TN("mutex_unlocked_twice_eperm"), pthread_mutex_unlock(&mu), EPERM);

    CHECK_ERR(TN("lock_past"), pthread_mutex_lock(&mu), 0);
    t0 = check_now_ms(CLOCK_MONOTONIC);
    dl = check_deadline(clk, -1000);
    while ((rc = pthread_cond_timedwait(&cv, &mu, &dl)) == 0)
        ;
    CHECK_ERR(TN("timedwait_past_etimedout"), rc, ETIMEDOUT);
    CHECK_LT(TN("timedwait_past_immediate_ms"), (long)(check_now_ms(CLOCK_MONOTONIC) - t0), 1000);
    CHECK_ERR(TN("mutex_held_after_past"), pthread_mutex_unlock(&mu), 0);

    CHECK_ERR(TN("signal_no_waiter"), pthread_cond_signal(&cv), 0);
    CHECK_ERR(TN("broadcast_no_waiter"), pthread_cond_broadcast(&cv), 0);
    CHECK_ERR(TN("cond_destroy"), pthread_cond_destroy(&cv), 0);
    CHECK_ERR(TN("mutex_destroy"), pthread_mutex_destroy(&mu), 0);
#undef TN
}

static void *timed_thread(void *arg)
{
    (void)arg;
    timed_case(CLOCK_MONOTONIC, "timed_monotonic");
    return NULL;
}

static void test_timed(void)
{
    timed_case(CLOCK_REALTIME, "timed_realtime");
    pthread_t t;
    if (CHECK_ERR("timed_monotonic_create", pthread_create(&t, NULL, timed_thread, NULL), 0))
        CHECK_ERR("timed_monotonic_join", pthread_join(t, NULL), 0);
}

/* ---- 4. ping-pong ---------------------------------------------------- */

#define ROUNDS 2000

static pthread_mutex_t pp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pp_cv[2] = { PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER };
static int pp_turn;         /* whose turn: 0 or 1, under pp_mu */
static long pp_ball = -1;   /* under pp_mu */

struct pp {
    int me;
    int rounds, bad_value, timeouts, bad_rc;
};

/* player 0 sends 2i in round i, player 1 answers 2i+1 */
static void *pp_body(void *arg)
{
    struct pp *p = arg;
    for (int i = 0; i < ROUNDS; i++) {
        struct timespec dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
        pthread_mutex_lock(&pp_mu);
        while (pp_turn != p->me) {
            int rc = pthread_cond_timedwait(&pp_cv[p->me], &pp_mu, &dl);
            if (rc == ETIMEDOUT)
                break;
            p->bad_rc += rc != 0;
        }
        if (pp_turn != p->me) {
            p->timeouts++;
            pthread_mutex_unlock(&pp_mu);
            break;
        }
        long want = p->me == 0 ? 2L * i - 1 : 2L * i;
        p->bad_value += pp_ball != want;
        pp_ball = 2L * i + p->me;
        pp_turn = 1 - p->me;
        p->rounds++;
        p->bad_rc += pthread_cond_signal(&pp_cv[1 - p->me]) != 0;
        pthread_mutex_unlock(&pp_mu);
    }
    return NULL;
}

static void test_pingpong(void)
{
    struct pp p[2];
    pthread_t t[2];
    int ok[2];
    memset(p, 0, sizeof p);
    for (int i = 0; i < 2; i++) {
        p[i].me = i;
        ok[i] = pthread_create(&t[i], NULL, pp_body, &p[i]) == 0;
        CHECK("pingpong_create", ok[i]);
    }
    for (int i = 0; i < 2; i++)
        if (ok[i])
            CHECK_ERR("pingpong_join", pthread_join(t[i], NULL), 0);
    CHECK_EQ("pingpong_rounds_0", p[0].rounds, ROUNDS);
    CHECK_EQ("pingpong_rounds_1", p[1].rounds, ROUNDS);
    CHECK_EQ("pingpong_values_0", p[0].bad_value, 0);
    CHECK_EQ("pingpong_values_1", p[1].bad_value, 0);
    CHECK_EQ("pingpong_timeouts", p[0].timeouts + p[1].timeouts, 0);
    CHECK_EQ("pingpong_rc", p[0].bad_rc + p[1].bad_rc, 0);
    pthread_mutex_lock(&pp_mu);
    CHECK_EQ("pingpong_final_ball", pp_ball, 2L * ROUNDS - 1);
    pthread_mutex_unlock(&pp_mu);
}

/* ---- 6. far deadlines ----------------------------------------------- */

static pthread_mutex_t far_mu = PTHREAD_MUTEX_INITIALIZER, far_held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t far_cv = PTHREAD_COND_INITIALIZER;
static int far_go, far_waiting;   /* (far_mu) */
static int far_cond_rc = -1, far_lock_rc = -1;
static double far_cond_ms, far_lock_ms;

static void *far_waiter(void *arg)
{
    (void)arg;
    const struct timespec never = { LONG_MAX, 0 };
    double t0 = check_now_ms(CLOCK_MONOTONIC);
    pthread_mutex_lock(&far_mu);
    far_waiting = 1;
    int rc = 0;
    while (!far_go && rc == 0)
        rc = pthread_cond_timedwait(&far_cv, &far_mu, &never);
    far_cond_rc = rc;
    pthread_mutex_unlock(&far_mu);
    far_cond_ms = check_now_ms(CLOCK_MONOTONIC) - t0;
    t0 = check_now_ms(CLOCK_MONOTONIC);
    far_lock_rc = pthread_mutex_timedlock(&far_held, &never); /* main holds it */
    far_lock_ms = check_now_ms(CLOCK_MONOTONIC) - t0;
    if (far_lock_rc == 0)
        pthread_mutex_unlock(&far_held);
    return NULL;
}

static void test_far_deadline(void)
{
    pthread_mutex_lock(&far_held);
    pthread_t t;
    if (!CHECK_ERR("far_create", pthread_create(&t, NULL, far_waiter, NULL), 0)) {
        pthread_mutex_unlock(&far_held);
        return;
    }
    usleep(300000);
    pthread_mutex_lock(&far_mu);
    CHECK_EQ("far_waiting", far_waiting, 1);
    far_go = 1;
    pthread_cond_signal(&far_cv);
    pthread_mutex_unlock(&far_mu);
    usleep(300000);
    pthread_mutex_unlock(&far_held);
    CHECK_ERR("far_join", pthread_join(t, NULL), 0);
    CHECK_ERR("far_cond_rc", far_cond_rc, 0);
    CHECK_GE("far_cond_waited_ms", (long)far_cond_ms, 250);
    CHECK_ERR("far_lock_rc", far_lock_rc, 0);
    CHECK_GE("far_lock_waited_ms", (long)far_lock_ms, 250);
}

int main(void)
{
    check_start();
    test_signal();
    test_broadcast();
    test_timed();
    test_pingpong();
    test_far_deadline();
    CHECK_ERR("destroy_static_sg_cv", pthread_cond_destroy(&sg_cv), 0);
    CHECK_ERR("destroy_static_sg_main", pthread_cond_destroy(&sg_main), 0);
    CHECK_ERR("destroy_static_bc_cv", pthread_cond_destroy(&bc_cv), 0);
    CHECK_ERR("destroy_static_bc_main", pthread_cond_destroy(&bc_main), 0);
    CHECK_ERR("destroy_static_pp_cv0", pthread_cond_destroy(&pp_cv[0]), 0);
    CHECK_ERR("destroy_static_pp_cv1", pthread_cond_destroy(&pp_cv[1]), 0);
    pthread_cond_t fresh;
    CHECK_ERR("init_default_attr", pthread_cond_init(&fresh, NULL), 0);
    CHECK_ERR("destroy_fresh", pthread_cond_destroy(&fresh), 0);
    return check_finish();
}
