/* heap: malloc and friends shared between threads (which the runtime may
 * run on other nodes): blocks allocated by one thread are read, written,
 * reallocated and freed by another; calloc zeroes; posix_memalign and
 * aligned_alloc align; a 40 MiB block (larger than the runtime's arena
 * blocks) works; many small blocks survive a round trip; a calloc of
 * 2 GiB is lazy, as glibc's (the program touches 64 of its pages: its
 * resident memory grows by far less than the block), and a calloc that
 * gets the memory of a freed block back (the runtime reuses freed ranges)
 * is zeroed all the same, and lazily: where it was used.
 * RESULT ok=1 checks=N (check.h) */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../progs/rss.h"

#define N 2000
static long *blocks[N];   /* allocated by main, filled and freed by the thread */
static long *theirs[N];   /* allocated and filled by the thread, checked and freed by main */
static char *big;

/* bytes not zero among every step-th of p[0..len) */
static long nonzero_every(const char *p, size_t len, size_t step)
{
    long n = 0;
    for (size_t k = 0; k < len; k += step)
        n += p[k] != 0;
    return n;
}

static void *worker(void *arg)
{
    (void)arg;
    long bad = 0;
    for (int i = 0; i < N; i++) {
        if (blocks[i][0] != i)
            bad++;
        blocks[i][1] = i * 3;
        blocks[i] = realloc(blocks[i], (size_t)(i % 50 + 3) * sizeof(long) * 2);
        if (!blocks[i] || blocks[i][0] != i || blocks[i][1] != i * 3)
            bad++;
        free(blocks[i]);
        theirs[i] = malloc((size_t)(i % 100 + 1) * sizeof(long));
        theirs[i][0] = -i;
    }
    for (size_t k = 0; k < (40u << 20); k += 4096)
        if (big[k] != (char)(k >> 12))
            bad++;
    big[5] = 77;
    return (void *)bad;
}

int main(void)
{
    alarm(60);
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc((size_t)(i % 30 + 2) * sizeof(long));
        blocks[i][0] = i;
    }
    big = malloc(40u << 20);
    CHECK("big_malloc", big != NULL);
    for (size_t k = 0; k < (40u << 20); k += 4096)
        big[k] = (char)(k >> 12);
    long *z = calloc(1000, sizeof(long));
    long nz = 0;
    for (int i = 0; i < 1000; i++)
        nz += z[i] != 0;
    CHECK_EQ("calloc_zero", nz, 0);
    void *al = NULL;
    CHECK_ERR("posix_memalign", posix_memalign(&al, 4096, 100), 0);
    CHECK_EQ("posix_memalign_aligned", (long)((uintptr_t)al % 4096), 0);
    void *al2 = aligned_alloc(256, 512);
    CHECK_EQ("aligned_alloc_aligned", (long)((uintptr_t)al2 % 256), 0);
    CHECK("usable_size", malloc_usable_size(z) >= 1000 * sizeof(long));
    pthread_t t;
    void *bad = (void *)1;
    CHECK_ERR("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_ERR("join", pthread_join(t, &bad), 0);
    CHECK_EQ("worker_saw_blocks", (long)bad, 0);
    long wrong = 0;
    for (int i = 0; i < N; i++) {
        wrong += theirs[i][0] != -i;
        free(theirs[i]);
    }
    CHECK_EQ("main_saw_worker_blocks", wrong, 0);
    CHECK_EQ("big_written_by_worker", big[5], 77);
    /* after the frees, allocation goes on (freed blocks are reusable) */
    long again = 0;
    for (int i = 0; i < N; i++) {
        long *p = malloc(64);
        again += p != NULL;
        free(p);
    }
    CHECK_EQ("malloc_after_frees", again, N);
    free(big);
    free(z);
    free(al);
    free(al2);

    size_t huge = (size_t)2 << 30, reuse = 64u << 20;
    long rss0 = rss_bytes();
    char *h = calloc(1, huge);
    CHECK("calloc_huge", h != NULL);
    if (h) {
        CHECK_EQ("calloc_huge_zero", nonzero_every(h, huge, huge / 64), 0);
        CHECK_LT("calloc_huge_lazy", rss_bytes() - rss0, 256l << 20);
        for (size_t k = 0; k < reuse; k += 4096)
            h[k] = 1;
        free(h);
        char *r = calloc(1, reuse);
        CHECK("calloc_after_free", r != NULL);
        CHECK_EQ("calloc_after_free_zero", r ? nonzero_every(r, reuse, 1) : 0, 0);
        for (size_t k = 0; r && k < reuse; k += 4096) /* for h2 to zero again */
            r[k] = 1;
        free(r);
        /* the 2 GiB again (its range, freed): zeroed where it was used,
         * still lazy elsewhere */
        long rss1 = rss_bytes();
        char *h2 = calloc(1, huge);
        CHECK("calloc_huge_again", h2 != NULL);
        if (h2) {
            CHECK_EQ("calloc_huge_again_zero",
                     nonzero_every(h2, huge, huge / 64) + nonzero_every(h2, reuse, 4096), 0);
            CHECK_LT("calloc_huge_again_lazy", rss_bytes() - rss1, 256l << 20);
            free(h2);
        }
    }
    return check_finish();
}
