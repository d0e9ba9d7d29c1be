/* mutex.c: conformance checks for POSIX mutexes.
 *
 *  1. Attributes: pthread_mutexattr_gettype defaults to
 *     PTHREAD_MUTEX_DEFAULT; settype NORMAL/RECURSIVE/ERRORCHECK reads back;
 *     an invalid type gives EINVAL.
 *  2. Owner behaviour, for each type made through the attribute and through
 *     the static initializers (PTHREAD_MUTEX_INITIALIZER,
 *     PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
 *     PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP):
 *     normal: trylock by the owner returns EBUSY;
 *     errorcheck: relock by the owner returns EDEADLK, trylock EBUSY,
 *     unlock of an unlocked mutex EPERM;
 *     recursive: lock, lock, trylock (by the owner, succeeds and counts)
 *     then 3 unlocks succeed and a 4th returns EPERM; afterwards a created
 *     thread can trylock it.
 *  3. Held by another thread (a created holder thread locks it and reports
 *     through a gate, a mutex+cond stage counter): trylock returns EBUSY;
 *     for errorcheck and recursive, unlock by the non-owner returns EPERM;
 *     for the attribute-made mutexes pthread_mutex_timedlock with a
 *     CLOCK_REALTIME deadline 200 ms ahead returns ETIMEDOUT after at least
 *     150 ms, and with an invalid tv_nsec returns EINVAL (normal); the
 *     recursive holder locks 3 times (the third by trylock) and releases in
 *     two steps, the mutex staying busy until the last unlock; once the
 *     holder released it trylock and timedlock succeed at once.
 *  4. Stress: 4 threads x 2000 increments of a shared counter under a
 *     normal mutex, a recursive mutex locked twice per increment, and a
 *     trylock/sched_yield retry loop: exactly 80000 each.
 *  5. pthread_mutex_destroy of an unlocked mutex returns 0 (all of them).
 * A -fsanitize=thread build leaves out the unlocks of an unlocked mutex and
 * by a non-owner (tsan reports them as mutex misuse). */
#define _GNU_SOURCE
#include "check.h"

#include <sched.h>

enum kind { K_NORMAL, K_RECURSIVE, K_ERRORCHECK };
static const char *const kind_name[] = { "normal", "recursive", "errorcheck" };
static const int kind_type[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
                                 PTHREAD_MUTEX_ERRORCHECK };

static pthread_mutex_t static_mu[3] = {
    PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP,
    PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP,
};

/* check names are "<prefix>_<kind>_<what>" */
static char *cname(char *buf, size_t n, const char *prefix, enum kind k, const char *what)
{
    snprintf(buf, n, "%s_%s_%s", prefix, kind_name[k], what);
    return buf;
}
#define N(what) cname(nb, sizeof nb, prefix, k, what)

/* ---- 1. attributes --------------------------------------------------- */

static void test_attr(pthread_mutex_t m[3])
{
    pthread_mutexattr_t a;
    int type = -1;
    CHECK_ERR("attr_init", pthread_mutexattr_init(&a), 0);
    CHECK_ERR("attr_gettype_default_rc", pthread_mutexattr_gettype(&a, &type), 0);
    CHECK_EQ("attr_type_default", type, PTHREAD_MUTEX_DEFAULT);
    CHECK_ERR("attr_settype_invalid", pthread_mutexattr_settype(&a, 12345), EINVAL);
    for (int k = 0; k < 3; k++) {
        char nb[64];
        const char *prefix = "attr";
        CHECK_ERR(N("settype"), pthread_mutexattr_settype(&a, kind_type[k]), 0);
        type = -1;
        CHECK_ERR(N("gettype_rc"), pthread_mutexattr_gettype(&a, &type), 0);
        CHECK_EQ(N("type_readback"), type, kind_type[k]);
        CHECK_ERR(N("mutex_init"), pthread_mutex_init(&m[k], &a), 0);
    }
    CHECK_ERR("attr_destroy", pthread_mutexattr_destroy(&a), 0);
}

