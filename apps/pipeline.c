/*
 * pipeline.c - a threaded pipeline connected by bounded queues (plain POSIX
 * threads).
 *
 * Usage: pipeline [ITEMS [STAGES]]     defaults: ITEMS=20000, STAGES=4
 *
 * main feeds the values 1..ITEMS, then an end-of-stream sentinel, into the
 * first of STAGES stage threads.  Consecutive stages are connected by
 * bounded queues (malloc'd; each a mutex and two condition variables,
 * not_full and not_empty).  The whole transform is a fixed chain of
 * NSTEPS uint64_t steps (multiply-add, xor-shift, rotate, ...); the chain
 * is split into STAGES consecutive, non-empty parts, and each stage applies
 * its own part, so each stage applies a different transform while the
 * overall result does not depend on STAGES.  The last stage folds every
 * value, in stream order, into a checksum.  main joins the stages and
 * checks the checksum against a serial recomputation.
 *
 * Last stdout line:
 *   RESULT ok=1 items=N threads=S steps=16 received=N checksum=X
 * threads= is the number of stage threads (STAGES); the other values
 * depend only on N.  On a failed self-check: RESULT ok=0 error=... and
 * exit 1.  Bad arguments: message on stderr, exit 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITEMS  20000L
#define DEFAULT_STAGES 4L
#define MAX_ITEMS      100000000L
#define NSTEPS         16
#define MAX_STAGES     NSTEPS
#define QUEUE_CAP      64

static const char *prog = "pipeline";

static void usage(void)
{
    fprintf(stderr, "usage: %s [ITEMS [STAGES]]  (ITEMS 0..%ld, default %ld; "
            "STAGES 1..%d, default %ld)\n",
            prog, MAX_ITEMS, DEFAULT_ITEMS, MAX_STAGES, DEFAULT_STAGES);
}

#include "app.h"

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "%s: out of memory\n", prog);
        exit(1);
    }
    return p;
}

struct item {
    uint64_t value;
    int end;                /* 1: end-of-stream sentinel */
};

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t not_full;
    pthread_cond_t not_empty;
    size_t head, count;
    struct item *buf;       /* QUEUE_CAP items, malloc'd */
};

struct stage {
    int index;
    int first_step, last_step;  /* applies steps [first_step, last_step) */
    struct queue *in, *out;     /* out == NULL: last stage */
    uint64_t received;          /* last stage: items seen, and their checksum */
    uint64_t checksum;
};

static void queue_init(struct queue *q)
{
    PT(pthread_mutex_init(&q->lock, NULL));
    PT(pthread_cond_init(&q->not_full, NULL));
    PT(pthread_cond_init(&q->not_empty, NULL));
    q->head = q->count = 0;
    q->buf = xmalloc(QUEUE_CAP * sizeof *q->buf);
}

static void queue_destroy(struct queue *q)
{
    PT(pthread_cond_destroy(&q->not_empty));
    PT(pthread_cond_destroy(&q->not_full));
    PT(pthread_mutex_destroy(&q->lock));
    free(q->buf);
}

static void queue_put(struct queue *q, struct item it)
{
    PT(pthread_mutex_lock(&q->lock));
    while (q->count == QUEUE_CAP)
        PT(pthread_cond_wait(&q->not_full, &q->lock));
    q->buf[(q->head + q->count) % QUEUE_CAP] = it;
    q->count++;
    PT(pthread_cond_signal(&q->not_empty));
    PT(pthread_mutex_unlock(&q->lock));
}

static struct item queue_get(struct queue *q)
{
    struct item it;
    PT(pthread_mutex_lock(&q->lock));
    while (q->count == 0)
        PT(pthread_cond_wait(&q->not_empty, &q->lock));
    it = q->buf[q->head];
    q->head = (q->head + 1) % QUEUE_CAP;
    q->count--;
    PT(pthread_cond_signal(&q->not_full));
    PT(pthread_mutex_unlock(&q->lock));
    return it;
}

static uint64_t rotl(uint64_t x, unsigned r)
{
    r &= 63;
    return r ? (x << r) | (x >> (64 - r)) : x;
}

