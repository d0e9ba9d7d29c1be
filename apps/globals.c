/*
 * globals.c - threads sharing file-scope globals (.data and .bss) and stack
 * data (plain POSIX threads).
 *
 * Usage: globals [THREADS]             default: THREADS=4
 *
 * - .data: `table` (static, initialized {1, 2, 3}) and `globals_scale`
 *   (non-static, initialized); .bss: `big_bss` (64 KiB, static),
 *   `globals_bss_total` (non-static) and the per-thread result arrays.
 * - main writes table[3..] and big_bss BEFORE creating the threads, and
 *   AFTER creating them (`late_value` and the last 4 KiB of big_bss) under
 *   the mutex, before the first pthread_barrier_wait; the threads read all
 *   of it after that barrier.
 * - main passes each thread a pointer into an array on main's own stack;
 *   threads read their input there and write their results there.
 * - Each thread sums its share of table and big_bss into the .bss result
 *   arrays and into globals_bss_total (under the mutex), then updates its
 *   share of table in place.
 * - Each thread publishes the address of one of its own stack variables in
 *   a global array; after a barrier thread i writes into thread i-1's
 *   variable (mod THREADS); after another barrier each thread checks that
 *   its variable holds what its successor wrote.
 * main joins the threads and checks everything against a serial
 * recomputation.
 *
 * Last stdout line:
 *   RESULT ok=1 threads=T table_sum=A bss_sum=B table_after=C stack_sum=D
 * Only threads= depends on T.  On a failed self-check: RESULT ok=0
 * error=... and exit 1.  Bad arguments: message on stderr, exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_THREADS 4L
#define MAX_THREADS     64
#define TABLE_LEN       1024
#define BSS_LEN         65536
#define LATE_LEN        4096
#define STACK_WORDS     1024    /* input and output words on main's stack */

static const char *prog = "globals";

static void usage(void)
{
    fprintf(stderr, "usage: %s [THREADS]  (THREADS 1..%d, default %ld)\n",
            prog, MAX_THREADS, DEFAULT_THREADS);
}

#include "app.h"

static void barrier_wait(pthread_barrier_t *b)
{
    int rc = pthread_barrier_wait(b);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
        pt_fail("pthread_barrier_wait", rc);
}

/* .data */
static int table[TABLE_LEN] = { 1, 2, 3 };
int globals_scale = 7;
static uint64_t data_seed = 0x0123456789abcdefULL;

/* .bss */
static unsigned char big_bss[BSS_LEN];
uint64_t globals_bss_total;
static uint64_t partial_table[MAX_THREADS];
static uint64_t partial_bss[MAX_THREADS];
static uint64_t *published[MAX_THREADS];   /* addresses of thread stack vars */
static int late_value;                     /* written by main after create */
static int nthreads;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;           /* nthreads + 1 (main) */
static pthread_barrier_t tbarrier;          /* nthreads */

/* lives on main's stack; each thread gets a pointer to it */
struct shared_stack {
    uint64_t in[STACK_WORDS];               /* written by main */
    uint64_t out[STACK_WORDS];              /* each thread writes its share */
    int exchange_ok[MAX_THREADS];           /* written by thread i */
};

struct targ {
    int id;
    struct shared_stack *stk;
};

static unsigned char bss_pattern(size_t i, int late)
{
    return late ? (unsigned char)((i * 13 + 5) ^ 0x5a) : (unsigned char)(i * 31 + 7);
}

static uint64_t exchange_tag(int id)
{
    return 0xabc0000000000000ULL + (uint64_t)id * 0x10001ULL;
}

/* thread id's half-open share [lo, hi) of n elements */
static void share(int id, size_t n, size_t *lo, size_t *hi)
{
    *lo = (size_t)id * n / (size_t)nthreads;
    *hi = (size_t)(id + 1) * n / (size_t)nthreads;
}