/* ---- 2. owner behaviour ---------------------------------------------- */

static void *trylock_body(void *arg)
{
    pthread_mutex_t *m = arg;
    int rc = pthread_mutex_trylock(m);
    if (rc == 0)
        rc = pthread_mutex_unlock(m) == 0 ? 0 : -1;
    return (void *)(intptr_t)rc;
}

static void test_owner(pthread_mutex_t *m, enum kind k, const char *prefix)
{
    char nb[64];
    CHECK_ERR(N("lock"), pthread_mutex_lock(m), 0);
    switch (k) {
    case K_NORMAL:
        CHECK_ERR(N("owner_trylock_ebusy"), pthread_mutex_trylock(m), EBUSY);
        CHECK_ERR(N("unlock"), pthread_mutex_unlock(m), 0);
        break;
    case K_ERRORCHECK:
        CHECK_ERR(N("owner_relock_edeadlk"), pthread_mutex_lock(m), EDEADLK);
        CHECK_ERR(N("owner_trylock_ebusy"), pthread_mutex_trylock(m), EBUSY);
        CHECK_ERR(N("unlock"), pthread_mutex_unlock(m), 0);
        if (!CHECK_TSAN) /* tsan reports "unlock of an unlocked mutex" */
            CHECK_ERR(N("unlock_unlocked_eperm"), pthread_mutex_unlock(m), EPERM);
        break;
    case K_RECURSIVE:
        CHECK_ERR(N("owner_relock"), pthread_mutex_lock(m), 0);
        CHECK_ERR(N("owner_trylock"), pthread_mutex_trylock(m), 0);
        CHECK_ERR(N("unlock1"), pthread_mutex_unlock(m), 0);
        CHECK_ERR(N("unlock2"), pthread_mutex_unlock(m), 0);
        CHECK_ERR(N("unlock3"), pthread_mutex_unlock(m), 0);
        if (!CHECK_TSAN) /* tsan reports "unlock of an unlocked mutex" */
            CHECK_ERR(N("unlock_unlocked_eperm"), pthread_mutex_unlock(m), EPERM);
        break;
    }
    /* released: a created thread can take it */
    pthread_t t;
    if (CHECK_ERR(N("other_create"), pthread_create(&t, NULL, trylock_body, m), 0)) {
        void *rv = (void *)-2;
        CHECK_ERR(N("other_join"), pthread_join(t, &rv), 0);
        CHECK_ERR(N("other_trylock_after_release"), (intptr_t)rv, 0);
    }
}

/* ---- 3. held by another thread --------------------------------------- */

struct holder {
    pthread_mutex_t *m;
    int nlock;  /* locks taken (the third, if any, by trylock) */
    int nfirst; /* unlocks at stage 2; the rest at stage 4 */
    struct gate g;
    int lock_rc[3], unlock_rc[3], waits_ok;
};

/* stages: 1 holds it, 2 main: unlock nfirst times, 3 done that,
 * 4 main: unlock the rest, 5 done that */
static void *holder_body(void *arg)
{
    struct holder *h = arg;
    int ok = 1;
    for (int i = 0; i < h->nlock; i++)
        h->lock_rc[i] = i == 2 ? pthread_mutex_trylock(h->m) : pthread_mutex_lock(h->m);
    gate_set(&h->g, 1);
    ok &= gate_wait(&h->g, 2);
    for (int i = 0; i < h->nfirst; i++)
        h->unlock_rc[i] = pthread_mutex_unlock(h->m);
    gate_set(&h->g, 3);
    if (h->nfirst < h->nlock) {
        ok &= gate_wait(&h->g, 4);
        for (int i = h->nfirst; i < h->nlock; i++)
            h->unlock_rc[i] = pthread_mutex_unlock(h->m);
        gate_set(&h->g, 5);
    }
    h->waits_ok = ok;
    return NULL;
}

