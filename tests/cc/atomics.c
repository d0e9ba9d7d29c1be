/* atomics: a pthreads program compiled with cables-cc (no OpenMP) whose
 * threads share counters through atomics alone: C11 atomics, the __atomic
 * and __sync builtins, a compare-and-swap loop, a spin lock made of an
 * atomic_flag around a plain counter, and a message passed with a release
 * store and an acquire load.  With a locked instruction (cc's code), each
 * is atomic in one node's memory only: threads on two nodes, all looping
 * at once, lose updates, and the flag's message is never seen by a reader
 * that held the flag's page before.  cables-cc makes them calls of the
 * runtime (libcables/link/atomics.c).
 * RESULT ok=1 checks=N (check.h) */
#include <sched.h>
#include <stdatomic.h>

#include "../posix/check.h"

#define THREADS 4
#define RUN_MS 60 /* each thread's loop, all of them at once */

static _Atomic long c11;
static long builtin, sync_ctr, cas_ctr, under_flag;
static atomic_flag spin = ATOMIC_FLAG_INIT;
static long done[THREADS]; /* each thread's iterations (published by the joins) */
static int message[1024];
static _Atomic int ready;
static pthread_barrier_t bar;

static void *worker(void *arg)
{
    long w = (long)arg, n = 0;
    /* the reader holds a copy of the flag's page before it is written */
    if (w == THREADS - 1)
        CHECK_EQ("not_ready_yet", atomic_load_explicit(&ready, memory_order_acquire), 0);
    pthread_barrier_wait(&bar);
    double end = check_now_ms(CLOCK_MONOTONIC) + RUN_MS;
    while (check_now_ms(CLOCK_MONOTONIC) < end) {
        atomic_fetch_add(&c11, 1);
        __atomic_add_fetch(&builtin, 2, __ATOMIC_SEQ_CST);
        __sync_fetch_and_add(&sync_ctr, 3);
        long old = __atomic_load_n(&cas_ctr, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&cas_ctr, &old, old + 5, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED)) {
        }
        while (atomic_flag_test_and_set_explicit(&spin, memory_order_acquire))
            sched_yield();
        under_flag += 7; /* plain: the flag's acquire and release order it */
        atomic_flag_clear_explicit(&spin, memory_order_release);
        n++;
    }
    done[w] = n;
    if (w == 0) { /* a message: plain writes, then a release store */
        for (int i = 0; i < 1024; i++)
            message[i] = i * 3 + 1;
        atomic_store_explicit(&ready, 1, memory_order_release);
    } else if (w == THREADS - 1) { /* read after an acquire load sees it */
        double limit = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
        while (!atomic_load_explicit(&ready, memory_order_acquire) &&
               check_now_ms(CLOCK_MONOTONIC) < limit) {
            struct timespec ts = { 0, 200000 };
            nanosleep(&ts, NULL);
        }
        CHECK_EQ("message_ready", atomic_load_explicit(&ready, memory_order_acquire), 1);
        long bad = 0;
        for (int i = 0; i < 1024; i++)
            bad += message[i] != i * 3 + 1;
        CHECK_EQ("message_seen", bad, 0);
    }
    return NULL;
}

int main(void)
{
    check_start();
    pthread_barrier_init(&bar, NULL, THREADS);
    pthread_t t[THREADS];
    for (long w = 0; w < THREADS; w++)
        CHECK_EQ("create", pthread_create(&t[w], NULL, worker, (void *)w), 0);
    long total = 0;
    for (int w = 0; w < THREADS; w++) {
        CHECK_EQ("join", pthread_join(t[w], NULL), 0);
        total += done[w];
    }
    CHECK_GT("iterations", total, 0);
    CHECK_EQ("c11", atomic_load(&c11), total);
    CHECK_EQ("atomic_builtin", builtin, 2 * total);
    CHECK_EQ("sync_builtin", sync_ctr, 3 * total);
    CHECK_EQ("compare_exchange", cas_ctr, 5 * total);
    CHECK_EQ("atomic_flag_lock", under_flag, 7 * total);
    return check_finish();
}
