/* poll_flag: a thread (on another node) polls a plain flag that main sets,
 * sleeping between looks, for up to 3 s; then main joins it.  Natively it
 * sees the flag at once.  On libcables release consistency never shows it
 * the write (a known limit: README), and the runtime says so once, after
 * CABLES_POLL_NOTE seconds of such polling; a thread that takes a mutex
 * at each look sees the flag and gets no note.
 * RESULT ok=1 plain_seen=S locked_seen=1 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile int plain, locked;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void *poll_plain(void *arg)
{
    (void)arg;
    double end = now() + 3;
    while (!plain && now() < end)
        usleep(1000);
    return (void *)(long)plain;
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

int main(void)
{
    pthread_t t;
    void *r1, *r2;
    pthread_create(&t, NULL, poll_locked, NULL);
    usleep(100000);
    pthread_mutex_lock(&mu);
    locked = 1;
    pthread_mutex_unlock(&mu);
    pthread_join(t, &r2);
    pthread_create(&t, NULL, poll_plain, NULL);
    usleep(100000);
    plain = 1;
    pthread_join(t, &r1);
    printf("RESULT ok=%d plain_seen=%ld locked_seen=%ld\n", r2 != NULL, (long)r1, (long)r2);
    return 0;
}