static void *worker(void *arg)
{
    struct targ *ta = arg;
    int id = ta->id;
    struct shared_stack *stk = ta->stk;

    /* wait for main's post-create writes */
    barrier_wait(&barrier);

    int late;
    PT(pthread_mutex_lock(&lock));
    late = late_value;
    PT(pthread_mutex_unlock(&lock));

    size_t lo, hi;
    uint64_t tsum = 0, bsum = 0;
    share(id, TABLE_LEN, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        tsum += (uint64_t)(int64_t)table[i] * (i + 1);
    share(id, BSS_LEN, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        bsum += (uint64_t)big_bss[i] * (i % 251 + 1);
    partial_table[id] = tsum;
    partial_bss[id] = bsum;
    PT(pthread_mutex_lock(&lock));
    globals_bss_total += bsum;
    PT(pthread_mutex_unlock(&lock));

    /* results on main's stack: its share of the input words, transformed
     * with .data values and the post-create late_value */
    share(id, STACK_WORDS, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        stk->out[i] = (stk->in[i] ^ data_seed) * (uint64_t)globals_scale + (uint64_t)late;

    /* everybody has read table before anyone rewrites its share */
    barrier_wait(&tbarrier);
    share(id, TABLE_LEN, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        table[i] = table[i] * 2 + 1;

    /* stack-to-stack: publish &mine, predecessor's thread writes it */
    uint64_t mine = 0;
    published[id] = &mine;
    barrier_wait(&tbarrier);
    *published[(id + nthreads - 1) % nthreads] = exchange_tag(id);
    barrier_wait(&tbarrier);
    stk->exchange_ok[id] = mine == exchange_tag((id + 1) % nthreads);
    /* nobody touches `mine` after this barrier */
    barrier_wait(&tbarrier);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2) {
        fprintf(stderr, "%s: too many arguments\n", prog);
        usage();
        return 2;
    }
    nthreads = argc > 1 ? (int)parse_arg(argv[1], "THREADS", 1, MAX_THREADS)
                        : (int)DEFAULT_THREADS;

    struct shared_stack stk;                /* on main's stack, ~16 KiB */
    struct targ args[MAX_THREADS];
    pthread_t tids[MAX_THREADS];
    memset(&stk, 0, sizeof stk);

    /* writes BEFORE creating the threads (table[0..2] keep their initializers) */
    for (int i = 3; i < TABLE_LEN; i++)
        table[i] = (i * 37 + globals_scale) % 1000 - 300;
    for (size_t i = 0; i < BSS_LEN; i++)
        big_bss[i] = bss_pattern(i, 0);
    for (size_t i = 0; i < STACK_WORDS; i++)
        stk.in[i] = i * 0x9e3779b97f4a7c15ULL + 12345;

    PT(pthread_barrier_init(&barrier, NULL, (unsigned)nthreads + 1));
    PT(pthread_barrier_init(&tbarrier, NULL, (unsigned)nthreads));
    for (int t = 0; t < nthreads; t++) {
        args[t] = (struct targ){ .id = t, .stk = &stk };
        PT(pthread_create(&tids[t], NULL, worker, &args[t]));
    }

    /* writes AFTER creating them, under the mutex, before the barrier */
    PT(pthread_mutex_lock(&lock));
    late_value = 4242;
    for (size_t i = BSS_LEN - LATE_LEN; i < BSS_LEN; i++)
        big_bss[i] = bss_pattern(i, 1);
    PT(pthread_mutex_unlock(&lock));
    barrier_wait(&barrier);

    for (int t = 0; t < nthreads; t++)
        PT(pthread_join(tids[t], NULL));
    PT(pthread_barrier_destroy(&tbarrier));
    PT(pthread_barrier_destroy(&barrier));

    /* combine the threads' results */
    uint64_t table_sum = 0, bss_sum = 0, stack_sum = 0, table_after = 0;
    int exchange_ok = 1;
    for (int t = 0; t < nthreads; t++) {
        table_sum += partial_table[t];
        bss_sum += partial_bss[t];
        exchange_ok &= stk.exchange_ok[t];
    }
    for (int i = 0; i < TABLE_LEN; i++)
        table_after += (uint64_t)(int64_t)table[i] * (uint64_t)(i + 1);
    for (size_t i = 0; i < STACK_WORDS; i++)
        stack_sum += stk.out[i];

    /* serial recomputation, independent of the thread count */
    uint64_t want_table = 0, want_bss = 0, want_after = 0, want_stack = 0;
    for (int i = 0; i < TABLE_LEN; i++) {
        int64_t v = i < 3 ? i + 1 : (i * 37 + 7) % 1000 - 300;   /* scale 7 */
        want_table += (uint64_t)v * (uint64_t)(i + 1);
        want_after += (uint64_t)(v * 2 + 1) * (uint64_t)(i + 1);
    }
    for (size_t i = 0; i < BSS_LEN; i++)
        want_bss += (uint64_t)bss_pattern(i, i >= BSS_LEN - LATE_LEN) * (i % 251 + 1);
    for (size_t i = 0; i < STACK_WORDS; i++)
        want_stack += ((i * 0x9e3779b97f4a7c15ULL + 12345) ^ 0x0123456789abcdefULL) * 7 + 4242;

    const char *error = NULL;
    if (table_sum != want_table)
        error = "table_sum_mismatch";
    else if (bss_sum != want_bss)
        error = "bss_sum_mismatch";
    else if (globals_bss_total != want_bss)
        error = "bss_total_mismatch";
    else if (table_after != want_after)
        error = "table_after_mismatch";
    else if (stack_sum != want_stack)
        error = "stack_result_mismatch";
    else if (!exchange_ok)
        error = "stack_exchange_failed";

    printf("RESULT ok=%d%s%s threads=%d table_sum=%" PRIu64 " bss_sum=%" PRIu64
           " table_after=%" PRIu64 " stack_sum=%" PRIu64 "\n",
           error ? 0 : 1, error ? " error=" : "", error ? error : "",
           nthreads, table_sum, bss_sum, table_after, stack_sum);
    return error ? 1 : 0;
}
