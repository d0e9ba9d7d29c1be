/* stack_overflow: a thread that overflows its stack hits the guard page
 * below it and the program dies with a message, instead of writing over
 * whatever was allocated next.  Run with a small CABLES_STACK_SIZE. */
#include <cables.h>
#include <stdio.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Winfinite-recursion" /* the point of the test */
static long down(int d)
{
    volatile char pad[4096];
    memset((char *)pad, d, sizeof pad);
    return pad[7] + down(d + 1);
}

static void *overflow(void *p)
{
    (void)p;
    return (void *)down(0);
}

int main(void)
{
    cables_thread_t t;
    if (cables_thread_create(&t, cables_node_count() - 1, overflow, NULL))
        return 2;
    cables_thread_join(t, NULL);
    printf("RESULT ok=0 survived an overflow\n");
    return 0;
}