/* one step of the fixed transform chain; the kind cycles through four */
static uint64_t apply_step(int k, uint64_t x)
{
    uint64_t c = 0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1);
    switch (k % 4) {
    case 0:  return x * 3 + (uint64_t)k;                    /* multiply-add */
    case 1:  return x ^ (x >> (7 + k % 23)) ^ c;            /* xor-shift */
    case 2:  return rotl(x, (unsigned)(5 + 3 * k));         /* rotate */
    default: return x * (c | 1) + (uint64_t)(k * k);        /* odd multiply */
    }
}

static uint64_t fold(uint64_t h, uint64_t v)
{
    return (rotl(h, 7) ^ v) * 0x100000001b3ULL;
}

static void *stage_main(void *arg)
{
    struct stage *st = arg;
    uint64_t received = 0, h = 0;

    for (;;) {
        struct item it = queue_get(st->in);
        if (!it.end) {
            for (int k = st->first_step; k < st->last_step; k++)
                it.value = apply_step(k, it.value);
        }
        if (st->out) {
            queue_put(st->out, it);
        } else if (!it.end) {
            received++;
            h = fold(h, it.value);
        }
        if (it.end)
            break;
    }
    if (!st->out) {
        st->received = received;
        st->checksum = h;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    long nitems = DEFAULT_ITEMS, nstages = DEFAULT_STAGES;

    if (argc > 3) {
        fprintf(stderr, "%s: too many arguments\n", prog);
        usage();
        return 2;
    }
    if (argc > 1)
        nitems = parse_arg(argv[1], "ITEMS", 0, MAX_ITEMS);
    if (argc > 2)
        nstages = parse_arg(argv[2], "STAGES", 1, MAX_STAGES);

    /* queue s feeds stage s; stage s writes queue s+1 (none for the last) */
    struct queue *queues = xmalloc((size_t)nstages * sizeof *queues);
    struct stage *stages = xmalloc((size_t)nstages * sizeof *stages);
    pthread_t *tids = xmalloc((size_t)nstages * sizeof *tids);

    for (long s = 0; s < nstages; s++)
        queue_init(&queues[s]);
    for (long s = 0; s < nstages; s++) {
        stages[s] = (struct stage){
            .index = (int)s,
            .first_step = (int)(s * NSTEPS / nstages),
            .last_step = (int)((s + 1) * NSTEPS / nstages),
            .in = &queues[s],
            .out = s + 1 < nstages ? &queues[s + 1] : NULL,
        };
    }
    for (long s = 0; s < nstages; s++)
        PT(pthread_create(&tids[s], NULL, stage_main, &stages[s]));

    for (long i = 1; i <= nitems; i++)
        queue_put(&queues[0], (struct item){ .value = (uint64_t)i, .end = 0 });
    queue_put(&queues[0], (struct item){ .value = 0, .end = 1 });

    for (long s = 0; s < nstages; s++)
        PT(pthread_join(tids[s], NULL));

    struct stage *last = &stages[nstages - 1];

    /* serial recomputation */
    uint64_t want = 0;
    for (long i = 1; i <= nitems; i++) {
        uint64_t v = (uint64_t)i;
        for (int k = 0; k < NSTEPS; k++)
            v = apply_step(k, v);
        want = fold(want, v);
    }

    const char *error = NULL;
    if (last->received != (uint64_t)nitems)
        error = "count_mismatch";
    else if (last->checksum != want)
        error = "checksum_mismatch";
    for (long s = 0; s < nstages && !error; s++)
        if (queues[s].count != 0)
            error = "queue_not_empty";

    printf("RESULT ok=%d%s%s items=%ld threads=%ld steps=%d received=%" PRIu64
           " checksum=%016" PRIx64 "\n",
           error ? 0 : 1, error ? " error=" : "", error ? error : "",
           nitems, nstages, NSTEPS, last->received, last->checksum);

    for (long s = 0; s < nstages; s++)
        queue_destroy(&queues[s]);
    free(queues);
    free(stages);
    free(tids);
    return error ? 1 : 0;
}
