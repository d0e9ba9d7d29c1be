/*
 * prodcons.c - two-thread producer/consumer over a bounded ring buffer
 * (plain POSIX threads).
 *
 * Usage: prodcons [ITEMS [CAPACITY]]   defaults: ITEMS=100000, CAPACITY=16
 *
 * A producer thread puts 1, 2, ..., ITEMS into a ring buffer of CAPACITY
 * slots (a global struct guarded by one pthread mutex and two condition
 * variables, not_full and not_empty); a consumer thread takes them out,
 * checks that they arrive in order, and sums them and folds them into an
 * order-sensitive checksum.  main joins both threads and checks the sum
 * against ITEMS*(ITEMS+1)/2 and the checksum against a serial recomputation.
 *
 * Last stdout line:
 *   RESULT ok=1 items=N capacity=C received=N sum=S checksum=X order_errors=0
 * All values depend only on N (and C as given), not on the scheduling.
 * On a failed self-check: RESULT ok=0 error=... and exit 1.
 * Bad arguments: message on stderr, exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITEMS    100000L
#define DEFAULT_CAPACITY 16L
#define MAX_ITEMS        100000000L
#define MAX_CAPACITY     4096L

static const char *prog = "prodcons";

static void usage(void)
{
    fprintf(stderr, "usage: %s [ITEMS [CAPACITY]]  (ITEMS 0..%ld, default %ld; "
            "CAPACITY 1..%ld, default %ld)\n",
            prog, MAX_ITEMS, DEFAULT_ITEMS, MAX_CAPACITY, DEFAULT_CAPACITY);
}

#include "app.h"

/* the bounded ring buffer, a global struct (.data: its initializers) */
static struct ring {
    pthread_mutex_t lock;
    pthread_cond_t not_full;
    pthread_cond_t not_empty;
    size_t capacity;
    size_t head;            /* next slot to take */
    size_t count;           /* items in the buffer */
    uint64_t slot[MAX_CAPACITY];
} ring = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .not_full = PTHREAD_COND_INITIALIZER,
    .not_empty = PTHREAD_COND_INITIALIZER,
    .capacity = DEFAULT_CAPACITY,
};

static uint64_t nitems = DEFAULT_ITEMS;

/* written by the consumer, read by main after pthread_join */
static struct {
    uint64_t received;
    uint64_t sum;
    uint64_t checksum;
    uint64_t order_errors;
} result;

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
}

static void ring_put(uint64_t v)
{
    PT(pthread_mutex_lock(&ring.lock));
    while (ring.count == ring.capacity)
        PT(pthread_cond_wait(&ring.not_full, &ring.lock));
    ring.slot[(ring.head + ring.count) % ring.capacity] = v;
    ring.count++;
    PT(pthread_cond_signal(&ring.not_empty));
    PT(pthread_mutex_unlock(&ring.lock));
}

static uint64_t ring_get(void)
{
    uint64_t v;
    PT(pthread_mutex_lock(&ring.lock));
    while (ring.count == 0)
        PT(pthread_cond_wait(&ring.not_empty, &ring.lock));
    v = ring.slot[ring.head];
    ring.head = (ring.head + 1) % ring.capacity;
    ring.count--;
    PT(pthread_cond_signal(&ring.not_full));
    PT(pthread_mutex_unlock(&ring.lock));
    return v;
}

static void *producer(void *arg)
{
    (void)arg;
    for (uint64_t i = 1; i <= nitems; i++)
        ring_put(i);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    uint64_t sum = 0, h = 0, errors = 0;
    for (uint64_t i = 1; i <= nitems; i++) {
        uint64_t v = ring_get();
        if (v != i)
            errors++;
        sum += v;
        h = mix(h, v);
    }
    result.received = nitems;
    result.sum = sum;
    result.checksum = h;
    result.order_errors = errors;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 3) {
        fprintf(stderr, "%s: too many arguments\n", prog);
        usage();
        return 2;
    }
    if (argc > 1)
        nitems = (uint64_t)parse_arg(argv[1], "ITEMS", 0, MAX_ITEMS);
    if (argc > 2)
        ring.capacity = (size_t)parse_arg(argv[2], "CAPACITY", 1, MAX_CAPACITY);

    pthread_t prod, cons;
    PT(pthread_create(&cons, NULL, consumer, NULL));
    PT(pthread_create(&prod, NULL, producer, NULL));
    PT(pthread_join(prod, NULL));
    PT(pthread_join(cons, NULL));

    uint64_t want_h = 0;
    for (uint64_t i = 1; i <= nitems; i++)
        want_h = mix(want_h, i);
    uint64_t want_sum = nitems * (nitems + 1) / 2;

    const char *error = NULL;
    if (result.order_errors != 0)
        error = "out_of_order";
    else if (result.sum != want_sum)
        error = "sum_mismatch";
    else if (result.checksum != want_h)
        error = "checksum_mismatch";
    else if (ring.count != 0)
        error = "buffer_not_empty";

    printf("RESULT ok=%d%s%s items=%" PRIu64 " capacity=%zu received=%" PRIu64
           " sum=%" PRIu64 " checksum=%016" PRIx64 " order_errors=%" PRIu64 "\n",
           error ? 0 : 1, error ? " error=" : "", error ? error : "",
           nitems, ring.capacity, result.received, result.sum, result.checksum,
           result.order_errors);
    return error ? 1 : 0;
}
