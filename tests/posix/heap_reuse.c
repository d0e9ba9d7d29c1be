/* heap_reuse: a block freed by one thread and allocated again by another
 * holds what its new owner writes, never the older writes of the thread
 * that freed it.  A free and the allocation that returns the same block
 * are ordered (as by an allocator's lock), whatever synchronisation the
 * freeing thread does or does not do afterwards.
 *
 * For each block size (small, from an allocator arena; big, a block of its
 * own): main allocates a block and starts a worker; the worker fills it
 * with its own pattern, frees it with no synchronisation after its writes,
 * sleeps 300 ms, then unlocks a mutex and ends; main meanwhile allocates
 * blocks of the same size until one is the freed block (or 5 s pass: an
 * allocator need not return it, glibc's does not), fills it with its own
 * pattern, joins the worker and checks that every word is still its own.
 * The checks of a block never returned are counted all the same.  Then
 * 200 blocks of 40 MiB are allocated and freed in turn (8 GB in all: the
 * runtime must reuse freed address space to run this in a GAS of 4 GB,
 * as the test does).  A line
 * "REUSED small=0|1 big=0|1" says which blocks came back.
 * RESULT ok=1 checks=N (check.h) */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct job {
    uint64_t *block;
    size_t words;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    for (size_t i = 0; i < j->words; i++)
        j->block[i] = 0x1111111111111111ull ^ i;
    free(j->block);
    usleep(300 * 1000);
    pthread_mutex_lock(&mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static int one(const char *name, size_t bytes)
{
    char nb[64];
    struct job j = { malloc(bytes), bytes / 8 };
    CHECK(name, j.block != NULL);
    if (!j.block)
        return 0;
    memset(j.block, 0, bytes);
    uint64_t *freed = j.block;
    pthread_t t;
    CHECK_EQ(name, pthread_create(&t, NULL, worker, &j), 0);
    uint64_t *mine = NULL;
    long t0 = check_now_ms(CLOCK_MONOTONIC);
    while (!mine && check_now_ms(CLOCK_MONOTONIC) - t0 < 5000) {
        uint64_t *b = malloc(bytes);
        if (b == freed)
            mine = b;
        else {
            free(b);
            usleep(1000);
        }
    }
    if (mine)
        for (size_t i = 0; i < j.words; i++)
            mine[i] = 0x2222222222222222ull ^ i;
    pthread_join(t, NULL);
    size_t bad = 0;
    if (mine)
        for (size_t i = 0; i < j.words; i++)
            bad += mine[i] != (0x2222222222222222ull ^ i);
    snprintf(nb, sizeof nb, "%s_keeps_the_new_owners_words", name);
    CHECK_EQ(nb, (long long)bad, 0);
    free(mine);
    return mine != NULL;
}

static void churn(void)
{
    long bad = 0;
    for (int i = 0; i < 200 && !bad; i++) {
        size_t n = 40u << 20;
        char *b = malloc(n);
        if (!b) {
            bad++;
            break;
        }
        b[0] = b[n - 1] = (char)i;
        bad += b[0] != (char)i || b[n - 1] != (char)i;
        free(b);
    }
    CHECK_EQ("big_churn_allocates_each", bad, 0);
}

int main(void)
{
    check_start();
    int small = one("small", 64 << 10);
    int big = one("big", 40u << 20);
    churn();
    printf("REUSED small=%d big=%d\n", small, big);
    return check_finish();
}
