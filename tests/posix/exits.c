/* exits: exit handlers are the process's.  A thread (on 2 nodes: on node 1)
 * registers one with atexit and one with on_exit; both run when main
 * returns, on_exit's with main's status and the argument the thread gave,
 * a value main wrote after the thread ended.  They print "EXIT atexit ran"
 * and "EXIT on_exit ran status=0 arg=43" after the RESULT line (the test
 * reads them).  With the argument "worker-exits" the thread then calls
 * exit(5) while main waits in join: the process ends with status 5, the
 * handlers print status=5 arg=42, and there is no RESULT line; with
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

static void on_exit_handler(int status, void *arg)
{
    printf("EXIT on_exit ran status=%d arg=%d\n", status, *(int *)arg);
}

static void *worker(void *unused)
{
    (void)unused;
    value = 42;
    CHECK_EQ("atexit", atexit(at_exit_handler), 0);
    CHECK_EQ("on_exit", on_exit(on_exit_handler, &value), 0);
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