static void test_held(pthread_mutex_t *m, enum kind k, const char *prefix, int timed)
{
    char nb[64];
    struct holder h;
    memset(&h, 0, sizeof h);
    h.m = m;
    h.nlock = k == K_RECURSIVE ? 3 : 1;
    h.nfirst = 1;
    for (int i = 0; i < 3; i++)
        h.lock_rc[i] = h.unlock_rc[i] = -1;
    gate_init(&h.g);
    pthread_t t;
    if (!CHECK_ERR(N("holder_create"), pthread_create(&t, NULL, holder_body, &h), 0))
        return;
    CHECK(N("holder_holds"), gate_wait(&h.g, 1));
    CHECK_ERR(N("trylock_held_by_other_ebusy"), pthread_mutex_trylock(m), EBUSY);
    if (k != K_NORMAL && !CHECK_TSAN) /* tsan reports "unlock by a wrong thread" */
        CHECK_ERR(N("unlock_by_nonowner_eperm"), pthread_mutex_unlock(m), EPERM);
    if (timed) {
        double t0 = check_now_ms(CLOCK_MONOTONIC);
        struct timespec dl = check_deadline(CLOCK_REALTIME, 200);
        int rc = pthread_mutex_timedlock(m, &dl);
        double waited = check_now_ms(CLOCK_MONOTONIC) - t0;
        CHECK_ERR(N("timedlock_held_etimedout"), rc, ETIMEDOUT);
        CHECK_GE(N("timedlock_waited_ms"), (long)waited, 150);
        CHECK_LT(N("timedlock_waited_ms_bounded"), (long)waited, 2000);
        if (k == K_NORMAL) {
            struct timespec bad = check_deadline(CLOCK_REALTIME, 200);
            bad.tv_nsec = 1000000000L;
            CHECK_ERR(N("timedlock_bad_nsec_einval"), pthread_mutex_timedlock(m, &bad), EINVAL);
        }
    }
    gate_set(&h.g, 2);
    CHECK(N("holder_unlocked_first"), gate_wait(&h.g, 3));
    if (h.nfirst < h.nlock) {
        /* recursive: still held (count 2 of 3) */
        CHECK_ERR(N("trylock_partly_released_ebusy"), pthread_mutex_trylock(m), EBUSY);
        gate_set(&h.g, 4);
        CHECK(N("holder_unlocked_rest"), gate_wait(&h.g, 5));
    }
    CHECK_ERR(N("holder_join"), pthread_join(t, NULL), 0);
    for (int i = 0; i < h.nlock; i++) {
        CHECK_ERR(N("holder_lock_rc"), h.lock_rc[i], 0);
        CHECK_ERR(N("holder_unlock_rc"), h.unlock_rc[i], 0);
    }
    CHECK_EQ(N("holder_waits_ok"), h.waits_ok, 1);
    CHECK_ERR(N("trylock_after_release"), pthread_mutex_trylock(m), 0);
    CHECK_ERR(N("unlock_after_trylock"), pthread_mutex_unlock(m), 0);
    if (timed) {
        double t0 = check_now_ms(CLOCK_MONOTONIC);
        struct timespec dl = check_deadline(CLOCK_REALTIME, 2000);
        CHECK_ERR(N("timedlock_free"), pthread_mutex_timedlock(m, &dl), 0);
        CHECK_LT(N("timedlock_free_fast_ms"), (long)(check_now_ms(CLOCK_MONOTONIC) - t0), 1000);
        CHECK_ERR(N("unlock_after_timedlock"), pthread_mutex_unlock(m), 0);
    }
    gate_destroy(&h.g);
}

/* ---- 4. stress --------------------------------------------------------- */

#define NSTRESS 4
#define ITERS 2000

enum mode { M_LOCK, M_LOCK_TWICE, M_TRYLOCK };

struct stress {
    pthread_mutex_t *m;
    long *counter;
    enum mode mode;
    int bad_rc;
    long busy;
};

