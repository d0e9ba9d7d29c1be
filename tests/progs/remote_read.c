/* remote_read: a thread on the last node reads, ROUNDS times, a block of
 * PAGES pages homed on node 0, which node 0 rewrites before each round
 * (barriers order them).  Its first fetches ask node 0; later ones read
 * node 0's memory in place where the transport can (remote reads).  With 3
 * nodes or more, node 0 moves the first half of the block's homes to node
 * 1 halfway, and a thread on node 1 writes the later rounds: node 0's
 * memory then holds stale values, which a remote read must find out (node
 * 0's move epoch changed since it served the page) and ask again.  Every
 * value must be the round's.  A page read again after an invalidation is
 * refreshed in place at the later barriers instead (CABLES_REFRESH), by
 * remote read too: no fault, no fetch; so is a page fetched for the first
 * time, at the next few barriers (round 1's read faults: none).  The first
 * fetch's reply names node 0 the home of the pages after it too: only that
 * one asks the directory (lookups).  Usage: remote_read [PAGES] (32): a
 * block of 64 pages or more is no longer refreshed but invalidated at each
 * barrier, and read again in place at its first access (hlrc.c: LONG_RUN).
 * RESULT ok=1 bad=B rounds=R remote_reads=N fetches=F refreshed=P moved=M
 *        round1_faults=F1 lookups=L */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 6

struct shared {
    cables_barrier_t bar;
    uint64_t *blk;
    long pages, words; /* in here: other nodes do not run main */
    long bad;
    uint64_t remote_reads, fetches, refreshed, round1_faults, lookups;
};

static uint64_t value(int r, long k) { return (uint64_t)r * 1000003u + (uint64_t)k; }

static int writes(int r, int nodes, int node) { return node == (r >= ROUNDS / 2 && nodes >= 3); }

/* rounds written by this node's writer; barriers with the others */
static void writer(struct shared *s, int node)
{
    int nodes = cables_node_count();
    for (int r = 0; r < ROUNDS; r++) {
        if (r == ROUNDS / 2 && nodes >= 3 && node == 0) {
            if (cables_home_move(s->blk, s->pages / 2 * 4096, 1))
                s->bad = -1000000;
        }
        if (writes(r, nodes, node))
            for (long k = 0; k < s->words; k++)
                s->blk[k] = value(r, k);
        cables_barrier_wait(&s->bar);
        cables_barrier_wait(&s->bar);
    }
}

static void *second_writer(void *p)
{
    writer(p, 1);
    return NULL;
}

static void *reader(void *p)
{
    struct shared *s = p;
    long bad = 0;
    cables_stats_t st0, st1;
    cables_stats_get(&st0);
    for (int r = 0; r < ROUNDS; r++) {
        cables_barrier_wait(&s->bar); /* round r written */
        cables_stats_t f0, f1;
        cables_stats_get(&f0);
        for (long k = 0; k < s->words; k++)
            bad += s->blk[k] != value(r, k);
        cables_stats_get(&f1);
        if (r == 1)
            s->round1_faults = f1.read_faults - f0.read_faults;
        cables_barrier_wait(&s->bar); /* read */
    }
    cables_stats_get(&st1);
    s->bad += bad;
    s->remote_reads = st1.fetches_read - st0.fetches_read;
    s->fetches = st1.fetches - st0.fetches;
    s->refreshed = st1.pages_refreshed - st0.pages_refreshed;
    s->lookups = st1.dir_lookups - st0.dir_lookups;
    return NULL;
}

int main(int argc, char **argv)
{
    long pages = argc > 1 ? atol(argv[1]) : 32;
    if (pages < 2) {
        fprintf(stderr, "usage: remote_read [PAGES (2 or more)]\n");
        return 2;
    }
    int nodes = cables_node_count(), last = nodes - 1, moved = 0;
    struct shared *s = cables_alloc_placed(sizeof *s, CABLES_POLICY_FIXED, last);
    s->blk = cables_alloc_placed(pages * 4096, CABLES_POLICY_FIXED, 0);
    s->pages = pages;
    s->words = pages * 4096 / 8;
    cables_barrier_init(&s->bar, nodes >= 3 ? 3 : 2);
    cables_thread_t t, t2;
    if (cables_thread_create(&t, last, reader, s) ||
        (nodes >= 3 && cables_thread_create(&t2, 1, second_writer, s))) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    writer(s, 0);
    if (nodes >= 3) {
        cables_thread_join(t2, NULL);
        moved = (int)(pages / 2);
    }
    cables_thread_join(t, NULL);
    printf("RESULT ok=%d bad=%ld rounds=%d remote_reads=%llu fetches=%llu refreshed=%llu moved=%d round1_faults=%llu lookups=%llu\n",
           s->bad == 0, s->bad, ROUNDS, (unsigned long long)s->remote_reads,
           (unsigned long long)s->fetches, (unsigned long long)s->refreshed, moved,
           (unsigned long long)s->round1_faults, (unsigned long long)s->lookups);
    return s->bad != 0;
}
