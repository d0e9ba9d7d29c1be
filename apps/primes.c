/*
 * primes.c - parallel prime finder (plain POSIX threads).
 *
 * Usage: primes [LIMIT [THREADS]]      defaults: LIMIT=200000, THREADS=4
 *
 * Counts and sums the primes in [2, LIMIT].  THREADS workers repeatedly
 * take the next chunk of the range from a shared counter protected by a
 * pthread mutex, test each number by trial division, and accumulate the
 * count and sum into their own slot of a malloc'd array.  main joins the
 * workers, combines the slots, and checks the totals against a serial
 * sieve.
 *
 * Last stdout line:
 *   RESULT ok=1 limit=L threads=T count=C sum=S
 * C and S (number and sum of primes <= L) do not depend on T or on the
 * scheduling.  On a failed self-check: RESULT ok=0 error=... and exit 1.
 * Bad arguments: message on stderr, exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT   200000L
#define DEFAULT_THREADS 4L
#define MAX_LIMIT       10000000L
#define MAX_THREADS     64L
#define CHUNK           2000L

static const char *prog = "primes";

static void usage(void)
{
    fprintf(stderr, "usage: %s [LIMIT [THREADS]]  (LIMIT 0..%ld, default %ld; "
            "THREADS 1..%ld, default %ld)\n",
            prog, MAX_LIMIT, DEFAULT_LIMIT, MAX_THREADS, DEFAULT_THREADS);
}

#include "app.h"

struct slot {
    uint64_t count;
    uint64_t sum;
};

/* shared work distribution: next number to hand out, under `lock` */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long next_start = 2;
static long limit = DEFAULT_LIMIT;

static int is_prime(long n)
{
    if (n < 2)
        return 0;
    if (n < 4)
        return 1;
    if (n % 2 == 0 || n % 3 == 0)
        return 0;
    for (long d = 5; d * d <= n; d += 6)
        if (n % d == 0 || n % (d + 2) == 0)
            return 0;
    return 1;
}

static void *worker(void *arg)
{
    struct slot *slot = arg;
    uint64_t count = 0, sum = 0;

    for (;;) {
        long lo;
        PT(pthread_mutex_lock(&lock));
        lo = next_start;
        if (lo <= limit)
            next_start = lo + CHUNK;
        PT(pthread_mutex_unlock(&lock));
        if (lo > limit)
            break;
        long hi = lo + CHUNK - 1;
        if (hi > limit)
            hi = limit;
        for (long n = lo; n <= hi; n++) {
            if (is_prime(n)) {
                count++;
                sum += (uint64_t)n;
            }
        }
    }
    slot->count = count;
    slot->sum = sum;
    return NULL;
}

int main(int argc, char **argv)
{
    long nthreads = DEFAULT_THREADS;

    if (argc > 3) {
        fprintf(stderr, "%s: too many arguments\n", prog);
        usage();
        return 2;
    }
    if (argc > 1)
        limit = parse_arg(argv[1], "LIMIT", 0, MAX_LIMIT);
    if (argc > 2)
        nthreads = parse_arg(argv[2], "THREADS", 1, MAX_THREADS);

    struct slot *slots = calloc((size_t)nthreads, sizeof *slots);
    pthread_t *tids = malloc((size_t)nthreads * sizeof *tids);
    if (!slots || !tids) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 1;
    }

    for (long i = 0; i < nthreads; i++)
        PT(pthread_create(&tids[i], NULL, worker, &slots[i]));
    for (long i = 0; i < nthreads; i++)
        PT(pthread_join(tids[i], NULL));

    uint64_t count = 0, sum = 0;
    for (long i = 0; i < nthreads; i++) {
        count += slots[i].count;
        sum += slots[i].sum;
    }

    /* serial check: sieve of Eratosthenes */
    uint64_t scount = 0, ssum = 0;
    if (limit >= 2) {
        unsigned char *composite = calloc((size_t)limit + 1, 1);
        if (!composite) {
            fprintf(stderr, "%s: out of memory\n", prog);
            return 1;
        }
        for (long i = 2; i <= limit; i++) {
            if (composite[i])
                continue;
            scount++;
            ssum += (uint64_t)i;
            if (i > limit / i)
                continue;
            for (long j = i * i; j <= limit; j += i)
                composite[j] = 1;
        }
        free(composite);
    }

    int ok = count == scount && sum == ssum;
    if (ok)
        printf("RESULT ok=1 limit=%ld threads=%ld count=%" PRIu64 " sum=%" PRIu64 "\n",
               limit, nthreads, count, sum);
    else
        printf("RESULT ok=0 error=mismatch limit=%ld threads=%ld count=%" PRIu64
               " sum=%" PRIu64 " expected_count=%" PRIu64 " expected_sum=%" PRIu64 "\n",
               limit, nthreads, count, sum, scount, ssum);
    free(slots);
    free(tids);
    return ok ? 0 : 1;
}
