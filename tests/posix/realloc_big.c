/* realloc_big: a big block grown by realloc on another thread (another node
 * under libcables) keeps its data, and succeeds wherever the size asked
 * fits.  Main mallocs BLOCK_MIB MiB and marks a word in each MiB; a thread
 * grows it by 1 MiB, checks the marks and marks the new MiB; main checks
 * all.  Under libcables a big block grows in place within its capacity,
 * else moves to one of twice its capacity: with CABLES_GAS_SIZE=256M
 * (about 128 MiB for the program's blocks) twice 50 MiB does not fit
 * beside the block, 51 MiB does (before, realloc returned NULL:
 * tests/multinode/shim_test.cc, BigBlocks).
 * RESULT ok=1 checks=N */
#include <stdlib.h>

#include "check.h"

#define BLOCK_MIB 50
#define MIB_LONGS (1L << 20 >> 3)

static long *block; /* (join) */

static void *grow(void *arg)
{
    (void)arg;
    long *q = realloc(block, (BLOCK_MIB + 1) * (1L << 20));
    if (!CHECK("realloc", q != NULL))
        return NULL;
    long bad = 0;
    for (long m = 0; m < BLOCK_MIB; m++)
        bad += q[m * MIB_LONGS + 7] != m + 1;
    CHECK_EQ("kept", bad, 0);
    q[BLOCK_MIB * MIB_LONGS + 7] = BLOCK_MIB + 1;
    block = q;
    return NULL;
}

int main(void)
{
    check_start();
    block = malloc(BLOCK_MIB * (1L << 20));
    if (!CHECK("malloc", block != NULL))
        return check_finish();
    for (long m = 0; m < BLOCK_MIB; m++)
        block[m * MIB_LONGS + 7] = m + 1;
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, grow, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    long bad = 0;
    for (long m = 0; m <= BLOCK_MIB; m++)
        bad += block[m * MIB_LONGS + 7] != m + 1;
    CHECK_EQ("grown", bad, 0);
    free(block);
    return check_finish();
}
