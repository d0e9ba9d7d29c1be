/* main.c: loads the library named by its first argument (plugin.c) with
 * dlopen in main, and 4 threads (at 2 nodes, on both) each call its
 * function, found by main, 1000 times: it adds 1 to the program's atomic
 * counter.  Each first finds the function again with main's handle; then a
 * thread loads the library itself and gets the same function (after a
 * missing one, which dlerror names), and main closes it twice.  Before, a thread on another node
 * than the master died at its first call (the library was loaded at the
 * master only), and the program did not export the atomics the library
 * calls (dlopen failed: "undefined symbol: __atomic_fetch_add_8").
 * RESULT ok=1 count=4000 same=1 closed=1 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

enum { THREADS = 4, ADDS = 1000 };
static long (*bump)(atomic_long *);
static atomic_long count;
static void *handle;      /* main's, which every thread's dlsym takes */
static atomic_int looked; /* dlsym(handle) gave bump */
static char path[4096]; /* argv is the master's */

static void *worker(void *unused)
{
    (void)unused;
    if (dlsym(handle, "plugin_bump") == (void *)bump)
        atomic_fetch_add(&looked, 1);
    for (int k = 0; k < ADDS; k++)
        bump(&count);
    return NULL;
}

static int missing_said; /* a thread's dlopen of a missing file: dlerror names it */

static void *loader(void *unused)
{
    (void)unused;
    const char *e = dlopen("no_such_plugin.so", RTLD_NOW) ? NULL : dlerror();
    missing_said = e && strstr(e, "no_such_plugin.so") != NULL;
    void *h = dlopen(path, RTLD_NOW);
    return h ? dlsym(h, "plugin_bump") : NULL;
}

int main(int argc, char **argv)
{
    snprintf(path, sizeof path, "%s", argc > 1 ? argv[1] : "(no library named)");
    void *h = handle = dlopen(path, RTLD_NOW);
    if (!h || !(bump = (long (*)(atomic_long *))dlsym(h, "plugin_bump"))) {
        printf("RESULT ok=0 dlerror=%s\n", dlerror());
        return 1;
    }
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    void *again = NULL;
    pthread_t l;
    pthread_create(&l, NULL, loader, NULL);
    pthread_join(l, &again);
    int closed = dlclose(h) == 0 && dlclose(h) == 0;
    long n = atomic_load(&count);
    int same = again == (void *)bump && atomic_load(&looked) == THREADS && missing_said;
    int ok = n == (long)THREADS * ADDS && same && closed;
    printf("RESULT ok=%d count=%ld same=%d closed=%d\n", ok, n, same, closed);
    return !ok;
}
