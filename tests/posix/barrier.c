/* barrier.c: conformance checks for POSIX barriers.
 *
 *  1. pthread_barrierattr: init, getpshared defaults to
 *     PTHREAD_PROCESS_PRIVATE, setpshared PRIVATE reads back, destroy.
 *  2. 4 created threads, 200 rounds of two barrier waits each (the barrier
 *     is made with that attribute):
 *     - every wait returns 0 or PTHREAD_BARRIER_SERIAL_THREAD, and exactly
 *       one thread per wait gets PTHREAD_BARRIER_SERIAL_THREAD (counted per
 *       round in an array under a mutex, checked after join);
 *     - before the first wait of round r thread i writes slot[i] =
 *       r*100+i; after it every thread reads all 4 slots and must see this
 *       round's values; the second wait keeps the next round's writes
 *       from overtaking the reads.
 *  3. pthread_barrier_init with count 0 returns EINVAL.
 *  4. A barrier of count 1: each wait returns PTHREAD_BARRIER_SERIAL_THREAD
 *     at once, and it can be destroyed and made again.
 *  5. pthread_barrier_destroy returns 0.
 *  6. More threads than the count: 3 threads wait at a barrier of count
 *     2, EXTRA waits in all (each begins one while fewer have begun).  A thread that comes while a round is being
 *     released waits for the next: no wait returns before its round is met
 *     (the waits returned, counted under a mutex after each, never exceed
 *     the even part of those begun, counted before each), and each round
 *     has one serial thread. */
#define _GNU_SOURCE
#include <stdbool.h>

#include "check.h"

#define NTHR 4
#define ROUNDS 200
#define EXTRA 600

static pthread_barrier_t bar;
static int slot[NTHR]; /* written before, read after the barrier */
static pthread_mutex_t ser_mu = PTHREAD_MUTEX_INITIALIZER;
static int serial_first[ROUNDS], serial_second[ROUNDS]; /* under ser_mu */

struct targ {
    int id;
    int mismatches, bad_rc;
};

static void tally(int rc, int *serial, int round, struct targ *a)
{
    if (rc == PTHREAD_BARRIER_SERIAL_THREAD) {
        pthread_mutex_lock(&ser_mu);
        serial[round]++;
        pthread_mutex_unlock(&ser_mu);
    } else if (rc != 0) {
        a->bad_rc++;
    }
}

static void *body(void *arg)
{
    struct targ *a = arg;
    for (int r = 0; r < ROUNDS; r++) {
        slot[a->id] = r * 100 + a->id;
        tally(pthread_barrier_wait(&bar), serial_first, r, a);
        for (int j = 0; j < NTHR; j++)
            a->mismatches += slot[j] != r * 100 + j;
        tally(pthread_barrier_wait(&bar), serial_second, r, a);
    }
    return NULL;
}

static pthread_barrier_t pair; /* count 2, used by 3 threads */
static pthread_mutex_t pair_mu = PTHREAD_MUTEX_INITIALIZER;
static int begun, returned, early, serials, pair_bad_rc; /* under pair_mu */

static void *extra_body(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&pair_mu);
        bool last = begun == EXTRA; /* (even: every wait begun is met) */
        begun += !last;
        pthread_mutex_unlock(&pair_mu);
        if (last)
            return NULL;
        int rc = pthread_barrier_wait(&pair);
        pthread_mutex_lock(&pair_mu);
        early += ++returned > begun - begun % 2;
        serials += rc == PTHREAD_BARRIER_SERIAL_THREAD;
        pair_bad_rc += rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD;
        pthread_mutex_unlock(&pair_mu);
    }
}

