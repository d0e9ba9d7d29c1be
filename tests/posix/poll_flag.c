/* poll_flag: threads (on other nodes) that see other threads' writes
 * without synchronizing, as natively:
 *  - locked: a thread takes a mutex at each look at a flag main sets;
 *  - plain: a thread polls a plain flag that main sets, sleeping between
 *    looks (main then joins it);
 *  - spin: a thread spins, making no call, on a flag main sets and counts
 *    its turns in a plain variable, which main polls until it moved.
 * Each waits up to 3 s.  Release consistency alone shows none of the
 * plain or spin writes (the runtime propagates them: CABLES_PROPAGATE).
 * RESULT ok=1 locked_seen=1 plain_seen=1 spin_seen=1 turns_seen=1 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile int plain, locked, stop;
static volatile long turns;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *poll_locked(void *arg)
{
    (void)arg;
    double end = now() + 3;
    int seen = 0;
    while (!seen && now() < end) {
        pthread_mutex_lock(&mu);
        seen = locked;
        pthread_mutex_unlock(&mu);
        usleep(1000);
    }
    return (void *)(long)seen;
}

static void *poll_plain(void *arg)
{
    (void)arg;
    double end = now() + 3;
    while (!plain && now() < end)
        usleep(1000);
    return (void *)(long)plain;
}

static void *spin(void *arg)
{
    (void)arg;
    double end = now() + 3; /* (clock_gettime: no system call) */
    while (!stop && ((turns + 1) % 1000000 || now() < end))
        turns++;
    return (void *)(long)stop;
}

int main(void)
{
    pthread_t t;
    void *r1, *r2, *r3;
    pthread_create(&t, NULL, poll_locked, NULL);
    usleep(100000);
    pthread_mutex_lock(&mu);
    locked = 1;
    pthread_mutex_unlock(&mu);
    pthread_join(t, &r1);

    pthread_create(&t, NULL, poll_plain, NULL);
    usleep(100000);
    plain = 1;
    pthread_join(t, &r2);

    pthread_create(&t, NULL, spin, NULL);
    double end = now() + 3;
    while (turns < 1000 && now() < end)
        usleep(1000);
    int turns_seen = turns >= 1000;
    stop = 1;
    pthread_join(t, &r3);
    printf("RESULT ok=%d locked_seen=%ld plain_seen=%ld spin_seen=%ld turns_seen=%d\n", r1 != NULL,
           (long)r1, (long)r2, (long)r3, turns_seen);
    return 0;
}
