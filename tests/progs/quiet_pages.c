/* quiet_pages: a home page written at every release, read by another node
 * only now and then.  Node 0's writer sets every word of PAGES pages (homed
 * on node 0) to the round's number, then a barrier; the reader on the last
 * node reads page i in the rounds that are multiples of i % 4 + 1 (page 0
 * every round, page 3 every fourth) and must find the round's number in
 * every word.  A page noticed at a release and not served since needs no
 * notice for its writes until it is served again (hlrc.c: quiet): this
 * checks that each later read, by fetch or in place, sees the last write.
 * usage: quiet_pages [ROUNDS]
 * RESULT ok=1 bad=B reads=R rounds=N */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGES 8
#define WORDS (4096 / sizeof(long))

struct shared {
    cables_barrier_t b;
    long rounds, bad, reads;
    long (*pg)[WORDS];
};

static void *writer(void *a)
{
    struct shared *s = a;
    for (long r = 1; r <= s->rounds; r++) {
        for (int i = 0; i < PAGES; i++)
            for (size_t w = 0; w < WORDS; w++)
                s->pg[i][w] = r;
        cables_barrier_wait(&s->b); /* round r written */
        cables_barrier_wait(&s->b); /* read */
    }
    return NULL;
}

static void *reader(void *a)
{
    struct shared *s = a;
    long bad = 0, reads = 0;
    for (long r = 1; r <= s->rounds; r++) {
        cables_barrier_wait(&s->b);
        for (int i = 0; i < PAGES; i++) {
            if (r % (i % 4 + 1))
                continue;
            volatile long *p = s->pg[i];
            for (size_t w = 0; w < WORDS; w++)
                bad += p[w] != r;
            reads++;
        }
        cables_barrier_wait(&s->b);
    }
    s->bad = bad;
    s->reads = reads;
    return NULL;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 24;
    int last = cables_node_count() - 1;
    if (rounds < 1) {
        fprintf(stderr, "usage: quiet_pages [ROUNDS (1 or more)]\n");
        return 2;
    }
    struct shared *s = cables_alloc(sizeof *s);
    s->pg = cables_alloc_placed(PAGES * 4096, CABLES_POLICY_FIXED, 0);
    s->rounds = rounds;
    cables_barrier_init(&s->b, 2);
    cables_thread_t w, r;
    if (cables_thread_create(&w, 0, writer, s) || cables_thread_create(&r, last, reader, s)) {
        printf("RESULT ok=0 error=create\n");
        return 1;
    }
    cables_thread_join(w, NULL);
    cables_thread_join(r, NULL);
    long expect = 0;
    for (long k = 1; k <= rounds; k++)
        for (int i = 0; i < PAGES; i++)
            expect += k % (i % 4 + 1) == 0;
    int ok = s->bad == 0 && s->reads == expect;
    printf("RESULT ok=%d bad=%ld reads=%ld rounds=%ld\n", ok, s->bad, s->reads, rounds);
    return ok ? 0 : 1;
}
