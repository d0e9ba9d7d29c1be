/* exits: exit handlers are the process's.  A thread (on 2 nodes: on node 1)
 * registers one with atexit and one with on_exit; both run when main
 * returns, on_exit's with main's status and the argument the thread gave,
 * a value main wrote after the thread ended.  They print "EXIT atexit ran"
 * and "EXIT on_exit ran status=0 arg=43" after the RESULT line (the test
 * reads them).
 * RESULT ok=1 checks=N (check.h) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

static int value;

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
    return NULL;
}

int main(void)
{
    check_start();
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    value = 43;
    return check_finish();
}