static void *stress_body(void *arg)
{
    struct stress *s = arg;
    for (int i = 0; i < ITERS; i++) {
        int rc;
        switch (s->mode) {
        case M_LOCK:
            if ((rc = pthread_mutex_lock(s->m)) != 0) {
                s->bad_rc++;
                continue;
            }
            ++*s->counter;
            s->bad_rc += pthread_mutex_unlock(s->m) != 0;
            break;
        case M_LOCK_TWICE:
            if ((rc = pthread_mutex_lock(s->m)) != 0) {
                s->bad_rc++;
                continue;
            }
            s->bad_rc += pthread_mutex_lock(s->m) != 0;
            ++*s->counter;
            s->bad_rc += pthread_mutex_unlock(s->m) != 0;
            s->bad_rc += pthread_mutex_unlock(s->m) != 0;
            break;
        case M_TRYLOCK:
            while ((rc = pthread_mutex_trylock(s->m)) == EBUSY) {
                s->busy++;
                sched_yield();
            }
            if (rc != 0) {
                s->bad_rc++;
                continue;
            }
            ++*s->counter;
            s->bad_rc += pthread_mutex_unlock(s->m) != 0;
            break;
        }
    }
    return NULL;
}

static void test_stress(pthread_mutex_t *m, enum mode mode, const char *name)
{
    static long counter;
    struct stress s[NSTRESS];
    pthread_t t[NSTRESS];
    int ok[NSTRESS];
    char nb[64];
    counter = 0;
    for (int i = 0; i < NSTRESS; i++) {
        s[i] = (struct stress){ .m = m, .counter = &counter, .mode = mode };
        ok[i] = pthread_create(&t[i], NULL, stress_body, &s[i]) == 0;
        snprintf(nb, sizeof nb, "stress_%s_create", name);
        CHECK(nb, ok[i]);
    }
    int bad = 0;
    for (int i = 0; i < NSTRESS; i++) {
        if (!ok[i])
            continue;
        snprintf(nb, sizeof nb, "stress_%s_join", name);
        CHECK_ERR(nb, pthread_join(t[i], NULL), 0);
        bad += s[i].bad_rc;
    }
    snprintf(nb, sizeof nb, "stress_%s_rc", name);
    CHECK_EQ(nb, bad, 0);
    snprintf(nb, sizeof nb, "stress_%s_count", name);
    CHECK_EQ(nb, counter, (long)NSTRESS * ITERS);
}

int main(void)
{
    check_start();
    pthread_mutex_t attr_mu[3];
    test_attr(attr_mu);

    for (int k = 0; k < 3; k++) {
        test_owner(&attr_mu[k], (enum kind)k, "attrmu");
        test_owner(&static_mu[k], (enum kind)k, "staticmu");
    }
    for (int k = 0; k < 3; k++) {
        test_held(&attr_mu[k], (enum kind)k, "attrmu", 1);
        test_held(&static_mu[k], (enum kind)k, "staticmu", 0);
    }

    test_stress(&attr_mu[K_NORMAL], M_LOCK, "normal");
    test_stress(&attr_mu[K_RECURSIVE], M_LOCK_TWICE, "recursive");
    test_stress(&static_mu[K_NORMAL], M_TRYLOCK, "trylock");

    for (int k = 0; k < 3; k++) {
        char nb[64];
        snprintf(nb, sizeof nb, "destroy_attrmu_%s", kind_name[k]);
        CHECK_ERR(nb, pthread_mutex_destroy(&attr_mu[k]), 0);
        snprintf(nb, sizeof nb, "destroy_staticmu_%s", kind_name[k]);
        CHECK_ERR(nb, pthread_mutex_destroy(&static_mu[k]), 0);
    }
    pthread_mutex_t fresh;
    CHECK_ERR("init_default_attr", pthread_mutex_init(&fresh, NULL), 0);
    CHECK_ERR("destroy_fresh", pthread_mutex_destroy(&fresh), 0);
    return check_finish();
}
