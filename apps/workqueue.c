/*
 * workqueue.c - rounds of dynamically created worker threads draining a
 * shared task queue (plain POSIX threads).
 *
 * Usage: workqueue [ROUNDS [TASKS]]    defaults: ROUNDS=8, TASKS=400
 *
 * For each round main fills a shared queue (a malloc'd array of TASKS task
 * structs), then creates 1 + round % 4 workers.  Workers pop tasks under a
 * mutex and write a deterministic result (a small hash loop over the round
 * and task number) into each task.  Worker 0 of every round is created
 * DETACHED: it reports its processed count through a global counter under
 * the mutex and signals a condition variable, and main waits for that
 * instead of joining it.  The other workers are joined; odd-numbered ones
 * return their processed count with pthread_exit(value), even-numbered ones
 * by returning from the start routine.  main checks that the counts add up
 * to TASKS, that every task was done exactly once, and every result against
 * a serial recomputation, then folds the results into a checksum.
 *
 * Last stdout line:
 *   RESULT ok=1 rounds=R tasks=T processed=R*T threads_created=W checksum=X
 * All values depend only on R and T (threads_created is the fixed sum of
 * 1 + r % 4 over the rounds), not on which worker did which task.
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

#define DEFAULT_ROUNDS 8L
#define DEFAULT_TASKS  400L
#define MAX_ROUNDS     100000L
#define MAX_TASKS      1000000L
#define MAX_WORKERS    4

static const char *prog = "workqueue";

static void usage(void)
{
    fprintf(stderr, "usage: %s [ROUNDS [TASKS]]  (ROUNDS 1..%ld, default %ld; "
            "TASKS 1..%ld, default %ld)\n",
            prog, MAX_ROUNDS, DEFAULT_ROUNDS, MAX_TASKS, DEFAULT_TASKS);
}

#include "app.h"

struct task {
    uint32_t round;
    uint32_t id;
    uint64_t result;
    int done_by;            /* worker index, -1 until done */
    int times_done;
};

/* the shared queue of the current round, under `lock` */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t detached_done_cv = PTHREAD_COND_INITIALIZER;
static struct task *tasks;
static size_t ntasks;
static size_t next_task;
/* the detached worker's report, under `lock` */
static int detached_done;
static size_t detached_count;

static uint64_t task_hash(uint32_t round, uint32_t id)
{
    uint64_t x = ((uint64_t)round << 32 | id) + 0x9e3779b97f4a7c15ULL;
    unsigned iters = 200 + (id * 7u + round * 13u) % 300;
    for (unsigned i = 0; i < iters; i++) {
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        x ^= x >> 31;
        x += i;
    }
    return x;
}

static size_t drain(int worker)
{
    size_t count = 0;
    for (;;) {
        struct task *t;
        PT(pthread_mutex_lock(&lock));
        t = next_task < ntasks ? &tasks[next_task++] : NULL;
        PT(pthread_mutex_unlock(&lock));
        if (!t)
            break;
        t->result = task_hash(t->round, t->id);
        t->done_by = worker;
        t->times_done++;
        count++;
    }
    return count;
}

static void *detached_worker(void *arg)
{
    (void)arg;
    size_t count = drain(0);
    PT(pthread_mutex_lock(&lock));
    detached_count = count;
    detached_done = 1;
    PT(pthread_cond_signal(&detached_done_cv));
    PT(pthread_mutex_unlock(&lock));
    return NULL;
}

static void *joinable_worker(void *arg)
{
    int worker = (int)(intptr_t)arg;
    size_t count = drain(worker);
    if (worker % 2 == 1)
        pthread_exit((void *)(uintptr_t)count);
    return (void *)(uintptr_t)count;
}

int main(int argc, char **argv)
{
    long nrounds = DEFAULT_ROUNDS, ntask_arg = DEFAULT_TASKS;

    if (argc > 3) {
        fprintf(stderr, "%s: too many arguments\n", prog);
        usage();
        return 2;
    }
    if (argc > 1)
        nrounds = parse_arg(argv[1], "ROUNDS", 1, MAX_ROUNDS);
    if (argc > 2)
        ntask_arg = parse_arg(argv[2], "TASKS", 1, MAX_TASKS);

    pthread_attr_t detached_attr;
    PT(pthread_attr_init(&detached_attr));
    PT(pthread_attr_setdetachstate(&detached_attr, PTHREAD_CREATE_DETACHED));

    uint64_t checksum = 0, processed = 0, created = 0;
    const char *error = NULL;

    for (long r = 0; r < nrounds && !error; r++) {
        struct task *round_tasks = malloc((size_t)ntask_arg * sizeof *round_tasks);
        if (!round_tasks) {
            fprintf(stderr, "%s: out of memory\n", prog);
            return 1;
        }
        for (long i = 0; i < ntask_arg; i++)
            round_tasks[i] = (struct task){ .round = (uint32_t)r, .id = (uint32_t)i,
                                            .result = 0, .done_by = -1, .times_done = 0 };

        PT(pthread_mutex_lock(&lock));
        tasks = round_tasks;
        ntasks = (size_t)ntask_arg;
        next_task = 0;
        detached_done = 0;
        detached_count = 0;
        PT(pthread_mutex_unlock(&lock));

        int nworkers = 1 + (int)(r % MAX_WORKERS);
        pthread_t tids[MAX_WORKERS];
        pthread_t detached_tid;
        PT(pthread_create(&detached_tid, &detached_attr, detached_worker, NULL));
        for (int w = 1; w < nworkers; w++)
            PT(pthread_create(&tids[w], NULL, joinable_worker, (void *)(intptr_t)w));
        created += (uint64_t)nworkers;

        size_t round_count = 0;
        for (int w = 1; w < nworkers; w++) {
            void *ret;
            PT(pthread_join(tids[w], &ret));
            round_count += (size_t)(uintptr_t)ret;
        }
        PT(pthread_mutex_lock(&lock));
        while (!detached_done)
            PT(pthread_cond_wait(&detached_done_cv, &lock));
        round_count += detached_count;
        tasks = NULL;
        ntasks = 0;
        PT(pthread_mutex_unlock(&lock));

        if (round_count != (size_t)ntask_arg)
            error = "count_mismatch";
        for (long i = 0; i < ntask_arg && !error; i++) {
            const struct task *t = &round_tasks[i];
            if (t->times_done != 1 || t->done_by < 0 || t->done_by >= nworkers)
                error = "task_not_done_once";
            else if (t->result != task_hash((uint32_t)r, (uint32_t)i))
                error = "result_mismatch";
            else
                checksum = (checksum ^ t->result) * 0x100000001b3ULL + (uint64_t)i;
        }
        processed += round_count;
        free(round_tasks);
    }
    PT(pthread_attr_destroy(&detached_attr));

    printf("RESULT ok=%d%s%s rounds=%ld tasks=%ld processed=%" PRIu64
           " threads_created=%" PRIu64 " checksum=%016" PRIx64 "\n",
           error ? 0 : 1, error ? " error=" : "", error ? error : "",
           nrounds, ntask_arg, processed, created, checksum);
    return error ? 1 : 0;
}
