/* malloc_placement: where malloc's blocks are homed.  main (node 0)
 * allocates a block of 1 MiB (a big block: glibc would mmap it) and one of
 * 64 KiB (its node's arena); a thread on node 1 writes both.  The big
 * block's pages are homed on node 1, their first writer (first touch, as
 * the kernel places an mmapped block on NUMA nodes), the small block's on
 * node 0, whose arena it is in.  After main frees the big block, a block
 * of the same size comes from main's arena (the threshold rose to the
 * freed size, as glibc's mmap threshold does): homed on node 0.  A buffer
 * grown by realloc in 64 KiB steps to 8 MiB keeps its bytes and moves
 * about once per doubling (a big block grows in place within a capacity
 * twice the size it had when it last moved).
 * RESULT ok=1 pages=P big_on_writer=P small_on_owner=S again_on_owner=P
 *        grown_ok=1 moves=M */
#include <stdint.h>
#include <string.h>

#include "two_nodes.h"

#define BIG (1 << 20)
#define SMALL (64 << 10)

struct blocks {
    char *big, *small;
};

/* (this program's globals are each node's: the blocks come on main's stack) */
static void *write_both(void *arg)
{
    struct blocks *b = arg;
    memset(b->big, 1, BIG);
    memset(b->small, 2, SMALL);
    return NULL;
}

static void *nothing(void *arg) { return arg; }

static long homed_on(const char *p, size_t n, int node)
{
    size_t ps = cables_page_size();
    long k = 0;
    for (size_t off = 0; off < n; off += ps)
        k += cables_home_of(p + off) == node;
    return k;
}

int main(int argc, char **argv)
{
    two_node_rounds(argc, argv, 1);
    char *big = malloc(BIG), *small = malloc(SMALL);
    if (!big || !small) {
        printf("RESULT ok=0 error=malloc\n");
        return 1;
    }
    struct blocks b = { big, small };
    two_node_run(nothing, write_both, &b);
    long pages = BIG / (long)cables_page_size(), spages = SMALL / (long)cables_page_size();
    long on_writer = homed_on(big, BIG, 1), on_owner = homed_on(small, SMALL, 0);
    int data_ok = big[0] == 1 && big[BIG - 1] == 1 && small[SMALL - 1] == 2;
    free(big);
    char *again = malloc(BIG);
    memset(again, 3, BIG);
    long again_on_owner = homed_on(again, BIG, 0);
    long moves = 0;
    int grown_ok = 1;
    char *buf = malloc(64 << 10);
    memset(buf, 5, 64 << 10);
    for (size_t n = 128 << 10; n <= (8u << 20) && buf; n += 64 << 10) {
        char *nb = realloc(buf, n);
        if (!nb) {
            grown_ok = 0;
            break;
        }
        moves += nb != buf;
        buf = nb;
        grown_ok &= buf[0] == 5 && buf[n - (64 << 10) - 1] == 5;
        memset(buf + n - (64 << 10), 5, 64 << 10);
    }
    free(buf);
    int ok = data_ok && on_writer == pages && on_owner == spages && again_on_owner == pages &&
             grown_ok && moves <= 10;
    printf("RESULT ok=%d pages=%ld big_on_writer=%ld small_on_owner=%ld again_on_owner=%ld "
           "grown_ok=%d moves=%ld\n",
           ok, pages, on_writer, on_owner, again_on_owner, grown_ok, moves);
    free(again);
    free(small);
    return !ok;
}
