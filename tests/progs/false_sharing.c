/* false_sharing: one thread per node writes the words j % T == i of three
 * pages of uint64_t and the bytes j % T == i of a char page, between
 * barriers; then every thread checks every word and byte.  Several rounds.
 * RESULT ok=1 mismatches=0 threads=T rounds=R */
#include <cables.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 4

struct shared {
    cables_barrier_t bar;
    uint64_t *words; unsigned char *bytes;
    size_t nwords, nbytes; int nthreads;
    long mismatches[64];
};
struct targ { struct shared *s; int id; };

static uint64_t wval(int r, int i, size_t j) { return ((uint64_t)(r + 1) << 40) | ((uint64_t)i << 32) | j; }
static unsigned char bval(int r, int i, size_t j) { return (unsigned char)(1 + r * 37 + j * 11 + i * 5); }

static void *work(void *arg)
{
    struct targ *a = arg;
    struct shared *s = a->s;
    int me = a->id, T = s->nthreads;
    long bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        for (size_t j = (size_t)me; j < s->nwords; j += (size_t)T) s->words[j] = wval(r, me, j);
        for (size_t j = (size_t)me; j < s->nbytes; j += (size_t)T) s->bytes[j] = bval(r, me, j);
        cables_barrier_wait(&s->bar);
        for (size_t j = 0; j < s->nwords; j++)
            if (s->words[j] != wval(r, (int)(j % T), j) && bad++ < 3)
                printf("thread %d node %d round %d: word %zu = %#llx, expected %#llx\n", me,
                       cables_node_id(), r, j, (unsigned long long)s->words[j],
                       (unsigned long long)wval(r, (int)(j % T), j));
        for (size_t j = 0; j < s->nbytes; j++)
            if (s->bytes[j] != bval(r, (int)(j % T), j) && bad++ < 3)
                printf("thread %d node %d round %d: byte %zu = %d, expected %d\n", me,
                       cables_node_id(), r, j, s->bytes[j], bval(r, (int)(j % T), j));
        fflush(stdout);
        cables_barrier_wait(&s->bar); /* nobody writes the next round before all checked */
    }
    s->mismatches[me] = bad;
    return NULL;
}

int main(int argc, char **argv)
{
    int nn = cables_node_count(), per = argc > 1 ? atoi(argv[1]) : 1;
    int T = nn * per;
    size_t ps = cables_page_size();
    struct shared *s = cables_alloc(sizeof *s);
    struct targ *a = cables_alloc(64 * sizeof *a);
    s->words = cables_alloc(3 * ps);
    s->bytes = cables_alloc(ps);
    s->nwords = 3 * ps / sizeof(uint64_t);
    s->nbytes = ps;
    s->nthreads = T;
    cables_barrier_init(&s->bar, (unsigned)T);
    cables_thread_t t[64];
    for (int i = 0; i < T; i++) {
        a[i] = (struct targ){ s, i };
        cables_thread_create(&t[i], i % nn, work, &a[i]);
    }
    long bad = 0;
    for (int i = 0; i < T; i++) {
        cables_thread_join(t[i], NULL);
        bad += s->mismatches[i];
    }
    printf("RESULT ok=%d mismatches=%ld threads=%d rounds=%d\n", bad == 0, bad, T, ROUNDS);
    return bad == 0 ? 0 : 1;
}