int main(void)
{
    check_start();

    pthread_barrierattr_t at;
    int ps = -1;
    CHECK_ERR("attr_init", pthread_barrierattr_init(&at), 0);
    CHECK_ERR("attr_getpshared_default_rc", pthread_barrierattr_getpshared(&at, &ps), 0);
    CHECK_EQ("attr_pshared_default_private", ps, PTHREAD_PROCESS_PRIVATE);
    CHECK_ERR("attr_setpshared_private", pthread_barrierattr_setpshared(&at, PTHREAD_PROCESS_PRIVATE), 0);
    ps = -1;
    CHECK_ERR("attr_getpshared_rc", pthread_barrierattr_getpshared(&at, &ps), 0);
    CHECK_EQ("attr_pshared_readback", ps, PTHREAD_PROCESS_PRIVATE);

    pthread_barrier_t zero;
    CHECK_ERR("init_count0_einval", pthread_barrier_init(&zero, NULL, 0), EINVAL);

    if (!CHECK_ERR("init", pthread_barrier_init(&bar, &at, NTHR), 0))
        return check_finish();
    CHECK_ERR("attr_destroy", pthread_barrierattr_destroy(&at), 0);

    for (int i = 0; i < NTHR; i++)
        slot[i] = -1;
    pthread_t t[NTHR];
    struct targ a[NTHR];
    int created = 0;
    memset(a, 0, sizeof a);
    for (int i = 0; i < NTHR; i++) {
        a[i].id = i;
        if (!CHECK_ERR("create", pthread_create(&t[i], NULL, body, &a[i]), 0))
            break; /* the others would wait forever at the barrier */
        created++;
    }
    if (created < NTHR) /* the created ones wait forever: exit ends them */
        return check_finish();
    for (int i = 0; i < NTHR; i++)
        CHECK_ERR("join", pthread_join(t[i], NULL), 0);

    int mism = 0, bad = 0;
    for (int i = 0; i < NTHR; i++) {
        mism += a[i].mismatches;
        bad += a[i].bad_rc;
    }
    CHECK_EQ("wait_rc_zero_or_serial", bad, 0);
    CHECK_EQ("slots_seen_after_barrier", mism, 0);
    int bad1 = 0, bad2 = 0, total1 = 0, total2 = 0, first_bad = -1;
    pthread_mutex_lock(&ser_mu);
    for (int r = 0; r < ROUNDS; r++) {
        if (serial_first[r] != 1 || serial_second[r] != 1)
            if (first_bad < 0)
                first_bad = r;
        bad1 += serial_first[r] != 1;
        bad2 += serial_second[r] != 1;
        total1 += serial_first[r];
        total2 += serial_second[r];
    }
    pthread_mutex_unlock(&ser_mu);
    CHECK_EQ("one_serial_per_first_wait", bad1, 0);
    CHECK_EQ("one_serial_per_second_wait", bad2, 0);
    CHECK_EQ("serial_total_first", total1, ROUNDS);
    CHECK_EQ("serial_total_second", total2, ROUNDS);
    CHECK_EQ("first_round_with_wrong_serial", first_bad, -1);
    CHECK_ERR("destroy", pthread_barrier_destroy(&bar), 0);

    pthread_barrier_t one;
    for (int k = 0; k < 2; k++) {
        CHECK_ERR("one_init", pthread_barrier_init(&one, NULL, 1), 0);
        CHECK_EQ("one_wait_serial", pthread_barrier_wait(&one), PTHREAD_BARRIER_SERIAL_THREAD);
        CHECK_EQ("one_wait_serial_again", pthread_barrier_wait(&one), PTHREAD_BARRIER_SERIAL_THREAD);
        CHECK_ERR("one_destroy", pthread_barrier_destroy(&one), 0);
    }

    if (!CHECK_ERR("pair_init", pthread_barrier_init(&pair, NULL, 2), 0))
        return check_finish();
    pthread_t x[3];
    for (int i = 0; i < 3; i++)
        if (!CHECK_ERR("extra_create", pthread_create(&x[i], NULL, extra_body, NULL), 0))
            return check_finish(); /* the others would wait forever */
    for (int i = 0; i < 3; i++)
        CHECK_ERR("extra_join", pthread_join(x[i], NULL), 0);
    pthread_mutex_lock(&pair_mu);
    CHECK_EQ("extra_returned", returned, EXTRA);
    CHECK_EQ("extra_none_early", early, 0);
    CHECK_EQ("extra_one_serial_a_round", serials, EXTRA / 2);
    CHECK_EQ("extra_wait_rc", pair_bad_rc, 0);
    pthread_mutex_unlock(&pair_mu);
    CHECK_ERR("pair_destroy", pthread_barrier_destroy(&pair), 0);
    return check_finish();
}
