/* big_static: a program whose static data is big (a 96 MiB global array, as
 * SPLASH-style codes declare their grids) allocates with malloc on two
 * threads; no block may lie inside the array or the initialised globals,
 * and what is written to each stays there.  Under libcables the static data
 * takes the lowest pages of the global address space, below the heap
 * arenas: with CABLES_GAS_SIZE=128M (64 MiB below them) the run must be
 * refused with a message naming CABLES_GAS_SIZE (before, malloc handed out
 * blocks inside the array: tests/multinode/shim_test.cc, StaticData).
 * RESULT ok=1 checks=N */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define BIG_LONGS (96L << 20 >> 3)
#define STRIDE 4096 /* a long every 32 KiB */

static long big[BIG_LONGS];
static long inited[512] = { 1, 2, 3 };

static int inside(const void *p, size_t n, const void *lo, size_t len)
{
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)lo;
    return a < b + len && b < a + n;
}

static void *blocks(void *arg)
{
    long seed = (long)(intptr_t)arg;
    size_t sizes[] = { 64, 4096, 300 << 10, 1 << 20, 8 << 20 };
    for (int i = 0; i < 5; i++) {
        long *p = malloc(sizes[i]);
        if (!CHECK("malloc", p != NULL))
            continue;
        CHECK("not_in_big", !inside(p, sizes[i], big, sizeof big));
        CHECK("not_in_inited", !inside(p, sizes[i], inited, sizeof inited));
        size_t n = sizes[i] / sizeof(long);
        for (size_t j = 0; j < n; j += 512)
            p[j] = seed * 1000 + (long)j;
        for (long j = seed; j < BIG_LONGS; j += STRIDE)
            big[j] = seed + j;
        long bad = 0;
        for (size_t j = 0; j < n; j += 512)
            bad += p[j] != seed * 1000 + (long)j;
        CHECK_EQ("block_kept", bad, 0);
        free(p);
    }
    return NULL;
}

int main(void)
{
    check_start();
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, blocks, (void *)(intptr_t)1), 0);
    blocks((void *)(intptr_t)2);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    long bad = 0;
    for (long k = 0; k < BIG_LONGS; k += STRIDE) /* the pages written, not the rest */
        for (long j = k; j < k + 4; j++)
            bad += big[j] != (j == k + 1 || j == k + 2 ? j - k + j : 0);
    CHECK_EQ("big_kept", bad, 0);
    CHECK("inited_kept", inited[0] == 1 && inited[2] == 3 && inited[3] == 0);
    return check_finish();
}
