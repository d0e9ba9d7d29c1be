/* gas_exhaust: run with CABLES_GAS_SIZE=1G; cables_alloc(2 GiB) must return
 * NULL (with a message naming CABLES_GAS_SIZE), from main and from a thread
 * on the last node, while a small allocation still works; so must
 * allocations whose size rounded up to pages wraps (SIZE_MAX: it was
 * taken for one page).  Exits 1 when the big allocations failed as they
 * should (0 if one succeeded).
 * RESULT null=1 thread_null=1 huge_null=1 small_ok=1 */
#include <cables.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#define BIG (2ull << 30)

struct shared { int thread_null; };

static void *work(void *arg)
{
    struct shared *s = arg;
    s->thread_null = cables_alloc(BIG) == NULL;
    return NULL;
}

int main(void)
{
    int nn = cables_node_count();
    struct shared *s = cables_alloc(sizeof *s);
    fflush(stderr);
    void *big = cables_alloc(BIG);
    errno = 0;
    int huge_null = cables_alloc(SIZE_MAX) == NULL && errno == ENOMEM;
    errno = 0;
    huge_null = huge_null && cables_alloc(SIZE_MAX - 4095) == NULL && errno == ENOMEM;
    cables_thread_t t;
    cables_thread_create(&t, nn - 1, work, s);
    cables_thread_join(t, NULL);
    long *small = cables_alloc(4096);
    int small_ok = small != NULL;
    if (small) {
        small[0] = 42;
        small_ok = small[0] == 42;
    }
    printf("RESULT null=%d thread_null=%d huge_null=%d small_ok=%d\n", big == NULL,
           s->thread_null, huge_null, small_ok);
    return big == NULL && s->thread_null && huge_null ? 1 : 0;
}
