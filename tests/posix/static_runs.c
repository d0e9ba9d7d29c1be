/* static_runs: another thread reads the program's globals in order across
 * the end of its initialised data, where the bss begins.  Under libcables
 * (cables-cc) the two are windows of shared pages at the program's own
 * addresses: consecutive page numbers, addresses apart (libc's copied
 * objects, stdout and environ among them, lie between).  A sequential read
 * takes strided fetches of runs of pages by number; adjacent runs got one
 * protection change by number across the end of .data: the private pages
 * between became read-only, and bss pages landed there stayed
 * inaccessible while their state said readable, so reading one faulted
 * for ever (the run hung).  With the markers cables-cc links in, the read
 * starts 64 pages before the end of .data (where the runs fall on it), and
 * the thread then reads the bss page 31 pages in, and sets an environment
 * variable (libc's environ, between the windows).  Natively the markers
 * are absent and the thread reads the arrays alone.
 * RESULT ok=1 checks=N */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N (1L << 19) /* 4 MiB each */

long data_arr[N] = { 1 };
long bss_arr[N];
extern char cables_statics_data_end[] __attribute__((weak));
extern char cables_statics_bss_begin[] __attribute__((weak));
static volatile long sink;

static void *reader(void *arg)
{
    (void)arg;
    const uintptr_t ps = 4096;
    if (cables_statics_data_end && cables_statics_bss_begin) {
        uintptr_t dend = (uintptr_t)cables_statics_data_end;
        uintptr_t bbeg = (uintptr_t)cables_statics_bss_begin;
        long s = 0;
        for (uintptr_t a = dend - 64 * ps; a < dend; a += ps)
            s += *(volatile long *)a;
        s += *(volatile long *)(bbeg + 31 * ps);
        sink = s;
    }
    long bad = 0;
    for (long i = 0; i < N; i++)
        bad += data_arr[i] != (i ? 3 * i : 1) || bss_arr[i] != 5 * i;
    CHECK_EQ("arrays", bad, 0);
    CHECK_ERR("setenv", setenv("CABLES_STATIC_RUNS_TEST", "yes", 1), 0);
    const char *v = getenv("CABLES_STATIC_RUNS_TEST");
    CHECK("getenv", v && strcmp(v, "yes") == 0);
    return NULL;
}

int main(void)
{
    check_start();
    for (long i = 1; i < N; i++)
        data_arr[i] = 3 * i;
    for (long i = 0; i < N; i++)
        bss_arr[i] = 5 * i;
    pthread_t t;
    CHECK_ERR("create", pthread_create(&t, NULL, reader, NULL), 0);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
