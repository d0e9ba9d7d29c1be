/* exits: exit handlers are the process's.  A thread (on 2 nodes: on node 1)
 * registers one with atexit and one with on_exit; both run when main
 * returns, on_exit's with main's status and the argument the thread gave,
 * a value main wrote after the thread ended.  They print "EXIT atexit ran"
 * and "EXIT on_exit ran status=0 arg=43" after the RESULT line (the test
 * reads them), then "EXIT ctor handler sum=1999000" from a handler a
 * constructor registered, which reads a list the thread built, and last
 * "EXIT destructor sum=1999000" from a destructor function, which reads
 * an array the thread filled, which nothing read before, after every exit
 * handler.  With the
 * argument "worker-exits" the thread then calls
 * exit(5) while main waits in join: the process ends with status 5, the
 * handlers print status=5 arg=44 (what the thread wrote last; before, the
 * master ran them without the thread's last writes: arg=42), and there is
 * no RESULT line; with
 * "worker-error", the thread's GNU error(6, 0, ...) does the same with
 * status 6 (libc's calls its exit past the shim's).
 * RESULT ok=1 checks=N (check.h) */
#include <error.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int value;
static int worker_exits, worker_error;

static void at_exit_handler(void) { printf("EXIT atexit ran\n"); }

/* registered by a constructor, before main: it reads a list the thread
 * built (on 2 nodes its blocks are homed on node 1), as a C++ static
 * object's destructor reads what it holds.  Before, such a handler ran
 * after the runtime had stopped at the master, and the run died (status 2:
 * "shared page ... accessed after the node left the cluster"). */
struct item {
    struct item *next;
    int v;
};
static struct item *list;
static int *dtor_data; /* a block of its own (1 MiB), every 128th int set */
static long sum(const struct item *l)
{
    long s = 0;
    for (; l; l = l->next)
        s += l->v;
    return s;
}
static void ctor_handler(void) { printf("EXIT ctor handler sum=%ld\n", sum(list)); }
__attribute__((constructor)) static void register_early(void) { atexit(ctor_handler); }

/* glibc runs the program's destructor functions after its exit handlers.
 * Before, they ran after the runtime's end at the master, and this one
 * ended the run ("shared page ... accessed after the node left the
 * cluster"). */
__attribute__((destructor)) static void destructor(void)
{
    long s = 0;
    for (int k = 0; dtor_data && k < 2000; k++)
        s += dtor_data[k * 128];
    printf("EXIT destructor sum=%ld\n", s);
}

static void on_exit_handler(int status, void *arg)
{
    printf("EXIT on_exit ran status=%d arg=%d\n", status, *(int *)arg);
}

static void *worker(void *unused)
{
    (void)unused;
    value = 42;
    for (int k = 0; k < 2000; k++) {
        struct item *i = malloc(sizeof *i);
        if (!i)
            break;
        i->v = k;
        i->next = list;
        list = i;
    }
    int *d = calloc(2000 * 128, sizeof *d);
    for (int k = 0; d && k < 2000; k++)
        d[k * 128] = k;
    dtor_data = d;
    CHECK_EQ("atexit", atexit(at_exit_handler), 0);
    CHECK_EQ("on_exit", on_exit(on_exit_handler, &value), 0);
    if (worker_exits || worker_error)
        value = 44; /* its last write: the handlers see it */
    if (worker_exits)
        exit(5);
    if (worker_error)
        error(6, 0, "worker gives up %d", 6);
    return NULL;
}

int main(int argc, char **argv)
{
    check_start();
    worker_exits = argc > 1 && strcmp(argv[1], "worker-exits") == 0;
    worker_error = argc > 1 && strcmp(argv[1], "worker-error") == 0;
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    value = 43;
    return check_finish();
}
