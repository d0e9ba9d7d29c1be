/* flag_publish.c: data published by a plain flag, as legacy code does:
 * a writer thread fills 8 pages with the round's number, then sets seq;
 * a reader waits for seq (sched_yield between looks), checks the data and
 * sets ack, which the writer waits for.  seq and ack are adjacent globals
 * (one page).  No lock, no barrier: on libcables the handoffs go by
 * propagation to pollers (README), which does not promise the order.
 *
 *   flag_publish [ROUNDS [home|apart|writer [spin]]]
 *
 * home (default): main reads, on the node of the data's home (the master);
 * apart: a second thread reads (cables-run -n 3: on a third node); writer:
 * main writes, on the data's and the flag's home, and a second thread
 * reads (cables-run -n 2: on node 1); spin:
 * the reader spins on seq without yielding (propagation's periodic pulls
 * show it seq: CABLES_PROPAGATE sets their period).
 * RESULT rounds=R stale_rounds=S stale_words=W us_per_round=U: rounds in
 * which the reader saw seq before some of the data written ahead of it. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PAGES = 8, WORDS = 512, STEP = 64 };
static volatile long data[PAGES][WORDS];
static volatile long seq, ack;
static long rounds, stale_rounds, stale_words;
static int spin;

static void *writer(void *arg)
{
    (void)arg;
    for (long i = 1; i <= rounds; i++) {
        for (int p = 0; p < PAGES; p++)
            for (int w = 0; w < WORDS; w += STEP)
                data[p][w] = i;
        seq = i;
        while (ack != i)
            sched_yield();
    }
    return NULL;
}

static void *reader(void *arg)
{
    (void)arg;
    for (long i = 1; i <= rounds; i++) {
        while (seq < i)
            if (!spin)
                sched_yield();
        long n = 0;
        for (int p = 0; p < PAGES; p++)
            for (int w = 0; w < WORDS; w += STEP)
                n += data[p][w] < i;
        stale_words += n;
        stale_rounds += n > 0;
        ack = i;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 1000;
    int apart = argc > 2 && !strcmp(argv[2], "apart");
    int at_writer = argc > 2 && !strcmp(argv[2], "writer");
    spin = argc > 3 && !strcmp(argv[3], "spin");
    if (rounds < 1 || (argc > 2 && !apart && !at_writer && strcmp(argv[2], "home")) ||
        (argc > 3 && !spin)) {
        fprintf(stderr, "usage: flag_publish [ROUNDS [home|apart|writer [spin]]]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t w, r;
    if (at_writer) {
        pthread_create(&r, NULL, reader, NULL);
        writer(NULL);
        pthread_join(r, NULL);
    } else {
        pthread_create(&w, NULL, writer, NULL);
        if (apart)
            pthread_create(&r, NULL, reader, NULL);
        else
            reader(NULL);
        pthread_join(w, NULL);
        if (apart)
            pthread_join(r, NULL);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
    printf("RESULT rounds=%ld stale_rounds=%ld stale_words=%ld us_per_round=%.1f\n", rounds,
           stale_rounds, stale_words, us / (double)rounds);
    return 0;
}
