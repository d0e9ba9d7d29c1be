/* strided_read: a thread on the last node reads one column of a matrix of
 * blocks homed on node 0 (ROWS x COLS blocks of 2 pages, stored row by row,
 * as LU's are), a new column each round: its faults follow a stride, and
 * strided fetches bring the blocks below with the one it faults on.  Each
 * round:
 *   1. node 0 writes the column's blocks, all but their first WORDS0 words;
 *   2. the reader reads those words while node 0 keeps rewriting the first
 *      WORDS0 words of the same pages for SWEEP_MS (the pages are served to
 *      the reader while their home writes them), the last sweep with the
 *      round's values;
 *   3. the reader reads the first WORDS0 words: the writes made after its
 *      pages were served must have been noticed at the barrier.
 * Every value must be the round's.
 * RESULT ok=1 bad=B rounds=R fetches=F pages=P */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ROWS 64
#define COLS 16
#define BLOCK_WORDS 1024 /* 2 pages */
#define WORDS0 256
#define ROUNDS 3
#define SWEEP_MS 30

struct shared {
    cables_barrier_t bar;
    uint64_t *m;
    long bad;
    uint64_t fetches, pages;
};

static uint64_t value(int r, long i, long k) { return (uint64_t)r << 40 ^ (uint64_t)i << 20 ^ (uint64_t)k; }

static uint64_t *block(struct shared *s, long i, long c) { return s->m + (i * COLS + c) * BLOCK_WORDS; }

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void writer(struct shared *s)
{
    for (int r = 0; r < ROUNDS; r++) {
        long c = r * 5 % COLS;
        for (long i = 0; i < ROWS; i++)
            for (long k = WORDS0; k < BLOCK_WORDS; k++)
                block(s, i, c)[k] = value(r, i, k);
        cables_barrier_wait(&s->bar); /* 1 */
        double end = now_ms() + SWEEP_MS;
        for (int last = 0; !last;) {
            last = now_ms() >= end;
            for (long i = 0; i < ROWS; i++)
                for (long k = 0; k < WORDS0; k++)
                    block(s, i, c)[k] = last ? value(r, i, k) : ~value(r, i, k);
        }
        cables_barrier_wait(&s->bar); /* 2 */
        cables_barrier_wait(&s->bar); /* 3 */
    }
}

static void *reader(void *p)
{
    struct shared *s = p;
    long bad = 0;
    cables_stats_t st0, st1;
    cables_stats_get(&st0);
    for (int r = 0; r < ROUNDS; r++) {
        long c = r * 5 % COLS;
        cables_barrier_wait(&s->bar); /* 1 */
        for (long i = 0; i < ROWS; i++)
            for (long k = WORDS0; k < BLOCK_WORDS; k++)
                bad += block(s, i, c)[k] != value(r, i, k);
        cables_barrier_wait(&s->bar); /* 2 */
        for (long i = 0; i < ROWS; i++)
            for (long k = 0; k < WORDS0; k++)
                bad += block(s, i, c)[k] != value(r, i, k);
        cables_barrier_wait(&s->bar); /* 3 */
    }
    cables_stats_get(&st1);
    s->bad += bad;
    s->fetches = st1.fetches - st0.fetches;
    s->pages = st1.pages_fetched - st0.pages_fetched;
    return NULL;
}

int main(void)
{
    int nodes = cables_node_count(), last = nodes - 1;
    struct shared *s = cables_alloc_placed(sizeof *s, CABLES_POLICY_FIXED, last);
    s->m = cables_alloc_placed((size_t)ROWS * COLS * BLOCK_WORDS * 8, CABLES_POLICY_FIXED, 0);
    cables_barrier_init(&s->bar, 2);
    cables_thread_t t;
    if (cables_thread_create(&t, last, reader, s)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    writer(s);
    cables_thread_join(t, NULL);
    printf("RESULT ok=%d bad=%ld rounds=%d fetches=%llu pages=%llu\n", s->bad == 0, s->bad,
           ROUNDS, (unsigned long long)s->fetches, (unsigned long long)s->pages);
    return s->bad != 0;
}
